"""Bad arguments fail at the call, name what was wrong, and harm nothing else.

Each bad call below is made on one running producer, followed by a good record to the
same topic and partition. The bad call must raise TypeError/ValueError (or the
documented error) naming the argument, before anything touches a batch; afterwards
every good record is delivered (read back by confluent-kafka), no future is left
pending, and ``stop()`` returns at once.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from conftest import TopicFactory
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import DeliveryFailedError, RecordTooLargeError, SerializationError

Call = Callable[[AIOKafkaProducer[Any, Any], str], Coroutine[Any, Any, Any]]


async def send(p: AIOKafkaProducer[Any, Any], good_topic: str, **kw: Any) -> Any:
    kw.setdefault("value", b"bad")
    return await p.send(kw.pop("topic", good_topic), **kw)


def sending(**kw: Any) -> Call:
    return lambda p, topic: send(p, topic, **kw)


async def try_send(p: AIOKafkaProducer[Any, Any], good_topic: str, **kw: Any) -> Any:
    kw.setdefault("value", b"bad")
    return p.try_send(kw.pop("topic", good_topic), **kw)


def trying(**kw: Any) -> Call:
    return lambda p, topic: try_send(p, topic, **kw)


def batch_append(**kw: Any) -> Call:
    async def call(p: AIOKafkaProducer[Any, Any], topic: str) -> Any:
        return p.create_batch().append(**{"value": b"bad", **kw})

    return call


def batch_send(topic: object = None, partition: object = 0, batch: object = None) -> Call:
    async def call(p: AIOKafkaProducer[Any, Any], good_topic: str) -> Any:
        b = p.create_batch()
        b.append(value=b"x")
        return await p.send_batch(
            b if batch is None else batch,  # type: ignore[arg-type]
            good_topic if topic is None else topic,  # type: ignore[arg-type]
            partition=partition,  # type: ignore[arg-type]
        )

    return call


def many(topic: object = None, partition: object = None) -> Call:
    async def call(p: AIOKafkaProducer[Any, Any], good_topic: str) -> Any:
        return await p.send_many(
            good_topic if topic is None else topic,  # type: ignore[arg-type]
            [(b"k", b"v")],
            partition=partition,  # type: ignore[arg-type]
        )

    return call


CASES: list[tuple[str, Call, type[Exception], str]] = [
    # topic
    ("topic bytes", sending(topic=b"tb"), TypeError, "topic must be a str"),
    ("topic int", sending(topic=5), TypeError, "topic must be a str"),
    ("topic None", sending(topic=None), TypeError, "topic must be a str"),
    ("topic list", sending(topic=["t"]), TypeError, "topic must be a str"),
    ("topic empty", sending(topic=""), ValueError, "not a valid Kafka topic name"),
    ("topic space", sending(topic="a b"), ValueError, "not a valid Kafka topic name"),
    ("topic dot", sending(topic="."), ValueError, "not a valid Kafka topic name"),
    ("topic dotdot", sending(topic=".."), ValueError, "not a valid Kafka topic name"),
    ("topic too long", sending(topic="t" * 250), ValueError, "not a valid Kafka topic name"),
    ("topic unicode", sending(topic="tö"), ValueError, "not a valid Kafka topic name"),
    ("try_send topic", trying(topic=b"tb"), TypeError, "topic must be a str"),
    ("partitions_for topic", lambda p, t: p.partitions_for(7), TypeError, "topic"),
    # partition
    ("partition str", sending(partition="0"), TypeError, "partition for"),
    ("partition float", sending(partition=0.5), TypeError, "partition for"),
    ("partition bool", sending(partition=True), TypeError, "partition for"),
    ("partition negative", sending(partition=-1), ValueError, "out of range"),
    ("partition too big", sending(partition=3), ValueError, "out of range"),
    ("partition huge", sending(partition=2**70), ValueError, "out of range"),
    ("try_send partition", trying(partition="1"), TypeError, "partition for"),
    ("keyed partition str", sending(key=b"k", partition="0"), TypeError, "partition for"),
    # timestamp
    ("timestamp float", sending(timestamp_ms=1.5), TypeError, "timestamp_ms"),
    ("timestamp str", sending(timestamp_ms="123"), TypeError, "timestamp_ms"),
    ("timestamp bool", sending(timestamp_ms=True), TypeError, "timestamp_ms"),
    ("timestamp negative", sending(timestamp_ms=-5), ValueError, "timestamp_ms"),
    ("timestamp 2**63", sending(timestamp_ms=2**63), ValueError, "timestamp_ms"),
    ("try_send timestamp", trying(timestamp_ms=2**64), ValueError, "timestamp_ms"),
    # key / value
    ("value str", sending(value="text"), TypeError, "value for"),
    ("value int", sending(value=5), TypeError, "value for"),
    ("key str", sending(key="k"), TypeError, "key for"),
    ("key dict", sending(key={"a": 1}), TypeError, "key for"),
    ("too large", sending(value=b"x" * 2_000_000), RecordTooLargeError, "max_request_size"),
    # headers
    ("headers dict", sending(headers={"k": b"v"}), TypeError, "headers for"),
    ("headers str", sending(headers="k"), TypeError, "headers for"),
    ("headers int", sending(headers=5), TypeError, "headers for"),
    ("header not pair", sending(headers=[("k",)]), TypeError, "pair"),
    ("header key bytes", sending(headers=[(b"k", b"v")]), TypeError, "header key"),
    ("header key surrogate", sending(headers=[("\ud800", b"v")]), ValueError, "UTF-8"),
    ("header value str", sending(headers=[("k", "v")]), TypeError, "value of header"),
    ("header value int", sending(headers=[("k", 1)]), TypeError, "value of header"),
    # create_batch().append, send_batch, send_many
    ("batch timestamp", batch_append(timestamp=1.5), TypeError, "timestamp"),
    ("batch negative ts", batch_append(timestamp=-1), ValueError, "timestamp"),
    ("batch value str", batch_append(value="s"), TypeError, "value for"),
    ("batch header", batch_append(headers=[("k", "v")]), TypeError, "value of header"),
    ("send_batch topic", batch_send(topic=b"t"), TypeError, "topic must be a str"),
    ("send_batch partition", batch_send(partition="0"), TypeError, "partition for"),
    ("send_batch partition range", batch_send(partition=9), ValueError, "out of range"),
    ("send_batch not a batch", batch_send(batch=[b"x"]), TypeError, "create_batch"),
    ("send_many topic", many(topic=1), TypeError, "topic must be a str"),
    ("send_many partition", many(partition=1.0), TypeError, "partition for"),
]


async def test_bad_arguments_fail_alone(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(3)
    good: list[asyncio.Future[Any]] = []
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=50) as p:
        good.append(await p.send(topic, b"warm", partition=0))  # the topic is known
        for i, (name, call, error, match) in enumerate(CASES):
            try:
                with pytest.raises(error, match=match):
                    await call(p, topic)
            except (AssertionError, pytest.fail.Exception) as failure:
                pytest.fail(f"{name}: {failure}")
            # The next valid record, to the partition the bad one aimed at, is unaffected.
            good.append(await p.send(topic, b"good-%d" % i, partition=i % 3))
            good.append(await p.send(topic, b"keyed-%d" % i, key=b"k%d" % i))
        started = time.monotonic()
    assert time.monotonic() - started < 5  # stop() waited for nothing that cannot come
    assert all(f.done() and f.exception() is None for f in good), [
        f.exception() for f in good if f.done() and f.exception()
    ]
    values = sorted(r.value for r in read_all_confluent(bootstrap, topic, expected=len(good)))
    assert values == sorted(
        [b"warm"] + [v for i in range(len(CASES)) for v in (b"good-%d" % i, b"keyed-%d" % i)]
    )


async def test_send_many_bad_records_fail_alone(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    records: list[Any] = [(b"k0", b"v0"), b"not-a-pair", (b"k2", "str"), (b"k3", b"v3"), 7]
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as p:
        fut = await p.send_many(topic, records)
        with pytest.raises(DeliveryFailedError) as info:
            await fut
    errors = info.value.errors
    assert sorted(errors) == [1, 2, 4]
    assert "record 1 must be a (key, value) pair" in str(errors[1])
    assert isinstance(errors[2], TypeError) and "value for" in str(errors[2])
    got = read_all_confluent(bootstrap, topic, expected=2)
    assert sorted(r.value for r in got) == [b"v0", b"v3"]


async def test_a_serializer_failure_is_named(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)

    def boom(value: object) -> bytes:
        raise RuntimeError("cannot")

    async with AIOKafkaProducer(bootstrap_servers=bootstrap, value_serializer=boom) as p:
        with pytest.raises(SerializationError, match=f"{topic}.*cannot"):
            await p.send(topic, "x")


@pytest.mark.parametrize(
    ("failing", "category"),
    [
        (lambda value: json.loads("{"), ValueError),  # JSONDecodeError, a ValueError
        (lambda value: value.encode(), AttributeError),
        (lambda value: {}[value], KeyError),
        (lambda value: b"" + value, TypeError),
    ],
)
async def test_serializer_errors_keep_their_category(
    bootstrap: str, topic_factory: TopicFactory, failing: Any, category: type[Exception]
) -> None:
    """aiokafka lets a serializer's exception through, so code written for it catches its
    built-in category (``except ValueError``); ours is a SerializationError of that category."""
    topic = topic_factory(1)

    def serializer(value: Any) -> bytes:
        return value if isinstance(value, bytes) else failing(value)

    async with AIOKafkaProducer(bootstrap_servers=bootstrap, value_serializer=serializer) as p:
        with pytest.raises(category) as info:
            await p.send(topic, 5)
        assert isinstance(info.value, SerializationError)
        assert topic in str(info.value) and info.value.__cause__ is not None
        copy = pickle.loads(pickle.dumps(info.value))
        assert isinstance(copy, SerializationError) and copy.args == info.value.args
        good = await p.send(topic, b"good")
    assert (await good).offset == 0
