"""One Spark task's write: its Arrow batches, through one producer, into Kafka.

The one write path of every mode: the data source's tasks, ``write_to_kafka``'s
``mapInArrow`` tasks, and the exactly-once driver (with its transactional
producer) all call :func:`write_batches`. The task fills one record batch per
(topic, partition) itself (``create_batch``/``send_batch``: one future per sent
batch, not per row), places rows as Java's producer does, awaits every delivery
and counts rows sent and failed into a :class:`~.summary.TaskReport`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from .._internal.placement import RecordPartitioner
from .._internal.records import record_size
from ..errors import KafkaError
from ..producer import AIOKafkaProducer, BatchBuilder
from ..structs import RecordMetadata
from .arrow import Columns, Converter
from .contract import Plan
from .summary import TaskReport

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["map_in_arrow_function", "run", "run_task", "topic_partitions", "write_batches"]

_T = TypeVar("_T")
# Spark's own sink fails the task with this text for a null topic.
NULL_TOPIC = "null topic present in the data: use the 'topic' option for setting a default topic"


class _Topic:
    """Where one topic's rows go: its partition count, open batches, sticky partition.

    Keyless rows are placed by the producer's own
    :class:`~aiokafka_lite._internal.placement.RecordPartitioner` (Java's sticky rule, KIP-794, as
    ``send()`` places them): ``sticky`` and ``produced`` are its state for this topic.
    """

    __slots__ = ("error", "limit", "n", "name", "open", "partitioner")

    def __init__(
        self,
        name: str,
        n: int,
        limit: int,
        partitioner: RecordPartitioner,
        error: str | None = None,
    ) -> None:
        self.name = name
        self.n = n
        self.error = error  # the topic cannot be written (unknown, ...): its rows fail
        self.open: list[BatchBuilder | None] = [None] * n
        self.limit = limit  # batch_size: a batch's bytes, for the sticky rule
        self.partitioner = partitioner

    @property
    def sticky(self) -> int:
        """The partition of the topic's next keyless row (0 for a topic not written)."""
        return self.partitioner.peek(self.name) if self.n else 0

    @property
    def produced(self) -> int:
        """The bytes the topic's keyless rows (and records) added to ``sticky``."""
        return self.partitioner.produced.get(self.name, 0)

    @produced.setter
    def produced(self, added: int) -> None:  # (the compiled Arrow path writes it back)
        self.partitioner.produced[self.name] = added

    def move_on(self) -> None:
        """A new sticky partition (:meth:`RecordPartitioner.move_on`)."""
        self.partitioner.move_on(self.name)

    def appended(self, added: int, batch: BatchBuilder) -> None:
        """Count ``added`` bytes of a keyless row now in ``batch``; move on if it is time."""
        self.partitioner.update(
            self.name, self.sticky, added, self.limit, batch.size() >= self.limit
        )

    def idle(self) -> None:
        """The sticky partition has no open batch: move on if its bytes were reached."""
        self.partitioner.update(self.name, self.sticky, 0, self.limit, True)


