"""The invariants every hostile, fuzzed or racing scenario ends with, in one place.

Whatever a broker sends or a caller passes, once ``producer.stop()`` has returned:

* no record's future is still pending (each resolved exactly once: asyncio would
  raise on a second resolution);
* every failure is a named error (a ``KafkaError`` subclass, never the bare base
  class), or the exception a bad argument raised at the call;
* no task of the producer is left (``asyncio.all_tasks()`` holds only what ran
  before the producer was made, the test's own task, and the test's helpers such
  as the scripted broker);
* ``stop(timeout)`` returned within its timeout (plus a little slack);
* the producer did not hammer a broker: connection attempts stay under a bound;
* where memory is at stake, RSS stays under a bound.

Use :class:`Watch` around a scenario::

    watch = Watch.begin()
    producer = AIOKafkaProducer(...)
    ...
    await watch.stop_and_check(producer, futures, stop_timeout=2)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from aiokafka_lite.errors import KafkaError

__all__ = [
    "STOP_SLACK",
    "Watch",
    "assert_bounded_attempts",
    "assert_named_failures",
    "assert_no_pending",
    "leftover_tasks",
    "loop_reports",
    "rss_mb",
]

STOP_SLACK = 4.0  # stop(timeout) may overrun by this much (closing sockets, tasks; load)
_TESTS_DIR = str(Path(__file__).resolve().parent)


def _is_test_helper(task: asyncio.Task[Any]) -> bool:
    """A task running code of the tests directory (scripted broker, proxies)."""
    coro = task.get_coro()
    code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
    return code is not None and code.co_filename.startswith(_TESTS_DIR)


def leftover_tasks(before: Iterable[asyncio.Task[Any]] = ()) -> list[asyncio.Task[Any]]:
    """Tasks alive now that are not in ``before``, not the caller's and not test helpers."""
    known = set(before)
    current = asyncio.current_task()
    return [
        t
        for t in asyncio.all_tasks()
        if t is not current and t not in known and not t.done() and not _is_test_helper(t)
    ]


def assert_no_pending(futures: Sequence[asyncio.Future[Any]], what: str = "record") -> None:
    pending = [i for i, f in enumerate(futures) if not f.done()]
    assert not pending, (
        f"{len(pending)} {what} future(s) still pending after stop(), e.g. {pending[:10]}"
    )


def assert_named_failures(
    futures: Sequence[asyncio.Future[Any]], allowed: tuple[type[BaseException], ...] = ()
) -> list[BaseException]:
    """Every failed future failed with a named KafkaError (of an ``allowed`` type, if given)."""
    errors = []
    for i, f in enumerate(futures):
        if not f.done() or f.cancelled():
            continue
        exc = f.exception()
        if exc is None:
            continue
        errors.append(exc)
        assert isinstance(exc, KafkaError) and type(exc) is not KafkaError, (
            f"record {i} failed with an unnamed error: {exc!r}"
        )
        if allowed:
            assert isinstance(exc, allowed), f"record {i} failed with {exc!r}"
    return errors


def assert_bounded_attempts(attempts: int, bound: int, what: str = "connection attempts") -> None:
    assert attempts <= bound, f"{attempts} {what}, more than the bound of {bound}"


@contextlib.contextmanager
def loop_reports() -> Iterator[list[dict[str, Any]]]:
    """The contexts the running loop's exception handler gets meanwhile (what asyncio would
    only log: a callback's exception, a failure never retrieved); the handler that was
    there before is put back after."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, ctx: reported.append(ctx))
    try:
        yield reported
    finally:
        loop.set_exception_handler(previous)


def rss_mb() -> float:
    return float(psutil.Process(os.getpid()).memory_info().rss) / (1024 * 1024)


@dataclass
class Watch:
    """What was running before a scenario, to tell the producer's tasks from the rest."""

    tasks_before: set[asyncio.Task[Any]] = field(default_factory=set)
    loop_errors: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def begin(cls, *, catch_loop_errors: bool = True) -> Watch:
        """Start watching. With ``catch_loop_errors``, anything the event loop would only
        log (an exception escaping a callback or a task nobody awaits) is collected and
        fails :meth:`check`."""
        watch = cls(set(asyncio.all_tasks()))
        if catch_loop_errors:
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(lambda _loop, ctx: watch.loop_errors.append(ctx))
        return watch

    async def stop_and_check(
        self,
        producer: Any,
        futures: Sequence[asyncio.Future[Any]] = (),
        *,
        stop_timeout: float = 5.0,
        allowed: tuple[type[BaseException], ...] = (),
    ) -> list[BaseException]:
        """Stop the producer (bounded), then check every invariant; return the failures."""
        started = time.monotonic()
        try:
            async with asyncio.timeout(stop_timeout + STOP_SLACK):
                await producer.stop(stop_timeout)
        except TimeoutError:
            pytest.fail(
                f"producer.stop({stop_timeout}) did not return within {stop_timeout + STOP_SLACK}"
                f" s (after {time.monotonic() - started:.1f} s)"
            )
        return self.check(futures, allowed=allowed)

    def check(
        self,
        futures: Sequence[asyncio.Future[Any]] = (),
        *,
        allowed: tuple[type[BaseException], ...] = (),
    ) -> list[BaseException]:
        assert_no_pending(futures)
        errors = assert_named_failures(futures, allowed)
        left = leftover_tasks(self.tasks_before)
        assert not left, f"{len(left)} task(s) left after stop(): {left[:5]}"
        self.check_loop_errors()
        return errors

    def check_loop_errors(self) -> None:
        # "Task was destroyed but it is pending" and "exception was never retrieved"
        # are reported here too: each is a task or future the producer lost track of.
        assert not self.loop_errors, f"the event loop reported errors: {self.loop_errors[:3]}"
