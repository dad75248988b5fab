"""The append side of the accumulator: records into batches, under the budget.

Java's ``RecordAccumulator.append`` and its helpers, apart from the queues' other
side (readiness, expiry, drain: :mod:`aiokafka_lite._internal.accumulator`) so that
each half reads on its own.

One routine takes a record into a batch, and one encoder a run of records, both in
:mod:`aiokafka_lite._internal.append_core` (compiled when built), with no wait in them:
:func:`~aiokafka_lite._internal.append_core.append_record` places the record (its
partition, or a keyless record's sticky partition), the open batch takes it or closes (a
keyless record is then placed again), else a new batch; it counts its memory, and a
keyless record's bytes for the sticky rule. This module keeps the doors: every path
prepares its records (the producer checks, serializes and sizes them) and then comes in
through one door per shape of input, each waiting for memory itself when the budget is
short and handing over when it fills a batch:

* :meth:`RecordAppender.append`: one ``send()`` record on its general path
  (:meth:`RecordAppender.try_append`, its first step, never waits: ``try_send()``);
* :meth:`RecordAppender.append_run`: ``send_many()``'s records, a partition's run encoded
  at once (:func:`~aiokafka_lite._internal.append_core.append_run`), or keyless records a
  run at a time or one by one through the same routine;
* :meth:`RecordAppender.append_built`: ``send_batch()``'s batch, built by the user (the
  Spark writer's too), queued whole under the same budget.

``send()``'s fast path (:meth:`RecordAppender.send_path`, compiled when built) comes first,
before the door: the routine's one-record case on an open batch, its twin by design. A
record that closes a batch is reported to :mod:`aiokafka_lite._internal.hand_over`, which
owns the rule of when the filling task lets the sender take it.

:class:`~aiokafka_lite._internal.accumulator.RecordAccumulator` is a
:class:`RecordAppender`: a base class, like :class:`BufferPool` under it, so that
``acc.append(...)`` stays where a Java reader looks and the hot path reads the
queues and the budget with no extra lookup.
"""

from __future__ import annotations

import asyncio
import sys
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from ..errors import KafkaError
from ..structs import RecordMetadata
from . import append_core
from .buffer_pool import (
    BATCH_MEMORY,
    BULK_RECORD_MEMORY,
    RUN_MEMORY,
    SEND_BOUND,
    SEND_RECORD_MEMORY,
    BufferPool,
    too_large_for_buffer,
)
from .bulk_delivery import BulkDelivery
from .compression import Compressor
from .hand_over import filled, pass_on
from .producer_batch import PartitionQueue, ProducerBatch
from .records import Header, RecordBatchBuilder, record_size
from .send_path import SendPath

if TYPE_CHECKING:
    from .placement import RecordPartitioner

__all__ = ["RecordAppender"]

# Java's CompressionRatioEstimator constants.
_RATIO_DETERIORATE = 0.05
_RATIO_IMPROVE = 0.005
_RATIO_MARGIN = 1.05

# What a record holds in the budget beside its encoded bytes: a send() record (its
# future), a send_many() keyless record (its slot, and its run of one: _add_run counts it).
_SEND_HELD = SEND_RECORD_MEMORY
_BULK_HELD = BULK_RECORD_MEMORY + RUN_MEMORY
# The room of a record whose budget was checked or reserved before (send()'s).
_ANY_ROOM = sys.maxsize


