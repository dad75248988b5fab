"""MockProducer against the real producer: the same API, the same errors, the same partitions.

The real producer runs on the session's embedded broker; each case is tried on both, and
the exception's type and message must be the same. The API test compares every public
name and signature, so that a method added to AIOKafkaProducer fails here until the mock
has it too.
"""

from __future__ import annotations

import inspect
import json
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from conftest import TopicFactory

from aiokafka_lite import AIOKafkaProducer, TopicPartition
from aiokafka_lite.errors import DeliveryFailedError
from aiokafka_lite.testing import MockProducer

Call = Callable[[AIOKafkaProducer[Any, Any], str], Awaitable[Any]]


def _public(cls: type) -> dict[str, Any]:
    names = {n for n in dir(cls) if not n.startswith("_")} | {"__aenter__", "__aexit__"}
    return {n: inspect.getattr_static(cls, n) for n in names}


def test_public_api_matches_the_real_producer() -> None:
    real, mock = _public(AIOKafkaProducer), _public(MockProducer)
    missing = sorted(set(real) - set(mock))
    assert not missing, f"MockProducer lacks {missing}"
    for name, attr in real.items():
        theirs = mock[name]
        assert type(theirs) is type(attr), name  # a property stays a property, ...
        if not callable(attr):
            continue
        want, got = inspect.signature(attr), inspect.signature(theirs)
        if name == "__aenter__":  # returns itself: typed as the mock, for its own methods
            assert got.return_annotation == "MockProducer[K, V]"
            got = got.replace(return_annotation=want.return_annotation)
        assert got == want, name
        assert inspect.iscoroutinefunction(theirs) == inspect.iscoroutinefunction(attr), name


def test_every_method_that_would_reach_the_network_is_the_mocks_own() -> None:
    # Inherited from AIOKafkaProducer itself (not from its transaction base, whose
    # methods the mock reuses on purpose), a method would run on a producer without a
    # runtime: only these, which read no more than the mock sets, may be inherited.
    inherited_on_purpose = {"config", "metrics", "__aexit__"}
    for name in _public(AIOKafkaProducer):
        if name in vars(AIOKafkaProducer) and name not in inherited_on_purpose:
            assert name in vars(MockProducer), f"MockProducer inherits {name} from the real one"


def test_constructor_takes_every_argument_the_real_one_takes() -> None:
    real = inspect.signature(AIOKafkaProducer.__init__).parameters
    mock = inspect.signature(MockProducer.__init__).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in mock.values())
    for name, param in real.items():
        if param.kind is param.VAR_KEYWORD:
            assert takes_any
        elif name in mock:
            assert mock[name].default == param.default, name
        else:
            assert takes_any, name


@pytest.mark.parametrize(
    "config",
    [
        {"acks": 7},
        {"compression_type": "rar"},
        {"linger_ms": -1},
        {"value_serializer": "yaml"},
        {"no_such_option": 1},
        {"transactional_id": 5},
        {"partitioner": "murmur2"},
    ],
    ids=repr,
)
def test_bad_configuration_is_refused_alike(config: dict[str, Any]) -> None:
    want, got = _raised(AIOKafkaProducer, config), _raised(MockProducer, config)
    assert (type(got), str(got)) == (type(want), str(want))


def _raised(cls: Callable[..., object], config: dict[str, Any]) -> Exception:
    try:
        cls(**config)
    except Exception as e:
        return e
    raise AssertionError(f"{cls.__name__}(**{config}) raised nothing")


def _boom(value: object) -> bytes:
    raise ValueError("cannot encode this")


