"""A producer that talks to no broker, for application tests: Java's ``MockProducer``.

:class:`MockProducer` has :class:`~aiokafka_lite.AIOKafkaProducer`'s API (a test checks
that the two cannot drift apart), so an application written against the real producer
can be handed one. What it does with a record is what the real producer does before the
network: the same configuration checks, serializers, size and argument checks, the same
partitioner (murmur2 of the key: a keyed record lands on the partition the real producer
would choose, given the same partition count), interceptors and transaction states. Then
it keeps the record in :attr:`MockProducer.history` and resolves its future at once with
offsets that grow per partition, or, with ``auto_complete=False``, when the test calls
:meth:`MockProducer.complete_next` or :meth:`MockProducer.fail_next`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from .._internal import aiokafka_arguments, bulk_send, checks
from .._internal.bulk_delivery import BulkDelivery
from .._internal.key_value import K, V
from .._internal.placement import RecordPlacement
from .._internal.records import Header
from .._internal.tasks import BackgroundTasks
from .._internal.txn_result import TransactionalResult
from ..config import ProducerConfig
from ..errors import IllegalStateError, KafkaError, KafkaTimeoutError, ProducerClosedError
from ..interceptors import ProducerRecord, run_on_acknowledgement, run_on_send
from ..producer import _CLOSED, _CLOSING, _FAILED, _NEW, _STARTED, AIOKafkaProducer
from ..structs import DeliveryReport, RecordMetadata, TopicPartition
from .mock_parts import (
    AllAvailable,
    Deliveries,
    MockBatch,
    MockTransaction,
    MockTransactions,
    Pending,
    SentRecord,
)

if TYPE_CHECKING:
    from .._internal.batch_builder import BatchBuilder
    from .._internal.metadata import Metadata
    from .._internal.runtime import Runtime
    from .._internal.sender import Sender

__all__ = ["MockProducer"]

_log = logging.getLogger("aiokafka_lite.testing")


class _Parts:
    """What the producer's inherited methods read of its runtime and its sender."""

    def __init__(self, tasks: BackgroundTasks, transactions: MockTransactions | None) -> None:
        self.tasks = tasks
        self.transactions = transactions

    def metrics(self) -> dict[str, float]:
        return {}  # the mock measures nothing


