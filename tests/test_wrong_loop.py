"""A producer used from an event loop other than the one that started it fails at once.

The situation of an app server (uvicorn) whose loop is not the one a producer was
started in (at import time, in a separate ``asyncio.run()``, in another thread): every
call must raise :class:`WrongEventLoopError` naming both loops, never hang, and must not
leave a record behind in the buffer.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest
from conftest import TopicFactory
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import IllegalStateError, KafkaError, WrongEventLoopError

Call = Callable[[AIOKafkaProducer[bytes, bytes], str], Awaitable[object]]


async def _send_batch(producer: AIOKafkaProducer[bytes, bytes], topic: str) -> object:
    batch = producer.create_batch()
    batch.append(key=None, value=b"wrong", timestamp=None)
    return await producer.send_batch(batch, topic, partition=0)


CALLS: dict[str, Call] = {
    "send": lambda p, t: p.send(t, b"wrong"),
    "send_and_wait": lambda p, t: p.send_and_wait(t, b"wrong"),
    "send_many": lambda p, t: p.send_many(t, [(None, b"wrong")]),
    "send_batch": _send_batch,
    "send_unknown_topic": lambda p, t: p.send(t + "-other", b"wrong"),
    "flush": lambda p, t: p.flush(1),
    "partitions_for": lambda p, t: p.partitions_for(t),
    "stop": lambda p, t: p.stop(),
}


@pytest.fixture
def loop_a() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.close()


def test_error_class_is_a_kafka_and_runtime_error() -> None:
    assert issubclass(WrongEventLoopError, IllegalStateError)
    assert issubclass(WrongEventLoopError, KafkaError)
    assert issubclass(WrongEventLoopError, RuntimeError)


def test_started_in_one_loop_used_in_another_same_thread(
    bootstrap: str, topic_factory: TopicFactory, loop_a: asyncio.AbstractEventLoop
) -> None:
    topic = topic_factory(1)
    producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(bootstrap_servers=bootstrap)
    loop_a.run_until_complete(producer.start())
    loop_a.run_until_complete(producer.send_and_wait(topic, b"before"))

    async def use_from_loop_b() -> None:
        for name, call in CALLS.items():
            async with asyncio.timeout(5):  # a hang would fail here, not pass
                with pytest.raises(WrongEventLoopError) as info:
                    await call(producer, topic)
            message = str(info.value)
            assert "started in event loop" in message, name
            assert "is used in event loop" in message, name
            assert repr(loop_a) in message, name
            assert repr(asyncio.get_running_loop()) in message, name

    asyncio.run(use_from_loop_b())
    # The producer still works in its own loop, and nothing of loop B's calls was sent.
    loop_a.run_until_complete(producer.send_and_wait(topic, b"after"))
    loop_a.run_until_complete(producer.stop())
    values = [r.value for r in read_all_confluent(bootstrap, topic, expected=3, timeout=5)]
    assert values == [b"before", b"after"]


def test_loop_running_in_another_thread(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    loop_a = asyncio.new_event_loop()
    thread = threading.Thread(target=loop_a.run_forever, name="loop-a-thread", daemon=True)
    thread.start()
    producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(bootstrap_servers=bootstrap)
    try:
        asyncio.run_coroutine_threadsafe(producer.start(), loop_a).result(15)

        async def use_from_main_thread() -> None:
            async with asyncio.timeout(5):
                with pytest.raises(WrongEventLoopError, match="thread 'loop-a-thread'") as info:
                    await producer.send_and_wait(topic, b"wrong")
            assert "thread 'MainThread'" in str(info.value)

        asyncio.run(use_from_main_thread())
        # try_send is synchronous: from a thread without any loop it fails just as clearly.
        with pytest.raises(WrongEventLoopError, match="outside any event loop"):
            producer.try_send(topic, b"wrong")
        asyncio.run_coroutine_threadsafe(producer.send_and_wait(topic, b"ok"), loop_a).result(15)
    finally:
        asyncio.run_coroutine_threadsafe(producer.stop(), loop_a).result(15)
        loop_a.call_soon_threadsafe(loop_a.stop)
        thread.join(5)
        loop_a.close()
    values = [r.value for r in read_all_confluent(bootstrap, topic, expected=2, timeout=5)]
    assert values == [b"ok"]


def test_created_outside_a_loop_and_started_inside_one_works(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """Creating at import time is fine: a producer binds to the loop that starts it."""
    topic = topic_factory(1)
    producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(bootstrap_servers=bootstrap)

    async def app() -> int:
        async with producer:
            return (await producer.send_and_wait(topic, b"v")).offset

    assert asyncio.run(app()) == 0


@pytest.mark.parametrize("other", ["asyncio", "uvloop"])
def test_uvloop_producer_used_from_another_loop(
    bootstrap: str, topic_factory: TopicFactory, other: str
) -> None:
    """uvloop keeps its thread private: send()'s cheap check falls back to comparing the
    running loop, and must refuse another loop just as exactly."""
    uvloop = pytest.importorskip("uvloop")  # installed by the dev extra (not on Windows)
    topic = topic_factory(1)
    loop_a = uvloop.new_event_loop()
    producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(bootstrap_servers=bootstrap)
    try:
        loop_a.run_until_complete(producer.start())
        loop_a.run_until_complete(producer.send_and_wait(topic, b"before"))

        async def use_from_loop_b() -> None:
            for name in ("send", "send_and_wait", "send_many", "send_batch"):
                call = CALLS[name]
                async with asyncio.timeout(5):
                    with pytest.raises(WrongEventLoopError, match="is used in event loop"):
                        await call(producer, topic)

        (uvloop.run if other == "uvloop" else asyncio.run)(use_from_loop_b())
        loop_a.run_until_complete(producer.send_and_wait(topic, b"after"))
    finally:
        loop_a.run_until_complete(producer.stop())
        loop_a.close()
    values = [r.value for r in read_all_confluent(bootstrap, topic, expected=3, timeout=5)]
    assert values == [b"before", b"after"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.parametrize("name", ["send", "send_many", "send_batch"])
async def test_a_forked_child_using_the_parents_producer_is_refused(
    bootstrap: str, topic_factory: TopicFactory, name: str
) -> None:
    """A child forked while the producer runs, calling send() (or a bulk call) from a loop
    of its own, gets WrongEventLoopError, not a future that never resolves. (The child
    keeps the forking thread's id, so the cheap check by thread id alone would let it
    through.)"""
    topic = topic_factory(1)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0) as producer:
        await producer.send_and_wait(topic, b"parent")  # send() takes the cheap check now
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report what send() did, then leave at once
            outcome = "no error"
            try:
                asyncio.run(CALLS[name](producer, topic))
            except WrongEventLoopError:
                outcome = "WrongEventLoopError"
            except BaseException as e:
                outcome = type(e).__name__
            finally:
                os.write(write_fd, outcome.encode())
                os._exit(0)
        os.close(write_fd)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, os.waitpid, pid, 0)
        with os.fdopen(read_fd, "rb") as pipe:
            assert pipe.read() == b"WrongEventLoopError"
        # The parent's producer is unaffected.
        assert (await producer.send_and_wait(topic, b"after")).offset == 1
