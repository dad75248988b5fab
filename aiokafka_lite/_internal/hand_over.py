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
* ``send_many()`` and ``send_batch()``: the call yields once right after each batch it
  filled (or queued), and goes on (:func:`pass_on`).

Only the filler yields: tasks that each send once (``gather``, request handlers) never
do, so their records keep the order of their calls. A fast-path fill is remembered only
after the hand-over, for the same reason: the filler yields at its next fill, not at
this one. The filler is held by a weak reference, not by ``id()``, which a new task may
reuse. The yield comes before the append: a send cancelled there appends nothing, and
the caller re-checks the producer's state after it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol


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
    """Where the last filler is kept (a RecordAccumulator), and the count of fills."""

    filler: weakref.ref[asyncio.Task[Any]] | None
    fills: int


def current_task_ref() -> weakref.ref[asyncio.Task[Any]] | None:
    """A weak reference to the running task (None outside a task)."""
    task = asyncio.current_task()
    return None if task is None else weakref.ref(task)


def filled(fills: Fills) -> None:
    """Report a fill: the running task's record did not fit the open batch it found (now
    closed). The task is the last filler (see :func:`hand_over`); ``fills`` counts it."""
    fills.filler = current_task_ref()
    fills.fills += 1


async def pass_on(fills: Fills, wake: Callable[[], None] | None) -> None:
    """A ``send_many()`` or ``send_batch()`` call filled (or queued) a batch: wake the
    sender and yield once, so that it takes the batch while the call goes on. The task
    has handed over: it is no longer a filler for its next ``send()``. ``wake`` is None
    when the sender was woken already (``send_batch()``: the accumulator wakes it as it
    queues the batch)."""
    if wake is not None:
        wake()
    await asyncio.sleep(0)
    last = fills.filler
    if last is not None and last() is asyncio.current_task():
        fills.filler = None


async def hand_over(fills: Fills, filling: bool, wake: Callable[[], None]) -> None:
    """Before a general-path append: yield once if this task is the filler (the last
    task that filled a batch).

    ``filling``: this send's record did not fit its open batch (found by the fast path).
    Called when that is so or a filler is remembered; then it is forgotten.
    """
    last, fills.filler = fills.filler, None
    task = asyncio.current_task()  # (None: send() driven outside a task, never a filler)
    if last is not None and task is not None and last() is task:
        wake()
        await asyncio.sleep(0)
    if filling:
        filled(fills)
