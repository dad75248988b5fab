"""Producer metrics under Java's names, over a sliding window as Java computes them.

Everything is recorded per request or per batch by the sender (and per wait by the
accumulator), never per record in ``send()``: a batch's record count is added in one
step. Rates, averages and maxima cover the last ``window`` seconds (30 s, Java's
``metrics.sample.window.ms``), kept as a few time buckets: an old bucket drops out whole,
so a figure is exact to within one bucket (3 s) at the window's far edge.

:meth:`ProducerMetrics.snapshot` gives one dict, e.g.::

    {"record-send-rate": 10412.0, "record-send-total": 312360, "batch-size-avg": 15873.2,
     "request-latency-avg": 2.1, "record-queue-time-avg": 5.4, ...}

Times are in milliseconds (as Java's), except ``bufferpool-wait-time-ns-total``.
"""

from __future__ import annotations

import collections
import time

__all__ = ["METRIC_DOCS", "ProducerMetrics", "Windowed"]

WINDOW_S = 30.0
_BUCKETS = 10

# name -> what it measures; the docs' metric table is generated from this (docs/metrics.md).
METRIC_DOCS: dict[str, str] = {
    "record-send-rate": "records sent per second (counted when their request goes out)",
    "record-send-total": "records sent (a retried record counts again)",
    "record-retry-rate": "records per second put back for a retry",
    "record-retry-total": "records put back for a retry",
    "record-error-rate": "records per second that failed for good",
    "record-error-total": "records that failed for good",
    "record-size-avg": "average record size in bytes, uncompressed, with its framing",
    "batch-size-avg": "average bytes of a batch as sent (after compression)",
    "batch-size-max": "largest batch sent, in bytes",
    "batch-total": "batches sent",
    "compression-rate-avg": "average compressed/uncompressed size of batches (1.0: none)",
    "records-per-request-avg": "average records per Produce request",
    "request-rate": "Produce requests sent per second",
    "request-total": "Produce requests sent",
    "outgoing-byte-rate": "record-batch bytes sent per second",
    "request-latency-avg": "average ms from a Produce request to its response",
    "request-latency-max": "longest ms from a Produce request to its response",
    "requests-in-flight": "Produce requests sent and not answered yet",
    "produce-throttle-time-avg": "average ms brokers asked us to hold back (quotas)",
    "produce-throttle-time-max": "longest ms a broker asked us to hold back",
    "metadata-age": "seconds since the cluster metadata was last refreshed",
    "record-queue-time-avg": "average ms a batch waited in the buffer before it was sent",
    "record-queue-time-max": "longest ms a batch waited in the buffer",
    "buffer-total-bytes": "buffer_memory",
    "buffer-available-bytes": "buffer_memory not taken by buffered records",
    "bufferpool-wait-ratio": "fraction of time send() callers spent waiting for buffer memory",
    "bufferpool-wait-time-ns-total": "total ns send() callers waited for buffer memory",
    "waiting-threads": "send() calls waiting for buffer memory now",
}


class Windowed:
    """Sum, count and max of recorded values over the last ``window`` seconds."""

    __slots__ = ("_buckets", "_created", "_span", "_window")

    def __init__(self, window: float = WINDOW_S, now: float | None = None) -> None:
        self._window = window
        self._span = window / _BUCKETS
        self._created = time.monotonic() if now is None else now
        # [start, count, total, max], oldest first
        self._buckets: collections.deque[list[float]] = collections.deque()

    def record(self, value: float, now: float, count: int = 1) -> None:
        buckets = self._buckets
        if not buckets or now - buckets[-1][0] >= self._span:
            buckets.append([now, count, value, value])
            if len(buckets) > _BUCKETS:
                buckets.popleft()
            return
        b = buckets[-1]
        b[1] += count
        b[2] += value
        if value > b[3]:
            b[3] = value

    def _live(self, now: float) -> list[list[float]]:
        start = now - self._window
        return [b for b in self._buckets if b[0] >= start]

    def rate(self, now: float) -> float:
        """Sum of values per second over the window (or since creation, if younger)."""
        elapsed = min(self._window, now - self._created)
        total = sum(b[2] for b in self._live(now))
        return total / elapsed if elapsed > 0 else 0.0

    def avg(self, now: float) -> float:
        live = self._live(now)
        count = sum(b[1] for b in live)
        return sum(b[2] for b in live) / count if count else 0.0

    def max(self, now: float) -> float:
        return max((b[3] for b in self._live(now)), default=0.0)

    def count_rate(self, now: float) -> float:
        """Recorded counts (not values) per second: e.g. requests per second."""
        elapsed = min(self._window, now - self._created)
        count = sum(b[1] for b in self._live(now))
        return count / elapsed if elapsed > 0 else 0.0


