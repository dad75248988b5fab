"""TLS and SASL against the embedded Tansu broker, read back by confluent-kafka.

Tansu cannot serve TLS itself (``--cert/--key`` leave the listener plaintext; see
``aiokafka_lite.embedded``), so TLS is terminated by a proxy in front of it, as a TLS
load balancer would: the client's handshake, certificate checks and every byte of the
Kafka exchange go over real TLS, and a confluent-kafka consumer reads back over TLS too.

Tansu with ``--authentication`` requires SASL, but no user can be created in it (see
``tests/tansu.md``), so against it only the failure is tested: a SCRAM or
OAUTHBEARER exchange the broker rejects must fail fast and clearly. Successful SCRAM is covered
by RFC 7677's published exchange (test_sasl.py) and a scripted broker (test_sasl_exchange.py).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from certs import ServerCerts, make_server_certs
from faultproxy import FaultProxy
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer, NewTopic, create_topics
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.errors import AuthenticationFailedError, KafkaConnectionError
from aiokafka_lite.security import create_ssl_context

PASSWORD = "correct-horse-battery-staple"


def server_context(certs: ServerCerts) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs.cert_file, certs.key_file)
    return context


#: Tansu requires SASL (SCRAM) of every client, and knows no user.
AUTHENTICATION = ("--authentication",)


async def tls_front(
    certs: ServerCerts, *, authentication: bool = False
) -> tuple[FaultProxy, EmbeddedBroker]:
    """A fresh Tansu advertising a TLS-terminating proxy's port."""
    proxy = await FaultProxy("127.0.0.1", 0, ssl_context=server_context(certs)).start()
    broker = EmbeddedBroker(
        advertised_port=proxy.port, extra_args=AUTHENTICATION if authentication else ()
    )
    await broker.astart()
    proxy.target = ("127.0.0.1", broker.port)
    return proxy, broker


@pytest.fixture
async def tls_broker(tmp_path: Path) -> AsyncIterator[tuple[ServerCerts, FaultProxy, str]]:
    """(certs, proxy, plaintext bootstrap of the broker behind it)."""
    certs = make_server_certs(tmp_path / "tls", hosts=("127.0.0.1",))
    proxy, broker = await tls_front(certs)
    try:
        yield certs, proxy, broker.bootstrap_servers
    finally:
        await proxy.stop()
        await broker.astop()


async def test_produce_over_tls_and_read_back_over_tls(
    tls_broker: tuple[ServerCerts, FaultProxy, str],
) -> None:
    certs, proxy, _ = tls_broker
    topic = f"tls-{uuid.uuid4().hex}"
    tls_bootstrap = f"127.0.0.1:{proxy.port}"
    tls = {"security_protocol": "SSL", "ssl_cafile": str(certs.ca_file)}
    await create_topics(tls_bootstrap, [NewTopic(topic, 2)], **tls)
    async with AIOKafkaProducer(bootstrap_servers=tls_bootstrap, **tls) as producer:
        assert await producer.partitions_for(topic) == {0, 1}
        futures = [await producer.send(topic, f"v{i}".encode(), key=b"k") for i in range(50)]
        await producer.flush()
    assert all(f.done() and f.exception() is None for f in futures)
    assert proxy.connections >= 1  # the producer went through the TLS front, not around it
    records = await asyncio.to_thread(
        read_all_confluent,
        tls_bootstrap,
        topic,
        50,
        15.0,
        {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca_file)},
    )
    assert [r.value for r in records] == [f"v{i}".encode() for i in range(50)]


async def test_ssl_context_is_used_as_given(
    tls_broker: tuple[ServerCerts, FaultProxy, str],
) -> None:
    certs, proxy, _ = tls_broker
    context = create_ssl_context(cafile=str(certs.ca_file))  # aiokafka.helpers' helper
    async with AIOKafkaProducer(
        bootstrap_servers=f"127.0.0.1:{proxy.port}", security_protocol="SSL", ssl_context=context
    ) as producer:
        metadata = await producer.send_and_wait(f"ctx-{uuid.uuid4().hex}", b"x")
    assert metadata.offset == 0


