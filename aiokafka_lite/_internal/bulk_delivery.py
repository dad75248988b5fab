"""The one future of a ``send_many()`` call, resolved from the batches its records went to.

A ``send_many()`` record gets no future of its own: each batch holding some of the call's
records reports them, one segment per run (records appended together, so at consecutive
offsets, named by their positions in the call), and the call's future resolves when the
last of those batches is done. Java has no bulk
send; the closest is one ``ProduceRequestResult`` per batch shared by its records, which
is what :mod:`aiokafka_lite._internal.delivery` does for ``send()``'s records.
"""

from __future__ import annotations

import asyncio

from ..errors import DeliveryFailedError
from ..structs import DeliveryReport, DeliverySegment, RecordMetadata, TopicPartition
from .delivery import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

__all__ = ["BulkDelivery"]


class BulkDelivery:
    """The one future of a ``send_many()`` call, instead of a future per record.

    Each batch holding some of the call's records reports them, one segment
    per run; the future resolves when the last such batch is done, to a
    :class:`DeliveryReport`, or fails with
    :class:`~aiokafka_lite.errors.DeliveryFailedError` (carrying the report)
    when any record failed.
    """

    __slots__ = ("count", "errors", "future", "pending", "sealed", "segments", "topic")

    def __init__(self, future: asyncio.Future[DeliveryReport], topic: str, count: int):
        self.future = future
        self.topic = topic
        self.count = count
        self.segments: list[DeliverySegment] = []
        self.errors: dict[int, BaseException] = {}
        self.pending = 0  # batches (or futures) still to report
        self.sealed = False  # every record is appended: no more batches to come

    def batch_completed(
        self,
        tp: TopicPartition,
        base_offset: int,
        log_start_offset: int,
        log_append_time: int,
        runs: list[tuple[int, int, list[int]]],
    ) -> None:
        ts_type = TIMESTAMP_CREATE_TIME if log_append_time == -1 else TIMESTAMP_LOG_APPEND_TIME
        for delta, timestamp, indices in runs:
            first = base_offset + delta if base_offset >= 0 else -1
            if ts_type == TIMESTAMP_LOG_APPEND_TIME:
                timestamp = log_append_time
            self.segments.append(
                DeliverySegment(tp, first, timestamp, ts_type, log_start_offset, indices)
            )
        self._reported()

    def batch_failed(self, exc: BaseException, runs: list[tuple[int, int, list[int]]]) -> None:
        errors = self.errors
        for _, _, indices in runs:
            for i in indices:
                errors[i] = exc
        self._reported()

    def record_failed(self, index: int, exc: BaseException) -> None:
        """A record that never reached a batch (bad record, no memory in time)."""
        self.errors[index] = exc

    def track(self, index: int, fut: asyncio.Future[RecordMetadata]) -> None:
        """Report a record sent with its own future (the interceptor path)."""
        self.pending += 1

        def done(f: asyncio.Future[RecordMetadata]) -> None:
            if f.cancelled():
                self.record_failed(index, asyncio.CancelledError())
            elif (exc := f.exception()) is not None:
                self.record_failed(index, exc)
            else:
                md = f.result()
                self.segments.append(
                    DeliverySegment(
                        md.topic_partition,
                        md.offset,
                        md.timestamp,
                        md.timestamp_type,
                        md.log_start_offset,
                        [index],
                    )
                )
            self._reported()

        fut.add_done_callback(done)

    def seal(self) -> None:
        self.sealed = True
        if not self.pending:
            self._resolve()

    def _reported(self) -> None:
        self.pending -= 1
        if self.sealed and not self.pending:
            self._resolve()

    def _resolve(self) -> None:
        if self.future.done():  # the caller cancelled it
            return
        report = DeliveryReport(self.count, self.segments, self.errors)
        if self.errors:
            self.future.set_exception(DeliveryFailedError(self.topic, report))
        else:
            self.future.set_result(report)
