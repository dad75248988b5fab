"""Any failure to connect is a failed attempt: counted, backed off, and named.

Not only ``OSError``: a port past 65535 (``OverflowError``), a NUL in a host name
(``ValueError``), a name that does not resolve (``gaierror``), a TLS handshake with
something that is not TLS (``ssl.SSLError``). Each must count as a failed attempt with
the reconnect backoff, and be reported with the node, its address and the cause; a
record that cannot be delivered because of it says so when it expires; repeated
failures to one node are logged at WARNING, but not on every attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from certs import make_server_certs
from conftest import TopicFactory
from invariants import Watch, assert_bounded_attempts
from scripted_cluster import METADATA, LogCluster

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite._internal.client import NetworkClient
from aiokafka_lite._internal.cluster import Cluster, Node
from aiokafka_lite.config import ProducerConfig
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.errors import (
    InvalidTopicError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)

STEP = 10.0
BACKOFF_MS, BACKOFF_MAX_MS = 50, 1000


def max_attempts(
    elapsed: float, base_ms: float = BACKOFF_MS, cap_ms: float = BACKOFF_MAX_MS
) -> int:
    """The most attempts the reconnect backoff allows in ``elapsed`` seconds: each wait
    is at least 80% (the jitter's floor) of min(base * 2**(n-1), cap)."""
    attempts, t = 1, 0.0
    while True:
        t += 0.8 * min(base_ms * 2 ** (attempts - 1), cap_ms) / 1000
        if t > elapsed:
            return attempts
        attempts += 1


def connect_failures(caplog: pytest.LogCaptureFixture, node: int) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "aiokafka_lite.client"
        and r.levelno >= logging.INFO
        and f"node {node}" in r.getMessage()
        and ("cannot connect" in r.getMessage() or "attempts failed" in r.getMessage())
    ]


@pytest.fixture
async def garbage_server() -> AsyncIterator[tuple[str, int]]:
    """A listener that answers anything with bytes that are not TLS."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.0 400 Bad Request\r\n\r\n" * 4)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield "127.0.0.1", server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def _refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("where", "cause"),
    [
        ("port-70000", "OverflowError"),
        ("nul-in-host", "ValueError"),
        ("unresolvable", "Name or service not known|not known|nodename"),
        ("refused", "refused|Connect call failed"),
        ("tls-to-garbage", "SSL|WRONG_VERSION|record layer"),
    ],
)
async def test_every_kind_of_connect_failure_is_a_backed_off_named_attempt(
    where: str, cause: str, garbage_server: tuple[str, int]
) -> None:
    host, port = {
        "port-70000": ("127.0.0.1", 70000),
        "nul-in-host": ("bad\x00host", 9092),
        "unresolvable": ("no-such-host.invalid", 9092),
        "refused": ("127.0.0.1", _refused_port()),
        "tls-to-garbage": garbage_server,
    }[where]
    extra: dict[str, Any] = {}
    if where == "tls-to-garbage":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        extra = {"security_protocol": "SSL", "ssl_context": context}
    config = ProducerConfig.from_kwargs(
        bootstrap_servers="127.0.0.1:9",
        reconnect_backoff_ms=BACKOFF_MS,
        reconnect_backoff_max_ms=BACKOFF_MAX_MS,
        **extra,
    )
    woken = asyncio.Event()
    client = NetworkClient(config, wakeup=woken.set)
    client.metadata.update(Cluster([Node(7, host, port)]), time.monotonic())
    watch = Watch.begin()
    try:
        with pytest.raises(KafkaConnectionError) as info:
            async with asyncio.timeout(STEP):
                await client.connect(7)
        text = str(info.value)
        assert "node 7" in text and f"{host}:{port}" in text, text
        assert re.search(cause, text), text
        assert info.value.__cause__ is not None
        assert client.connection_error(7) is info.value
        # The sender asks ready() on every pass: attempts are limited by the backoff.
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < 1.0:
            client.ready(7, time.monotonic())
            await asyncio.sleep(0.002)
        attempts = client._failures[7]
        assert_bounded_attempts(attempts, max_attempts(elapsed) + 1)
        assert attempts >= 2  # and it does keep trying
    finally:
        await client.close()
    watch.check()


async def test_a_leader_at_port_70000_is_retried_with_backoff_and_the_record_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Metadata names the partition's leader at port 70000. Connecting raises
    OverflowError: bounded attempts with the reconnect backoff, and the record's
    error names the node, the address and the cause (not "topic not in metadata")."""
    caplog.set_level(logging.INFO, logger="aiokafka_lite")
    cluster = LogCluster(leader=("127.0.0.1", 70000))
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address,
            request_timeout_ms=1000,
            delivery_timeout_ms=3000,
            reconnect_backoff_ms=BACKOFF_MS,
            reconnect_backoff_max_ms=BACKOFF_MAX_MS,
        )
        started = time.monotonic()
        await producer.start()
        fut = await producer.send("t", b"x", partition=0)
        with pytest.raises(KafkaTimeoutError) as info:
            async with asyncio.timeout(STEP):
                await fut
        elapsed = time.monotonic() - started
        await watch.stop_and_check(producer, [fut], stop_timeout=2)
    text = str(info.value)
    assert "t[0]" in text and "node 1" in text and "127.0.0.1:70000" in text, text
    assert "OverflowError" in text and "65535" in text, text
    assert isinstance(info.value.__cause__, KafkaConnectionError)
    attempts = connect_failures(caplog, 1)
    assert attempts, "no failed attempt was logged"
    # Two ways in: the sender (for the partition) and the metadata refresh share
    # node 1's backoff, so the bound is the backoff's over the whole run.
    assert_bounded_attempts(len(attempts), max_attempts(elapsed) + 2)
    warnings = [r for r in attempts if r.levelno == logging.WARNING]
    assert 1 <= len(warnings) <= 1 + int(elapsed / 30), [r.getMessage() for r in warnings]


