"""Apache Kafka itself, reached the wrong way: what the connect errors say.

The "does not speak Kafka" detection (connection.py) must not call a real Kafka
broker "not Kafka" without saying that a Kafka broker refusing connections looks the
same, and TLS to a plaintext listener must say something (Apache Kafka closes such a
connection at once: asyncio's error then has no text).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_cluster import KafkaCluster, missing_reason

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import KafkaConnectionError

pytestmark = [
    pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason())),
    pytest.mark.timeout(240),
]

PER_IP = 12  # the broker's max.connections.per.ip


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaCluster]:
    with (
        tempfile.TemporaryDirectory(prefix="not-kafka-") as work_dir,
        KafkaCluster(Path(work_dir), settings={"max.connections.per.ip": str(PER_IP)}) as cluster,
    ):
        yield cluster


def _api_versions_v0() -> bytes:
    body = struct.pack(">hhih", 18, 0, 1, -1)  # api key, version, correlation id, no client id
    return struct.pack(">i", len(body)) + body


async def _start_error(**options: object) -> str:
    producer = AIOKafkaProducer(max_block_ms=5000, **options)  # type: ignore[arg-type]
    try:
        with pytest.raises(KafkaConnectionError) as info:
            async with asyncio.timeout(30):
                await producer.start()
    finally:
        await producer.stop()
    return str(info.value)


async def test_tls_to_a_plaintext_kafka_listener_says_why(kafka: KafkaCluster) -> None:
    text = await _start_error(
        bootstrap_servers=kafka.bootstrap(),
        security_protocol="SSL",
        ssl_context=ssl.create_default_context(),
    )
    assert not text.endswith(": "), text
    assert "does this listener speak TLS" in text, text


async def test_a_kafka_broker_at_its_connection_limit_is_not_called_not_kafka(
    kafka: KafkaCluster,
) -> None:
    host, port = kafka.bootstrap().split(":")
    held: list[socket.socket] = []
    try:
        # Fill the broker's per-IP limit: connections it answers, until it closes one.
        for _ in range(PER_IP * 3):
            sock = socket.create_connection((host, int(port)), timeout=5)
            sock.sendall(_api_versions_v0())
            try:
                answered = bool(sock.recv(4))
            except OSError:
                answered = False
            if not answered:
                sock.close()
                break
            held.append(sock)
        else:
            pytest.fail("the broker never refused a connection")
        text = await _start_error(bootstrap_servers=kafka.bootstrap())
    finally:
        for sock in held:
            sock.close()
    assert "closed the connection without answering" in text, text
    assert "a Kafka broker refusing new connections" in text, text
    assert "max.connections.per.ip" in text, text
