"""buffer_memory bounds what buffered records really hold, not only their encoded bytes.

A record buffered by ``send()`` also holds its future, a done callback on it (an
``await``, or the caller's ``add_done_callback``), its timestamp and offset delta: about
200 bytes (compiled build) or 300 (pure-Python build), ten times a 10-byte record's
encoding; each batch holds its own objects too. Counted by its
bytes only, 32 MiB of 10-byte records held some 400 MiB. The broker here never
answers Produce (a scripted broker that hangs), so everything sent stays buffered;
Python's own allocation tracer (tracemalloc) measures what that costs, and the
producer's accounting (``buffer-available-bytes``) must cover it.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import pytest
from invariants import Watch, rss_mb
from scripted_broker import HANG
from scripted_cluster import PRODUCE, LogCluster

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import KafkaTimeoutError

RECORDS = 30_000


@pytest.fixture
async def hung_broker() -> AsyncIterator[str]:
    """A scripted broker whose Produce requests are never answered."""
    cluster = LogCluster(hooks={PRODUCE: lambda req, healthy: HANG})
    async with cluster.running() as broker:
        yield broker.address


def producer_for(address: str, **config: Any) -> AIOKafkaProducer[Any, Any]:
    return AIOKafkaProducer(
        bootstrap_servers=address,
        linger_ms=0,
        request_timeout_ms=60_000,
        delivery_timeout_ms=120_000,
        enable_idempotence=False,
        acks=1,
        **config,
    )


def used(producer: AIOKafkaProducer[Any, Any]) -> int:
    m = producer.metrics()
    return int(m["buffer-total-bytes"] - m["buffer-available-bytes"])


# Allocations of the test's own broker (its read buffers) are not the producer's.
NOT_THE_PRODUCERS = [
    tracemalloc.Filter(False, "*/tests/scripted_*.py"),
    tracemalloc.Filter(False, "*/asyncio/streams.py"),
]


async def traced(fill: Any) -> int:
    """Bytes newly allocated (and still alive) while ``fill()`` runs, but the broker's."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces(NOT_THE_PRODUCERS)
        await fill()
        gc.collect()
        after = tracemalloc.take_snapshot().filter_traces(NOT_THE_PRODUCERS)
        return sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("value_size", "keyed"), [(10, False), (10, True), (100, False)])
async def test_accounting_covers_what_send_records_hold(
    hung_broker: str, value_size: int, keyed: bool
) -> None:
    watch = Watch.begin()
    producer = producer_for(hung_broker, buffer_memory=1 << 30)
    await producer.start()
    await producer.partitions_for("t")
    value = b"v" * value_size
    keys = [b"key-%04d" % i for i in range(100)]
    count: list[int] = []

    def on_done(fut: asyncio.Future[Any]) -> None:
        fut.exception()  # retrieved: it fails when stop() gives up on it
        count.append(1)

    async def fill() -> None:
        for i in range(RECORDS):
            fut = await producer.send("t", value, keys[i % 100] if keyed else None)
            fut.add_done_callback(on_done)  # the caller keeps no future, as W5 does

    accounted_before = used(producer)
    grown = await traced(fill)
    accounted = used(producer) - accounted_before
    await watch.stop_and_check(producer, stop_timeout=0.5)
    assert len(count) == RECORDS  # each record's future resolved (failed at stop)
    assert grown <= accounted * 1.05, (
        f"{grown / RECORDS:.0f} B per record held, {accounted / RECORDS:.0f} B accounted"
    )


async def test_accounting_covers_what_send_many_records_hold(hung_broker: str) -> None:
    watch = Watch.begin()
    producer = producer_for(hung_broker, buffer_memory=1 << 30)
    await producer.start()
    await producer.partitions_for("t")
    pairs = [(None, b"v" * 10) for _ in range(RECORDS)]
    futures: list[asyncio.Future[Any]] = []

    async def fill() -> None:
        futures.append(await producer.send_many("t", pairs))

    accounted_before = used(producer)
    grown = await traced(fill)
    accounted = used(producer) - accounted_before
    await watch.stop_and_check(producer, futures, stop_timeout=0.5)
    assert grown <= accounted * 1.05, (
        f"{grown / RECORDS:.0f} B per record held, {accounted / RECORDS:.0f} B accounted"
    )


async def test_ten_byte_records_cannot_hold_more_than_buffer_memory(hung_broker: str) -> None:
    """Sending until send() blocks: what is buffered stays within buffer_memory."""
    limit = 2 * 1024 * 1024
    watch = Watch.begin()
    producer = producer_for(hung_broker, buffer_memory=limit, max_block_ms=200)
    await producer.start()
    await producer.partitions_for("t")
    sent: list[asyncio.Future[Any]] = []

    def retrieve(fut: asyncio.Future[Any]) -> None:
        fut.exception()  # it fails when stop() gives up on it

    async def fill() -> None:
        with pytest.raises(KafkaTimeoutError, match="buffer_memory"):
            while True:  # until the buffer is full and send() gives up waiting
                fut = await producer.send("t", b"0123456789")
                fut.add_done_callback(retrieve)
                sent.append(fut)

    rss_before = rss_mb()
    grown = await traced(fill)
    rss_grown = rss_mb() - rss_before  # tracemalloc's own bookkeeping included
    grown -= len(sent) * 8  # the test's own list of the futures
    await watch.stop_and_check(producer, sent, stop_timeout=0.5)
    assert grown <= limit * 1.05, f"{grown / 2**20:.1f} MiB held for a {limit / 2**20} MiB buffer"
    assert rss_grown <= limit / 2**20 + 64, f"RSS grew {rss_grown:.0f} MiB"
