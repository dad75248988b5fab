"""The producer's background tasks, all owned by one :class:`BackgroundTasks`.

Everything a producer runs besides the caller's own calls (the sender loop,
connection attempts, metadata refreshes, InitProducerId, AddPartitionsToTxn,
re-authentication, a commit or abort that outlives its caller) is spawned into
one :class:`BackgroundTasks`. Closing it cancels whatever is still running and
waits for it to end, so no task can outlive the producer.

The tasks are plain asyncio tasks, held by the group and nothing global: a
producer dropped without ``stop()`` in a loop closed with its tasks still pending
is collected with that loop (as aiokafka's is), where a task registered with a
process-wide task registry (anyio's keeps each task it runs until it finishes)
would keep the loop alive for ever.

:meth:`BackgroundTasks.spawn` returns a :class:`Handle`: awaiting it gives the
task's result (or raises its exception) without ever cancelling the task, the
way ``asyncio.shield`` would, so a caller that gives up does not tear down work
others share (a connection attempt, a commit).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, TypeVar

from ..errors import ProducerClosedError

__all__ = ["BackgroundTasks", "Handle", "uncancellable"]

log = logging.getLogger("aiokafka_lite.tasks")

T = TypeVar("T")

# How long closing waits for cancelled tasks to end (they only need to unwind).
CLOSE_TIMEOUT = 5.0


class Handle(Generic[T]):
    """One background task: await it for its result; :meth:`cancel` stops it."""

    __slots__ = ("_future", "_stop", "_task", "name")

    def __init__(self, future: asyncio.Future[T], name: str) -> None:
        self._future = future
        self._task: asyncio.Task[None] | None = None
        self._stop: BaseException | None = None  # why it was cancelled
        self.name = name
        # The outcome is read by whoever awaits; nobody may, which is no error.
        future.add_done_callback(_retrieve)

    def __repr__(self) -> str:
        state = "done" if self._future.done() else "running"
        return f"<Handle {self.name} {state}>"

    def done(self) -> bool:
        return self._future.done()

    def cancel(self, reason: BaseException | None = None) -> None:
        """Stop the task; awaiting the handle then raises ``reason`` (default: closed)."""
        if self._future.done():
            return
        self._stop = reason or ProducerClosedError(f"{self.name}: stopped")
        if self._task is not None:
            self._task.cancel()

    def _fail(self, exc: BaseException) -> None:
        if not self._future.done():
            self._future.set_exception(exc)
            self._future.exception()  # (as _retrieve: the loop may never run it now)

    def add_done_callback(self, callback: Callable[[Handle[T]], object]) -> None:
        self._future.add_done_callback(lambda _: callback(self))

    def result(self) -> T:
        return self._future.result()

    def exception(self) -> BaseException | None:
        return self._future.exception()

    async def wait(self) -> None:
        """Until the task has ended, however it ended (never raises its exception)."""
        if not self._future.done():
            await asyncio.wait({self._future})

    def __await__(self) -> Generator[Any, None, T]:
        # Shielded: the awaiting caller may be cancelled, the task goes on.
        return asyncio.shield(self._future).__await__()


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class BackgroundTasks:
    """The tasks of one producer: :meth:`spawn` starts one, :meth:`close` ends them all."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: set[asyncio.Task[None]] = set()
        self._handles: set[Handle[Any]] = set()
        self.closed = False

    async def open(self) -> None:
        """Ready to spawn (nothing to set up: kept for the runtime's start sequence)."""

    def spawn(self, fn: Callable[..., Awaitable[T]], *args: Any, name: str) -> Handle[T]:
        """Run ``fn(*args)`` as a task of the group; once closed, the handle fails at once."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        handle = Handle(future, name)
        if self.closed:
            future.set_exception(_closed(name))
            return handle
        self._handles.add(handle)
        task = loop.create_task(self._run(handle, fn, args), name=name)
        if not task.done():  # (an eager task factory may have run it to its end)
            handle._task = task
            self._tasks.add(task)
            task.add_done_callback(self._ended)
        return handle

    async def _run(
        self, handle: Handle[T], fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]
    ) -> None:
        future = handle._future
        try:
            result = await fn(*args)
        except Exception as e:  # the handle carries it; the other tasks go on
            if not future.done():
                future.set_exception(e)
            return
        finally:
            self._handles.discard(handle)
            if handle._stop is not None or self.closed:
                handle._fail(handle._stop or _closed(handle.name))
        if not future.done():
            future.set_result(result)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        # Cancelled before its first step, a task never runs _run's finally.
        for handle in [h for h in self._handles if h._task is task]:
            self._handles.discard(handle)
            handle._fail(handle._stop or _closed(handle.name))

    def _fail_pending(self) -> None:
        for handle in list(self._handles):
            handle._fail(_closed(handle.name))
        self._handles.clear()

    async def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Cancel every task and wait (at most ``timeout`` s) for all of them to end.

        Finishes even if the caller is cancelled meanwhile (it then re-raises).
        """
        self.closed = True
        # Cancelled again until they end: a task may swallow one cancellation (as a
        # cancel scope would, which cancels at every await until the task leaves it).
        deadline = asyncio.get_running_loop().time() + timeout
        while self._tasks:
            pending = set(self._tasks)
            for task in pending:
                task.cancel()
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            await uncancellable(asyncio.wait(pending, timeout=min(left, 0.1)))
        if self._tasks:
            log.warning("%s: background tasks did not end within %.1f s", self.name, timeout)
        self._fail_pending()

    def abandon(self) -> None:
        """Close without waiting (from a callback, or a dropped producer's ``__del__``)."""
        self.closed = True
        for task in list(self._tasks):
            task.cancel()
        self._fail_pending()


def _closed(name: str) -> ProducerClosedError:
    return ProducerClosedError(f"{name}: the producer is stopped")


async def uncancellable(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` to its end even if the caller is cancelled meanwhile; then
    re-raise the cancellation. For cleanup that must not stop half-way."""
    task = asyncio.ensure_future(awaitable)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
            continue
        if cancelled:
            raise asyncio.CancelledError
        return result
