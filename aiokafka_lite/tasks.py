"""The producer's background tasks, all owned by one anyio task group.

Everything a producer runs besides the caller's own calls (the sender loop,
connection attempts, metadata refreshes, InitProducerId, AddPartitionsToTxn,
re-authentication, a commit or abort that outlives its caller) is spawned into
one :class:`BackgroundTasks`. Closing it cancels whatever is still running and
waits for it to end, so no task can outlive the producer.

The group is entered by a small supervisor task rather than by ``start()``
itself: ``start()`` and ``stop()`` are often called from different tasks (an
app's startup and shutdown hooks), and a task group must be left by the task
that entered it.

:meth:`BackgroundTasks.spawn` returns a :class:`Handle`: awaiting it gives the
task's result (or raises its exception) without ever cancelling the task, the
way ``asyncio.shield`` would, so a caller that gives up does not tear down work
others share (a connection attempt, a commit).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Generator
from types import TracebackType
from typing import Any, Generic, TypeVar

import anyio

from .errors import ProducerClosedError

__all__ = ["BackgroundTasks", "Handle", "uncancellable"]

log = logging.getLogger("aiokafka_lite.tasks")

T = TypeVar("T")

# How long closing waits for cancelled tasks to end (they only need to unwind).
CLOSE_TIMEOUT = 5.0


class Handle(Generic[T]):
    """One background task: await it for its result; :meth:`cancel` stops it."""

    __slots__ = ("_future", "_scope", "_stop", "name")

    def __init__(self, future: asyncio.Future[T], name: str) -> None:
        self._future = future
        self._scope: anyio.CancelScope | None = None
        self._stop: BaseException | None = None  # cancel() before the task ran
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
        if self._scope is not None:
            self._scope.cancel()

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
    """An anyio task group that :meth:`open` enters and :meth:`close` leaves."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._group: anyio.abc.TaskGroup | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._closing: asyncio.Future[None] | None = None
        self._handles: set[Handle[Any]] = set()
        # Spawned before the group was entered: started as soon as it is.
        self._queued: list[tuple[Handle[Any], Callable[..., Awaitable[Any]], tuple[Any, ...]]] = []
        self.closed = False

    async def open(self) -> None:
        """Enter the group (spawning does so by itself; this waits until it has)."""
        ready = self._launch()
        try:
            await asyncio.shield(ready)
        except BaseException:
            self.abandon()
            raise

    def _launch(self) -> asyncio.Future[None]:
        if self._ready is None:
            loop = asyncio.get_running_loop()
            self._ready = loop.create_future()
            self._closing = loop.create_future()
            self._supervisor = loop.create_task(
                self._supervise(self._ready), name=f"{self.name}.tasks"
            )
        return self._ready

    async def _supervise(self, ready: asyncio.Future[None]) -> None:
        assert self._closing is not None
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                ready.set_result(None)
                queued, self._queued = self._queued, []
                for handle, fn, args in queued:
                    group.start_soon(self._run, handle, fn, args, name=handle.name)
                await self._closing
                group.cancel_scope.cancel()
        finally:
            self._group = None
            self.closed = True
            self._fail_pending()

    def spawn(self, fn: Callable[..., Awaitable[T]], *args: Any, name: str) -> Handle[T]:
        """Run ``fn(*args)`` in the group; once closed, the handle fails at once."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        handle = Handle(future, name)
        if self.closed:
            future.set_exception(_closed(name))
            return handle
        self._handles.add(handle)
        group = self._group
        if group is None:
            self._launch()
            self._queued.append((handle, fn, args))
        elif asyncio.current_task() is None:
            # A protocol or timer callback (a response that makes re-authentication
            # due): anyio starts tasks only from a task, so one starts it there.
            asyncio.get_running_loop().create_task(
                self._start_from_task(handle, fn, args), name=f"{name}.spawn"
            )
        else:
            group.start_soon(self._run, handle, fn, args, name=name)
        return handle

    async def _start_from_task(
        self, handle: Handle[T], fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]
    ) -> None:
        group = self._group
        if group is None:  # closed meanwhile
            self._handles.discard(handle)
            if not handle._future.done():
                handle._future.set_exception(handle._stop or _closed(handle.name))
            return
        group.start_soon(self._run, handle, fn, args, name=handle.name)

    async def _run(
        self, handle: Handle[T], fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]
    ) -> None:
        future = handle._future
        try:
            with anyio.CancelScope() as scope:
                handle._scope = scope
                if handle._stop is not None:
                    scope.cancel()
                try:
                    result = await fn(*args)
                except Exception as e:  # the handle carries it; the group goes on
                    if not future.done():
                        future.set_exception(e)
                    return
                if not future.done():
                    future.set_result(result)
        finally:
            self._handles.discard(handle)
            if not future.done():  # cancelled: by its handle, or by closing the group
                future.set_exception(handle._stop or _closed(handle.name))

    def _fail_pending(self) -> None:
        self._queued.clear()
        for handle in list(self._handles):
            if not handle._future.done():
                handle._future.set_exception(_closed(handle.name))
        self._handles.clear()

    async def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Cancel every task and wait (at most ``timeout`` s) for all of them to end.

        Finishes even if the caller is cancelled meanwhile (it then re-raises).
        """
        supervisor = self._supervisor
        if self._closing is not None and not self._closing.done():
            self._closing.set_result(None)
        if supervisor is None or supervisor.done():
            self.closed = True
            return
        done, _ = await uncancellable(asyncio.wait({supervisor}, timeout=timeout))
        if not done:
            log.warning("%s: background tasks did not end within %.1f s", self.name, timeout)
            supervisor.cancel()

    def abandon(self) -> None:
        """Close without waiting (from a callback, or a dropped producer's ``__del__``)."""
        if self._closing is not None and not self._closing.done():
            self._closing.set_result(None)
        self.closed = True

    async def __aenter__(self) -> BackgroundTasks:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


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