class ProducerMetrics:
    """What the sender and accumulator record; :meth:`snapshot` turns it into names."""

    def __init__(self) -> None:
        now = time.monotonic()
        self.records_sent = Windowed(now=now)  # value: records, one entry per batch
        self.records_retried = Windowed(now=now)
        self.records_failed = Windowed(now=now)
        self.record_bytes = Windowed(now=now)  # value: raw bytes, count: records
        self.batch_bytes = Windowed(now=now)
        self.compression = Windowed(now=now)
        self.records_per_request = Windowed(now=now)
        self.request_latency = Windowed(now=now)  # ms
        self.queue_time = Windowed(now=now)  # ms, per batch
        self.throttle_time = Windowed(now=now)  # ms, per response
        self.buffer_wait = Windowed(now=now)  # s
        self.buffer_wait_ns_total = 0
        self.requests_in_flight = 0

    # -- recording (sender and accumulator) -----------------------------------------

    def batch_sent(self, records: int, raw: int, sent: int, queued_s: float, now: float) -> None:
        """A batch goes out for the first time (``raw``/``sent``: bytes before/after
        compression); retries are not counted again here."""
        self.record_bytes.record(raw, now, records)
        self.batch_bytes.record(sent, now)
        self.compression.record(sent / raw if raw else 1.0, now)
        self.queue_time.record(queued_s * 1000, now)

    def request_sent(self, records: int, now: float) -> None:
        self.records_sent.record(records, now)
        self.records_per_request.record(records, now)
        self.requests_in_flight += 1

    def request_done(self, sent_at: float, now: float) -> None:
        self.requests_in_flight -= 1
        self.request_latency.record((now - sent_at) * 1000, now)

    def throttled(self, throttle_ms: int, now: float) -> None:
        self.throttle_time.record(throttle_ms, now)

    def retried(self, records: int, now: float) -> None:
        self.records_retried.record(records, now)

    def failed(self, records: int, now: float) -> None:
        self.records_failed.record(records, now)

    def waited_for_buffer(self, seconds: float) -> None:
        self.buffer_wait.record(seconds, time.monotonic())
        self.buffer_wait_ns_total += int(seconds * 1e9)

    # -- reading -----------------------------------------------------------------------

    def snapshot(self, now: float | None = None) -> dict[str, float]:
        """The windowed metrics (counters and buffer gauges are added by the producer)."""
        now = time.monotonic() if now is None else now
        requests = self.records_per_request
        return {
            "record-send-rate": self.records_sent.rate(now),
            "record-retry-rate": self.records_retried.rate(now),
            "record-error-rate": self.records_failed.rate(now),
            "record-size-avg": self.record_bytes.avg(now),
            "batch-size-avg": self.batch_bytes.avg(now),
            "batch-size-max": self.batch_bytes.max(now),
            "compression-rate-avg": self.compression.avg(now) or 1.0,
            "records-per-request-avg": requests.avg(now),
            "request-rate": requests.count_rate(now),
            "outgoing-byte-rate": self.batch_bytes.rate(now),
            "request-latency-avg": self.request_latency.avg(now),
            "request-latency-max": self.request_latency.max(now),
            "requests-in-flight": self.requests_in_flight,
            "produce-throttle-time-avg": self.throttle_time.avg(now),
            "produce-throttle-time-max": self.throttle_time.max(now),
            "record-queue-time-avg": self.queue_time.avg(now),
            "record-queue-time-max": self.queue_time.max(now),
            "bufferpool-wait-ratio": self.buffer_wait.rate(now),
            "bufferpool-wait-time-ns-total": self.buffer_wait_ns_total,
        }