async def test_wrong_ca_fails_fast_with_a_clear_error(
    tls_broker: tuple[ServerCerts, FaultProxy, str], tmp_path: Path
) -> None:
    _, proxy, _ = tls_broker
    other = make_server_certs(tmp_path / "other", name="other")
    producer = AIOKafkaProducer(
        bootstrap_servers=f"127.0.0.1:{proxy.port}",
        security_protocol="SSL",
        ssl_cafile=str(other.ca_file),
    )
    with pytest.raises(AuthenticationFailedError, match=r"certificate verify failed|unable to get"):
        async with asyncio.timeout(20):  # far below request_timeout_ms + retries
            await producer.start()


async def test_wrong_hostname_fails_unless_hostname_checks_are_off(
    tls_broker: tuple[ServerCerts, FaultProxy, str],
) -> None:
    certs, proxy, _ = tls_broker
    # The certificate names 127.0.0.1 only; "localhost" reaches the same proxy.
    options = {
        "bootstrap_servers": f"localhost:{proxy.port}",
        "security_protocol": "SSL",
        "ssl_cafile": str(certs.ca_file),
    }
    with pytest.raises(AuthenticationFailedError, match="localhost"):
        async with asyncio.timeout(20):
            await AIOKafkaProducer(**options).start()
    # Metadata then sends the client to 127.0.0.1, which the certificate does name.
    async with AIOKafkaProducer(**options, ssl_check_hostname=False) as producer:
        await producer.send_and_wait(f"host-{uuid.uuid4().hex}", b"x")


REJECTIONS = {
    # Tansu's own words: SCRAM's server-final "e=" attribute, OAUTHBEARER's error message.
    "SCRAM-SHA-256": "SCRAM-SHA-256: server error: unknown-user",
    "SCRAM-SHA-512": "SCRAM-SHA-512: server error: unknown-user",
    "OAUTHBEARER": "SASL OAUTHBEARER authentication with node -1",
}


async def token_provider() -> str:
    return PASSWORD  # a "token" that must never be shown either


@pytest.mark.parametrize("mechanism", list(REJECTIONS))
@pytest.mark.parametrize("tls", [False, True], ids=["SASL_PLAINTEXT", "SASL_SSL"])
async def test_login_rejected_by_an_authenticating_tansu_fails_fast(
    tls: bool, mechanism: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Tansu --authentication knows no user: the exchange must end in a clear error.

    Not retried until delivery_timeout_ms: start() fails at once, naming the mechanism
    and the broker's reason, and the secret appears in no message or log line.
    """
    certs = make_server_certs(tmp_path / "tls", hosts=("127.0.0.1",))
    if tls:
        proxy, broker = await tls_front(certs, authentication=True)
        bootstrap = f"127.0.0.1:{proxy.port}"
    else:
        broker = await EmbeddedBroker(extra_args=AUTHENTICATION).astart()
        bootstrap = broker.bootstrap_servers
    caplog.set_level(logging.DEBUG, logger="aiokafka_lite")
    credentials: dict[str, Any] = (
        {"sasl_oauth_token_provider": token_provider}
        if mechanism == "OAUTHBEARER"
        else {"sasl_plain_username": "alice", "sasl_plain_password": PASSWORD}
    )
    try:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            security_protocol="SASL_SSL" if tls else "SASL_PLAINTEXT",
            ssl_cafile=str(certs.ca_file) if tls else None,
            sasl_mechanism=mechanism,
            **credentials,
        )
        with pytest.raises(AuthenticationFailedError) as info:
            async with asyncio.timeout(20):
                await producer.start()
    finally:
        if tls:
            await proxy.stop()
        await broker.astop()
    message = str(info.value)
    assert REJECTIONS[mechanism] in message
    assert PASSWORD not in message
    assert PASSWORD not in caplog.text


async def test_tls_client_against_a_plaintext_listener_says_so(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    certs = make_server_certs(tmp_path)
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        security_protocol="SSL",
        ssl_cafile=str(certs.ca_file),
        socket_connection_setup_timeout_ms=1000,
    )
    with pytest.raises(KafkaConnectionError, match="does this listener speak TLS"):
        async with asyncio.timeout(20):
            await producer.start()
