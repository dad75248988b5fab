"""TLS and SASL against Apache Kafka itself: every listener and mechanism, and the failures.

One Kafka node (``kafka_security.secure_kafka``) serves the whole module with PLAINTEXT,
SSL (PEM certificates made here, host names checked), SASL_PLAINTEXT and SASL_SSL with
PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (unsecured JWS tokens, validated by
Kafka's default broker-side handler), and a SASL_SSL listener whose sessions last 6 s
(``connections.max.reauth.ms``), where the broker closes a connection that does not
re-authenticate (KIP-368). What our producer writes is read back by confluent-kafka over
the same secured listener. The scripted-broker and TLS-proxy tests
(``test_sasl_exchange.py``, ``test_security_e2e.py``) cover what a real broker cannot be
made to do; this module checks the same promises against the broker users run.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import aiokafka.errors  # type: ignore[import-untyped]
import pytest
from kafka_cluster import missing_reason
from kafka_security import (
    MECHANISMS,
    OTHER_HOST,
    PASSWORDS,
    REAUTH_MS,
    SecureKafka,
    secure_kafka,
    stream_across_sessions,
    unsecured_token,
)
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer, NewTopic, create_topics
from aiokafka_lite.errors import AuthenticationFailedError
from aiokafka_lite.security import OAuthToken

pytestmark = [
    pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason())),
    # One worker runs the whole module, so that one Kafka node serves it.
    pytest.mark.xdist_group("apache_kafka_security"),
    # The first test also starts the node (two JVMs: format, then Kafka): on a loaded
    # two-core machine that alone has taken over a minute.
    pytest.mark.timeout(300),
]

COMBINATIONS = [
    ("PLAINTEXT", None),
    ("SSL", None),
    *[("SASL_PLAINTEXT", m) for m in MECHANISMS],
    *[("SASL_SSL", m) for m in MECHANISMS],
]


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    with secure_kafka(tmp_path_factory.mktemp("secure-kafka")) as k:
        yield k


async def new_topic(kafka: SecureKafka, partitions: int = 3) -> str:
    topic = f"sec-{uuid.uuid4().hex[:12]}"
    await create_topics(kafka.bootstrap("PLAINTEXT"), [NewTopic(topic, partitions)])
    return topic


async def read_back(
    kafka: SecureKafka, listener: str, mechanism: str | None, topic: str, expected: int
) -> list[bytes | None]:
    """confluent-kafka's reading of ``topic`` over ``listener``: values by (partition, offset)."""
    records = await asyncio.to_thread(
        read_all_confluent,
        kafka.bootstrap(listener),
        topic,
        expected + 1,  # one more than written: a duplicate would be seen, not cut off
        30.0,
        {k: v for k, v in kafka.confluent_config(listener, mechanism).items() if "." in k},
        idle=1.0,
        at_least=expected,
    )
    return [r.value for r in records]


@pytest.mark.parametrize(("listener", "mechanism"), COMBINATIONS, ids=lambda v: v or "none")
async def test_delivers_over_every_listener_and_mechanism(
    kafka: SecureKafka, listener: str, mechanism: str | None
) -> None:
    """Our producer (idempotent, three partitions) over each listener and mechanism; the
    broker's offsets and confluent-kafka's reading over the same listener agree."""
    topic = await new_topic(kafka)
    sent: list[tuple[int, int, bytes]] = []
    async with AIOKafkaProducer(**kafka.producer_config(listener, mechanism)) as producer:
        futures = [
            await producer.send(topic, f"{listener}-{i}".encode(), key=f"k{i % 7}".encode())
            for i in range(300)
        ]
        for i, fut in enumerate(futures):
            md = await fut
            sent.append((md.partition, md.offset, f"{listener}-{i}".encode()))
    assert len({p for p, _, _ in sent}) == 3
    expected = [v for _, _, v in sorted(sent)]
    assert await read_back(kafka, listener, mechanism, topic, len(sent)) == expected


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
async def test_wrong_password_is_a_clear_authentication_error(
    kafka: SecureKafka, listener: str, mechanism: str
) -> None:
    """start() fails at once with the error type aiokafka users catch; it names the
    mechanism and the broker's reason, never the password."""
    wrong = "not-the-password-" + uuid.uuid4().hex
    config = {**kafka.producer_config(listener, mechanism), "sasl_plain_password": wrong}
    producer = AIOKafkaProducer(**config)
    began = time.monotonic()
    with pytest.raises(AuthenticationFailedError) as caught:
        await asyncio.wait_for(producer.start(), 30)
    assert time.monotonic() - began < 15  # not retried until request_timeout_ms (30 s)
    assert isinstance(caught.value, aiokafka.errors.AuthenticationFailedError)
    message = str(caught.value)
    assert f"SASL {mechanism}" in message
    assert kafka.bootstrap(listener) in message  # which broker refused
    assert "Authentication failed" in message  # Kafka's own reason
    assert wrong not in message and PASSWORDS[mechanism] not in message
    await producer.stop()


