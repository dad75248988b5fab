"""send() and try_send() with arguments of random types: refused at the call, by name,
and nothing else is harmed.

The rule for every argument: a valid one is accepted and its record delivered as
given; an invalid one raises TypeError (wrong type) or ValueError (bad value) at the
call, naming the argument and the topic, before anything touches a batch; and the
next valid record (to the same partition) is delivered. What is valid:

* topic: a str of 1-249 characters from [a-zA-Z0-9._-], not "." or "..";
* partition: None, or an int (not a bool) in range for the topic;
* timestamp_ms: None, or an int (not a bool) in 0 .. 2**63-1;
* key, value: None or bytes-like (bytes, bytearray, memoryview), as no serializer is set;
* headers: None, or a list/tuple of (key, value) pairs: key a str that encodes as
  UTF-8, value None or bytes/bytearray.

The broker is a scripted one-broker cluster (tests/scripted_cluster.py) that creates
validly named topics on first use and refuses others as Kafka does; each example
ends with the shared invariants (tests/invariants.py). Hypothesis draws a list of
calls per producer, so each example costs one producer start.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from invariants import Watch
from scripted_cluster import LogCluster, valid_topic_name

from aiokafka_lite import AIOKafkaProducer

TOPIC_PARTITIONS = 2
STEP = 10.0

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=12),
    st.builds(bytearray, st.binary(max_size=12)),
    st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.binary(max_size=3), max_size=2),
    st.tuples(st.text(max_size=3), st.binary(max_size=3)),
    st.builds(object),
)
topics = st.one_of(
    anything,
    st.sampled_from(["t", "t.x", "t_y-2", ".", "..", "", "a b", "t/1", "é", "x" * 250, "\ud800"]),
    st.text(alphabet="abcXYZ019._-", min_size=1, max_size=20),
)
partitions = st.one_of(
    anything, st.integers(-3, TOPIC_PARTITIONS + 2), st.sampled_from([0.0, 1.0, 0.5, "0", True])
)
timestamps = st.one_of(
    anything,
    st.integers(-(2**64), 2**64),
    st.sampled_from([0, 2**63 - 1, 2**63, -1, 1.5, "123", 1_700_000_000_000]),
)
blobs = st.one_of(
    anything, st.builds(memoryview, st.binary(max_size=12)), st.sampled_from([b"", "", 0])
)
header_keys = st.one_of(st.text(max_size=6), anything, st.just("\ud800"))
header_values = st.one_of(st.binary(max_size=6), st.none(), anything)
headers = st.one_of(
    anything,
    st.lists(st.tuples(header_keys, header_values), max_size=3),
    st.lists(st.lists(header_keys, min_size=1, max_size=3), max_size=2),
)


def problem(argument: str, arg: Any) -> bool:
    """True if ``arg`` is not a valid ``argument`` (the rules in the module doc)."""
    if argument == "topic":
        return not valid_topic_name(arg)
    if argument == "partition":
        return arg is not None and (
            type(arg) is not int or not 0 <= arg < TOPIC_PARTITIONS  # bool is not int here
        )
    if argument == "timestamp_ms":
        return arg is not None and (type(arg) is not int or not 0 <= arg < 2**63)
    if argument in ("key", "value"):
        return arg is not None and not isinstance(arg, bytes | bytearray | memoryview)
    assert argument == "headers"
    if arg is None:
        return False
    if not isinstance(arg, list | tuple):
        return True
    for item in arg:
        if not isinstance(item, list | tuple) or len(item) != 2:
            return True
        hkey, hvalue = item
        if not isinstance(hkey, str) or not _encodes(hkey):
            return True
        if hvalue is not None and not isinstance(hvalue, bytes | bytearray):
            return True
    return False


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


# Names an error message may use for each argument.
NAMES = {
    "topic": ("topic",),
    "partition": ("partition",),
    "timestamp_ms": ("timestamp",),
    "key": ("key",),
    "value": ("value",),
    "headers": ("header",),
}


def check_refusal(argument: str, arg: Any, bad: bool, error: Exception) -> None:
    assert bad, f"valid {argument}={arg!r} refused: {error!r}"
    text = str(error)
    assert any(name in text for name in NAMES[argument]), (
        f"{argument}={arg!r}: the error does not name the argument: {error!r}"
    )
    if argument != "topic":
        assert "'t'" in text or " t " in text or "t[" in text, (
            f"{argument}={arg!r}: the error does not name the topic: {error!r}"
        )


async def check_calls(method: str, argument: str, args: list[Any]) -> None:
    cluster = LogCluster(topics={"t": TOPIC_PARTITIONS}, auto_create=True)
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address,
            linger_ms=0,
            request_timeout_ms=2000,
            delivery_timeout_ms=4000,
            max_block_ms=2000,
        )
        await producer.start()
        await producer.partitions_for("t")
        futures: list[asyncio.Future[Any]] = []
        expected: list[bytes] = []
        try:
            for n, arg in enumerate(args):
                call: dict[str, Any] = {"topic": "t", "value": b"v%d" % n, argument: arg}
                bad = problem(argument, arg)
                refused: TypeError | ValueError | None = None
                try:
                    if method == "try_send" and argument == "topic" and not bad and arg != "t":
                        await producer.partitions_for(arg)  # try_send needs known partitions
                    if method == "send":
                        fut = await producer.send(**call)
                    else:
                        fut = producer.try_send(**call)
                except (TypeError, ValueError) as e:
                    refused = e
                if refused is None:
                    assert not bad, f"invalid {argument}={arg!r} accepted"
                    futures.append(fut)
                    if call["topic"] == "t":
                        expected.append(bytes(call["value"]) if call["value"] is not None else b"")
                else:
                    check_refusal(argument, arg, bad, refused)
                # The next valid record is not harmed by whatever came before.
                after = await producer.send("t", b"after-%d" % n, partition=0)
                futures.append(after)
                expected.append(b"after-%d" % n)
                async with asyncio.timeout(STEP):
                    await after
            async with asyncio.timeout(STEP):
                await asyncio.gather(*futures)
        finally:
            await watch.stop_and_check(producer, futures, stop_timeout=2)
    if argument not in ("topic", "value"):
        assert sorted(r.value or b"" for r in cluster.records("t")) == sorted(expected)


_SETTINGS: dict[str, Any] = {
    "max_examples": 8,
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow],
}


def calls(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return st.lists(strategy, min_size=1, max_size=12)


def run(method: str, argument: str, args: list[Any]) -> None:
    asyncio.run(check_calls(method, argument, args))


METHODS = pytest.mark.parametrize("method", ["send", "try_send"])


@METHODS
@settings(**_SETTINGS)
@given(args=calls(topics))
@example(args=[b"tb"])
@example(args=[5])
def test_topic(method: str, args: list[Any]) -> None:
    run(method, "topic", args)


@METHODS
@settings(**_SETTINGS)
@given(args=calls(partitions))
@example(args=["0"])
@example(args=[0.5])
def test_partition(method: str, args: list[Any]) -> None:
    run(method, "partition", args)


@METHODS
@settings(**_SETTINGS)
@given(args=calls(timestamps))
@example(args=[1.5])
@example(args=["123"])
@example(args=[-5])
@example(args=[2**63])
def test_timestamp(method: str, args: list[Any]) -> None:
    run(method, "timestamp_ms", args)


@METHODS
@settings(**_SETTINGS)
@given(args=calls(blobs))
def test_key(method: str, args: list[Any]) -> None:
    run(method, "key", args)


@METHODS
@settings(**_SETTINGS)
@given(args=calls(blobs))
def test_value(method: str, args: list[Any]) -> None:
    run(method, "value", args)


@pytest.mark.parametrize("method", ["send", "try_send"])
@settings(**_SETTINGS)
@given(args=calls(headers))
@example(args=[[("\ud800", b"x")]])
@example(args=[False])
def test_headers(method: str, args: list[Any]) -> None:
    run(method, "headers", args)
