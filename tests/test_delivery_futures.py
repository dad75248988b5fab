"""The per-record delivery futures (aiokafka_lite._internal.delivery, pure and compiled) against
asyncio.Future, side by side.

Every scenario is run three times in the same loop: on plain ``asyncio.Future`` objects
resolved one by one with ``set_result``/``set_exception`` (the reference: what an asyncio
producer gives its users), and on the futures of ``RecordFutures`` (pure twin and
compiled twin) resolved per batch with ``complete``/``fail``. Each run returns a trace of
what user code could observe: results, exceptions, callback order, cancellation, the
loop iteration callbacks ran in, the context they saw. The traces must be equal.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import gc
import importlib
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from invariants import loop_reports

from aiokafka_lite._internal import delivery
from aiokafka_lite.structs import RecordMetadata, TopicPartition

TP = TopicPartition("t", 3)
BASE_OFFSET = 100
LOG_START = 7


def _compiled_delivery() -> Any:
    try:
        return importlib.import_module("aiokafka_lite._internal._cdelivery")
    except ImportError:
        return None


CDELIVERY = _compiled_delivery()
IMPLEMENTATIONS = [
    pytest.param(delivery.PyRecordFutures, id="pure"),
    pytest.param(
        getattr(CDELIVERY, "RecordFutures", None),
        id="compiled",
        marks=pytest.mark.skipif(CDELIVERY is None, reason="the extension is not built"),
    ),
]


def expected(i: int, base: int = BASE_OFFSET, append_time: int = -1) -> RecordMetadata:
    """Record i of a batch: offset base + i, timestamp 1000 + i (as the kits stamp them)."""
    offset = base + i if base >= 0 else -1
    if append_time != -1:
        return RecordMetadata(TP.topic, TP.partition, TP, offset, append_time, 1, LOG_START)
    return RecordMetadata(TP.topic, TP.partition, TP, offset, 1000 + i, 0, LOG_START)


class Batch:
    """One batch's futures, resolved together."""

    def __init__(
        self,
        futures: list[Any],
        complete: Callable[..., None],
        fail: Any,
        complete_none: Callable[[], None],
    ) -> None:
        self.futures = futures
        self.complete = complete
        self.fail = fail
        self.complete_none = complete_none  # acks=0: every future resolves to None


class ReferenceKit:
    """asyncio.Future, each resolved on its own: the behaviour to match."""

    def batch(self, n: int) -> Batch:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in range(n)]

        def complete(base: int = BASE_OFFSET, append_time: int = -1) -> None:
            for i, f in enumerate(futures):
                if not f.done():
                    f.set_result(expected(i, base, append_time))

        def fail(exc: BaseException) -> None:
            for f in futures:  # each its own copy, as aiokafka's MessageBatch.failure
                if not f.done():
                    f.set_exception(copy.copy(exc))

        def complete_none() -> None:
            for f in futures:
                if not f.done():
                    f.set_result(None)

        return Batch(futures, complete, fail, complete_none)


class OurKit:
    """RecordFutures (pure or compiled): futures added per record, resolved per batch."""

    def __init__(self, cls: Any) -> None:
        self.cls = cls

    def batch(self, n: int) -> Batch:
        rf = self.cls(asyncio.get_running_loop())
        futures = [rf.add(i, 1000 + i) for i in range(n)]

        def complete(base: int = BASE_OFFSET, append_time: int = -1) -> None:
            rf.complete(TP, base, append_time, LOG_START)

        return Batch(futures, complete, rf.fail, rf.complete_none)


Scenario = Callable[[Any], Awaitable[list[Any]]]


def outcome(fut: Any) -> Any:
    """What a done future holds, comparably: metadata as a tuple, an exception as text."""
    if fut.cancelled():
        return ("cancelled",)
    exc = fut.exception()
    if exc is not None:
        return ("raised", type(exc).__name__, exc.args)
    result = fut.result()
    return ("result", None if result is None else tuple(result))


async def side_by_side(cls: Any, scenario: Scenario) -> list[Any]:
    reference = await scenario(ReferenceKit())
    ours = await scenario(OurKit(cls))
    assert ours == reference
    return reference


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


# -- the scenarios -----------------------------------------------------------------------