class TaskWriter:
    """One task's producer: an open batch per (topic, partition), a future per sent batch."""

    def __init__(self, producer: AIOKafkaProducer[Any, Any], plan: Plan, report: TaskReport):
        self.producer = producer
        self.plan = plan
        self.report = report
        # The producer's partitioner places every row (the plan's partitioner is the
        # producer's): its key hash cache, the user's partitioner, the sticky state.
        self.placer: RecordPartitioner = producer._placement.partitioner
        self.partitioner = self.placer.custom
        self.topics: dict[str, _Topic] = {}
        self.pending: set[asyncio.Future[RecordMetadata]] = set()
        # A batch may not outgrow max_request_size, which can be below batch_size: then
        # close a batch before a row would take it over, so that a row too large alone
        # fails alone (as Java's per-record check makes it) and not with its batch.
        cfg = producer.config
        self.size_cap = cfg.max_request_size if cfg.max_request_size < cfg.batch_size else None
        self.batch_size = cfg.batch_size

    async def topic(self, name: str) -> _Topic:
        """The topic's state, fetching its metadata once (a failure is kept, not retried)."""
        found = self.topics.get(name)
        if found is None:
            try:
                n = len(await self.producer.partitions_for(name))
            except KafkaError as e:
                error = f"topic {name!r}: {type(e).__name__}: {e}"
                found = _Topic(name, 0, self.batch_size, self.placer, error)
            else:
                found = _Topic(name, n, self.batch_size, self.placer)
                if n:  # its sticky partition drawn now, whichever path asks for it first
                    self.placer.peek(name)
                self.report.wrote_to(name)
            self.topics[name] = found
        return found

    async def write(self, cols: Columns, now: int | None = None) -> None:
        """Append every row of one Arrow batch; send the batches that fill up.

        ``now`` (ms): the timestamp of rows without one (default: the time of the call).
        """
        plan, report, placer, topics = self.plan, self.report, self.placer, self.topics
        keys, values, parts, headers, times, errors, names = (
            cols.keys,
            cols.values,
            cols.partitions,
            cols.headers,
            cols.timestamps,
            cols.errors,
            cols.topics,
        )
        default = None if plan.topic is None else await self.topic(plan.topic)
        if now is None:
            now = int(time.time() * 1000)
        ts = now
        create = self.producer.create_batch
        cap = self.size_cap
        for i, value in enumerate(values):
            if errors and i in errors:
                report.fail(1, errors[i])
                continue
            t = default
            if names is not None:
                name = names[i]
                if name is None:
                    report.fail(1, f"row {cols.row_base + i}: {NULL_TOPIC}")
                    continue
                t = topics.get(name) or await self.topic(name)
            assert t is not None
            if t.error is not None:
                report.fail(1, t.error)
                continue
            n = t.n
            key = None if keys is None else keys[i]
            p = None if parts is None else parts[i]
            if p is None:
                if key is None:
                    h = None if headers is None else headers[i]
                    if times is not None:
                        stamp = times[i]
                        ts = now if stamp is None else stamp
                    await self._keyless(t, value, ts, h)
                    continue
                try:
                    p = placer.partition(t.name, key, n, None)
                except ValueError as e:  # a user's partitioner out of range
                    report.fail(1, str(e))
                    continue
            elif not 0 <= p < n:
                report.fail(1, self._out_of_range(cols.row_base + i, p, t))
                continue
            h = None if headers is None else headers[i]
            if times is not None:
                stamp = times[i]
                ts = now if stamp is None else stamp
            b = t.open[p]
            if b is None:
                b = t.open[p] = create()
            elif cap and b.record_count() and b.size() + record_size(key, value, h) > cap:
                await self._send(t, p, b)
                b = t.open[p] = create()
            if b.append(key=key, value=value, timestamp=ts, headers=h) is None:
                await self._send(t, p, b)
                b = t.open[p] = create()
                b.append(key=key, value=value, timestamp=ts, headers=h)

    async def _keyless(self, t: _Topic, value: bytes | None, ts: int, h: Any) -> None:
        """Append a keyless row as Java's producer places it: on the sticky partition,
        moving on first if its bytes were reached and it has no open batch, placing the
        row again after closing a batch it does not fit; its bytes counted after."""
        cap = self.size_cap
        while True:
            p = t.sticky
            b = t.open[p]
            if b is None:
                if t.produced:
                    t.idle()  # (Java: all its batches full: it may move on first)
                    if t.sticky != p:
                        continue
                b = t.open[p] = self.producer.create_batch()
            elif cap and b.record_count() and b.size() + record_size(None, value, h) > cap:
                await self._send(t, p, b)
                t.open[p] = None
                continue
            before = b.size()
            if b.append(value=value, timestamp=ts, headers=h) is not None:
                break
            await self._send(t, p, b)
            t.open[p] = None
        t.appended(b.size() - before, b)

    def _out_of_range(self, row: int, p: int, t: _Topic) -> str:
        return (
            f"column {self.plan.partition_name!r} (partition) of row {row}: partition {p} is "
            f"out of range for {t.name!r}, which has {t.n} partition(s)"
        )

    async def _send(self, t: _Topic, p: int, b: BatchBuilder) -> None:
        count = b.record_count()
        try:
            fut = await self.producer.send_batch(b, t.name, partition=p)
        except KafkaError as e:  # e.g. the producer failed fatally: these rows are lost
            self.report.fail(count, f"{t.name}[{p}]: {type(e).__name__}: {e}")
            return
        self.pending.add(fut)
        fut.add_done_callback(partial(self._delivered, count, t.name, p))

    def _delivered(
        self, count: int, topic: str, p: int, fut: asyncio.Future[RecordMetadata]
    ) -> None:
        self.pending.discard(fut)
        exc = fut.exception() if not fut.cancelled() else asyncio.CancelledError()
        if exc is None:
            self.report.rows_sent += count
        else:
            self.report.fail(count, f"{topic}[{p}]: {type(exc).__name__}: {exc}")

    async def finish(self, timeout: float) -> None:
        """Send the partly filled batches and wait for every delivery."""
        for t in self.topics.values():
            for p, b in enumerate(t.open):
                if b is not None and b.record_count():
                    await self._send(t, p, b)
            t.open = [None] * t.n
        if self.pending:
            await asyncio.wait(set(self.pending), timeout=timeout)
        # A future not done by now is counted by stop(), which fails it.


