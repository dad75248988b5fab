"""send()'s futures side by side with aiokafka's: what asyncio, anyio, uvloop, the GC,
pydantic and type checkers see must be the same.

Each test runs one scenario with ``aiokafka.AIOKafkaProducer`` and with ours, on the
same broker, and asserts that ours observes what aiokafka's does (and, where a property
matters in itself, that it holds). The suite runs in both builds, compiled and pure
(``AIOKAFKA_LITE_NO_EXTENSIONS=1``); the tests that make their own event loop run on
asyncio's and on uvloop's.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import threading
import warnings
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import aiokafka  # type: ignore[import-untyped]
import aiokafka.errors as ak_errors  # type: ignore[import-untyped]
import anyio
import pydantic
import pytest
import uvloop
from aiokafka.producer.message_accumulator import (  # type: ignore[import-untyped]
    BatchBuilder,
    MessageBatch,
)
from aiokafka.structs import TopicPartition as AkTopicPartition  # type: ignore[import-untyped]
from conftest import TopicFactory

import aiokafka_lite
from aiokafka_lite._internal import delivery
from aiokafka_lite.speedups import compiled_module
from aiokafka_lite.structs import RecordMetadata

IMPLS: dict[str, Any] = {
    "aiokafka": aiokafka.AIOKafkaProducer,
    "aiokafka_lite": aiokafka_lite.AIOKafkaProducer,
}
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}
Scenario = Callable[[Any, str, str], Awaitable[Any]]


async def each_impl(scenario: Scenario, bootstrap: str, topic: str) -> dict[str, Any]:
    """What ``scenario(producer_cls, bootstrap, topic)`` observed, per implementation."""
    return {name: await scenario(cls, bootstrap, topic) for name, cls in IMPLS.items()}


def in_own_loop(
    factory: Callable[[], asyncio.AbstractEventLoop], main: Callable[[Any], Awaitable[Any]]
) -> tuple[Any, bool]:
    """Run ``main(loop)`` in a new loop, close it, drop it: (its result, loop collected?)."""
    loop = factory()
    try:
        result = loop.run_until_complete(main(loop))
    finally:
        loop.close()
    ref = weakref.ref(loop)
    del loop
    gc.collect()
    return result, ref() is None


async def delivered(cls: Any, bootstrap: str, topic: str) -> tuple[Any, Any]:
    """A started producer and the future of a record it has delivered (and awaited)."""
    producer = cls(bootstrap_servers=bootstrap)
    await producer.start()
    fut = await producer.send(topic, b"v")
    await fut
    return producer, fut


# -- 1: anyio ----------------------------------------------------------------------------


async def cancel_scope_fires_after_delivery(cls: Any, bootstrap: str, topic: str) -> Any:
    """A cancel scope cancelled once the record is delivered, before its awaiter wakes:
    anyio leaves a task alone whose awaited asyncio.Future is done."""
    producer = cls(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"warm-up")  # (metadata known: send is quick)
        fut = await producer.send(topic, b"v")
        scope = anyio.CancelScope()
        # Added before the task awaits: runs first, when the record is delivered.
        fut.add_done_callback(lambda _: scope.cancel())

        async def waiter() -> Any:
            with scope:
                md = await fut
                return ("result", md.offset >= 0)
            return ("cancelled",)

        return await asyncio.ensure_future(waiter())
    finally:
        await producer.stop()


async def test_anyio_cancel_scope_after_delivery_keeps_the_result(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    seen = await each_impl(cancel_scope_fires_after_delivery, bootstrap, topic_factory())
    assert seen["aiokafka_lite"] == seen["aiokafka"] == ("result", True)


@pytest.mark.parametrize("loop_name", ["uvloop"])
def test_anyio_cancel_scope_after_delivery_on_uvloop(
    loop_name: str, bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory()
    seen = {
        name: in_own_loop(
            LOOPS[loop_name],
            lambda _, cls=cls: cancel_scope_fires_after_delivery(cls, bootstrap, topic),
        )[0]
        for name, cls in IMPLS.items()
    }
    assert seen["aiokafka_lite"] == seen["aiokafka"] == ("result", True)


# -- 2, 9: the garbage collector ---------------------------------------------------------


def raising_callback(fut: Any) -> None:
    raise RuntimeError("a done callback failed")


async def handler_keeps_contexts(cls: Any, bootstrap: str, topic: str, loop: Any) -> Any:
    """A test-style exception handler that keeps every context, and a done callback that
    raises: loop -> handler -> context -> (handle) -> future -> loop."""
    contexts: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, ctx: contexts.append(ctx))
    producer, fut = await delivered(cls, bootstrap, topic)
    fut.add_done_callback(raising_callback)
    await asyncio.sleep(0.01)
    await producer.stop()
    assert [type(c["exception"]) for c in contexts] == [RuntimeError]
    return sorted(contexts[0])


class App:
    """An application object installed as the loop's exception handler, keeping its
    producer and futures: loop -> app -> futures -> loop."""

    def __init__(self) -> None:
        self.futures: list[Any] = []
        self.producer: Any = None

    def __call__(self, loop: Any, context: dict[str, Any]) -> None:
        pass


@pytest.mark.parametrize("loop_name", list(LOOPS))
def test_cycles_through_a_delivered_future_are_collected(
    loop_name: str, bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory()
    seen: dict[str, Any] = {}
    for name, cls in IMPLS.items():
        keys, contexts_cycle_collected = in_own_loop(
            LOOPS[loop_name],
            lambda loop, cls=cls: handler_keeps_contexts(cls, bootstrap, topic, loop),
        )
        producers: list[weakref.ref[Any]] = []

        async def app_keeps_futures(
            loop: Any, cls: Any = cls, producers: list[Any] = producers
        ) -> None:
            app = App()
            loop.set_exception_handler(app)
            app.producer, fut = await delivered(cls, bootstrap, topic)
            app.futures.append(fut)
            producers.append(weakref.ref(app.producer))
            await app.producer.stop()

        _, app_cycle_collected = in_own_loop(LOOPS[loop_name], app_keeps_futures)
        seen[name] = (keys, contexts_cycle_collected, app_cycle_collected, producers[0]() is None)
    # 5: the context of a raising done callback is asyncio's (a handler reads ctx["handle"]).
    assert seen["aiokafka"][0] == ["exception", "handle", "message"]
    assert seen["aiokafka_lite"] == seen["aiokafka"]
    assert seen["aiokafka_lite"][1:] == (True, True, True)


@pytest.mark.parametrize("loop_name", list(LOOPS))
def test_a_producer_never_stopped_lets_its_loop_go(
    loop_name: str, bootstrap: str, topic_factory: TopicFactory
) -> None:
    """Dropped without stop() (a ResourceWarning), in a loop closed with its tasks still
    pending: the producer and the loop are collected."""
    topic = topic_factory()
    seen: dict[str, Any] = {}
    for name, cls in IMPLS.items():
        producers: list[weakref.ref[Any]] = []

        async def never_stopped(
            loop: Any, cls: Any = cls, producers: list[Any] = producers
        ) -> None:
            loop.set_exception_handler(lambda *_: None)  # "Task was destroyed", "Unclosed"
            producer, _ = await delivered(cls, bootstrap, topic)
            producers.append(weakref.ref(producer))

        loop = LOOPS[loop_name]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)  # (a recorded warning keeps
            try:  # the producer, its source, alive)
                loop.run_until_complete(never_stopped(loop))
            finally:
                loop.close()
            loop_ref = weakref.ref(loop)
            del loop
            gc.collect()
        seen[name] = (loop_ref() is None, producers[0]() is None)
    assert seen["aiokafka_lite"] == seen["aiokafka"] == (True, True)


# -- 3, 4: type, attributes --------------------------------------------------------------


@pydantic.validate_call(config={"arbitrary_types_allowed": True})
def takes_a_future(fut: asyncio.Future) -> bool:  # type: ignore[type-arg]
    return fut.done()


async def what_the_future_is(cls: Any, bootstrap: str, topic: str) -> Any:
    producer, fut = await delivered(cls, bootstrap, topic)
    try:
        fut.record_no = 7  # an application's own bookkeeping on the future
        private = {a: hasattr(fut, a) for a in ("_state", "_result", "_exception", "_callbacks")}
        return (
            isinstance(fut, asyncio.Future),
            asyncio.isfuture(fut),
            fut.record_no,
            private,
            fut._state,
            fut._log_traceback,
            takes_a_future(fut),
        )
    finally:
        await producer.stop()


async def test_futures_are_asyncio_futures(bootstrap: str, topic_factory: TopicFactory) -> None:
    seen = await each_impl(what_the_future_is, bootstrap, topic_factory())
    assert seen["aiokafka_lite"] == seen["aiokafka"]
    assert seen["aiokafka_lite"][0] is True


# -- 6: callback timing ------------------------------------------------------------------


async def callbacks_on_a_done_future(cls: Any, bootstrap: str, topic: str) -> Any:
    producer, fut = await delivered(cls, bootstrap, topic)
    loop = asyncio.get_running_loop()
    trace: list[str] = []
    try:
        loop.call_soon(trace.append, "soon 1")
        fut.add_done_callback(lambda _: trace.append("done callback"))
        loop.call_soon(trace.append, "soon 2")
        await asyncio.sleep(0)
        trace.append("next iteration")
        await asyncio.sleep(0)
        # In debug mode, asyncio refuses call_soon (which a done future's callback is)
        # from a thread other than the loop's.
        loop.set_debug(True)
        errors: list[Any] = []

        def from_a_thread() -> None:
            try:
                fut.add_done_callback(lambda _: None)
            except RuntimeError as e:
                errors.append(type(e).__name__)

        thread = threading.Thread(target=from_a_thread)
        thread.start()
        thread.join()
        loop.set_debug(False)
        return trace, errors
    finally:
        await producer.stop()


async def test_callbacks_run_when_asyncio_runs_them(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    seen = await each_impl(callbacks_on_a_done_future, bootstrap, topic_factory())
    assert seen["aiokafka_lite"] == seen["aiokafka"]
    assert seen["aiokafka"] == (
        ["soon 1", "done callback", "soon 2", "next iteration"],
        ["RuntimeError"],
    )


# -- 7: each record's own exception ------------------------------------------------------


def aiokafka_failed_batch(exc: BaseException, n: int) -> list[Any]:
    """aiokafka's own batch (MessageBatch), its n records failed with ``exc``."""
    batch = MessageBatch(AkTopicPartition("t", 0), BatchBuilder(16384, 0), 30, 0)
    futures = [batch.append(b"k", b"v", None) for _ in range(n)]
    batch.failure(exc)
    return futures