async def await_each(kit: Any) -> list[Any]:
    batch = kit.batch(3)
    asyncio.get_running_loop().call_soon(batch.complete)
    trace = []
    for fut in batch.futures:
        md = await fut
        trace.append((tuple(md), md is fut.result(), md == fut.result()))
    return trace


async def gather_mixed(kit: Any) -> list[Any]:
    good, bad = kit.batch(3), kit.batch(2)
    good.complete()
    bad.fail(ValueError("broker said no"))
    everything = good.futures + bad.futures
    outcomes = await asyncio.gather(*everything, return_exceptions=True)
    trace: list[Any] = [
        tuple(o) if isinstance(o, RecordMetadata) else (type(o).__name__, o.args) for o in outcomes
    ]
    with pytest.raises(ValueError, match="broker said no") as info:
        await asyncio.gather(*everything)
    trace.append(info.value is bad.futures[0].exception())
    return trace


async def callback_order(kit: Any) -> list[Any]:
    batch = kit.batch(3)
    f0, f1, f2 = batch.futures
    calls: list[Any] = []
    f0.add_done_callback(lambda f: calls.append(("a0", f is f0, f.result().offset)))
    f2.add_done_callback(lambda f: calls.append(("a2", f.done(), f1.done())))
    f0.add_done_callback(lambda f: calls.append(("b0", f.result().timestamp)))
    batch.complete()
    trace: list[Any] = [[f.done() for f in batch.futures], list(calls)]  # none ran yet
    f1.add_done_callback(lambda f: calls.append(("late1", f.result().offset)))
    await asyncio.sleep(0)  # one loop iteration: every callback ran
    trace.append(list(calls))
    return trace


async def remove_callbacks(kit: Any) -> list[Any]:
    batch = kit.batch(2)
    f0, f1 = batch.futures
    calls: list[str] = []

    def x(_: Any) -> None:
        calls.append("x")

    def y(_: Any) -> None:
        calls.append("y")

    def z(_: Any) -> None:
        calls.append("z")

    f0.add_done_callback(x)
    f0.add_done_callback(y)
    f0.add_done_callback(x)
    f1.add_done_callback(z)
    trace: list[Any] = [f0.remove_done_callback(x), f0.remove_done_callback(x)]
    batch.complete()
    # Once done, the callbacks are scheduled already: removing finds nothing to remove.
    trace.append(f1.remove_done_callback(z))
    await settle()
    trace.append(calls)
    return trace


async def cancel_pending(kit: Any) -> list[Any]:
    batch = kit.batch(3)
    f0, f1, f2 = batch.futures
    calls: list[Any] = []
    f0.add_done_callback(lambda f: calls.append(("cb0", f.cancelled())))
    trace: list[Any] = [f0.cancel(), f0.cancel(), f0.cancelled(), f0.done(), calls[:]]
    trace.append(f2.cancel("the caller gave up"))
    for fut in (f0, f2):
        for read in (fut.result, fut.exception):
            with pytest.raises(asyncio.CancelledError) as info:
                read()
            trace.append(info.value.args)
    await settle()
    batch.complete()  # the cancelled ones stay cancelled
    trace += [calls, [outcome(f) for f in batch.futures], f1.cancel()]
    return trace


async def pending_reads(kit: Any) -> list[Any]:
    fut = kit.batch(1).futures[0]
    trace: list[Any] = [fut.done(), fut.cancelled()]
    for read in (fut.result, fut.exception):
        with pytest.raises(asyncio.InvalidStateError) as info:
            read()
        trace.append(str(info.value))
    trace.append(asyncio.isfuture(fut))
    trace.append(fut.get_loop() is asyncio.get_running_loop())
    trace.append(asyncio.ensure_future(fut) is fut)
    return trace


VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


async def callback_context(kit: Any) -> list[Any]:
    batch = kit.batch(2)
    f0, f1 = batch.futures
    seen: list[str] = []
    VAR.set("at add_done_callback")
    f0.add_done_callback(lambda f: seen.append(VAR.get()))
    explicit = contextvars.copy_context()
    explicit.run(VAR.set, "explicit context")
    f1.add_done_callback(lambda f: seen.append(VAR.get()), context=explicit)
    VAR.set("later")
    batch.complete()
    await settle()
    return [seen, VAR.get()]


