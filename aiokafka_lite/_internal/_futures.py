"""A ``concurrent.futures.Future`` that makes its ``threading.Condition`` only when needed.

The standard Future builds a Condition and two lists in its constructor: eleven
objects the garbage collector tracks. The blocking producer returns one future per
record and may hold a million of them, and the collector's passes over those
objects cost more than the rest of ``send()`` together (measured: creating and
keeping futures took 13 us each with collection on, 2.7 us off). This future is
one tracked object: it creates its Condition (and lists) on first use by something
that can wait on it (``result()`` or ``exception()`` before it is done,
``concurrent.futures.wait`` / ``as_completed``, ``cancel()``); one that is just
resolved, read and given done callbacks never has one.

Correctness rests on one rule: a future without a Condition changes state only
while holding ``_MAKE``, the lock that creating a Condition takes too. So either
the setter sees the Condition (and notifies its waiters as usual), or the waiter
creates it after the state changed, and finds the result before it waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from concurrent.futures._base import (  # the states every Future method compares
    CANCELLED,
    CANCELLED_AND_NOTIFIED,
    FINISHED,
    LOGGER,
    PENDING,
    RUNNING,
)
from typing import Any, TypeVar

T = TypeVar("T")

_MAKE = threading.Lock()
_SETTLED = (CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED)
# Stands for "no waiters / no callbacks yet" without a list per future; a tuple, so
# that anything appending to it by mistake fails loudly instead of sharing it.
_NONE: Any = ()


class LazyFuture(Future[T]):
    """A :class:`concurrent.futures.Future`, cheaper to hold by the million."""

    def __init__(self) -> None:  # Future.__init__ would build the Condition
        self._cond: threading.Condition | None = None
        self._state = PENDING
        self._result: Any = None
        self._exception: BaseException | None = None
        # Real lists once a Condition exists (Future's own methods append then).
        self._waiters: list[Any] = _NONE
        self._done_callbacks: list[Callable[[Future[T]], object]] = _NONE

    @property
    def _condition(self) -> threading.Condition:
        cond = self._cond
        if cond is None:
            with _MAKE:
                cond = self._cond
                if cond is None:
                    self._waiters = []
                    if self._done_callbacks is _NONE:
                        self._done_callbacks = []
                    # Published last: whoever sees it finds the lists in place.
                    cond = self._cond = threading.Condition()
        return cond

    @_condition.setter
    def _condition(self, cond: threading.Condition) -> None:  # Future's own attribute
        with _MAKE:
            if self._waiters is _NONE:
                self._waiters = []
            if self._done_callbacks is _NONE:
                self._done_callbacks = []
            self._cond = cond

    # -- the methods that need no Condition while nobody waits -----------------------

    def set_running_or_notify_cancel(self) -> bool:
        with _MAKE:
            if self._cond is None:
                if self._state == PENDING:
                    self._state = RUNNING
                    return True
                if self._state == CANCELLED:
                    self._state = CANCELLED_AND_NOTIFIED
                    return False
                raise RuntimeError(f"Future in unexpected state: {self._state}")
        return super().set_running_or_notify_cancel()

    def set_result(self, result: T) -> None:
        if not self._settle(result, None):
            super().set_result(result)

    def set_exception(self, exception: BaseException | None) -> None:
        if not self._settle(None, exception):
            super().set_exception(exception)

    def _settle(self, result: Any, exception: BaseException | None) -> bool:
        """Finish without a Condition if there is none (so nobody waits); False otherwise."""
        with _MAKE:
            if self._cond is not None:
                return False
            if self._state in _SETTLED:
                raise InvalidStateError(f"{self._state}: {self!r}")
            self._result, self._exception, self._state = result, exception, FINISHED
        self._invoke_callbacks()  # type: ignore[attr-defined]
        return True

    def add_done_callback(self, fn: Callable[[Future[T]], object]) -> None:
        with _MAKE:
            if self._cond is None:
                if self._state not in _SETTLED:
                    if self._done_callbacks is _NONE:
                        self._done_callbacks = [fn]
                    else:
                        self._done_callbacks.append(fn)
                    return
                settled = True
            else:
                settled = False
        if not settled:
            super().add_done_callback(fn)
            return
        try:
            fn(self)
        except Exception:  # as Future.add_done_callback does
            LOGGER.exception("exception calling callback for %r", self)

    # A finished future's outcome never changes: read it without any lock, and
    # without a Condition (done callbacks call result() on every record).
    def result(self, timeout: float | None = None) -> T:
        if self._state != FINISHED:
            return super().result(timeout)
        exc = self._exception
        if exc is None:
            value: T = self._result
            return value
        try:
            raise exc
        finally:
            del exc  # no reference cycle through this frame

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state != FINISHED:
            return super().exception(timeout)
        return self._exception

    # Reading one attribute needs no lock (and must not create the Condition).
    def done(self) -> bool:
        return self._state in _SETTLED

    def running(self) -> bool:
        return self._state == RUNNING

    def cancelled(self) -> bool:
        return self._state in (CANCELLED, CANCELLED_AND_NOTIFIED)
