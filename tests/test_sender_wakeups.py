"""The sender is not woken for a batch it could not send: while every partition with a
batch queued has its most batches in flight, or every broker connection its most
requests (an answer that frees a slot, Produce or not, wakes it). With 16 KiB batches most
batches fill while requests are in flight, and each useless pass costs the producer
CPU. A batch that can go out still wakes it at once; one that a Produce answer frees goes
out within the answer's handling, before any other task runs; answers read together
share a pass while the broker holds a later request of ours."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from readers import read_all_confluent
from scripted_broker import ReceivedRequest
from scripted_cluster import PRODUCE, LogCluster

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


async def test_an_answer_sends_what_it_frees_before_other_tasks_run(
    bootstrap: str, topic_factory: Callable[..., str]
) -> None:
    """Against the broker: a task that is always ready (it yields with ``sleep(0)`` and
    comes back, as one appending records does) must not stand between a Produce answer
    and the request that answer lets go. Without idempotence one batch per partition is
    in flight, so each of 20 queued batches waits for the answer to the one before; the
    sender's pass runs inside the answer's callback, as Java's loop drains right after
    ``poll()``. Woken instead, it would run only after the busy task's turn: each request
    would be written after a turn of it."""
    topic = topic_factory(1)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, enable_idempotence=False, linger_ms=0, acks=1
    )
    await producer.start()
    busy_task = None
    try:
        assert (await producer.send_and_wait(topic, b"first")).offset == 0
        sender = runtime_of(producer).sender
        events: list[str] = []
        on_response, send = sender._out.on_response, sender._send

        def answer(*args: Any) -> None:
            events.append("answer")
            on_response(*args)
            events.append("answered")

        def send_request(*args: Any) -> None:
            events.append("request")
            send(*args)

        sender._out.on_response = answer  # type: ignore[method-assign]
        sender._send = send_request  # type: ignore[method-assign]
        running = True

        async def busy() -> None:
            while running:
                events.append("busy")
                await asyncio.sleep(0)

        busy_task = asyncio.create_task(busy())
        futures = []
        for b in range(20):
            batch = producer.create_batch()
            for i in range(10):
                assert batch.append(key=None, value=b"%03d" % (10 * b + i), timestamp=None)
            futures.append(await producer.send_batch(batch, topic, partition=0))
        offsets = [md.offset for md in await asyncio.gather(*futures)]
        running = False
        assert offsets == list(range(1, 201, 10))
        requests = [i for i, e in enumerate(events) if e == "request"]
        assert len(requests) > 10  # most batches waited for the answer to the one before
        # Every request after the first is written inside an answer's handling.
        outside = [
            i
            for i in requests[1:]
            if next(e for e in reversed(events[:i]) if e in ("answer", "answered")) != "answer"
        ]
        assert not outside, f"{len(outside)} of {len(requests)} requests waited for another task"
        assert "busy" in events[requests[0] : requests[-1]]  # the busy task did run meanwhile
    finally:
        if busy_task is not None:
            busy_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await busy_task
        await producer.stop()
    read = read_all_confluent(bootstrap, topic, 201)
    assert [r.value for r in read] == [b"first", *(b"%03d" % i for i in range(200))]


async def test_a_batch_lingering_when_an_answer_comes_goes_at_the_end_of_its_linger(
    bootstrap: str, topic_factory: Callable[..., str]
) -> None:
    """Against the broker, without idempotence (one batch per partition in flight): a
    record sent while its partition's first batch is in flight starts a batch that does
    not wake the sender (nothing could go), which sleeps on for minutes (nothing else is
    due). The answer's pass finds the new batch still lingering: it must wake the loop to
    send it when the linger ends, not at the loop's own timer."""
    topic = topic_factory(1)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, enable_idempotence=False, linger_ms=300
    )
    await producer.start()
    try:
        await producer.partitions_for(topic)
        sender = runtime_of(producer).sender
        first = await producer.send(topic, b"1")
        async with asyncio.timeout(10):
            while not sender._out.in_flight:  # noqa: ASYNC110 (the first batch leaves)
                await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        started = loop.time()
        second = await producer.send(topic, b"2")
        assert not first.done()  # sent while the first was in flight
        assert (await first).offset == 0
        async with asyncio.timeout(5):  # the loop's own timer would take minutes
            assert (await second).offset == 1
        assert loop.time() - started >= 0.25  # and not before its linger
    finally:
        await producer.stop()


async def test_answers_read_together_share_a_pass_while_the_broker_holds_a_request() -> None:
    """Without idempotence each partition has one batch in flight. Four requests, one per
    partition, are answered in one write (so read together) while each partition has its
    next batch queued. The first answer leaves the broker with none of our requests, so
    its pass sends partition 0's next batch at once; the other three answers then share
    one pass, after the last of them, while the broker holds that request: partitions 1-3
    go in one request, not a request each, and the broker is never left idle. The
    scripted broker holds the answers until the test lets them go: a real broker's timing
    cannot be arranged. Every record reaches the log in order."""
    go = asyncio.Event()
    held: list[bytes] = []

    def produce(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        if len(held) == 4:
            return healthy()
        answer = healthy()
        assert answer is not None
        held.append(answer)
        if len(held) < 4:
            return None  # held back

        async def release() -> bytes:
            await go.wait()
            return b"".join(held)  # the four answers in one write

        return release()

    cluster = LogCluster(topics={"t": 4}, hooks={PRODUCE: produce})
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address, enable_idempotence=False, linger_ms=60_000
        )
        await producer.start()
        try:

            def batch(p: int, n: int) -> Any:
                b = producer.create_batch()
                assert b.append(key=None, value=b"%d-%d" % (p, n), timestamp=None)
                return b

            futures = []
            for p in range(4):  # a request each: every partition has one batch in flight
                futures.append(await producer.send_batch(batch(p, 1), "t", partition=p))
                async with asyncio.timeout(10):
                    while cluster.counts.get(PRODUCE, 0) < p + 1:  # noqa: ASYNC110
                        await asyncio.sleep(0.001)
            for p in range(4):  # queued behind them
                futures.append(await producer.send_batch(batch(p, 2), "t", partition=p))
            await asyncio.sleep(0.05)
            assert cluster.counts[PRODUCE] == 4, "a partition sent two batches at once"
            go.set()
            async with asyncio.timeout(10):
                await asyncio.gather(*futures)
            requests = broker.requests_for(PRODUCE)
            assert len(requests) == 6, f"{len(requests) - 4} requests for the four batches"
            parts = [
                sorted(pd.index for t in r.decode().topic_data for pd in t.partition_data)
                for r in requests[4:]
            ]
            assert parts == [[0], [1, 2, 3]]
        finally:
            await producer.stop()
    assert [r.value for r in cluster.records()] == [
        b"%d-%d" % (p, n) for p in range(4) for n in (1, 2)
    ]