def our_failed_batch(cls: Any, exc: BaseException, n: int) -> list[Any]:
    futures = cls(asyncio.get_running_loop())
    made = [futures.add(i, 1000 + i) for i in range(n)]
    futures.fail(exc)
    return made


def what_each_record_sees(futures: list[Any], exc: BaseException) -> Any:
    errors = [f.exception() for f in futures]
    for i, e in enumerate(errors):
        e.add_note(f"record {i}")
    try:
        raise KeyError("while handling something else")
    except KeyError:
        try:
            futures[0].result()
        except type(exc) as raised:
            first = raised
    return (
        [type(e) for e in errors],
        [e.args for e in errors],
        len({id(e) for e in errors}),  # one object per record
        [e is exc for e in errors],
        [getattr(e, "__notes__", None) for e in errors],  # record 1 has only its note
        [e.__context__ is not None for e in errors[1:]],  # record 0's handling: its own
        first is errors[0],
    )


TWINS = [pytest.param(delivery.PyRecordFutures, id="pure")]
if compiled_module("_cdelivery") is not None:
    TWINS.append(pytest.param(compiled_module("_cdelivery").RecordFutures, id="compiled"))


@pytest.mark.parametrize("cls", TWINS)
async def test_each_record_fails_with_its_own_exception(cls: Any) -> None:
    cause = ConnectionResetError("the connection was reset")
    made: dict[str, Any] = {}
    for name in IMPLS:
        exc = aiokafka_lite.KafkaTimeoutError("3 record(s) for t[0] expired")
        exc.__cause__ = cause
        futures = aiokafka_failed_batch(exc, 3) if name == "aiokafka" else None
        futures = futures or our_failed_batch(cls, exc, 3)
        made[name] = (what_each_record_sees(futures, exc), futures)
    assert made["aiokafka_lite"][0] == made["aiokafka"][0]
    # The cause chain stays (aiokafka's copy.copy drops __cause__; ours keeps it).
    assert all(f.exception().__cause__ is cause for f in made["aiokafka_lite"][1])