async def callback_contexts_are_separate(kit: Any) -> list[Any]:
    """Callbacks added in one context each run in their own copy of it: what one sets,
    no other sees (the compiled twin shares one snapshot between them)."""
    batch, done = kit.batch(3), kit.batch(2)
    done.complete()
    seen: list[Any] = []

    def setter(f: Any) -> None:
        seen.append(("setter saw", VAR.get()))
        VAR.set("set by a callback")

    def reader(f: Any) -> None:
        seen.append(("reader saw", VAR.get()))

    VAR.set("first")
    for fut in (batch.futures[0], done.futures[0]):
        fut.add_done_callback(setter)
    batch.futures[0].add_done_callback(reader)
    batch.futures[1].add_done_callback(reader)
    done.futures[1].add_done_callback(reader)
    VAR.set("second")  # callbacks added from now on see this
    batch.futures[2].add_done_callback(reader)
    done.futures[0].add_done_callback(reader)
    await settle()
    batch.complete()
    await settle()
    return [seen, VAR.get()]


async def callbacks_keep_their_place_among_call_soon(kit: Any) -> list[Any]:
    """Callbacks of done futures run where their call_soon would have run them, even
    with other callbacks scheduled in between (the compiled twin runs them in batches)."""
    loop = asyncio.get_running_loop()
    batch, later = kit.batch(3), kit.batch(2)
    batch.complete()
    order: list[str] = []
    f0, f1, f2 = batch.futures
    f0.add_done_callback(lambda f: order.append("f0 a"))
    f1.add_done_callback(lambda f: order.append("f1 a"))
    loop.call_soon(order.append, "call_soon 1")
    f2.add_done_callback(lambda f: order.append("f2 a"))
    f0.add_done_callback(lambda f: order.append("f0 b"))
    later.futures[0].add_done_callback(lambda f: order.append("later0"))
    later.complete()  # resolved now: its callback is scheduled here
    loop.call_soon(order.append, "call_soon 2")
    later.futures[1].add_done_callback(lambda f: order.append("later1"))

    def nested(f: Any) -> None:
        order.append("f1 nested")
        f.add_done_callback(lambda g: order.append("added while running"))
        loop.call_soon(order.append, "call_soon from a callback")

    f1.add_done_callback(nested)
    trace: list[Any] = [list(order)]
    await asyncio.sleep(0)
    trace.append(list(order))
    await settle()
    trace.append(order)
    return trace


async def callback_added_in_the_iteration_after_completion(kit: Any) -> list[Any]:
    """A callback added to a done future runs in the loop iteration after it was added,
    behind what was scheduled before it, even when a batch was completed just before."""
    loop = asyncio.get_running_loop()
    earlier, batch = kit.batch(1), kit.batch(1)
    earlier.complete()
    await settle()
    order: list[str] = []

    def before() -> None:  # runs first in its iteration: schedules for the next one
        loop.call_soon(order.append, "scheduled before the add")

    def add() -> None:
        earlier.futures[0].add_done_callback(lambda f: order.append("added"))

    def start() -> None:
        loop.call_soon(before)
        loop.call_soon(add)
        batch.complete()  # its callbacks scheduled last

    batch.futures[0].add_done_callback(lambda f: order.append("batch"))
    loop.call_soon(start)
    await asyncio.sleep(0.01)  # (a timer: the ready queue holds only the above)
    return order


async def callback_raises(kit: Any) -> list[Any]:
    with loop_reports() as reported:
        batch = kit.batch(2)
        f0, f1 = batch.futures
        calls: list[str] = []

        def boom(_: Any) -> None:
            calls.append("boom")
            raise RuntimeError("callback failed")

        f0.add_done_callback(boom)
        f0.add_done_callback(lambda f: calls.append("after boom"))
        f1.add_done_callback(lambda f: calls.append("f1"))
        batch.complete()
        await settle()
    # The context's keys are asyncio's (a handler may read ctx["handle"]).
    return [
        calls,
        [
            (
                type(c["exception"]).__name__,
                c["exception"].args,
                sorted(c),
                c["message"],
                type(c["handle"]).__name__,
                len(c["handle"]._args),
            )
            for c in reported
        ],
    ]


async def wait_first_and_all(kit: Any) -> list[Any]:
    loop = asyncio.get_running_loop()
    a, b = kit.batch(2), kit.batch(1)
    loop.call_soon(a.complete)
    done, pending = await asyncio.wait(a.futures + b.futures, return_when=asyncio.FIRST_COMPLETED)
    trace: list[Any] = [sorted(f.result().offset for f in done), len(pending)]
    loop.call_soon(b.complete, 500)
    done, pending = await asyncio.wait(a.futures + b.futures)
    trace.append((sorted(f.result().offset for f in done), len(pending)))
    return trace


