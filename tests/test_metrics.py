"""Producer metrics: the windowed arithmetic, then real producing with known amounts.

No timing assertions: counts are exact; averages and rates are checked against bounds
that follow from what was sent (rates against the wall-clock interval around the run).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import TopicFactory
from mockcluster import MockCluster
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import KafkaError
from aiokafka_lite.metrics import METRIC_DOCS, Windowed

API_PRODUCE = 0
ERR_REQUEST_TIMED_OUT = 7
ERR_INVALID_RECORD = 87


def test_windowed_sum_avg_max_and_rate() -> None:
    w = Windowed(window=30.0, now=100.0)
    w.record(10, 101.0, count=2)
    w.record(30, 102.0)
    w.record(5, 110.0)
    assert w.avg(110.0) == pytest.approx(45 / 4)
    assert w.max(110.0) == 30
    assert w.rate(110.0) == pytest.approx(45 / 10)  # younger than the window: since creation
    assert w.count_rate(110.0) == pytest.approx(4 / 10)  # counts, not values


def test_windowed_forgets_what_is_older_than_the_window() -> None:
    w = Windowed(window=30.0, now=0.0)
    w.record(1000, 1.0)
    assert w.max(30.0) == 1000
    w.record(7, 40.0)
    assert w.max(40.0) == 7  # the bucket that began at 1.0 is out of [10, 40]
    assert w.avg(45.0) == 7
    assert w.rate(45.0) == pytest.approx(7 / 30)
    assert Windowed(now=0.0).avg(1.0) == 0.0 and Windowed(now=0.0).max(1.0) == 0.0


async def test_metrics_after_known_amounts(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(2)
    n, size = 2000, 100
    before_start = time.monotonic()
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20) as producer:
        after_start = time.monotonic()
        assert producer.metrics()["record-send-total"] == 0
        futures = [await producer.send(topic, b"v" * size, key=b"%d" % i) for i in range(n)]
        await asyncio.gather(*futures)
        await producer.flush()
        before_snapshot = time.monotonic()
        m = producer.metrics()
        after_snapshot = time.monotonic()
    assert set(METRIC_DOCS) == set(m)  # every documented metric is there, nothing else
    assert m["record-send-total"] == n
    assert m["record-error-total"] == 0 and m["record-error-rate"] == 0
    assert m["record-retry-total"] == 0 and m["record-retry-rate"] == 0
    requests, batches = m["request-total"], m["batch-total"]
    assert 1 <= requests <= batches
    assert m["records-per-request-avg"] == pytest.approx(n / requests)
    assert n / (after_snapshot - before_start) <= m["record-send-rate"]
    assert m["record-send-rate"] <= n / (before_snapshot - after_start)
    assert m["request-rate"] == pytest.approx(m["record-send-rate"] * requests / n)
    # each record: 100-byte value, a short key, and a few bytes of framing
    assert size < m["record-size-avg"] < size + 20
    # every batch is at most batch_size and all batches together hold every record
    assert m["batch-size-max"] <= 16384
    assert m["batch-size-avg"] * batches >= n * size
    assert m["compression-rate-avg"] == 1.0
    assert 0 < m["request-latency-avg"] <= m["request-latency-max"]
    assert 0 <= m["record-queue-time-avg"] <= m["record-queue-time-max"]
    assert m["requests-in-flight"] == 0
    assert m["buffer-available-bytes"] == m["buffer-total-bytes"] == 32 * 1024 * 1024
    assert m["bufferpool-wait-time-ns-total"] == 0 and m["waiting-threads"] == 0
    assert m["produce-throttle-time-avg"] == m["produce-throttle-time-max"] == 0  # no quotas
    assert 0 <= m["metadata-age"] <= after_snapshot - before_start
    assert len(read_all_confluent(bootstrap, topic, n)) == n


async def test_compression_rate(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip") as p:
        await asyncio.gather(*[await p.send(topic, b"abc" * 100) for _ in range(500)])
        m = p.metrics()
    assert 0 < m["compression-rate-avg"] < 0.2  # repeated text compresses very well
    assert m["batch-size-avg"] < m["record-size-avg"] * 500 / m["batch-total"]


async def test_waiting_for_buffer_memory_is_measured(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    # 4 KiB of buffer for 100 records of 1 KB: send() must wait for deliveries.
    topic = topic_factory(1)
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, buffer_memory=4096, batch_size=2048
    ) as producer:
        futures = [await producer.send(topic, b"x" * 1000) for _ in range(100)]
        await asyncio.gather(*futures)
        m = producer.metrics()
    assert m["record-send-total"] == 100
    assert m["bufferpool-wait-time-ns-total"] > 0
    assert m["bufferpool-wait-ratio"] > 0


async def test_retries_and_errors_are_counted() -> None:
    # Produce errors on demand: librdkafka's mock cluster (Tansu cannot be made to).
    with MockCluster(brokers=1) as mock:
        mock.create_topic("m", 1)
        async with AIOKafkaProducer(
            bootstrap_servers=mock.bootstrap_servers,
            linger_ms=50,
            retry_backoff_ms=10,
            enable_idempotence=False,
        ) as producer:
            await producer.partitions_for("m")
            mock.push_errors(API_PRODUCE, [ERR_REQUEST_TIMED_OUT, ERR_REQUEST_TIMED_OUT])
            await asyncio.gather(*[await producer.send("m", b"r%d" % i) for i in range(10)])
            m = producer.metrics()
            assert m["record-retry-total"] == 20  # 10 records, each retried twice
            assert m["record-send-total"] == 30  # three attempts of the one batch
            assert m["record-retry-rate"] > 0 and m["record-error-total"] == 0
            mock.push_errors(API_PRODUCE, [ERR_INVALID_RECORD])
            results = await asyncio.gather(
                *[await producer.send("m", b"e%d" % i) for i in range(5)],
                return_exceptions=True,
            )
            assert all(isinstance(r, KafkaError) for r in results)
            m = producer.metrics()
        assert m["record-error-total"] == 5
        assert m["record-error-rate"] > 0
        assert m["requests-in-flight"] == 0


async def test_queue_time_includes_the_linger(bootstrap: str, topic_factory: TopicFactory) -> None:
    # Ten small records never fill a batch: it leaves only after linger_ms (no flush).
    topic = topic_factory(1)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=100) as producer:
        await asyncio.gather(*[await producer.send(topic, b"q") for _ in range(10)])
        m = producer.metrics()
    assert m["batch-total"] == 1 and m["records-per-request-avg"] == 10
    assert 95 <= m["record-queue-time-avg"] == m["record-queue-time-max"]