async def test_scram_credentials_are_per_hash(kafka: SecureKafka) -> None:
    """SCRAM-SHA-256 and SCRAM-SHA-512 are separate credentials on the broker: each hash
    logs in with its own password (above) and not with the other one's."""
    config = {
        **kafka.producer_config("SASL_PLAINTEXT", "SCRAM-SHA-512"),
        "sasl_plain_password": PASSWORDS["SCRAM-SHA-256"],
    }
    producer = AIOKafkaProducer(**config)
    with pytest.raises(AuthenticationFailedError, match="SCRAM-SHA-512"):
        await asyncio.wait_for(producer.start(), 30)
    await producer.stop()


async def test_expired_oauthbearer_token_is_refused_with_the_brokers_reason(
    kafka: SecureKafka,
) -> None:
    """Kafka's validator refuses an expired token; the error carries its JSON reason."""
    config = {
        **kafka.producer_config("SASL_PLAINTEXT", "OAUTHBEARER"),
        "sasl_oauth_token_provider": lambda: unsecured_token(lifetime=-60),
    }
    producer = AIOKafkaProducer(**config)
    with pytest.raises(AuthenticationFailedError) as caught:
        await asyncio.wait_for(producer.start(), 30)
    assert "SASL OAUTHBEARER" in str(caught.value)
    assert str(caught.value).count("invalid_token") == 1  # RFC 7628's status, said once
    await producer.stop()


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
async def test_untrusted_certificate_is_a_clear_tls_error(
    kafka: SecureKafka, listener: str
) -> None:
    """A CA that did not sign the broker's certificate: a TLS error at start(), before
    any credential is sent."""
    config = {
        **kafka.producer_config(listener, "PLAIN"),
        "ssl_cafile": str(kafka.other_host_certs.ca_file),
    }
    if listener == "SSL":
        config = {k: v for k, v in config.items() if not k.startswith("sasl_")}
    producer = AIOKafkaProducer(**config)
    with pytest.raises(AuthenticationFailedError) as caught:
        await asyncio.wait_for(producer.start(), 30)
    message = str(caught.value)
    assert "TLS handshake" in message and "certificate verify failed" in message
    assert "ssl_cafile" in message  # what to check
    assert kafka.bootstrap(listener) in message
    await producer.stop()


async def test_certificate_for_another_host_is_refused_unless_checks_are_off(
    kafka: SecureKafka,
) -> None:
    """The SSL_OTHERHOST listener's certificate is signed by the trusted CA but names
    another host: refused, saying so; with ``ssl_check_hostname=False`` it is accepted."""
    config = kafka.producer_config("SSL_OTHERHOST")
    producer = AIOKafkaProducer(**config)
    with pytest.raises(AuthenticationFailedError) as caught:
        await asyncio.wait_for(producer.start(), 30)
    message = str(caught.value)
    assert "TLS handshake" in message and "mismatch" in message
    assert "does not name '127.0.0.1'" in message
    await producer.stop()

    topic = await new_topic(kafka, partitions=1)
    async with AIOKafkaProducer(**config, ssl_check_hostname=False) as producer:
        md = await producer.send_and_wait(topic, b"unchecked")
    assert (md.partition, md.offset) == (0, 0)
    assert OTHER_HOST not in kafka.bootstrap("SSL_OTHERHOST")


def expiring_tokens(lifetime: float) -> Any:
    """A token provider whose unsecured tokens expire after ``lifetime`` s; counts calls."""

    def provider() -> OAuthToken:
        provider.calls += 1  # type: ignore[attr-defined]
        return OAuthToken(unsecured_token(lifetime=lifetime), time.time() + lifetime)

    provider.calls = 0  # type: ignore[attr-defined]
    return provider


# (SCRAM-SHA-256 re-authenticates as SCRAM-SHA-512 does; both log in above.)
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER-4s-token"])
async def test_reauthentication_streams_without_loss_or_duplicates(
    kafka: SecureKafka, mechanism: str
) -> None:
    """The REAUTH listener's sessions last 6 s (the broker closes a connection that
    outlives its session); a 4 s token shortens them. Records stream for two sessions
    and a second: the leader's connection is never replaced, it re-authenticated at
    least twice, and confluent-kafka reads every record exactly once, in order."""
    name = mechanism.removesuffix("-4s-token")
    config: dict[str, Any] = {**kafka.producer_config("REAUTH", name), "linger_ms": 5}
    provider = None
    lifetime = 4.0 if mechanism != name else REAUTH_MS / 1000
    if mechanism != name:
        provider = config["sasl_oauth_token_provider"] = expiring_tokens(lifetime)
    topic = await new_topic(kafka, partitions=2)
    written = await stream_across_sessions(config, topic, 2 * lifetime + 1.0)
    if provider is not None:
        assert provider.calls >= 3  # a fresh token for every (re-)authentication
    assert await read_back(kafka, "REAUTH", name, topic, len(written)) == written