BAD_SENDS: dict[str, Call] = {
    "topic not a str": lambda p, t: p.send(123, b"v"),  # type: ignore[arg-type]
    "topic unhashable": lambda p, t: p.send([t], b"v"),  # type: ignore[arg-type]
    "topic name invalid": lambda p, t: p.send("no spaces allowed", b"v"),
    "value not bytes": lambda p, t: p.send(t, "text"),
    "key not bytes": lambda p, t: p.send(t, b"v", key=42),
    "bytearray too large": lambda p, t: p.send(t, bytearray(2000)),
    "value too large": lambda p, t: p.send(t, b"x" * 2000),
    "partition out of range": lambda p, t: p.send(t, b"v", partition=3),
    "partition negative": lambda p, t: p.send(t, b"v", key=b"k", partition=-1),
    "partition not an int": lambda p, t: p.send(t, b"v", partition="1"),  # type: ignore[arg-type]
    "timestamp negative": lambda p, t: p.send(t, b"v", timestamp_ms=-1),
    "timestamp a float": lambda p, t: p.send(t, b"v", timestamp_ms=1.5),  # type: ignore[arg-type]
    "headers a dict": lambda p, t: p.send(t, b"v", headers={"a": b"1"}),  # type: ignore[arg-type]
    "header value a str": lambda p, t: p.send(t, b"v", headers=[("a", "1")]),  # type: ignore[list-item]
    "header key not a str": lambda p, t: p.send(t, b"v", headers=[(1, b"1")]),  # type: ignore[list-item]
    "send_and_wait partition": lambda p, t: p.send_and_wait(t, b"v", partition=9),
    "send_many partition": lambda p, t: p.send_many(t, [(b"k", b"v")], partition=5),
    "send_many topic": lambda p, t: p.send_many("a b", [(b"k", b"v")]),
    "send_batch not a batch": lambda p, t: p.send_batch([b"v"], t, partition=0),  # type: ignore[arg-type]
    "send_batch partition": lambda p, t: p.send_batch(p.create_batch(), t, partition=3),
    "partitions_for topic": lambda p, t: p.partitions_for("a b"),
    "begin_transaction": lambda p, t: p.begin_transaction(),
    "commit_transaction": lambda p, t: p.commit_transaction(),
    "send_offsets": lambda p, t: p.send_offsets_to_transaction({TopicPartition(t, 0): 1}, "g"),
}


async def _error(producer: AIOKafkaProducer[Any, Any], topic: str, call: Call) -> Exception:
    try:
        await call(producer, topic)
    except Exception as e:
        return e
    raise AssertionError(f"{type(producer).__name__}: the call raised nothing")


