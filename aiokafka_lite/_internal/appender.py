"""The append side of the accumulator: records into batches, under the budget.

Java's ``RecordAccumulator.append`` and its helpers, apart from the queues' other
side (readiness, expiry, drain: :mod:`aiokafka_lite._internal.accumulator`) so that
each half reads on its own. Every way into a batch is here: ``send()``'s general path
(:meth:`RecordAppender.append`, :meth:`RecordAppender.append_wait`), ``send_many()``
(:meth:`RecordAppender.append_many`, :meth:`RecordAppender.append_keyless`),
``send_batch()`` (:meth:`RecordAppender.append_built`) and the construction of
``send()``'s fast path (:meth:`RecordAppender.send_path`).

:class:`~aiokafka_lite._internal.accumulator.RecordAccumulator` is a
:class:`RecordAppender`: a base class, like :class:`BufferPool` under it, so that
``acc.append(...)`` stays where a Java reader looks and the hot path reads the
queues and the budget with no extra lookup.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..errors import KafkaError
from ..structs import RecordMetadata
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
from .hand_over import current_task_ref
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
        self._queues: dict[str, dict[int, PartitionQueue]] = {}
        self._nonempty: dict[PartitionQueue, None] = {}  # insertion-ordered set
        self._incomplete: set[ProducerBatch] = set()
        # Set by abort_undrained (the producer stopped or failed for good): no
        # sender will take another batch, so nothing may be appended after it.
        self.shut_down: BaseException | None = None
        # The task whose record did not fit the last batch it found open (weakly: it
        # may end). send() reads it to hand over (see hand_over).
        self.filler: weakref.ref[asyncio.Task[Any]] | None = None

    @property
    def wakeup(self) -> Callable[[], None]:
        """What wakes the sender (a batch was created or filled)."""
        return self._wakeup

    @property
    def queues(self) -> dict[str, dict[int, PartitionQueue]]:
        """topic -> partition -> its queue: the same dict for the accumulator's life."""
        return self._queues

    def send_path(self, partitioner: RecordPartitioner, max_request_size: int) -> SendPath:
        """``send()``'s fast path over this accumulator's budget and queues, placing with
        ``partitioner`` (:mod:`aiokafka_lite._internal.send_path`, compiled when built)."""
        return SendPath(self, partitioner, max_request_size)

    def queue_for(self, topic: str, partition: int) -> PartitionQueue:
        parts = self._queues.get(topic)
        if parts is None:
            parts = self._queues[topic] = {}
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
        # Taken up by each partition's next batch (see _new_batch): not a loop
        # over the topic's partitions per batch sent.
        self._limits[topic] = self._limit_for(estimate)

    def append(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] | None,
        size: int,
        reserved: int = 0,
        keyless: RecordPartitioner | None = None,
    ) -> asyncio.Future[RecordMetadata] | None:
        """Append one record and return its future: ``send()``'s general path.

        ``size`` is an upper bound of the record's encoded size. Returns None,
        appending nothing, when that much budget is not free (or others are
        already waiting for it), unless the caller holds ``reserved`` bytes.
        With ``keyless`` (a record without key or partition), ``partition`` is the
        topic's sticky one, chosen here as Java's ``RecordAccumulator.append`` does: a
        record that does not fit the open batch closes it and asks again (the topic may
        move on), and the bytes appended are counted (see ``RecordPartitioner``).
        """
        size += SEND_BOUND  # it may have to start a batch
        budget = self.budget
        used = budget.used  # (read once: a C field in the compiled build)
        if not reserved and (used + size > self.limit or self._waiters):
            return None
        added = 0
        while True:
            if keyless is not None:
                partition = self._sticky_partition(keyless, topic)
            try:
                q = self._queues[topic][partition]
            except KeyError:
                q = self.queue_for(topic, partition)
            batches = q.batches
            if batches:
                batch = batches[-1]
                if not batch.full:
                    added = batch.append(timestamp, key, value, headers, q.batch_limit)
                    if not added:
                        batch.full = True
                        self.filler = current_task_ref()
                        if keyless is not None:
                            continue  # the closed batch may move the topic on: place again
            break
        if added:
            appended = added
        else:
            batch = self._new_batch(q, timestamp)
            try:
                added = BATCH_MEMORY + batch.append(timestamp, key, value, headers, q.batch_limit)
            except BaseException:
                self._discard_empty(batch)  # never leave an empty batch in the queue
                raise
            appended = len(batch.buf)  # (Java counts a new batch's header too)
        added += SEND_RECORD_MEMORY
        batch.memory += added
        budget.used = used + added - reserved  # (nothing above changed it: no await, no callback)
        fut: asyncio.Future[RecordMetadata] = batch.records.add(batch.count - 1, timestamp)
        if keyless is not None:
            limit = q.batch_limit
            keyless.update(topic, partition, appended, limit, len(batch.buf) >= limit)
        return fut

    def _sticky_partition(self, keyless: RecordPartitioner, topic: str) -> int:
        """The topic's sticky partition for its next keyless record, moved on first if
        its bytes were reached and its batches are all full (Java's ``allBatchesFull``:
        none open, the last closed or sent). A batch at its limit but not marked full
        refuses the next record, which is then placed again: the same move."""
        partition = keyless.peek(topic)
        if keyless.produced.get(topic):
            q = self._queues.get(topic, {}).get(partition)
            if q is None or not q.batches or q.batches[-1].full:
                limit = self._batch_size if q is None else q.batch_limit
                partition = keyless.update(topic, partition, 0, limit, True)
        return partition

    def create_future(self) -> asyncio.Future[Any]:
        return self._loop.create_future()

    async def append_many(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        order: list[int],
        delivery: BulkDelivery,
        deadline: float,
    ) -> None:
        """Append records ``order`` (indices into keys/values) of a ``send_many()`` call.

        No future per record: their outcome reaches ``delivery`` per batch.
        Whole runs of records are encoded at once into the open batch; memory
        is awaited (FIFO, until the call's ``deadline`` on the monotonic clock)
        when the budget runs out, and the loop yields each time a batch fills
        so the sender can send it.
        """
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
            need = record_size(keys[i], values[i], None) + BULK_RECORD_MEMORY + RUN_MEMORY
            if batch is None:
                need += BATCH_MEMORY
            room = reserved or (0 if self._waiters else self.limit - self.budget.used)
            if room >= need:
                if batch is None:
                    batch = self._new_batch(q, timestamp)
                    room -= BATCH_MEMORY
                    batch.memory += BATCH_MEMORY
                    self.budget.used += BATCH_MEMORY
                start = pos
                pos = self._append_run(
                    batch, timestamp, keys, values, order, pos, room - RUN_MEMORY
                )
                if pos > start:
                    self._add_run(batch, delivery, order[start:pos], timestamp)
                    batch.memory += RUN_MEMORY
                    self.budget.used += RUN_MEMORY
                if reserved:
                    self._release(reserved)  # the run's bytes are counted in used instead
                    reserved = 0
                if batch.full:
                    self._wakeup()
                    if pos < total:
                        await asyncio.sleep(0)  # let the sender take the full batch
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

    async def append_keyless(
        self,
        topic: str,
        timestamp: int,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        order: list[int],
        delivery: BulkDelivery,
        deadline: float,
        partitioner: RecordPartitioner,
    ) -> None:
        """Append ``send_many()``'s keyless records ``order`` one by one, each placed as
        :meth:`append` places a keyless record (the topic's sticky partition, placed again
        when it closes a batch it does not fit; its bytes counted after), reported to
        ``delivery`` as :meth:`append_many` reports its runs."""
        for i in order:
            filled = False
            while True:
                if self.shut_down is not None:
                    delivery.record_failed(i, self.shut_down)
                    break
                p = self._sticky_partition(partitioner, topic)
                q = self.queue_for(topic, p)
                batch = q.batches[-1] if q.batches and not q.batches[-1].full else None
                before = 0 if batch is None else len(batch.buf)
                if batch is not None:
                    need = record_size(None, values[i], None) + BULK_RECORD_MEMORY + RUN_MEMORY
                    room = 0 if self._waiters else self.limit - self.budget.used
                    if room >= need:
                        run = [i]
                        budget = room - RUN_MEMORY
                        if self._append_run(batch, timestamp, keys, values, run, 0, budget) == 0:
                            filled = True
                            continue  # it closed the batch: placed again (it may move on)
                        self._add_run(batch, delivery, run, timestamp)
                        batch.memory += RUN_MEMORY
                        self.budget.used += RUN_MEMORY
                        self._count_keyless(partitioner, topic, p, q, batch, before)
                        break
                # No open batch, or no memory now: append_many starts one or waits.
                await self.append_many(topic, p, timestamp, keys, values, [i], delivery, deadline)
                last = q.batches[-1] if q.batches else None
                if last is not None and (last is not batch or len(last.buf) != before):
                    self._count_keyless(
                        partitioner, topic, p, q, last, 0 if last is not batch else before
                    )
                break
            if filled:
                self._wakeup()
                await asyncio.sleep(0)  # let the sender take the full batch

    @staticmethod
    def _count_keyless(
        partitioner: RecordPartitioner,
        topic: str,
        partition: int,
        q: PartitionQueue,
        batch: ProducerBatch,
        before: int,
    ) -> None:
        # The bytes a keyless record added (a batch's header too, for its first record).
        limit = q.batch_limit
        size = len(batch.buf)
        partitioner.update(topic, partition, size - before, limit, size >= limit)

    def _append_run(
        self,
        batch: ProducerBatch,
        timestamp: int,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        order: list[int],
        pos: int,
        budget: int,
    ) -> int:
        """Encode ``order[pos:]`` into ``batch`` up to its limit or ``budget`` bytes.

        Counts the bytes in ``used``; marks the batch full when the next record
        would not fit its limit. Returns the position it stopped at.
        """
        limit = batch.queue.batch_limit
        before, count = len(batch.buf), batch.count
        end = batch.append_many(
            timestamp, keys, values, order, pos, limit, budget, BULK_RECORD_MEMORY
        )
        added = len(batch.buf) - before + (batch.count - count) * BULK_RECORD_MEMORY
        batch.memory += added
        self.budget.used += added
        if end < len(order):
            i = order[end]
            if len(batch.buf) + record_size(keys[i], values[i], None) > limit:
                batch.full = True
        return end

    @staticmethod
    def _fail_records(delivery: BulkDelivery, indices: list[int], exc: BaseException) -> None:
        for i in indices:
            delivery.record_failed(i, exc)

    @staticmethod
    def _add_run(
        batch: ProducerBatch, delivery: BulkDelivery, indices: list[int], timestamp: int
    ) -> None:
        bulk = batch.bulk
        if bulk is None:
            bulk = batch.bulk = {}
        runs = bulk.get(delivery)
        if runs is None:
            runs = bulk[delivery] = []
            delivery.pending += 1
        # The run was just encoded: its first record's offset delta. Nothing per record.
        runs.append((batch.count - len(indices), timestamp, indices))

    def _new_batch(self, q: PartitionQueue, timestamp: int) -> ProducerBatch:
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

    def _discard_empty(self, batch: ProducerBatch) -> None:
        self.discard_queued(batch)
        self._incomplete.discard(batch)

    async def append_wait(
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
        """Wait (FIFO, up to ``timeout`` s) for ``size`` bytes of budget, then append
        (with ``keyless``, :meth:`append` chooses the partition then)."""
        reserved = size + SEND_BOUND
        await self.reserve(reserved, topic, timeout)
        self._check_not_shut_down(reserved)
        try:
            fut = self.append(
                topic, partition, timestamp, key, value, headers, size, reserved, keyless
            )
        except BaseException:  # (with keyless, placed only now: the topic may be gone)
            self._release(reserved)
            raise
        if self._waiters:
            self._grant()  # size is an upper bound: what the record left may let the next one in
        # With the memory reserved, append cannot refuse the record.
        return cast("asyncio.Future[RecordMetadata]", fut)

    async def append_built(
        self, topic: str, partition: int, builder: RecordBatchBuilder, timeout: float
    ) -> asyncio.Future[RecordMetadata]:
        """Queue a batch the user built (``send_batch``) as one unit with one future."""
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