async def test_records_failed_by_stop_have_their_own_exceptions(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """End to end: records still buffered when stop() runs out of time, failed together."""
    producer = aiokafka_lite.AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=60_000)
    await producer.start()
    topic = topic_factory()
    await producer.partitions_for(topic)
    futures = [await producer.send(topic, b"v%d" % i) for i in range(3)]
    await producer.stop(timeout=0)
    await asyncio.gather(*futures, return_exceptions=True)
    errors = [f.exception() for f in futures]
    assert all(isinstance(e, aiokafka_lite.KafkaError) for e in errors), errors
    assert len({id(e) for e in errors}) == 3
    assert len({str(e) for e in errors}) == 1


# -- 8: invalid topic names --------------------------------------------------------------


async def send_to_an_invalid_topic(cls: Any, bootstrap: str, topic: str) -> Any:
    producer = cls(bootstrap_servers=bootstrap, request_timeout_ms=1000)
    await producer.start()
    try:
        try:
            await producer.send("not a valid name!", b"v")
        except ak_errors.KafkaError as e:  # what code written for aiokafka catches
            return [
                isinstance(e, c)
                for c in (ak_errors.KafkaError, ak_errors.UnknownTopicOrPartitionError)
            ]
        return "not raised"
    finally:
        await producer.stop()


async def test_an_invalid_topic_is_caught_as_aiokafka_code_expects(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    seen = await each_impl(send_to_an_invalid_topic, bootstrap, topic_factory())
    assert seen["aiokafka_lite"] == seen["aiokafka"] == [True, True]
    with pytest.raises(ValueError, match="not a valid Kafka topic name"):  # and still this
        await send_to_an_invalid_topic_raw(bootstrap)


async def send_to_an_invalid_topic_raw(bootstrap: str) -> None:
    async with aiokafka_lite.AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        await producer.send("not a valid name!", b"v")


def test_record_metadata_matches_aiokafkas_fields() -> None:
    """(The result of a future, for the comparisons above: the same fields as aiokafka's.)"""
    assert RecordMetadata._fields == aiokafka.structs.RecordMetadata._fields
    assert copy.copy(aiokafka_lite.KafkaTimeoutError("x")).args == ("x",)
