"""Which event loop a producer belongs to, checked on every ``send()`` at the cost of a compare.

Java's ``KafkaProducer`` is shared by threads; ours belongs to the one event loop that
started it: used from another, its futures and timers would never fire there. The full
check (:func:`running_loop`, which makes a ``getpid()`` syscall per call) runs once;
from then on ``send()`` compares the thread id its loop runs in (:func:`remember`) with
the caller's. A forked child forgets every remembered loop, so that its next ``send()``
takes the full check again and sees the fork.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from typing import Any, Protocol

from ..errors import WrongEventLoopError

__all__ = ["NotChecked", "RunningLoopThread", "remember", "running_loop", "wrong_loop"]

_running_loop = asyncio.get_running_loop
_get_ident = threading.get_ident


class LoopBound(Protocol):
    """A producer: what its ``send()`` compares with the caller's thread id."""

    _send_loop: Any


class NotChecked:
    """What send() compares with before its first full loop check: matches no thread."""

    _thread_id = None


class RunningLoopThread:
    """For loops that keep their thread private (uvloop): ``_thread_id`` is the caller's
    thread id when ``loop`` is the loop running in it, else None (the full check's cost)."""

    __slots__ = ("_loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    @property
    def _thread_id(self) -> int | None:
        try:
            running = _running_loop()
        except RuntimeError:
            return None
        return _get_ident() if running is self._loop else None


# Producers whose send() compares thread ids. A forked child keeps the forking thread's id,
# so there that comparison would pass for a loop that no longer runs: the child forgets
# what they compare, and each one's next send() takes the full check (which sees the fork).
_loop_checked: weakref.WeakSet[LoopBound] = weakref.WeakSet()


def _forget_loops_after_fork() -> None:
    for producer in list(_loop_checked):
        producer._send_loop = NotChecked
    _loop_checked.clear()


if hasattr(os, "register_at_fork"):  # (not on Windows, which cannot fork)
    os.register_at_fork(after_in_child=_forget_loops_after_fork)


def remember(producer: LoopBound, loop: asyncio.AbstractEventLoop) -> None:
    """After a full check passed: what ``producer``'s send() compares from now on.

    An asyncio loop's ``_thread_id`` is the id of the thread running it (None when it
    is not running). Equal to the caller's exactly when this loop is the one running
    in the caller's thread (asyncio runs one loop per thread at a time), so comparing
    the two is the full check at the cost of an attribute read and ``get_ident()``.
    """
    producer._send_loop = (
        loop if isinstance(loop, asyncio.BaseEventLoop) else RunningLoopThread(loop)
    )
    _loop_checked.add(producer)


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running in the caller's thread, or None."""
    try:
        return _running_loop()
    except RuntimeError:
        return None


def wrong_loop(
    loop: asyncio.AbstractEventLoop | None,
    loop_thread: str,
    current: asyncio.AbstractEventLoop | None,
) -> WrongEventLoopError:
    """The error for a producer started in ``loop`` (in thread ``loop_thread``) but used
    in ``current``: where each is, and how to use a producer from elsewhere."""
    where = "outside any event loop" if current is None else f"in event loop {current!r}"
    started = f"event loop {loop!r}"
    if loop is not None and loop.is_closed():
        started += " (closed since)"
    return WrongEventLoopError(
        f"this producer was started in {started} in thread {loop_thread!r}, "
        f"but is used {where} in thread {threading.current_thread().name!r}. "
        "A producer belongs to the event loop that started it: create and start it "
        "in the loop that uses it (e.g. in FastAPI's lifespan, not at import time or "
        "in a separate asyncio.run()), or use aiokafka_lite.sync.Producer from "
        "threads and non-async code"
    )