class RecordAppender(BufferPool):
    """Appends records to the partition queues, within the ``buffer_memory`` budget.

    Owns the queues (``topic -> partition ->`` :class:`PartitionQueue`) and the batches
    not yet finished; :class:`~aiokafka_lite._internal.accumulator.RecordAccumulator`
    builds on it to hand them to the sender.
    """

    def __init__(
        self,
        *,
        batch_size: int,
        buffer_memory: int,
        wakeup: Callable[[], None],
        compress: Compressor | None,
        codec_id: int,
        max_request_size: int,
    ) -> None:
        super().__init__(buffer_memory, wakeup)
        self._max_batch_bytes = max(batch_size, max_request_size - 100)  # request overhead
        self._compress = compress
        self._codec_id = codec_id
        self._ratios: dict[str, float] = {}  # topic -> estimated compressed/raw
        self._limits: dict[str, int] = {}  # topic -> batch_limit for its next batches
        self._batch_size = batch_size
        # topic -> partition -> its queue; never replaced (the append core and the fast path
        # read it per record: an attribute, not a property).
        self.queues: Final[dict[str, dict[int, PartitionQueue]]] = {}
        self._nonempty: dict[PartitionQueue, None] = {}  # insertion-ordered set
        self._incomplete: set[ProducerBatch] = set()
        # Set by abort_undrained (the producer stopped or failed for good): no
        # sender will take another batch, so nothing may be appended after it.
        self.shut_down: BaseException | None = None
        # The task whose record did not fit the last batch it found open (weakly: it
        # may end), and how many records did so: kept by hand_over.filled, read by
        # send() and send_many() to hand over (see hand_over).
        self.filler: weakref.ref[asyncio.Task[Any]] | None = None
        self.fills = 0
        # When the event loop last turned, as far as the hand-over knows (perf_counter: a
        # sender's pass, in ready(), or a hand-over's yield), and how long after that a
        # filler goes on instead of yielding at once (hand_over: the slice).
        self.turned_at = 0.0
        self.hand_over_slice = 0.0

    @property
    def wakeup(self) -> Callable[[], None]:
        """What wakes the sender (a batch was created or filled)."""
        return self._wakeup

    @property
    def batch_size(self) -> int:
        """The producer's ``batch_size`` (a new queue's batch limit without compression)."""
        return self._batch_size

    def send_path(self, partitioner: RecordPartitioner, max_request_size: int) -> SendPath:
        """``send()``'s fast path over this accumulator's budget and queues, placing with
        ``partitioner`` (:mod:`aiokafka_lite._internal.send_path`, compiled when built)."""
        return SendPath(self, partitioner, max_request_size)

    def queue_for(self, topic: str, partition: int) -> PartitionQueue:
        parts = self.queues.get(topic)
        if parts is None:
            parts = self.queues[topic] = {}
        q = parts.get(partition)
        if q is None:
            limit = self._limits.get(topic) or self._limit_for(1.0)
            q = parts[partition] = PartitionQueue(topic, partition, limit)
        return q

    def _limit_for(self, ratio: float) -> int:
        if self._compress is None:
            return self._batch_size
        # As Java's estimator: aim 5% under batch_size after compression; but
        # never past what one request may carry, should the data stop compressing.
        limit = int(self._batch_size / max(ratio * _RATIO_MARGIN, 1e-3))
        return max(1, min(limit, self._max_batch_bytes))

    def observe_compression(self, topic: str, raw: int, compressed: int) -> None:
        """Learn a topic's compression ratio from a closed batch (Java's estimator).

        A topic's first batch sets the estimate (Java starts at 1.0 and needs
        hundreds of batches to learn a good ratio); after that a worse ratio is
        believed at once and a better one slowly, so that batches rarely come
        out bigger than batch_size after compression.
        """
        observed = compressed / max(1, raw)
        estimate = self._ratios.get(topic)
        if estimate is None:
            estimate = observed
        elif observed > estimate:
            estimate = max(estimate + _RATIO_DETERIORATE, observed)
        else:
            estimate = max(observed, estimate - _RATIO_IMPROVE)
        estimate = min(estimate, 1.0)
        self._ratios[topic] = estimate
        # Taken up by each partition's next batch (see new_batch): not a loop
        # over the topic's partitions per batch sent.
        self._limits[topic] = self._limit_for(estimate)

    def try_append(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] | None,
        size: int,
        keyless: RecordPartitioner | None = None,
    ) -> asyncio.Future[RecordMetadata] | None:
        """Append one ``send()`` record now and return its future: :meth:`append` without
        its wait (its first step, and all of ``try_send()``).

        ``size`` is an upper bound of the record's encoded size. Returns None, appending
        nothing, when that much budget (plus what the record may hold, ``SEND_BOUND``) is
        not free, or others are already waiting for it. With ``keyless`` (a record without
        key or partition) the accumulator places it (see
        :func:`~aiokafka_lite._internal.append_core.append_record`).
        """
        if self.budget.used + size + SEND_BOUND > self.limit or self._waiters:
            return None
        return self._append_send(topic, partition, timestamp, key, value, headers, keyless)

    def _append_send(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] | None,
        keyless: RecordPartitioner | None,
    ) -> asyncio.Future[RecordMetadata]:
        # A send() record through the routine (its memory checked or reserved) and its future.
        batch = append_core.append_record(
            self,
            topic,
            partition,
            timestamp,
            key,
            value,
            headers,
            keyless,
            0,
            _ANY_ROOM,
            _SEND_HELD,
        )
        assert batch is not None  # (any room: never refused)
        fut: asyncio.Future[RecordMetadata] = batch.records.add(batch.count - 1, timestamp)
        return fut

    async def append(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] | None,
        size: int,
        timeout: float,
        keyless: RecordPartitioner | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Append one ``send()`` record and return its future: the door of ``send()``'s
        general path. (Its fast path, :meth:`send_path`, is the same routine's one-record
        case on an open batch, taken before it.)

        As :meth:`try_append`; when the budget is short it waits (FIFO, up to ``timeout``
        s) for ``size`` plus ``SEND_BOUND`` bytes, then appends (a keyless record is placed
        only then). Raises :class:`~aiokafka_lite.errors.KafkaTimeoutError` when no memory
        came in time, and the producer's failure when it stopped meanwhile.
        """
        fut = self.try_append(topic, partition, timestamp, key, value, headers, size, keyless)
        if fut is not None:
            return fut
        reserved = size + SEND_BOUND
        await self.reserve(reserved, topic, timeout)
        self._check_not_shut_down(reserved)
        try:
            fut = self._append_send(topic, partition, timestamp, key, value, headers, keyless)
        except BaseException:  # (with keyless, placed only now: the topic may be gone)
            self._release(reserved)
            raise
        # Its bytes are counted in used now. size is an upper bound: what the record left
        # of the reservation may let the next waiter in.
        self._release(reserved)
        return fut

    def create_future(self) -> asyncio.Future[Any]:
        return self._loop.create_future()

    async def append_run(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        base: int,
        order: list[int],
        delivery: BulkDelivery,
        deadline: float,
        keyless: RecordPartitioner | None = None,
    ) -> None:
        """Append records ``order`` (their indices in a ``send_many()`` call) of the call:
        the door of its records. Record ``i``'s key and value are ``keys[i - base]`` and
        ``values[i - base]`` (the lists hold one chunk of the call, from record ``base``);
        ``order`` and what reaches ``delivery`` are the records' indices in the call.

        No future per record: their outcome reaches ``delivery`` per batch. Records for
        ``partition`` are encoded a whole run at a time into its open batch. With
        ``keyless`` (records without key or partition: ``partition`` is -1) each goes
        through the routine of ``send()``'s records (``append_core.append_record``: the topic's
        sticky partition, placed again when it closes a batch, its bytes counted), so that
        they land where ``send()`` would put them. Memory is awaited (FIFO, until the
        call's ``deadline`` on the monotonic clock) when the budget runs out, and the call
        hands over when it fills a batch (:func:`~aiokafka_lite._internal.hand_over.pass_on`).
        """
        if keyless is not None:
            await self._append_each(
                topic, timestamp, keys, values, base, order, delivery, deadline, keyless
            )
            return
        q = self.queue_for(topic, partition)
        pos, total, reserved = 0, len(order), 0
        while pos < total:
            if self.shut_down is not None:  # it happened while this call awaited
                if reserved:
                    self._release(reserved)
                self._fail_records(delivery, order[pos:], self.shut_down)
                return
            i = order[pos]
            batch = q.batches[-1] if q.batches and not q.batches[-1].full else None
            need = record_size(keys[i - base], values[i - base], None)
            need += BULK_RECORD_MEMORY + RUN_MEMORY
            if batch is None:
                need += BATCH_MEMORY
            room = reserved or (0 if self._waiters else self.limit - self.budget.used)
            if room >= need:
                if batch is None:
                    batch = self.new_batch(q, timestamp)
                    room -= BATCH_MEMORY
                    batch.memory += BATCH_MEMORY
                    self.budget.used += BATCH_MEMORY
                start = pos
                pos = append_core.append_run(
                    self, batch, timestamp, keys, values, base, order, pos, room - RUN_MEMORY
                )
                if pos > start:
                    self._add_run(batch, delivery, order[start:pos], timestamp)
                if reserved:
                    self._release(reserved)  # the run's bytes are counted in used instead
                    reserved = 0
                if batch.full:
                    await self._pass_on_full(more=pos < total)
                continue
            if reserved:  # reserved for a batch that has since been taken
                self._release(reserved)
                reserved = 0
            if need > self.limit:
                delivery.record_failed(i, too_large_for_buffer(need, topic, self.limit))
                pos += 1
                continue
            reserved = min(max(need, q.batch_limit), self.limit)
            try:
                await self.reserve(reserved, topic, max(0.0, deadline - time.monotonic()))
            except KafkaError as e:
                self._fail_records(delivery, order[pos:], e)
                return

    async def _append_each(
        self,
        topic: str,
        timestamp: int,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        base: int,
        order: list[int],
        delivery: BulkDelivery,
        deadline: float,
        keyless: RecordPartitioner,
    ) -> None:
        """:meth:`append_run`'s keyless records, placed as ``send()`` places each.

        Records go a run at a time into the sticky partition's open batch while no record
        of the run could move the topic on: the bytes counted stay under twice the batch
        limit (Java's second rule), and a batch is only closed by the record after the
        run. The run's bytes are then counted at once, as the records' one by one would
        be. A record that needs a new batch, memory, or may move the topic goes alone
        through the routine (:meth:`_append_one`)."""
        pos, total = 0, len(order)
        while pos < total:
            if self.shut_down is None and not self._waiters:
                partition = append_core.sticky_partition(self, keyless, topic)
                q = self.queue_for(topic, partition)
                batch = q.batches[-1] if q.batches and not q.batches[-1].full else None
                if batch is not None:
                    limit = q.batch_limit
                    # Bytes the run may add with no record reaching 2 * limit counted.
                    cap = 2 * limit - keyless.produced.get(topic, 0) - 1
                    room = self.limit - self.budget.used - RUN_MEMORY
                    before, start = len(batch.buf), pos
                    pos = append_core.append_run(
                        self, batch, timestamp, keys, values, base, order, pos, min(room, cap)
                    )
                    if pos > start:
                        self._add_run(batch, delivery, order[start:pos], timestamp)
                        size = len(batch.buf)
                        keyless.update(topic, partition, size - before, limit, size >= limit)
                    if batch.full:  # the record after the run (maybe its first) did not fit
                        filled(self)
                        await self._pass_on_full(more=pos < total)
                    if pos > start or batch.full:
                        continue
            i = order[pos]
            await self._append_one(
                topic, timestamp, values[i - base], i, delivery, deadline, keyless
            )
            pos += 1

    async def _append_one(
        self,
        topic: str,
        timestamp: int,
        value: bytes | None,
        i: int,
        delivery: BulkDelivery,
        deadline: float,
        keyless: RecordPartitioner,
    ) -> None:
        """Keyless record ``i`` of a ``send_many()`` call (its ``value``) through the
        routine, a run of its own in ``delivery``; placed again after a wait for memory,
        as ``send()``'s are."""
        need = record_size(None, value, None) + _BULK_HELD
        reserved = 0
        closed = False  # it closed a batch (filled it)
        while True:
            if self.shut_down is not None:  # it happened while this call awaited
                if reserved:
                    self._release(reserved)
                delivery.record_failed(i, self.shut_down)
                break
            room = reserved or (0 if self._waiters else self.limit - self.budget.used)
            fills = self.fills
            try:
                batch = append_core.append_record(
                    self,
                    topic,
                    -1,
                    timestamp,
                    None,
                    value,
                    None,
                    keyless,
                    need,
                    room,
                    BULK_RECORD_MEMORY,
                )
            except BaseException:  # (placed again after a wait: the topic may be gone)
                if reserved:
                    self._release(reserved)
                raise
            closed = closed or self.fills != fills
            if batch is not None:
                self._add_run(batch, delivery, [i], timestamp)
                if reserved:
                    self._release(reserved)  # its bytes are counted in used instead
                break
            if reserved:  # reserved for a batch that has since been taken
                self._release(reserved)
                reserved = 0
            whole = need + BATCH_MEMORY  # (placed again after the wait: it may start one)
            if whole > self.limit:
                delivery.record_failed(i, too_large_for_buffer(whole, topic, self.limit))
                break
            limit = self._limits.get(topic) or self._limit_for(1.0)  # a new batch's
            reserved = min(max(whole, limit), self.limit)
            try:
                await self.reserve(reserved, topic, max(0.0, deadline - time.monotonic()))
            except KafkaError as e:
                delivery.record_failed(i, e)
                break
        if closed:
            await pass_on(self, self._wakeup)  # the sender takes the full batch

    async def _pass_on_full(self, *, more: bool) -> None:
        """A ``send_many()`` run filled its batch: the call hands over
        (:func:`~aiokafka_lite._internal.hand_over.pass_on`: it wakes the sender and
        yields, unless the loop turned less than a slice ago) if it has ``more`` records,
        else only wakes the sender, which takes the full batch."""
        if more:
            await pass_on(self, self._wakeup)
        else:
            self._wakeup()

    @staticmethod
    def _fail_records(delivery: BulkDelivery, indices: list[int], exc: BaseException) -> None:
        for i in indices:
            delivery.record_failed(i, exc)

    def _add_run(
        self, batch: ProducerBatch, delivery: BulkDelivery, indices: list[int], timestamp: int
    ) -> None:
        """Record a run of ``delivery``'s records just appended to ``batch``, and count
        what the run holds (``RUN_MEMORY``) in the batch and the budget."""
        batch.memory += RUN_MEMORY
        self.budget.used += RUN_MEMORY
        bulk = batch.bulk
        if bulk is None:
            bulk = batch.bulk = {}
        runs = bulk.get(delivery)
        if runs is None:
            runs = bulk[delivery] = []
            delivery.pending += 1
        # The run was just encoded: its first record's offset delta. Nothing per record.
        runs.append((batch.count - len(indices), timestamp, indices))

    def new_batch(self, q: PartitionQueue, timestamp: int) -> ProducerBatch:
        """A new open batch at the end of ``q``; ``q``'s batch limit is first set from the
        topic's compression estimate."""
        if self._compress is not None:
            q.batch_limit = self._limits.get(q.tp.topic, q.batch_limit)
        batch = ProducerBatch(
            q,
            timestamp,
            time.monotonic(),
            self._loop.create_future(),
            self._compress,
            self._codec_id,
        )
        if not q.batches:
            self._nonempty[q] = None
        q.batches.append(batch)
        self._incomplete.add(batch)
        # A new batch starts a linger timer: the sender has something to schedule.
        self._wakeup()
        return batch

    def discard_empty(self, batch: ProducerBatch) -> None:
        """Drop a new batch whose first record failed to encode (the append core's)."""
        self.discard_queued(batch)
        self._incomplete.discard(batch)

    async def append_built(
        self, topic: str, partition: int, builder: RecordBatchBuilder, timeout: float
    ) -> asyncio.Future[RecordMetadata]:
        """Queue a batch the user built as one unit with one future: the door of
        ``send_batch()`` (and so of the Spark writer). The user's builder did the routine's
        placing and encoding; the accumulator takes its memory (waiting, FIFO, up to
        ``timeout`` s, when the budget is short) and queues it."""
        # One future for the whole batch; the buffer's size includes the header.
        size = len(builder.buf) + SEND_BOUND
        if self.budget.used + size > self.limit or self._waiters:
            await self.reserve(size, topic, timeout)
            self._check_not_shut_down(size)
        else:
            self.budget.used += size
        q = self.queue_for(topic, partition)
        batch = ProducerBatch(
            q, builder.base_timestamp, time.monotonic(), self._loop.create_future()
        )
        batch.buf, batch.count, batch.max_timestamp = (
            builder.buf,
            builder.count,
            builder.max_timestamp,
        )
        batch.compress, batch.codec_id = builder.compress, builder.codec_id
        batch.full = True
        batch.memory = size
        fut: asyncio.Future[RecordMetadata] = batch.records.add(0, builder.base_timestamp)
        # Behind any open batch, which then takes no more records: order is kept.
        q.batches.append(batch)
        self._nonempty[q] = None
        self._incomplete.add(batch)
        self._wakeup()
        return fut

    def _check_not_shut_down(self, reserved: int) -> None:
        # Memory granted just before the shutdown: the grant's waiter runs after it.
        if self.shut_down is not None:
            self._release(reserved)
            raise self.shut_down

    def discard_queued(self, batch: ProducerBatch) -> None:
        """Take a batch out of its queue (if it is there) to fail it."""
        q = batch.queue
        if batch in q.batches:
            q.batches.remove(batch)
            if not q.batches:
                self._nonempty.pop(q, None)
