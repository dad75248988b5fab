"""FastStream, unchanged, on aiokafka_lite's producer (``aiokafka_lite.patch_aiokafka()``).

FastStream's ``KafkaBroker`` builds ``aiokafka.AIOKafkaProducer(**options)`` when it
starts; after ``patch_aiokafka()`` that is aiokafka_lite's producer, while its
subscribers keep aiokafka's consumer. The same app runs once on aiokafka's producer and
once on ours; in both runs everything it published is read back with confluent-kafka:
keys and headers intact, nothing missing, nothing twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import aiokafka  # type: ignore[import-untyped]
import pytest
from conftest import TopicFactory
from faststream.kafka import KafkaBroker
from readers import ReadRecord, read_all_confluent

import aiokafka_lite


@pytest.fixture(params=["aiokafka", "aiokafka_lite"])
def producer_impl(request: pytest.FixtureRequest) -> Iterator[str]:
    patch = aiokafka_lite.patch_aiokafka() if request.param == "aiokafka_lite" else None
    with patch or contextlib.nullcontext():
        yield request.param
    assert aiokafka.AIOKafkaProducer.__module__.startswith("aiokafka.")  # undone


def _headers(record: ReadRecord) -> dict[str, bytes]:
    headers = dict(record.headers or [])
    assert len(headers["correlation_id"]) == 36  # FastStream's uuid: present, not mangled
    del headers["correlation_id"]
    return headers


async def test_faststream_app_publishes_everything_once(
    producer_impl: str, bootstrap: str, topic_factory: TopicFactory
) -> None:
    source, events, batches, replies = (topic_factory(n) for n in (1, 3, 3, 1))
    broker = KafkaBroker(bootstrap)
    handled = asyncio.Event()

    @broker.subscriber(source, group_id=f"g-{uuid.uuid4().hex}", auto_offset_reset="earliest")
    @broker.publisher(replies)
    async def handle(body: dict[str, Any]) -> dict[str, Any]:
        handled.set()
        return {"echo": body}

    async with broker:
        await broker.start()
        producer = broker.config.producer._producer.producer
        expected_cls = (
            aiokafka_lite.AIOKafkaProducer
            if producer_impl == "aiokafka_lite"
            else aiokafka.AIOKafkaProducer
        )
        assert type(producer) is expected_cls
        md = await broker.publish(b"raw", topic=events, key=b"k1", headers={"h": "v"})
        assert md.topic == events and md.offset == 0
        await broker.publish("text", topic=events, key=b"k2")
        await broker.publish({"a": 1}, topic=events, key=b"k3")
        await broker.publish_batch(b"b1", b"b2", topic=batches)  # the partitioner picks
        await broker.publish_batch("b3", "b4", topic=batches, partition=2)
        await broker.publish({"n": 1}, topic=source)
        await asyncio.wait_for(handled.wait(), timeout=30)
        await broker.config.producer.flush()

    got = read_all_confluent(bootstrap, events, expected=4, idle=1.0, at_least=3)
    assert sorted((r.key, r.value, tuple(_headers(r).items())) for r in got) == [
        (b"k1", b"raw", (("content-type", b""), ("h", b"v"))),
        (b"k2", b"text", (("content-type", b"text/plain"),)),
        (b"k3", b'{"a":1}', (("content-type", b"application/json"),)),
    ]
    got = read_all_confluent(bootstrap, batches, expected=5, idle=1.0, at_least=4)
    assert sorted(r.value for r in got) == [b"b1", b"b2", b"b3", b"b4"]
    assert {r.partition for r in got if r.value in (b"b3", b"b4")} == {2}
    assert len({r.partition for r in got if r.value in (b"b1", b"b2")}) == 1  # one batch
    got = read_all_confluent(bootstrap, replies, expected=2, idle=1.0, at_least=1)
    assert [(r.value, _headers(r)) for r in got] == [
        (b'{"echo":{"n":1}}', {"content-type": b"application/json"})
    ]