async def shield_survives(kit: Any) -> list[Any]:
    batch = kit.batch(1)
    inner = batch.futures[0]
    outer = asyncio.shield(inner)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    trace: list[Any] = [inner.cancelled(), inner.done()]
    batch.complete()
    trace.append(tuple(await inner))
    return trace


async def as_completed_order(kit: Any) -> list[Any]:
    loop = asyncio.get_running_loop()
    first, second = kit.batch(2), kit.batch(2)
    loop.call_soon(second.complete, 200)
    loop.call_soon(first.fail, KeyError("gone"))
    order = []
    for next_done in asyncio.as_completed(first.futures + second.futures):
        try:
            order.append((await next_done).offset)
        except KeyError as e:
            order.append(e.args)
    return order


async def wait_for_both_ways(kit: Any) -> list[Any]:
    loop = asyncio.get_running_loop()
    ok, late = kit.batch(1), kit.batch(1)
    loop.call_soon(ok.complete)
    trace: list[Any] = [tuple(await asyncio.wait_for(ok.futures[0], 10))]
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(late.futures[0], 0.01)
    trace.append(late.futures[0].cancelled())  # wait_for cancels what it waited for
    return trace


async def timeout_context(kit: Any) -> list[Any]:
    batch = kit.batch(2)
    f0, f1 = batch.futures
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await f0
    trace: list[Any] = [f0.cancelled(), f1.done()]
    batch.complete()
    async with asyncio.timeout(10):
        trace.append(tuple(await f1))
    return trace


async def task_cancelled_while_awaiting(kit: Any) -> list[Any]:
    batch = kit.batch(2)
    f0, f1 = batch.futures

    async def waiter() -> Any:
        return await f0

    task = asyncio.create_task(waiter())
    await asyncio.sleep(0)  # the task now waits on f0
    task.cancel("stop waiting")
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    trace: list[Any] = [info.value.args, f0.cancelled(), task.cancelled()]
    batch.complete()
    trace.append(outcome(f1))
    return trace


async def failed_batch(kit: Any) -> list[Any]:
    batch = kit.batch(2)
    exc = ConnectionError("lost")
    batch.fail(exc)
    trace: list[Any] = []
    for fut in batch.futures:
        trace.append(fut.exception() is exc)  # each record's own copy
        with pytest.raises(ConnectionError) as info:
            fut.result()
        trace.append((info.value is fut.exception(), info.value.args))
    trace.append(batch.futures[0].exception() is batch.futures[1].exception())
    return trace


async def resolved_once(kit: Any) -> list[Any]:
    done_first, failed_first = kit.batch(2), kit.batch(2)
    done_first.complete()
    done_first.fail(OSError("too late"))
    failed_first.fail(OSError("first"))
    failed_first.complete()
    return [outcome(f) for f in done_first.futures + failed_first.futures]


async def acks_zero_and_log_append_time(kit: Any) -> list[Any]:
    acks0, appended = kit.batch(2), kit.batch(2)
    acks0.complete(-1)
    appended.complete(50, 123_456)
    return [outcome(f) for f in acks0.futures + appended.futures]


async def acks_zero_resolves_to_none(kit: Any) -> list[Any]:
    """acks=0 (as aiokafka): no answer, every future resolves to None, exactly once."""
    batch, later = kit.batch(3), kit.batch(1)
    f0, f1, f2 = batch.futures
    calls: list[Any] = []
    f0.add_done_callback(lambda f: calls.append(("f0", f.result())))
    f2.cancel()
    batch.complete_none()
    batch.fail(OSError("too late"))  # the first outcome wins
    batch.complete()
    trace: list[Any] = [[f.done() for f in batch.futures], list(calls)]
    trace.append(await f1)  # done already: no suspension, so the callback has not run
    trace.append([outcome(f) for f in batch.futures])
    await settle()
    trace.append(calls)
    later.fail(OSError("first"))
    later.complete_none()
    trace.append(outcome(later.futures[0]))
    return trace


