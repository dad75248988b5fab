"""Serializers, Kafka-style config names, interceptors and the start-up config log."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import msgspec
import pytest
from conftest import TopicFactory
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer, ProducerRecord, RecordMetadata
from aiokafka_lite.config import ProducerConfig
from aiokafka_lite.errors import ConfigError, SerializationError


class Event(msgspec.Struct):
    user: str
    clicks: int


async def test_named_serializers_end_to_end(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    producer: AIOKafkaProducer[str, Any] = AIOKafkaProducer(
        bootstrap_servers=bootstrap, key_serializer="str", value_serializer="json"
    )
    async with producer:
        await producer.send_and_wait(topic, {"a": [1, 2]}, key="ü-key")
        await producer.send_and_wait(topic, Event("ann", 3), key="k2")
        await producer.send_and_wait(topic, None, key="tombstone")  # None stays null
        with pytest.raises(SerializationError, match=topic):
            await producer.send(topic, object(), key="bad")  # fails this call only
        await producer.send_and_wait(topic, [True], key="after")
    records = read_all_confluent(bootstrap, topic, expected=4)
    assert [r.key for r in records] == ["ü-key".encode(), b"k2", b"tombstone", b"after"]
    assert json.loads(records[0].value or b"") == {"a": [1, 2]}
    assert json.loads(records[1].value or b"") == {"user": "ann", "clicks": 3}
    assert records[2].value is None
    assert json.loads(records[3].value or b"") == [True]


async def test_msgpack_serializer(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, value_serializer="msgpack") as p:
        await p.send_and_wait(topic, {"n": 1})
    [record] = read_all_confluent(bootstrap, topic, expected=1)
    assert msgspec.msgpack.decode(record.value or b"") == {"n": 1}


def test_java_and_librdkafka_config_names() -> None:
    config = {
        "bootstrap.servers": "h1:9092,h2:9093",
        "linger.ms": "20",  # property files hold strings
        "batch.size": 32768,
        "acks": "1",
        "enable.idempotence": "false",
        "queue.buffering.max.kbytes": 2048,  # librdkafka: KiB
        "message.timeout.ms": 90000,  # librdkafka: delivery_timeout_ms
        "compression.codec": "gzip",
        "key.serializer": "org.apache.kafka.common.serialization.StringSerializer",
    }
    cfg = ProducerConfig.from_kwargs(**config)
    assert cfg.bootstrap_servers == "h1:9092,h2:9093"
    assert (cfg.linger_ms, cfg.batch_size, cfg.acks) == (20, 32768, 1)
    assert cfg.buffer_memory == 2048 * 1024
    assert cfg.delivery_timeout_ms == 90000
    assert cfg.compression_type == "gzip"
    assert cfg.enable_idempotence is False
    # The producer takes the same config, and names itself (no client_id given).
    producer_cfg = AIOKafkaProducer(**config).config
    assert producer_cfg.client_id is not None
    assert producer_cfg.client_id.startswith("aiokafka-lite-producer-")
    assert producer_cfg == msgspec.structs.replace(cfg, client_id=producer_cfg.client_id)


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"linger.msx": 5}, "did you mean 'linger_ms'"),
        ({"linger.ms": 5, "linger_ms": 6}, "given twice"),
        ({"value.serializer": "yaml"}, "value_serializer"),
    ],
)
def test_bad_kafka_style_config(config: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ProducerConfig.from_kwargs(**config)


class Tagger:
    """Adds a header on send; remembers every outcome."""

    def __init__(self) -> None:
        self.acks: list[tuple[RecordMetadata | None, BaseException | None]] = []

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        return record._replace(headers=[*(record.headers or []), ("tagged", b"yes")])

    def on_acknowledgement(
        self, metadata: RecordMetadata | None, exception: BaseException | None
    ) -> None:
        self.acks.append((metadata, exception))


class Broken:
    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        raise RuntimeError("on_send is broken")

    def on_acknowledgement(
        self, metadata: RecordMetadata | None, exception: BaseException | None
    ) -> None:
        raise RuntimeError("on_acknowledgement is broken")


async def test_interceptors_transform_and_observe_and_never_break_delivery(
    bootstrap: str, topic_factory: TopicFactory, caplog: pytest.LogCaptureFixture
) -> None:
    topic = topic_factory(1)
    tagger = Tagger()
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, interceptors=[Broken(), tagger]
    ) as producer:
        results = await asyncio.gather(*[await producer.send(topic, b"%d" % i) for i in range(5)])
        with pytest.raises(ValueError, match="out of range"):
            await producer.send(topic, b"x", partition=9)
        await asyncio.sleep(0)  # acknowledgement callbacks run on the loop
    assert [md.offset for md, _ in tagger.acks[:5]] == [md.offset for md in results]
    assert all(exc is None for _, exc in tagger.acks[:5])
    assert isinstance(tagger.acks[5][1], ValueError)  # the failed call is reported too
    assert "on_send is broken" in caplog.text and "on_acknowledgement is broken" in caplog.text
    records = read_all_confluent(bootstrap, topic, expected=5)
    assert all(r.headers == [("tagged", b"yes")] for r in records)


def test_an_interceptor_without_the_methods_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="interceptors"):
        AIOKafkaProducer(interceptors=[object()])


async def test_effective_config_is_logged_once_at_start(
    bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="aiokafka_lite.producer"):
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=7):
            pass
    lines = [r.getMessage() for r in caplog.records if "config:" in r.getMessage()]
    assert len(lines) == 1
    assert "linger_ms=7" in lines[0] and "enable_idempotence=True" in lines[0]
