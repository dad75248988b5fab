"""LazyFuture behaves as concurrent.futures.Future does, whoever waits and whenever."""

from __future__ import annotations

import asyncio
import gc
import random
import threading
from concurrent.futures import (
    FIRST_COMPLETED,
    CancelledError,
    Future,
    InvalidStateError,
    as_completed,
    wait,
)

import pytest

from aiokafka_lite._internal._futures import LazyFuture


def test_resolved_without_waiters_it_never_builds_a_condition() -> None:
    fut: LazyFuture[int] = LazyFuture()
    seen: list[int] = []
    fut.add_done_callback(lambda f: seen.append(f.result()))
    assert fut.set_running_or_notify_cancel()
    assert fut.running()
    assert not fut.done()
    fut.set_result(7)
    assert fut.done()
    assert not fut.cancelled()
    assert seen == [7]
    assert fut._cond is None
    assert fut.result() == 7
    gc.collect()
    before = len(gc.get_objects())
    held = [LazyFuture[int]() for _ in range(1000)]
    per_future = (len(gc.get_objects()) - before) / len(held)
    plain = [Future[int]() for _ in range(1000)]
    per_plain = (len(gc.get_objects()) - before) / len(plain) - per_future
    assert per_future <= per_plain / 2, (per_future, per_plain)


def test_waiters_in_other_threads_see_every_result_whatever_the_interleaving() -> None:
    rng = random.Random(3)
    futures: list[LazyFuture[int]] = [LazyFuture() for _ in range(3000)]
    got: dict[int, object] = {}
    lock = threading.Lock()
    called: list[int] = []
    for i in range(0, len(futures), 3):  # callbacks added before anyone waits
        futures[i].add_done_callback(lambda f, i=i: called.append(i))

    def waiter(indices: list[int]) -> None:
        for i in indices:
            fut = futures[i]
            try:
                value: object = fut.result(timeout=20)
            except ValueError as e:
                value = e.args[0]
            with lock:
                got[i] = value

    def setter() -> None:
        for i, fut in enumerate(futures):
            fut.set_running_or_notify_cancel()
            if i % 7 == 0:
                fut.set_exception(ValueError(f"e{i}"))
            else:
                fut.set_result(i)

    indices = list(range(len(futures)))
    rng.shuffle(indices)
    threads = [threading.Thread(target=waiter, args=(indices[k::6],)) for k in range(6)]
    threads.append(threading.Thread(target=setter))
    rng.shuffle(threads)
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert got == {i: (f"e{i}" if i % 7 == 0 else i) for i in range(len(futures))}
    assert sorted(called) == list(range(0, len(futures), 3))  # each exactly once


def test_wait_and_as_completed() -> None:
    futures: list[LazyFuture[int]] = [LazyFuture() for _ in range(50)]
    futures[0].set_result(0)  # one already done, without a Condition
    pending = futures[1:]

    def finish() -> None:
        for i, fut in enumerate(pending, 1):
            fut.set_result(i)

    first = wait(futures, timeout=5, return_when=FIRST_COMPLETED)
    assert futures[0] in first.done
    thread = threading.Thread(target=finish)
    thread.start()
    assert sorted(f.result() for f in as_completed(futures, timeout=20)) == list(range(50))
    thread.join(10)
    done, not_done = wait(futures, timeout=5)
    assert len(done) == 50
    assert not not_done


def test_callbacks_cancel_and_invalid_states(caplog: pytest.LogCaptureFixture) -> None:
    fut: LazyFuture[int] = LazyFuture()
    calls: list[str] = []
    fut.add_done_callback(lambda f: calls.append("before"))
    fut.set_exception(KeyError("k"))
    fut.add_done_callback(lambda f: calls.append("after"))
    fut.add_done_callback(lambda f: 1 / 0)  # logged, not raised, as Future does
    assert calls == ["before", "after"]
    assert "exception calling callback" in caplog.text
    assert isinstance(fut.exception(), KeyError)
    with pytest.raises(KeyError):
        fut.result()
    with pytest.raises(InvalidStateError):
        fut.set_result(1)

    cancelled: LazyFuture[int] = LazyFuture()
    assert cancelled.cancel()
    assert cancelled.cancelled()
    assert not cancelled.set_running_or_notify_cancel()
    with pytest.raises(CancelledError):
        cancelled.result()

    running: LazyFuture[int] = LazyFuture()
    assert running.set_running_or_notify_cancel()
    assert not running.cancel()  # a running future cannot be cancelled
    with pytest.raises(RuntimeError, match="unexpected state"):
        running.set_running_or_notify_cancel()


async def test_asyncio_wrap_future() -> None:
    fut: LazyFuture[str] = LazyFuture()
    threading.Timer(0.05, fut.set_result, args=("from a thread",)).start()
    assert await asyncio.wait_for(asyncio.wrap_future(fut), 10) == "from a thread"