async def never_retrieved(kit: Any) -> list[Any]:
    with loop_reports() as reported:
        exc = TimeoutError("no answer")
        batch = kit.batch(2)
        batch.fail(exc)
        batch.futures[1].exception()  # this one was looked at
        del batch
        gc.collect()
        await settle()
    return [
        ("exception was never retrieved" in ctx["message"], repr(ctx["exception"]))
        for ctx in reported
    ]


SCENARIOS: list[Scenario] = [
    await_each,
    gather_mixed,
    callback_order,
    remove_callbacks,
    cancel_pending,
    pending_reads,
    callback_context,
    callback_contexts_are_separate,
    callbacks_keep_their_place_among_call_soon,
    callback_raises,
    callback_added_in_the_iteration_after_completion,
    wait_first_and_all,
    shield_survives,
    as_completed_order,
    wait_for_both_ways,
    timeout_context,
    task_cancelled_while_awaiting,
    failed_batch,
    resolved_once,
    acks_zero_and_log_append_time,
    acks_zero_resolves_to_none,
    never_retrieved,
]


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
async def test_same_as_asyncio_future(cls: Any, scenario: Scenario) -> None:
    await side_by_side(cls, scenario)


# The traces are compared above; these pin what they must contain, so that a scenario
# that stops observing anything (both sides empty) cannot pass unnoticed.


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
async def test_callbacks_run_in_order_one_iteration_after_completion(cls: Any) -> None:
    trace = await side_by_side(cls, callback_order)
    assert trace == [
        [True, True, True],
        [],
        [("a0", True, 100), ("b0", 1000), ("a2", True, True), ("late1", 101)],
    ]


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
async def test_cancellation_and_exactly_once(cls: Any) -> None:
    trace = await side_by_side(cls, cancel_pending)
    assert trace[:5] == [True, False, True, True, []]
    assert trace[6:10] == [(), (), ("the caller gave up",), ("the caller gave up",)]
    assert trace[11] == [("cancelled",), ("result", tuple(expected(1))), ("cancelled",)]
    once = await side_by_side(cls, resolved_once)
    assert once[:2] == [("result", tuple(expected(0))), ("result", tuple(expected(1)))]
    assert once[2:] == [("raised", "OSError", ("first",))] * 2


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
async def test_contexts_errors_and_unretrieved_exceptions(cls: Any) -> None:
    assert await side_by_side(cls, callback_context) == [
        ["at add_done_callback", "explicit context"],
        "later",
    ]
    calls, reported = await side_by_side(cls, callback_raises)
    assert calls == ["boom", "after boom", "f1"]
    ((name, args, keys, message, handle_type, handle_args),) = reported
    assert (name, args, keys) == (
        "RuntimeError",
        ("callback failed",),
        [
            "exception",
            "handle",
            "message",
        ],
    )
    assert message.startswith("Exception in callback ") and "boom" in message
    assert handle_type == "Handle" and handle_args == 1
    assert await side_by_side(cls, callback_added_in_the_iteration_after_completion) == [
        "batch",
        "scheduled before the add",
        "added",
    ]
    assert await side_by_side(cls, never_retrieved) == [(True, "TimeoutError('no answer')")]
    assert await side_by_side(cls, callback_contexts_are_separate) == [
        [
            ("setter saw", "first"),  # the futures done already, first
            ("reader saw", "first"),
            ("reader saw", "second"),
            ("setter saw", "first"),  # then the batch
            ("reader saw", "first"),
            ("reader saw", "first"),
            ("reader saw", "second"),
        ],
        "second",
    ]


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
async def test_callbacks_keep_asyncio_order_among_other_callbacks(cls: Any) -> None:
    trace = await side_by_side(cls, callbacks_keep_their_place_among_call_soon)
    assert trace[0] == []
    assert trace[1] == [
        "f0 a",
        "f1 a",
        "call_soon 1",
        "f2 a",
        "f0 b",
        "later0",
        "call_soon 2",
        "later1",
        "f1 nested",
    ]
    assert trace[2][9:] == ["added while running", "call_soon from a callback"]


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
async def test_metadata_values(cls: Any) -> None:
    trace = await side_by_side(cls, acks_zero_and_log_append_time)
    assert trace == [
        ("result", tuple(expected(0, -1))),
        ("result", tuple(expected(1, -1))),
        ("result", tuple(expected(0, 50, 123_456))),
        ("result", tuple(expected(1, 50, 123_456))),
    ]
    assert trace[0][1][3] == -1 and trace[3][1][3:6] == (51, 123_456, 1)
    assert await side_by_side(cls, acks_zero_resolves_to_none) == [
        [True, True, True],
        [],
        None,
        [("result", None), ("result", None), ("cancelled",)],
        [("f0", None)],
        ("raised", "OSError", ("first",)),
    ]


