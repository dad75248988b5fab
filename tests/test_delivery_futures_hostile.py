"""The per-record futures (pure and compiled twins) side by side with asyncio.Future where
asyncio itself reaches into a future: gather over cancelled children (asyncio.timeout,
wait_for and asyncio.run's shutdown cancel a gather this way), one exception failing a
whole batch, weak references.

No sleeps with durations: a scenario that cannot finish is detected by the outer future
still not being done after a few loop iterations (asyncio needs one or two).
"""

from __future__ import annotations

import asyncio
import traceback
import weakref
from typing import Any

import pytest

from aiokafka_lite._internal import delivery
from aiokafka_lite.structs import TopicPartition

TP = TopicPartition("t", 0)

try:
    from aiokafka_lite._internal import _cdelivery
except ImportError:  # pragma: no cover
    _cdelivery = None

KITS = [
    pytest.param(None, id="asyncio.Future"),
    pytest.param(delivery.PyRecordFutures, id="pure"),
    pytest.param(
        getattr(_cdelivery, "RecordFutures", None),
        id="compiled",
        marks=pytest.mark.skipif(_cdelivery is None, reason="not built"),
    ),
]


class Batch:
    def __init__(self, cls: Any, n: int) -> None:
        loop = asyncio.get_running_loop()
        if cls is None:
            self.rf = None
            self.futures = [loop.create_future() for _ in range(n)]
        else:
            self.rf = cls(loop)
            self.futures = [self.rf.add(i, 1000 + i) for i in range(n)]

    def complete(self) -> None:
        if self.rf is None:
            for f in self.futures:
                if not f.done():
                    f.set_result(("md",))
        else:
            self.rf.complete(TP, 10, -1, 0)

    def fail(self, exc: BaseException) -> None:
        if self.rf is None:
            for f in self.futures:
                if not f.done():
                    f.set_exception(exc)
        else:
            self.rf.fail(exc)


async def spin(n: int = 10) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


@pytest.mark.parametrize("cls", KITS)
async def test_cancelled_gather_settles(cls: Any) -> None:
    """gather() over pending record futures, cancelled (asyncio.timeout, wait_for, a task's
    cancel, asyncio.run's shutdown all do this): the gather must end cancelled."""
    batch = Batch(cls, 3)
    errors: list[Any] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: errors.append(ctx))
    g = asyncio.gather(*batch.futures)
    assert g.cancel()
    await spin()
    assert g.done(), errors  # (asyncio ends it with a CancelledError exception)
    with pytest.raises(asyncio.CancelledError):
        g.result()
    assert errors == []


@pytest.mark.parametrize("cls", KITS)
async def test_gather_with_a_cancelled_child_raises_cancelled(cls: Any) -> None:
    batch = Batch(cls, 2)
    g = asyncio.gather(*batch.futures)
    batch.futures[0].cancel()
    await spin()
    assert g.done()
    with pytest.raises(asyncio.CancelledError):
        g.result()


@pytest.mark.parametrize("cls", KITS)
async def test_gather_return_exceptions_with_a_cancelled_child(cls: Any) -> None:
    batch = Batch(cls, 2)
    batch.futures[0].cancel("gave up")
    batch.complete()
    g = asyncio.gather(*batch.futures, return_exceptions=True)
    await spin()
    assert g.done()
    first, _ = g.result()
    assert isinstance(first, asyncio.CancelledError) and first.args == ("gave up",)


@pytest.mark.parametrize("cls", KITS)
async def test_shared_exception_traceback_does_not_grow_per_awaiter(cls: Any) -> None:
    """One exception fails a whole batch (stop() passes one to every batch; each record's
    future gets a copy of it): each awaiter re-raising its exception must not extend the
    traceback the others see."""
    batch = Batch(cls, 200)

    async def waiter(f: Any) -> int:
        try:
            await f
        except OSError as e:
            return len(traceback.extract_tb(e.__traceback__))
        return -1

    tasks = [asyncio.ensure_future(waiter(f)) for f in batch.futures]
    await asyncio.sleep(0)
    batch.fail(OSError("broker gone"))
    depths = await asyncio.gather(*tasks)
    assert max(depths) <= 10, f"first {depths[0]}, last {depths[-1]} frames"


@pytest.mark.parametrize("cls", KITS)
async def test_weakref(cls: Any) -> None:
    batch = Batch(cls, 1)
    assert weakref.ref(batch.futures[0])() is batch.futures[0]


async def test_a_timed_out_gather_of_send_futures_raises_and_stop_delivers(
    bootstrap: str, topic_factory: Any
) -> None:
    """The README's pattern under a deadline: ``gather`` of send() futures inside
    ``asyncio.timeout`` raises TimeoutError (the records linger far longer), the cancelled
    futures stay cancelled, and stop() still delivers what was buffered."""
    from aiokafka_lite import AIOKafkaProducer

    topic = topic_factory(1)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=60_000)
    await producer.start()
    try:
        futures = [await producer.send(topic, b"v%d" % i) for i in range(10)]
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await asyncio.gather(*futures)
        assert all(f.cancelled() for f in futures)
        last = await producer.send(topic, b"after")
    finally:
        await producer.stop()
    assert last.result().offset == 10  # the cancelled records were still written before it
