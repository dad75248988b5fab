"""Compressed batches from our producer, read back by other clients' consumers.

librdkafka (confluent-kafka) decompresses and checks CRCs; aiokafka decodes with
its own codec bindings. Tansu stores batches as they are (it never decompresses),
so what the readers see is exactly what we produced.
"""

from __future__ import annotations

import asyncio
import random

import pytest
from conftest import TopicFactory
from readers import read_all_aiokafka, read_all_confluent

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import ConfigError, UnsupportedCodecError

CASES = [
    ("gzip", None),
    ("gzip", 1),
    ("gzip", 9),
    ("snappy", None),
    ("lz4", None),  # 9: lz4's fast mode, as Java
    ("lz4", 1),
    ("lz4", 12),  # high-compression mode
    ("zstd", None),
    ("zstd", 1),
    ("zstd", 19),
]


@pytest.mark.parametrize(("codec", "level"), CASES)
async def test_compressed_records_read_back_identically(
    bootstrap: str, topic_factory: TopicFactory, codec: str, level: int | None
) -> None:
    topic = topic_factory(2)
    rng = random.Random(codec)
    # Compressible and incompressible values, keys, headers: 600 records, several batches.
    sent = [
        (
            b"key-%d" % (i % 50),
            (b"abc" * rng.randrange(1, 200)) if i % 2 else rng.randbytes(rng.randrange(0, 300)),
            [("n", b"%d" % i)],
        )
        for i in range(600)
    ]
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=codec,
        compression_level=level,
        batch_size=4096,
    ) as producer:
        futures = [await producer.send(topic, v, key=k, headers=h) for k, v, h in sent]
        results = await asyncio.gather(*futures)
    confluent = read_all_confluent(bootstrap, topic, expected=len(sent))
    aiokafka = await read_all_aiokafka(bootstrap, topic, expected=len(sent))
    assert confluent == aiokafka
    where = {(md.partition, md.offset): i for i, md in enumerate(results)}
    assert len(confluent) == len(sent)
    for record in confluent:
        key, value, headers = sent[where[(record.partition, record.offset)]]
        assert (record.key, record.value, record.headers) == (key, value, headers)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"compression_type": "zstandard"}, UnsupportedCodecError, "zstd"),
        ({"compression_type": "gzip", "compression_level": 10}, ConfigError, "1..9"),
        ({"compression_type": "snappy", "compression_level": 3}, ConfigError, "snappy"),
        ({"compression_level": 3}, ConfigError, "compression_type"),
    ],
)
def test_bad_compression_settings_fail_at_construction(
    options: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        AIOKafkaProducer(**options)


async def test_batches_fill_up_to_batch_size_after_compression(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """Java's ratio estimator: compressible records make fewer, fuller batches."""
    topic = topic_factory(1)
    value = b"the same words again and again " * 7  # ~220 bytes, compresses very well

    async def batches_for(codec: str | None) -> float:
        async with AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            compression_type=codec,
            batch_size=4096,
            linger_ms=60_000,  # batches leave when full (or at flush)
            delivery_timeout_ms=200_000,
        ) as producer:
            # The estimator learns from batches it closes: let it see some first.
            first = [await producer.send(topic, value) for _ in range(200)]
            await producer.flush()
            await asyncio.gather(*first)
            before = producer.metrics()["batch-total"]
            futures = [await producer.send(topic, value) for _ in range(3000)]
            await producer.flush()
            await asyncio.gather(*futures)
            return producer.metrics()["batch-total"] - before

    plain = await batches_for(None)
    compressed = await batches_for("zstd")
    assert plain >= 3000 * 220 / 4096  # ~160 batches of 4 KiB
    assert compressed < plain / 5, (plain, compressed)
