"""The hand-over: a task that keeps filling batches lets the sender take them.

``await send()`` in a loop never lets the event loop turn (it waits only for metadata
or memory): the sender would idle until the buffer ran out, and the broker with it. A
task *fills* a batch when its record does not fit the open one. This module owns the
rule; the paths that find a fill only report it. The fast path finds it before its
append (``SendPath.append`` answers :data:`FILLED`, and the general path then starts the
next batch); the accumulator finds it in its append and reports it with :func:`filled`,
which remembers the task (``RecordAccumulator.filler``).

* ``send()``: when the last filler sends again on the general path (for plain records,
  which the fast path takes, mostly its next fill; for any other record its next send),
  :func:`hand_over` wakes the sender and yields once, so that the full batch leaves and
  the broker works while the caller goes on appending, as beside Java's sender thread.
* ``send_many()`` and ``send_batch()``: right after each batch it filled (or queued),
  the call wakes the sender and yields once (:func:`pass_on`).

Either yield is skipped while the loop turned less than a slice ago
(:data:`HAND_OVER_SLICE`, at most ``linger_ms``): at the sender's last pass, or at the
last hand-over's yield. The sender is still woken, and the full batch leaves at the
loop's next turn: the caller's next await, or its next fill once the slice has passed
(a caller that keeps filling hands over at least once per slice and a fill). Java's
sender thread drains concurrently with the caller, so a busy caller's batches leave
several to a request; yielding at every fill would make each batch a request of its own
whenever the broker answers faster than the caller fills, and a request costs a system
call and an answer to handle, whatever it holds.

Only the filler yields: tasks that each send once (``gather``, request handlers) never
do, so their records keep the order of their calls. A fast-path fill is remembered only
after the hand-over, for the same reason: the filler yields at its next fill, not at
this one. The filler is held by a weak reference, not by ``id()``, which a new task may
reuse. The yield comes before the append: a send cancelled there appends nothing, and
the caller re-checks the producer's state after it.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

#: How long after the loop last turned a filler goes on instead of yielding at once
#: (seconds; ``linger_ms`` when that is shorter, so that with ``linger_ms=0`` the filler
#: yields at every fill). Long enough for the batches of a few fills to leave together,
#: one request per broker; short beside a broker's answer with ``acks="all"``
#: (milliseconds). Measured on ``time.perf_counter()``, whose ticks are far finer than
#: a slice on every platform.
HAND_OVER_SLICE = 0.001


class Declined(int):
    """Why ``send()``'s fast path (``SendPath.append``) appended nothing: :data:`NOT_PLAIN`
    or :data:`FILLED`, told apart by identity. False in a test (an int of 0, so that the
    test costs ``send()`` no Python call), where its future is true."""

    __slots__ = ()
    reason = ""

    def __repr__(self) -> str:
        return f"<{self.reason}>"

    if TYPE_CHECKING:

        def __bool__(self) -> Literal[False]: ...  # (so that `if found:` narrows to the future)


class _NotPlain(Declined):
    __slots__ = ()
    reason = "not the plain case"


class _Filled(Declined):
    __slots__ = ()
    reason = "the open batch is full"


#: Not the fast path's case: ``send()``'s general path takes the record, unchanged.
NOT_PLAIN: Declined = _NotPlain(0)
#: The record did not fit its partition's open batch (now marked full): this task filled
#: a batch, and the general path starts the next one.
FILLED: Declined = _Filled(0)


class Fills(Protocol):
    """Where the last filler is kept (a RecordAccumulator), the count of fills, when the
    loop last turned (``time.perf_counter()``) and the hand-over slice."""

    filler: weakref.ref[asyncio.Task[Any]] | None
    fills: int
    turned_at: float
    hand_over_slice: float


def current_task_ref() -> weakref.ref[asyncio.Task[Any]] | None:
    """A weak reference to the running task (None outside a task)."""
    task = asyncio.current_task()
    return None if task is None else weakref.ref(task)


def filled(fills: Fills) -> None:
    """Report a fill: the running task's record did not fit the open batch it found (now
    closed). The task is the last filler (see :func:`hand_over`); ``fills`` counts it."""
    fills.filler = current_task_ref()
    fills.fills += 1


async def _turn(fills: Fills) -> bool:
    """The slice's rule, for both hand-overs: yield once unless the loop turned less than
    ``fills.hand_over_slice`` ago, and note the turn; whether it yielded."""
    if time.perf_counter() - fills.turned_at < fills.hand_over_slice:
        return False
    await asyncio.sleep(0)
    fills.turned_at = time.perf_counter()
    return True


async def pass_on(fills: Fills, wake: Callable[[], None] | None) -> None:
    """A ``send_many()`` or ``send_batch()`` call filled (or queued) a batch: wake the
    sender and, if the loop last turned a slice ago or more (``fills.turned_at``,
    ``fills.hand_over_slice``), yield once, so that the sender takes the batch (and
    answers are read) while the call goes on; the task has then handed over: it is no
    longer a filler for its next ``send()``. ``wake`` is None when the sender was woken
    already (``send_batch()``: the accumulator wakes it as it queues the batch)."""
    if wake is not None:
        wake()
    if not await _turn(fills):
        return  # the loop turned moments ago: the batch waits for the next turn
    last = fills.filler
    if last is not None and last() is asyncio.current_task():
        fills.filler = None


async def hand_over(fills: Fills, filling: bool, wake: Callable[[], None]) -> None:
    """Before a general-path append: if this task is the filler (the last task that
    filled a batch), wake the sender and yield once, unless the loop turned less than a
    slice ago.

    ``filling``: this send's record did not fit its open batch (found by the fast path).
    Called when that is so or a filler is remembered; then it is forgotten.
    """
    last, fills.filler = fills.filler, None
    task = asyncio.current_task()  # (None: send() driven outside a task, never a filler)
    if last is not None and task is not None and last() is task:
        wake()
        await _turn(fills)
    if filling:
        filled(fills)
