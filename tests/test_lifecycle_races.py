"""Lifecycle races: stop() during start(), stop() cancelled by the caller, and sends
still waiting for metadata when stop() begins.

What must hold: stop() during start() waits for start to finish and then stops (no
send succeeds after it); a stop() cancelled by ``asyncio.wait_for`` still leaves no
task behind and no future pending, and a second stop() is harmless; a send() waiting
for a topic's metadata raises ProducerClosedError as soon as stop() begins, not
KafkaTimeoutError after max_block_ms. The broker is a scripted one-broker cluster
(tests/scripted_cluster.py) that is slow or silent where the race needs it; each test
ends with the shared invariants (tests/invariants.py).

"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from invariants import Watch, leftover_tasks
from scripted_broker import HANG, ReceivedRequest
from scripted_cluster import METADATA, PRODUCE, LogCluster

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import ProducerClosedError

STEP = 10.0


def slow(seconds: float) -> Callable[[ReceivedRequest, Callable[[], bytes | None]], Any]:
    async def hook(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        await asyncio.sleep(seconds)
        return healthy()

    return hook


async def test_stop_during_start_waits_for_start_then_stops() -> None:
    cluster = LogCluster(hooks={METADATA: slow(0.5)})  # start() takes half a second
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(bootstrap_servers=broker.address)
        starting = asyncio.create_task(producer.start())
        await asyncio.sleep(0.1)  # start() is waiting for the bootstrap metadata
        async with asyncio.timeout(STEP):
            await producer.stop()
            await asyncio.gather(starting, return_exceptions=True)
        with pytest.raises(ProducerClosedError):
            await producer.send_and_wait("t", b"after stop")
        await watch.stop_and_check(producer, stop_timeout=2)
    assert not cluster.records()


async def test_stop_cancelled_by_wait_for_leaves_no_task_and_no_pending_future() -> None:
    cluster = LogCluster(hooks={PRODUCE: lambda req, healthy: HANG})  # nothing is acked
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address, linger_ms=0, request_timeout_ms=30_000
        )
        await producer.start()
        futures = [await producer.send("t", b"%d" % i, partition=i % 4) for i in range(100)]
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(producer.stop(timeout=20), 0.2)
        # The caller gave up on stop(): it still finished its work.
        assert all(f.done() for f in futures), "futures left pending by a cancelled stop()"
        assert not leftover_tasks(watch.tasks_before), leftover_tasks(watch.tasks_before)
        await watch.stop_and_check(producer, futures, stop_timeout=2)  # a second stop()


async def test_a_send_waiting_for_metadata_is_closed_on_when_stop_begins() -> None:
    cluster = LogCluster()  # "later" is unknown: Metadata answers UNKNOWN_TOPIC_OR_PARTITION
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(bootstrap_servers=broker.address, max_block_ms=60_000)
        await producer.start()
        waiting = asyncio.create_task(producer.send("later", b"x"))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        async with asyncio.timeout(3):  # far below max_block_ms
            await producer.stop()
            with pytest.raises(ProducerClosedError):
                await waiting
        await watch.stop_and_check(producer, stop_timeout=2)