class MockProducer(AIOKafkaProducer[K, V]):
    """:class:`~aiokafka_lite.AIOKafkaProducer`'s API, recording instead of sending.

    A subclass, so that it goes (and type-checks) wherever the real producer does;
    every method that would reach the network is its own, the rest (the running and
    event-loop checks, the transaction methods) is the real producer's. Takes every
    argument the real producer takes, checked the same way (the broker addresses are
    never used), and:

    * ``auto_complete``: resolve each send at once (default), else keep it pending
      until :meth:`complete_next` / :meth:`fail_next`;
    * ``partitions``: partition counts by topic; other topics have
      ``default_partitions``.
    """

    def __init__(
        self,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        key_serializer: Callable[[K], bytes | None] | str | None = None,
        value_serializer: Callable[[V], bytes | None] | str | None = None,
        api_version: str | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        auto_complete: bool = True,
        partitions: Mapping[str, int] | None = None,
        default_partitions: int = 1,
        **config: Any,
    ) -> None:
        aiokafka_arguments.warn_deprecated(loop, api_version)
        aiokafka_arguments.drop_acks_sentinel(config)
        del sasl_kerberos_service_name, sasl_kerberos_domain_name
        if key_serializer is not None:
            config["key_serializer"] = key_serializer
        if value_serializer is not None:
            config["value_serializer"] = value_serializer
        cfg = ProducerConfig.from_kwargs(**config).named()
        counts = dict(partitions or {})
        for name, count in [*counts.items(), ("default_partitions", default_partitions)]:
            if type(count) is not int or count < 1:
                raise ValueError(f"partition count for {name!r} must be an int >= 1, got {count!r}")
        self._config = cfg
        self.auto_complete = auto_complete
        self._counts = counts
        self._default_partitions = default_partitions
        self._placement = RecordPlacement(cfg)
        self._placement.metadata = cast("Metadata", AllAvailable(self._partition_count))
        self._interceptors = tuple(cfg.interceptors)
        self._acks_none = cfg.acks == 0
        self._state = _NEW
        self._fatal: KafkaError | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = ""
        self._runtime: Runtime | None = None
        self._sender: Sender
        self._txn: MockTransactions | None = None
        self._txn_result = TransactionalResult(_log)
        self._deliveries = Deliveries()
        self._offsets: dict[TopicPartition, int] = {}
        self._history: list[SentRecord] = []

    # -- what a test reads ---------------------------------------------------------------

    @property
    def history(self) -> list[SentRecord]:
        """Every record sent (accepted by ``send``, ``send_many``, ``send_batch``), in order."""
        return list(self._history)

    @property
    def pending(self) -> list[SentRecord]:
        """The records whose futures are not resolved yet (``auto_complete=False``)."""
        return [p.record for p in self._deliveries.queue]

    @property
    def transactions(self) -> list[MockTransaction]:
        """Each transaction begun, in order: its records, offsets and outcome."""
        return [] if self._txn is None else list(self._txn.transactions)

    @property
    def committed(self) -> list[SentRecord]:
        """The records of committed transactions (what a read_committed consumer reads)."""
        return [r for t in self.transactions if t.outcome == "committed" for r in t.records]

    @property
    def aborted(self) -> list[SentRecord]:
        """The records of aborted transactions."""
        return [r for t in self.transactions if t.outcome == "aborted" for r in t.records]

    def clear(self) -> None:
        """Forget the history and the finished transactions (pending sends stay pending)."""
        self._history.clear()
        if self._txn is not None:
            self._txn.transactions[:] = [t for t in self._txn.transactions if t.outcome == "open"]

    def complete_next(self) -> bool:
        """Resolve the oldest pending send with its metadata; False if none is pending."""
        if not self._deliveries.queue:
            return False
        pending = self._deliveries.queue.popleft()
        if not pending.future.done():
            pending.future.set_result(self._landed(pending.record))
        return True

    def fail_next(self, exc: BaseException) -> bool:
        """Fail the oldest pending send with ``exc``; False if none is pending.

        In a transaction, as a record failing on the broker would, it spoils the
        transaction: ``commit_transaction()`` then raises, and it must be aborted.
        """
        if not isinstance(exc, BaseException):
            raise TypeError(f"fail_next() takes an exception, got {type(exc).__name__}")
        if not self._deliveries.queue:
            return False
        pending = self._deliveries.queue.popleft()
        if not pending.future.done():
            pending.future.set_exception(exc)
        if pending.transaction is not None and self._txn is not None:
            self._txn.batch_failed(exc)
        return True

    def fence(self) -> None:
        """Java's ``fenceProducer()``: another instance took over this ``transactional_id``;
        from now on every call raises :class:`~aiokafka_lite.errors.ProducerFencedError`."""
        self._check_running()
        if self._txn is None:
            raise IllegalStateError("fence(): only a producer with a transactional_id is fenced")
        self._txn.fence()

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Start; as the real producer, again once started does nothing, after stop() raises."""
        if self._state in (_STARTED, _FAILED):
            return
        if self._state != _NEW:
            raise ProducerClosedError("start(): the producer is stopped; create a new one")
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.current_thread().name
        tasks = BackgroundTasks("aiokafka_lite.mock")
        await tasks.open()
        if self._config.transactional_id is not None:
            self._txn = MockTransactions(
                self._config, self._deliveries, tasks, self._on_fatal, self._fail_pending
            )
        parts = _Parts(tasks, self._txn)
        self._runtime = cast("Runtime", parts)
        self._sender = cast("Sender", parts)
        self._state = _STARTED

    def __del__(self, _warn: Callable[..., None] = warnings.warn) -> None:
        # The real producer's warns about sockets and records left behind: a mock has
        # none; its task group (for commits and aborts) ends with it.
        runtime = getattr(self, "_runtime", None)
        if runtime is not None:
            runtime.tasks.abandon()

    def _on_fatal(self, error: KafkaError) -> None:
        self._fatal = error
        if self._state == _STARTED:
            self._state = _FAILED
        self._fail_pending(error)

    def _fail_pending(self, error: BaseException) -> None:
        queue = self._deliveries.queue
        while queue:
            future = queue.popleft().future
            if not future.done():
                future.set_exception(error)

    def _expire_pending(self) -> None:
        """Fail every pending record as stop() does when its time is up; one of an open
        transaction fails the transaction too, as a record the broker never took."""
        error = KafkaTimeoutError("the producer stopped before this record was delivered")
        queue = self._deliveries.queue
        while queue:
            pending = queue.popleft()
            if not pending.future.done():
                pending.future.set_exception(error)
            if pending.transaction is not None and self._txn is not None:
                self._txn.batch_failed(error)

    async def stop(self, timeout: float | None = None) -> None:
        """Stop: an open transaction is aborted, as by the real producer.

        Records still pending are waited for at most ``timeout`` seconds (default: not
        at all, so that a test never hangs here), then fail with
        :class:`~aiokafka_lite.errors.KafkaTimeoutError`, as the real producer's do
        when its stop() times out.
        """
        if self._state == _NEW:
            self._state = _CLOSED
            return
        if self._state in (_CLOSING, _CLOSED):
            return
        self._check_loop()
        assert self._runtime is not None
        self._state = _CLOSING
        try:
            ending = self._txn_result.handle
            if ending is not None and not ending.done():
                # A commit waits for the transaction's pending records: at most
                # ``timeout``, then they fail (and with them the transaction), so that the
                # commit ends now instead of after max_block_ms.
                if timeout:
                    await asyncio.wait({asyncio.ensure_future(ending.wait())}, timeout=timeout)
                self._expire_pending()
                await asyncio.wait({asyncio.ensure_future(ending.wait())})
            if self._txn is not None and self._txn.open:
                try:
                    await self._txn.abort()
                except KafkaError as e:
                    _log.warning("could not abort the open transaction on stop(): %s", e)
            if timeout and self._deliveries.queue:
                waiting = [p.future for p in self._deliveries.queue]
                await asyncio.wait(waiting, timeout=timeout)
            self._fail_pending(
                KafkaTimeoutError("the producer stopped before this record was delivered")
            )
        finally:
            self._state = _CLOSED
            await self._runtime.tasks.close()

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until every record pending now is resolved (by :meth:`complete_next` or
        :meth:`fail_next`); :class:`KafkaTimeoutError` after ``timeout`` seconds."""
        if self._state != _STARTED:
            if self._state == _FAILED and self._fatal is not None:
                raise self._fatal
            return
        self._check_loop()
        self._deliveries.begin_flush()
        try:
            async with asyncio.timeout(timeout):
                await self._deliveries.await_flush_completion()
        except TimeoutError:
            raise KafkaTimeoutError(f"flush did not complete within {timeout}s") from None
        finally:
            self._deliveries.end_flush()

    async def __aenter__(self) -> MockProducer[K, V]:
        # (Only the type is the mock's: ``__aexit__``, the real producer's, calls our stop().)
        await self.start()
        return self

    # -- sending -------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: V | None = None,
        key: K | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Check, serialize and place one record as the real producer does; keep it."""
        self._check_running()
        self._check_transactional_send()
        if self._interceptors:
            topic, value, key, partition, timestamp_ms, headers = run_on_send(
                self._interceptors,
                ProducerRecord(topic, value, key, partition, timestamp_ms, headers),
            )
        try:
            fut = self._append(topic, value, key, partition, timestamp_ms, headers)
        except Exception as e:
            if self._interceptors:
                run_on_acknowledgement(self._interceptors, None, e)
            raise
        if self._interceptors:
            fut.add_done_callback(self._acknowledge)
        return fut

    async def send_and_wait(
        self,
        topic: str,
        value: V | None = None,
        key: K | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> RecordMetadata:
        """Send one record and wait for its delivery (with ``auto_complete=False``: until
        the test completes or fails it)."""
        fut = await self.send(topic, value, key, partition, timestamp_ms, headers)
        return await fut

    def try_send(
        self,
        topic: str,
        value: V | None = None,
        key: K | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Like :meth:`send`, without waiting (the mock never waits anyway)."""
        self._check_running()
        self._check_transactional_send()
        return self._append(topic, value, key, partition, timestamp_ms, headers)

    def _append(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp_ms: int | None,
        headers: Sequence[Header] | None,
    ) -> asyncio.Future[RecordMetadata]:
        # The real producer's order: metadata (the topic's name), serializers and
        # size, partition, timestamp.
        count = self._partition_count(checks.check_topic(topic))
        k, v, size, checked = self._placement.prepare(topic, key, value, headers)
        p = self._placement.place(topic, k, range(count), size, partition)
        ts = checks.record_timestamp(timestamp_ms, topic)
        return self._keep(SentRecord(topic, p, k, v, tuple(checked or ()), ts))

    def _keep(self, record: SentRecord) -> asyncio.Future[RecordMetadata]:
        assert self._loop is not None
        self._history.append(record)
        txn = None if self._txn is None else self._txn.record_sent(record)
        fut: asyncio.Future[RecordMetadata] = self._loop.create_future()
        if self.auto_complete:
            fut.set_result(self._landed(record))
        else:
            self._deliveries.queue.append(Pending(record, fut, txn))
        return fut

    def _landed(self, record: SentRecord) -> RecordMetadata:
        """Where the record landed: the next offset of its partition."""
        tp = TopicPartition(record.topic, record.partition)
        offset = self._offsets.get(tp, 0)
        self._offsets[tp] = offset + 1
        if self._acks_none:  # acks=0: nothing is known, as the real producer says
            return None  # type: ignore[return-value]
        return RecordMetadata(record.topic, record.partition, tp, offset, record.timestamp, 0, 0)

    def _partition_count(self, topic: str) -> int:
        return self._counts.get(topic, self._default_partitions)

    async def partitions_for(self, topic: str) -> set[int]:
        """The partition ids of ``topic``: ``partitions[topic]``, else ``default_partitions``."""
        self._check_running()
        return set(range(self._partition_count(checks.check_topic(topic))))

    # -- pre-built batches ---------------------------------------------------------------

    def create_batch(self) -> BatchBuilder:
        """An empty batch (a real one, that remembers its records for :attr:`history`)."""
        placement = self._placement
        return MockBatch(
            self._config.batch_size, placement.key_serializer, placement.value_serializer
        )

    async def send_batch(
        self, batch: BatchBuilder, topic: str, *, partition: int | None
    ) -> asyncio.Future[RecordMetadata]:
        """Keep a batch's records; the future resolves to the first one's metadata."""
        self._check_running()
        self._check_transactional_send()
        if not isinstance(batch, MockBatch):
            raise TypeError(
                f"batch must come from create_batch(), got {type(batch).__name__} (for {topic!r})"
            )
        count = self._partition_count(checks.check_topic(topic))
        p = self._placement.partitioner.for_batch(topic, count, partition)
        batch._take(topic, self._config.max_request_size)  # closes it; raises if too large
        entries, batch.entries = batch.entries, []
        assert self._loop is not None
        if not entries:
            empty: asyncio.Future[RecordMetadata] = self._loop.create_future()
            empty.set_result(None)  # type: ignore[arg-type]
            return empty
        futures = [self._keep(SentRecord(topic, p, *entry)) for entry in entries]
        first = futures[0]
        if len(futures) == 1:
            return first
        # One future for the batch, settled when its last record is (as one request).
        whole: asyncio.Future[RecordMetadata] = self._loop.create_future()

        def settle(_: object) -> None:
            if whole.done() or not all(f.done() for f in futures):
                return
            failed = next((f for f in futures if f.cancelled() or f.exception()), None)
            if failed is None:
                whole.set_result(first.result())
            elif failed.cancelled():
                whole.cancel()
            else:
                whole.set_exception(cast(BaseException, failed.exception()))

        for f in futures:
            f.add_done_callback(settle)
        return whole

    async def send_many(
        self,
        topic: str,
        records: Iterable[tuple[K | None, V | None]],
        *,
        partition: int | None = None,
    ) -> asyncio.Future[DeliveryReport]:
        """Each ``(key, value)`` pair as by :meth:`send`; one future for all, resolved to a
        :class:`~aiokafka_lite.structs.DeliveryReport` (a bad record fails alone there)."""
        self._check_running()
        self._check_transactional_send()
        count = self._partition_count(checks.check_topic(topic))
        if partition is not None:
            self._placement.place(topic, None, range(count), 0, partition)  # raises if bad
        items = records if isinstance(records, list) else list(records)
        assert self._loop is not None
        delivery = BulkDelivery(self._loop.create_future(), topic, len(items))
        # send_many() stamps every record of a call with the call's time, as here.
        ts = int(time.time() * 1000)

        async def send_one(
            topic: str, value: Any, key: Any, partition: int | None
        ) -> asyncio.Future[RecordMetadata]:
            return self._append(topic, value, key, partition, ts, None)

        send = self.send if self._interceptors else send_one
        await bulk_send.send_each(send, topic, items, partition, delivery)
        delivery.seal()
        return delivery.future