@pytest.mark.tansu_only(
    "kills its broker mid-send (fresh_broker); Apache Kafka's kill -9 faults: 3-node tests"
)
async def test_broker_killed_during_send_and_wait_the_timeout_carries_the_connection_error(
    fresh_broker: EmbeddedBroker, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1, bootstrap=fresh_broker.bootstrap_servers)
    watch = Watch.begin()
    producer = AIOKafkaProducer(
        bootstrap_servers=fresh_broker.bootstrap_servers,
        request_timeout_ms=1000,
        delivery_timeout_ms=3000,
    )
    await producer.start()
    await producer.send_and_wait(topic, b"before")
    fresh_broker.kill()
    with pytest.raises(KafkaError) as info:
        async with asyncio.timeout(STEP):
            await producer.send_and_wait(topic, b"after")
    await watch.stop_and_check(producer, stop_timeout=2)
    error = info.value
    connection_error = error if isinstance(error, KafkaConnectionError) else error.__cause__
    assert isinstance(connection_error, KafkaConnectionError), repr(error)
    assert str(connection_error) in str(error)
    assert f"{fresh_broker.port}" in str(error), str(error)


async def test_metadata_that_cannot_be_fetched_says_why_when_send_gives_up() -> None:
    """The only broker went away: a send to a topic not known yet gives up after
    max_block_ms, and its error names the connection failure, not only the topic."""
    cluster = LogCluster()
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(bootstrap_servers=broker.address, max_block_ms=1500)
        await producer.start()
    # The scripted broker is stopped: its port refuses connections from now on.
    with pytest.raises(KafkaTimeoutError) as info:
        async with asyncio.timeout(STEP):
            await producer.send("t", b"x")
    await watch.stop_and_check(producer, stop_timeout=2)
    text = str(info.value)
    assert "not present in metadata" in text and "node" in text, text
    assert isinstance(info.value.__cause__, KafkaConnectionError), repr(info.value.__cause__)


async def test_a_refused_topic_name_leaves_the_metadata_topic_set() -> None:
    """INVALID_TOPIC_EXCEPTION for a name the client's own rules accept (a broker may
    be stricter, e.g. a name colliding with another once '.' and '_' are folded):
    send() fails at once, and the name is not asked about again (it was, every retry
    backoff, for metadata_max_idle_ms)."""
    cluster = LogCluster(topic_errors={"refused.name": 17})
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(bootstrap_servers=broker.address, retry_backoff_ms=20)
        await producer.start()
        with pytest.raises(InvalidTopicError, match=r"refused\.name"):
            await producer.send("refused.name", b"x")
        before = cluster.counts[METADATA]
        good = await producer.send("t", b"fine")  # the producer works on
        await asyncio.wait_for(good, STEP)
        await asyncio.sleep(0.5)  # 25 retry backoffs
        asked = [r.decode().topics for r in broker.requests_for(METADATA)][before:]
        await watch.stop_and_check(producer, [good], stop_timeout=2)
    assert len(asked) <= 2, f"{len(asked)} Metadata requests after the refusal"
    for topics in asked:
        assert "refused.name" not in [t.name for t in topics or []]


