"""The sender is not woken for a batch it could not send: while every partition with a
batch queued has its most batches in flight, or every broker connection its most
requests (an answer that frees a slot, Produce or not, wakes it). With 16 KiB batches most
batches fill while requests are in flight, and each useless pass costs the producer
CPU. A batch that can go out still wakes it at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite._internal.accumulator import RecordAccumulator
from aiokafka_lite._internal.protocol import MetadataRequest
from aiokafka_lite._internal.runtime import Runtime

TS = 1_700_000_000_000


def accumulator(max_in_flight: int) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=1000,
        linger_ms=0,
        buffer_memory=1 << 20,
        delivery_timeout_ms=60_000,
        max_in_flight_per_partition=max_in_flight,
        wakeup=lambda: None,
    )


async def test_a_partition_blocks_while_its_batches_in_flight_are_at_the_limit() -> None:
    """No broker: the accumulator's view only. A queued batch behind one in flight is
    blocked with one allowed, not with two; a batch for an idle partition never is."""
    for limit, blocked in ((1, True), (2, False)):
        acc = accumulator(limit)
        assert acc.all_blocked()  # nothing queued: nothing to send
        acc.try_append("t", 0, TS, None, b"x" * 100, None, 200)
        assert not acc.all_blocked()
        acc.drain([acc.queue_for("t", 0)], 1 << 20)  # now in flight
        acc.try_append("t", 0, TS, None, b"x" * 100, None, 200)
        assert acc.all_blocked() is blocked
        acc.try_append("t", 1, TS, None, b"x" * 100, None, 200)
        assert not acc.all_blocked()


def runtime_of(producer: AIOKafkaProducer) -> Runtime:
    runtime = producer._runtime
    assert runtime is not None
    return runtime


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # noqa: ASYNC110 (polls the sender's state)
            await asyncio.sleep(0.001)


async def test_a_queued_batch_wakes_the_sender_only_when_a_request_can_go(
    bootstrap: str, topic_factory: Callable[..., str]
) -> None:
    """Against the broker: with every in-flight slot of the only connection taken (two
    requests written, unanswered yet), the sender stays asleep when a batch is queued;
    once the answers are in, the same call wakes it, and the record is delivered."""
    topic = topic_factory(1)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, max_in_flight_requests_per_connection=2, linger_ms=60_000
    )
    await producer.start()
    try:
        await producer.partitions_for(topic)
        runtime = runtime_of(producer)
        client, sender = runtime.client, runtime.sender
        (node_id,) = client.metadata.cluster.nodes
        conn = await client.connect(node_id)

        def asleep() -> bool:
            return sender._wake is not None and not sender._wake.done()

        await until(asleep)  # nothing to send
        assert not client.saturated()
        answers = [conn.send(MetadataRequest(topics=[])) for _ in range(2)]
        assert client.saturated()
        wake = sender._wake
        assert wake is not None
        runtime.batch_queued()
        assert not wake.done()  # no request could go: not woken
        await asyncio.gather(*answers)
        assert not client.saturated()
        fut = await producer.send(topic, b"v")  # queues a batch: wakes the sender
        await until(lambda: wake.done())
        await producer.flush()
        assert (await fut).offset == 0
    finally:
        await producer.stop()


async def test_a_batch_queued_behind_other_requests_goes_when_they_are_answered(
    bootstrap: str, topic_factory: Callable[..., str]
) -> None:
    """Against the broker: both in-flight slots of the only connection hold requests that
    are not Produce (metadata here; a transaction's requests alike) when ``send()``
    queues a batch, so the sender is not woken for it. Their answers must wake it: the
    record is delivered at once, not after the sender's next timer (minutes)."""
    topic = topic_factory(1)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, max_in_flight_requests_per_connection=2, linger_ms=0
    )
    await producer.start()
    try:
        # A first record: the producer id is in place (its arrival would wake the sender).
        assert (await producer.send_and_wait(topic, b"first")).offset == 0
        runtime = runtime_of(producer)
        client, sender = runtime.client, runtime.sender
        (node_id,) = client.metadata.cluster.nodes
        conn = await client.connect(node_id)
        await until(lambda: sender._wake is not None and not sender._wake.done())
        answers = [conn.send(MetadataRequest(topics=[])) for _ in range(2)]
        assert client.saturated()
        fut = await producer.send(topic, b"v")
        await asyncio.gather(*answers)
        async with asyncio.timeout(5):  # the sender's own timer would take far longer
            assert (await fut).offset == 1
    finally:
        await producer.stop()