async def test_bad_input_raises_the_real_producers_errors(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(3)
    config: dict[str, Any] = {"max_request_size": 1000}
    async with (
        AIOKafkaProducer(bootstrap_servers=bootstrap, **config) as real,
        MockProducer(partitions={topic: 3}, **config) as mock,
    ):
        differ = {}
        for name, call in BAD_SENDS.items():
            want, got = await _error(real, topic, call), await _error(mock, topic, call)
            if (type(got), str(got)) != (type(want), str(want)):
                differ[name] = (want, got)
        assert not differ, differ
        assert mock.history == []


async def test_send_many_fails_the_same_records_with_the_same_errors(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    records: list[Any] = [
        (b"k", b"fine"),
        (b"k", "not bytes"),
        "not a pair",
        (b"k", b"x" * 2000),
        (1, b"v"),
        (None, None),
    ]

    async def outcome(producer: AIOKafkaProducer[Any, Any]) -> tuple[str, list[Any]]:
        with pytest.raises(DeliveryFailedError) as info:
            await (await producer.send_many(topic, records))
        errors = info.value.errors
        return str(info.value), [(i, type(errors[i]), str(errors[i])) for i in sorted(errors)]

    config: dict[str, Any] = {"max_request_size": 1000}
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, **config) as real:
        want = await outcome(real)
    async with MockProducer(partitions={topic: 2}, **config) as mock:
        got = await outcome(mock)
    assert got == want
    assert [i for i, _, _ in want[1]] == [1, 2, 3, 4]
    assert [r.value for r in mock.history] == [b"fine", None]


async def test_serializer_and_transaction_errors_are_the_real_producers(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    config: dict[str, Any] = {"value_serializer": _boom, "transactional_id": f"txn-{topic}"}
    async with (
        AIOKafkaProducer(bootstrap_servers=bootstrap, **config) as real,
        MockProducer(**config) as mock,
    ):
        calls: dict[str, Call] = {
            "send outside a transaction": lambda p, t: p.send(t, "v"),
            "commit without a transaction": lambda p, t: p.commit_transaction(),
            "abort without a transaction": lambda p, t: p.abort_transaction(),
            "offsets without a transaction": lambda p, t: p.send_offsets_to_transaction(
                {TopicPartition(t, 0): 1}, "g"
            ),
        }
        in_transaction: dict[str, Call] = {
            "serializer fails": lambda p, t: p.send(t, "v"),
            "begin twice": lambda p, t: p.begin_transaction(),
            "offsets not a dict": lambda p, t: p.send_offsets_to_transaction([1], "g"),  # type: ignore[arg-type]
            "offsets empty group": lambda p, t: p.send_offsets_to_transaction(
                {TopicPartition(t, 0): 1}, ""
            ),
            "offset negative": lambda p, t: p.send_offsets_to_transaction(
                {TopicPartition(t, 0): -1}, "g"
            ),
        }
        differ = {}
        for producer_calls, begin in ((calls, False), (in_transaction, True)):
            for producer in (real, mock):
                if begin:
                    await producer.begin_transaction()
            for name, call in producer_calls.items():
                want, got = await _error(real, topic, call), await _error(mock, topic, call)
                if (type(got), str(got), type(got.__cause__)) != (
                    type(want),
                    str(want),
                    type(want.__cause__),
                ):
                    differ[name] = (want, got)
        for producer in (real, mock):
            await producer.abort_transaction()
        assert not differ, differ


async def test_lifecycle_errors_are_the_real_producers() -> None:
    real: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1")
    mock: MockProducer[Any, Any] = MockProducer(bootstrap_servers="127.0.0.1:1")

    async def same(call: Call) -> None:
        want, got = await _error(real, "t", call), await _error(mock, "t", call)
        assert (type(got), str(got)) == (type(want), str(want))

    await same(lambda p, t: p.send(t, b"v"))  # not started
    await same(lambda p, t: p.partitions_for(t))
    await real.stop()  # never started: stop() just closes
    await mock.stop()
    await same(lambda p, t: p.start())  # stopped
    await same(lambda p, t: p.send(t, b"v"))


@pytest.mark.parametrize("partitions", [1, 7, 32])
async def test_keyed_records_land_where_the_real_producer_puts_them(
    bootstrap: str, topic_factory: TopicFactory, partitions: int
) -> None:
    """1,000 keys (bytes of every length up to 100, and str through a serializer) sent
    by both: every record's partition must be the one the real producer chose."""
    topic = topic_factory(partitions)
    rng = random.Random(partitions)
    keys = [rng.randbytes(rng.randrange(0, 100)) for _ in range(500)]
    words = [f"user-{rng.randrange(10**9)}" for _ in range(500)]

    async def sent(producer: AIOKafkaProducer[Any, Any]) -> list[int]:
        futures = [await producer.send(topic, b"v", key=k) for k in keys]
        futures += [await producer.send(topic, {"w": w}, key=w.encode()) for w in words]
        return [(await f).partition for f in futures]

    config: dict[str, Any] = {
        "value_serializer": lambda v: v if v == b"v" else json.dumps(v).encode()
    }
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, **config) as real:
        want = await sent(real)
    async with MockProducer(partitions={topic: partitions}, **config) as mock:
        got = await sent(mock)
    assert got == want
    assert [r.partition for r in mock.history] == want
    assert len(set(want)) == partitions  # the keys spread over every partition


async def test_a_custom_partitioner_is_called_as_by_the_real_producer(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(5)
    calls: list[tuple[bytes | None, list[int], list[int]]] = []

    def last(key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
        calls.append((key, list(all_partitions), list(available)))
        return all_partitions[-1]

    async with AIOKafkaProducer(bootstrap_servers=bootstrap, partitioner=last) as real:
        want = (await real.send_and_wait(topic, b"v", key=b"k")).partition
    real_calls, calls[:] = list(calls), []
    async with MockProducer(partitioner=last, partitions={topic: 5}) as mock:
        got = (await mock.send_and_wait(topic, b"v", key=b"k")).partition
    assert got == want == 4
    assert calls == real_calls == [(b"k", [0, 1, 2, 3, 4], [0, 1, 2, 3, 4])]