# -- a server that does not speak Kafka ------------------------------------------------
#
# Real servers on the bootstrap address: aiohttp's HTTP server answers the ApiVersions
# bytes with "400 Bad Request"; the standard library's http.server waits for the end of
# a request line that never comes; a TLS listener answers with a TLS alert or closes.


@contextlib.asynccontextmanager
async def aiohttp_server() -> AsyncIterator[int]:
    runner = web.AppRunner(web.Application())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def stdlib_http_server() -> AsyncIterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        await asyncio.to_thread(server.shutdown)
        server.server_close()


@contextlib.asynccontextmanager
async def tcp_server(answer: bytes | None) -> AsyncIterator[int]:
    """Accepts; with ``answer`` None says nothing and holds on, else writes it and closes."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if answer is None:
            await reader.read()  # until the client gives up
        else:
            await reader.read(1)
            writer.write(answer)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


@contextlib.asynccontextmanager
async def tls_listener(tmp_path: Path) -> AsyncIterator[int]:
    """A TLS server (Python's ssl, as a TLS Kafka listener would be) that never gets past
    the handshake with a plaintext client."""
    certs = make_server_certs(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs.cert_file, certs.key_file)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


NOT_KAFKA = {
    "aiohttp": (
        lambda tmp: aiohttp_server(),
        r"the server at 127\.0\.0\.1:\d+ does not speak Kafka: it answered Kafka's first "
        r"request \(ApiVersions\) with b'HTTP/1\.\d 400 Bad Request.*' \(an HTTP server\)",
    ),
    "http.server": (
        lambda tmp: stdlib_http_server(),
        r"timed out after 1\.0s: the TCP connection was established, but no answer to "
        r"Kafka's first request \(ApiVersions\) came\. Is a Kafka listener there\?",
    ),
    "silent": (
        lambda tmp: tcp_server(None),
        r"the TCP connection was established, but no answer",
    ),
    "closes": (
        lambda tmp: tcp_server(b""),
        r"closed the connection without answering Kafka's first request \(ApiVersions\): "
        r"it does not speak Kafka, it expects TLS \(security_protocol 'SSL' or 'SASL_SSL'\), "
        r"or it is a Kafka broker refusing new connections",
    ),
    "says-hi": (
        lambda tmp: tcp_server(b"hi"),
        r"the server at 127\.0\.0\.1:\d+ sent b'hi' and closed the connection without answering",
    ),
    "tls-listener": (
        tls_listener,
        r"does not speak Kafka: .*TLS|expects TLS",
    ),
}


@pytest.mark.parametrize("server", list(NOT_KAFKA))
async def test_a_server_that_does_not_speak_kafka_is_named_as_such(
    server: str, tmp_path: Path
) -> None:
    start_server, message = NOT_KAFKA[server]
    async with start_server(tmp_path) as port:
        producer = AIOKafkaProducer(
            bootstrap_servers=f"127.0.0.1:{port}", socket_connection_setup_timeout_ms=1000
        )
        started = time.monotonic()
        with pytest.raises(KafkaConnectionError) as info:
            await producer.start()
        elapsed = time.monotonic() - started
    text = str(info.value)
    assert text.startswith(f"unable to bootstrap from 127.0.0.1:{port}: "), text
    assert re.search(message, text), text
    # Only the silent ones wait for the timeout; an answer or a close is known at once.
    assert elapsed < (3.0 if server in ("http.server", "silent") else 0.9), elapsed


async def test_tls_to_a_listener_that_closes_in_the_handshake_says_why() -> None:
    """An Apache Kafka plaintext listener reads a TLS ClientHello as the size of a frame
    too large for it and closes the connection (FIN) at once: asyncio then raises a
    ConnectionResetError() whose text is empty. The error must still say something, and
    point at TLS (tests/test_not_kafka_apache.py checks it against Apache Kafka)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)  # read everything, as Kafka does, then close (FIN)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    context = ssl.create_default_context()
    try:
        producer = AIOKafkaProducer(
            bootstrap_servers=f"127.0.0.1:{port}", security_protocol="SSL", ssl_context=context
        )
        with pytest.raises(KafkaConnectionError) as info:
            async with asyncio.timeout(STEP):
                await producer.start()
    finally:
        server.close()
    text = str(info.value)
    assert not text.endswith(": "), text
    assert "ConnectionResetError" in text and "does this listener speak TLS" in text, text
