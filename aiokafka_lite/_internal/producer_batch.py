"""One partition's batches and what the producer tracks about each (Java's ``ProducerBatch``).

A :class:`ProducerBatch` is a record batch being encoded (a
:class:`~aiokafka_lite._internal.records.RecordBatchBuilder`) plus its delivery: the futures of its
``send()`` records, the ``send_many()`` calls it holds records of, its attempts, retry
time, sequence number and the ``buffer_memory`` it holds. It is settled once: completed
with the broker's answer, completed unacknowledged (acks=0) or failed.

A :class:`PartitionQueue` is the deque of one partition's batches that Java's
``RecordAccumulator`` keeps per ``TopicPartition``: oldest first, the last one open.
"""

from __future__ import annotations

import asyncio
import collections

from ..structs import TopicPartition
from .bulk_delivery import BulkDelivery
from .compression import Compressor
from .delivery import RecordFutures
from .send_path import ProducerBatchBase

__all__ = ["PartitionQueue", "ProducerBatch"]


class ProducerBatch(ProducerBatchBase):
    """A record batch plus what the producer needs to track its delivery.

    Its encoder and the fields send()'s fast path changes (``full``, ``memory``,
    ``records``) are its base class,
    :class:`~aiokafka_lite._internal.send_path.ProducerBatchBase`.
    """

    __slots__ = (
        "attempts",
        "base_sequence",
        "bulk",
        "created",
        "done",
        "last_error",
        "maybe_written",
        "queue",
        "retry_at",
    )

    def __init__(
        self,
        queue: PartitionQueue,
        base_timestamp: int,
        now: float,
        done: asyncio.Future[None],
        compress: Compressor | None = None,
        codec_id: int = 0,
    ) -> None:
        super().__init__(base_timestamp, compress, codec_id)
        self.queue = queue
        # The futures of the records sent with send(), each knowing its offset delta
        # and timestamp; a send_many() record has none (it is reported through bulk).
        self.records = RecordFutures(done.get_loop())
        # Each send_many() call's runs in this batch: (first offset delta, timestamp,
        # the records' indices in the call).
        self.bulk: dict[BulkDelivery, list[tuple[int, int, list[int]]]] | None = None
        self.created = now
        self.retry_at = 0.0
        self.attempts = 0
        self.full = False  # no more appends: filled up, or drained for sending
        self.memory = 0  # bytes of buffer_memory this batch holds
        self.done = done  # resolved when every record's future is
        self.base_sequence = -1  # assigned on first send by an idempotent producer
        # A request carrying it timed out or lost its connection: it may be on
        # the broker already, so re-sending it is only safe with its sequence.
        self.maybe_written = False
        # Why its last attempt failed (it is being retried): named when it expires.
        self.last_error: BaseException | None = None

    @property
    def topic_partition(self) -> TopicPartition:
        return self.queue.tp

    # Each of complete, complete_unacknowledged and fail settles the batch once: the
    # first wins (RecordFutures.settled), later calls do nothing. Records first, then
    # send_many() reports, then ``done``: a flush() waiter never wakes before them.

    def complete(self, base_offset: int, log_append_time: int, log_start_offset: int) -> None:
        records = self.records
        if records.settled:
            return
        tp = self.queue.tp
        records.complete(tp, base_offset, log_append_time, log_start_offset)
        if self.bulk is not None:
            for delivery, runs in self.bulk.items():
                delivery.batch_completed(tp, base_offset, log_start_offset, log_append_time, runs)
        if not self.done.done():
            self.done.set_result(None)

    def complete_unacknowledged(self) -> None:
        """acks=0: written to the socket, nothing more is known. Each record's
        future resolves to None (as aiokafka's); a send_many() report has offset -1."""
        records = self.records
        if records.settled:
            return
        records.complete_none()
        if self.bulk is not None:
            for delivery, runs in self.bulk.items():
                delivery.batch_completed(self.queue.tp, -1, -1, -1, runs)
        if not self.done.done():
            self.done.set_result(None)

    def fail(self, exc: BaseException) -> None:
        records = self.records
        if records.settled:
            return
        records.fail(exc)
        if self.bulk is not None:
            for delivery, runs in self.bulk.items():
                delivery.batch_failed(exc, runs)
        if not self.done.done():
            self.done.set_result(None)

    def __repr__(self) -> str:
        topic, partition = self.queue.tp
        return f"<ProducerBatch {topic}[{partition}] records={self.count} bytes={len(self.buf)}>"


class PartitionQueue:
    """The batches of one partition, oldest first; the last may be open."""

    __slots__ = ("aborted", "batch_limit", "batches", "in_flight", "tp")

    def __init__(self, topic: str, partition: int, batch_limit: int) -> None:
        self.tp = TopicPartition(topic, partition)
        # Uncompressed bytes the open batch may take: batch_size, or more when
        # the topic's records compress well (so compressed batches near
        # batch_size); set from the topic's estimate when a batch is created.
        self.batch_limit = batch_limit
        self.batches: collections.deque[ProducerBatch] = collections.deque()
        self.in_flight = 0
        # With fail_partition_on_error: the failure that batches sent before
        # it must share; cleared once nothing of the partition is in flight.
        self.aborted: BaseException | None = None