# -- garbage collector -----------------------------------------------------------------


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
async def test_record_metadata_is_not_tracked_by_the_gc(cls: Any) -> None:
    rf = cls(asyncio.get_running_loop())
    futures = [rf.add(i, 1000 + i) for i in range(3)]
    rf.complete(TP, BASE_OFFSET, -1, LOG_START)
    for fut in futures:
        md = fut.result()
        assert isinstance(md, RecordMetadata)
        assert not gc.is_tracked(md)
    gc.collect()  # (a collection untracks plain tuples: not a reason to pass)
    assert not gc.is_tracked(futures[0].result())


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
async def test_a_future_in_a_cycle_through_its_callback_is_collected(cls: Any) -> None:
    class Marker:
        pass

    rf = cls(asyncio.get_running_loop())
    fut = rf.add(0, 0)
    marker = Marker()
    alive = weakref.ref(marker)

    def callback(f: Any, fut: Any = fut, marker: Marker = marker) -> None:
        pass

    fut.add_done_callback(callback)  # fut -> callback -> fut
    rf.complete(TP, 0, -1, 0)
    await settle()
    del fut, marker, callback, rf
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
async def test_futures_are_asyncio_futures(cls: Any) -> None:
    """asyncio's own type in both builds: anyio, pydantic and type checkers rely on it."""
    rf = cls(asyncio.get_running_loop())
    fut = rf.add(0, 0)
    assert type(fut) is asyncio.Future
    rf.complete(TP, 0, -1, 0)
    assert fut.done() and fut._state == "FINISHED"


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
async def test_a_complete_that_raises_leaves_the_batch_to_fail(cls: Any) -> None:
    """A ``tp`` that cannot be read makes ``complete`` raise before it settles anything:
    ``fail`` then still resolves every future (the sender's safety net relies on it)."""
    futures = cls(asyncio.get_running_loop())
    futs = [futures.add(i, 1000 + i) for i in range(3)]
    with pytest.raises(ValueError, match="unpack"):
        futures.complete(("t", 3, "extra"), BASE_OFFSET, -1, LOG_START)
    assert not any(f.done() for f in futs)
    futures.fail(OSError("completing failed"))
    await settle()
    assert [type(f.exception()) for f in futs] == [OSError] * 3


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
async def test_a_topic_named_by_a_str_subclass_is_reported_as_named(cls: Any) -> None:
    """``send(MyStr("t"), ...)`` is a valid topic: its futures resolve, with that topic."""

    class Topic(str):
        pass

    tp = TopicPartition(Topic("t"), 3)
    futures = cls(asyncio.get_running_loop())
    fut = futures.add(0, 1000)
    futures.complete(tp, BASE_OFFSET, -1, LOG_START)
    await settle()
    assert fut.result().topic == "t" and fut.result().offset == BASE_OFFSET


@pytest.mark.parametrize("cls", IMPLEMENTATIONS)
def test_a_callback_raising_keyboard_interrupt_stops_the_loop_and_the_rest_run_later(
    cls: Any,
) -> None:
    """As from an asyncio Handle: KeyboardInterrupt leaves the loop; the other callbacks
    of the batch run when the loop runs again."""

    def scenario(kit: Any) -> list[Any]:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        calls: list[str] = []
        try:

            async def make() -> Batch:
                return kit.batch(2)

            batch = loop.run_until_complete(make())

            def interrupt(_: Any) -> None:
                calls.append("interrupt")
                raise KeyboardInterrupt

            batch.futures[0].add_done_callback(interrupt)
            batch.futures[1].add_done_callback(lambda f: calls.append("f1"))
            loop.call_soon(batch.complete)
            with pytest.raises(KeyboardInterrupt):
                loop.run_until_complete(asyncio.sleep(0.01))
            calls.append("loop left")
            loop.run_until_complete(asyncio.sleep(0.01))
            return calls
        finally:
            asyncio.set_event_loop(None)
            loop.close()

    assert scenario(OurKit(cls)) == scenario(ReferenceKit()) == ["interrupt", "loop left", "f1"]
