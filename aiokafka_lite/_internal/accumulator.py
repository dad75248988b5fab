"""Per-partition queues of record batches, with a shared memory budget.

Java's ``RecordAccumulator``, rebuilt for one event loop (its ``BufferPool`` is
:mod:`aiokafka_lite._internal.buffer_pool`, its ``ProducerBatch``
:mod:`aiokafka_lite._internal.producer_batch`). This module is the sender's side of
it: readiness, expiry, drain, requeue, deallocate (Java's ``ready``, ``drain``,
``expiredBatches``). The append side (``append``, ``append_run``, ``append_built``) is
its base class, :class:`~aiokafka_lite._internal.appender.RecordAppender`.

* Each partition has a :class:`PartitionQueue`: a deque of batches whose last
  one is open for appends. A deque, not an ``asyncio.Queue``: a retried batch
  must go back to the *front*, and the sender polls partitions for readiness
  rather than awaiting each one.
* Appending is synchronous and lean: two dict lookups, one encode into the open
  batch's buffer, one future. The sender is woken only when a batch is created
  or fills, never per record.
* ``buffer_memory`` bounds the bytes actually buffered (not a whole
  ``batch_size`` per open batch, which makes Java's pool scale with the number
  of partitions). When it is used up, the append
  queues the caller FIFO and reserves memory for it as batches complete; a
  waiting caller also makes every batch sendable at once (Java's "exhausted").
* Only partitions holding batches are visited by :meth:`ready`, so its cost
  follows the data buffered, not the number of topics or partitions known.
* A partition has at most ``max_in_flight_per_partition`` batches in flight, and one
  until the broker acknowledged a batch of the idempotent producer's id there
  (:attr:`sequenced`): Kafka writes the first batch it sees from a producer it holds
  no state for whatever its sequence number, so a second batch must not overtake a
  first one that is refused.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Container
from typing import Any

from ..errors import KafkaError
from ..structs import TopicPartition
from .appender import RecordAppender
from .buffer_pool import BATCH_MEMORY, SEND_BOUND, SEND_RECORD_MEMORY
from .bulk_delivery import BulkDelivery
from .compression import Compressor
from .hand_over import HAND_OVER_SLICE
from .producer_batch import PartitionQueue, ProducerBatch

# The budget's constants and the batch classes are imported from here too.
__all__ = [
    "BATCH_MEMORY",
    "SEND_BOUND",
    "SEND_RECORD_MEMORY",
    "BulkDelivery",
    "PartitionQueue",
    "ProducerBatch",
    "RecordAccumulator",
]


class _EveryPartition:
    """Without idempotence no partition waits for a first acknowledgement."""

    def __contains__(self, tp: object) -> bool:
        return True


_EVERY_PARTITION = _EveryPartition()


class RecordAccumulator(RecordAppender):
    """The partition queues and the ``buffer_memory`` budget of one producer.

    Records come in through the appender's methods (:class:`RecordAppender`); every
    path that finishes a batch ends in :meth:`deallocate`, which gives the batch's
    memory back to the budget (``used``, :class:`BufferPool`).
    """

    def __init__(
        self,
        *,
        batch_size: int,
        linger_ms: float,
        buffer_memory: int,
        delivery_timeout_ms: float,
        max_in_flight_per_partition: int,
        wakeup: Callable[[], None],
        compress: Compressor | None = None,
        codec_id: int = 0,
        max_request_size: int = 1 << 20,
    ) -> None:
        super().__init__(
            batch_size=batch_size,
            buffer_memory=buffer_memory,
            wakeup=wakeup,
            compress=compress,
            codec_id=codec_id,
            max_request_size=max_request_size,
        )
        self._linger = linger_ms / 1000
        self._delivery_timeout = delivery_timeout_ms / 1000
        self._max_in_flight = max_in_flight_per_partition
        #: With idempotence, the partitions where the broker acknowledged a batch of
        #: the producer's id (``IdempotenceState.known_partitions``); any other has one
        #: batch in flight, so that its first batch is written first.
        self.sequenced: Container[TopicPartition] = _EVERY_PARTITION
        self.hand_over_slice = min(self._linger, HAND_OVER_SLICE)
        self._unsendable: list[tuple[ProducerBatch, Exception]] = []
        self._flushing = 0
        self.closing = False

    # -- the sender's view ---------------------------------------------------------

    def has_pending(self) -> bool:
        return bool(self._nonempty)

    def has_incomplete(self) -> bool:
        return bool(self._incomplete)

    def ready(
        self, partitions_by_topic: dict[str, Any], now: float
    ) -> tuple[dict[int, list[PartitionQueue]], float, bool, list[ProducerBatch]]:
        """Find partitions with a sendable batch, grouped by leader.

        Returns ``(ready by node, seconds until the next batch becomes sendable,
        whether some partition's leader is unknown, batches that expired)``.
        """
        self.turned_at = time.perf_counter()  # (the hand-over's clock)
        ready: dict[int, list[PartitionQueue]] = {}
        next_delay = 3600.0
        unknown_leader = False
        expired: list[ProducerBatch] = []
        force = bool(self._flushing or self.closing or self._waiters)
        linger, sequenced = self._linger, self.sequenced
        for q in list(self._nonempty):
            batches = q.batches
            self._expire(q, now, expired)
            if not batches:
                continue
            if q.in_flight and (q.in_flight >= self._max_in_flight or q.tp not in sequenced):
                continue
            topic, partition = q.tp
            parts = partitions_by_topic.get(topic)
            try:
                leader = (
                    parts[partition].leader if parts is not None and partition < len(parts) else -1
                )
            except Exception as e:  # a partition no valid record names (not an int)
                self._set_aside(q, e)
                continue
            if leader < 0:
                unknown_leader = True
                continue
            first = batches[0]
            if first.retry_at > now:
                next_delay = min(next_delay, first.retry_at - now)
                continue
            if q.aborted is not None:
                if q.in_flight:
                    continue  # what is in flight fails too, or lands: wait for it
                q.aborted = None  # the partition starts a fresh run
            if first.attempts and q.in_flight:
                # A retry goes out alone: batches sent after it must learn their
                # fate first, or it could land behind them.
                continue
            waited = now - first.created
            if force or first.full or len(batches) > 1 or waited >= linger:
                ready.setdefault(leader, []).append(q)
            else:
                next_delay = min(next_delay, linger - waited)
        return ready, next_delay, unknown_leader, expired

    def all_blocked(self) -> bool:
        """Every partition with a batch queued has its most batches in flight already
        (one, where the broker has not yet acknowledged one of the producer's current
        epoch): nothing can be sent before an answer comes (and an answer wakes the
        sender)."""
        limit, sequenced = self._max_in_flight, self.sequenced
        return all(
            q.in_flight >= limit or (q.in_flight and q.tp not in sequenced) for q in self._nonempty
        )

    def _set_aside(self, q: PartitionQueue, error: Exception) -> None:
        # Its batches can never be sent: the sender fails them (take_unsendable), and
        # the other partitions are not held up by them.
        while q.batches:
            batch = q.batches.popleft()
            batch.full = True
            self._unsendable.append((batch, error))
        self._nonempty.pop(q, None)

    def take_unsendable(self) -> list[tuple[ProducerBatch, Exception]]:
        """Batches that :meth:`ready` found unsendable, with the reason; the caller fails them."""
        if not self._unsendable:
            return []
        unsendable, self._unsendable = self._unsendable, []
        return unsendable

    def _expire(self, q: PartitionQueue, now: float, expired: list[ProducerBatch]) -> None:
        # Only batches still in the queue expire here; one in flight is
        # bounded by request_timeout_ms and judged when its answer comes.
        batches = q.batches
        while batches and now - batches[0].created >= self._delivery_timeout:
            batch = batches.popleft()
            batch.full = True
            expired.append(batch)
        if not batches:
            self._nonempty.pop(q, None)

    def drain(self, queues: list[PartitionQueue], max_request_size: int) -> list[ProducerBatch]:
        """Take the first batch of each queue, up to ``max_request_size`` bytes."""
        out: list[ProducerBatch] = []
        size = 0
        for q in queues:
            batch = q.batches[0]
            if out and size + len(batch.buf) > max_request_size:
                break
            q.batches.popleft()
            if not q.batches:
                del self._nonempty[q]
            batch.full = True
            q.in_flight += 1
            size += len(batch.buf)
            out.append(batch)
        return out

    def requeue(self, batch: ProducerBatch, retry_at: float) -> None:
        """Put a batch that failed retriably back at the front of its partition.

        Several retried batches of one partition line up in sequence order
        (they may come back in any order when up to five were in flight).
        """
        q = batch.queue
        q.in_flight -= 1
        batch.attempts += 1
        batch.retry_at = retry_at
        batches = q.batches
        i = 0
        if batch.base_sequence >= 0:
            while (
                i < len(batches)
                and batches[i].base_sequence >= 0
                and batches[i].base_sequence < batch.base_sequence
            ):
                i += 1
        batches.insert(i, batch)
        self._nonempty[q] = None

    def in_flight_done(self, batch: ProducerBatch) -> None:
        batch.queue.in_flight -= 1

    def deallocate(self, batch: ProducerBatch) -> None:
        """The batch is finished (delivered or failed): free its memory."""
        if batch in self._incomplete:
            self._incomplete.discard(batch)
            self._release(batch.memory)

    # -- flush / close ---------------------------------------------------------------

    def begin_flush(self) -> None:
        self._flushing += 1

    def end_flush(self) -> None:
        self._flushing -= 1

    async def await_flush_completion(self) -> None:
        pending = [b.done for b in self._incomplete]
        if pending:
            await asyncio.wait(pending)

    def abort_undrained(self, exc: KafkaError, *, for_good: bool = True) -> list[ProducerBatch]:
        """Fail every batch not yet handed to the sender; ``for_good``: and refuse appends
        from now on (not after a refused login, whose next records try again)."""
        if for_good:
            self.shut_down = exc
        aborted = []
        for q in list(self._nonempty):
            while q.batches:
                batch = q.batches.popleft()
                batch.fail(exc)
                self.deallocate(batch)
                aborted.append(batch)
        self._nonempty.clear()
        return aborted

    def queued_partitions(self) -> list[TopicPartition]:
        """Partitions with a batch waiting in their queue."""
        return [q.tp for q in self._nonempty]

    def queued_batches(self) -> list[ProducerBatch]:
        """Every batch waiting in a queue (not in flight), oldest first per partition."""
        return [b for q in self._nonempty for b in q.batches]