async def write_batches(
    producer: AIOKafkaProducer[Any, Any],
    plan: Plan,
    batches: Iterator[pa.RecordBatch] | BatchReader,
    report: TaskReport,
) -> None:
    """Convert and send every Arrow batch, then wait for every delivery (into ``report``).

    The compiled build appends the rows from the Arrow buffers (:mod:`.arrow_rows`)
    where it can; the pure build converts each batch to Python lists first.

    The next batch is read in a thread (:class:`BatchReader`): Spark computes it (or
    reads it from the JVM) while this loop encodes the last one and its producer keeps
    sending and taking answers.
    """
    writer = TaskWriter(producer, plan, report)
    converter = Converter(plan)
    # (imported here: arrow_rows names this module's TaskWriter in its type hints)
    from .arrow_rows import ArrowPath

    fast = ArrowPath.for_task(writer, converter)  # None: the pure build, or another plan
    reader = batches if isinstance(batches, BatchReader) else BatchReader(batches)
    try:
        while (batch := await reader.next()) is not None:
            report.rows += batch.num_rows
            if fast is None or not await fast.write(batch):
                await writer.write(converter.convert(batch))
    finally:
        await reader.close()
    await writer.finish(producer.config.delivery_timeout_ms / 1000)


class BatchReader:
    """A task's Arrow batches, each read in a thread while the one before is written.

    Spark's iterator reads a batch from the JVM (or computes it): one read is always
    under way, so the JVM streams the next batch while this loop encodes and sends
    the last one. One thread at a time touches the iterator; ``close`` waits for the
    read under way, so none is left running after the task's write.
    """

    def __init__(
        self, batches: Iterator[pa.RecordBatch], first: pa.RecordBatch | None = None
    ) -> None:
        self._batches = batches
        self._first = first  # a batch read already, returned by the first next()
        self._reading: asyncio.Future[pa.RecordBatch | None] | None = None

    def prefetch(self) -> None:
        """Start reading the next batch (if no read is under way)."""
        if self._reading is None:
            self._reading = asyncio.ensure_future(asyncio.to_thread(next, self._batches, None))

    async def next(self) -> pa.RecordBatch | None:
        """The next batch (None: the end); the read of the one after starts at once."""
        if self._first is not None:
            batch, self._first = self._first, None
            self.prefetch()
            return batch
        self.prefetch()
        assert self._reading is not None
        try:
            batch = await asyncio.shield(self._reading)
        finally:
            if self._reading.done():
                self._reading = None
        if batch is not None:
            self.prefetch()
        return batch

    async def close(self) -> None:
        """Wait for a read under way (its batch is dropped, its error ignored)."""
        reading, self._reading = self._reading, None
        if reading is not None:
            await asyncio.wait([reading])
            if not reading.cancelled():
                reading.exception()  # retrieved: not logged as never retrieved


def producer_options(config: dict[str, Any]) -> dict[str, Any]:
    """The task producer's options: the plan's (its partitioner included: TaskWriter
    places every row with the producer's)."""
    return dict(config)


async def _produce(plan: Plan, batches: Iterator[pa.RecordBatch], report: TaskReport) -> None:
    """One Spark task: its own producer writes the task's Arrow batches."""
    first = await asyncio.to_thread(next, batches, None)
    if first is None:
        return  # an empty partition: no connection at all
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(**producer_options(plan.config))
    reader = BatchReader(batches, first)
    reader.prefetch()  # the second batch streams in while the producer connects
    try:
        await producer.start()
        await write_batches(producer, plan, reader, report)
    finally:
        await reader.close()
        await producer.stop()
        await asyncio.sleep(0)  # let the last delivery callbacks run


def run_task(plan: Plan, batches: Iterable[pa.RecordBatch]) -> TaskReport:
    """Write one Spark task's batches; the report names the task and its attempt."""
    report = TaskReport.for_this_task()
    run(_produce(plan, iter(batches), report))
    report.finished_at = time.time()
    return report


def map_in_arrow_function(
    plan: Plan,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function ``write_to_kafka`` maps over the DataFrame: one report row per task."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield run_task(plan, batches).to_arrow()

    return write


def run(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` on a private event loop (in a thread if this one already has a loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            return runner.run(coro)
    result: list[_T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(run(coro))
        except BaseException as e:
            failure.append(e)

    thread = threading.Thread(target=target, name="aiokafka-lite-spark")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def topic_partitions(config: dict[str, Any], topic: str, timeout_ms: int) -> int:
    """The driver's check that ``topic`` exists (and the cluster answers) before a job."""
    # A plain producer: with the transactional id it would fence the one that writes.
    cfg = {k: v for k, v in config.items() if k not in ("partitioner", "transactional_id")}
    cfg["max_block_ms"] = timeout_ms
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(**cfg)
    async with producer:
        return len(await producer.partitions_for(topic))
