"""An Apache Kafka node with every secured listener the tests need, and its credentials.

:func:`secure_kafka` starts one KRaft node (``kafka_cluster.KafkaCluster``) with these
listeners, each on its own loopback port:

============== ============== ==================================================
listener       protocol       what it is for
============== ============== ==================================================
PLAINTEXT      PLAINTEXT      inter-broker traffic, readiness, creating topics
SSL            SSL            TLS with a certificate for 127.0.0.1 (our CA)
SSL_OTHERHOST  SSL            TLS with a certificate naming another host only
SASL_PLAINTEXT SASL_PLAINTEXT PLAIN, SCRAM-SHA-256/512, OAUTHBEARER
SASL_SSL       SASL_SSL       the same mechanisms over TLS
REAUTH         SASL_SSL       the same, with ``connections.max.reauth.ms`` short
============== ============== ==================================================

Certificates are made by ``certs.make_server_certs`` and given to Kafka inline as PEM
(``ssl.keystore.type=PEM``). SCRAM users are added when the storage is formatted
(``--add-scram``), PLAIN users in the listener's JAAS line. OAUTHBEARER uses Kafka's
default broker-side validator for unsecured JWS tokens (``alg: none``), which
:func:`unsecured_token` makes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from certs import ServerCerts, make_server_certs
from kafka_cluster import KafkaCluster, Listener

from aiokafka_lite import AIOKafkaProducer

#: Every SASL mechanism the SASL listeners enable.
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
#: The user the tests log in as, on every mechanism (its own password for each).
USER = "alice"
PASSWORDS = {
    "PLAIN": "plain-Secret-1",
    "SCRAM-SHA-256": "scram256-Secret-2",
    "SCRAM-SHA-512": "scram512-Secret-3",
}
#: ``connections.max.reauth.ms`` of the REAUTH listener: short, yet with room (the
#: 5-15 % before the session ends) for a loaded two-core machine's event-loop lag.
REAUTH_MS = 6000
SASL_LISTENERS = ("SASL_PLAINTEXT", "SASL_SSL", "REAUTH")
OTHER_HOST = "kafka.other-host.invalid"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsecured_token(subject: str = USER, lifetime: float = 3600.0) -> str:
    """An unsecured JWS (``alg: none``, RFC 7515) as Kafka's unsecured validator accepts."""
    now = time.time()
    header = _b64url(json.dumps({"alg": "none"}).encode())
    claims = _b64url(json.dumps({"sub": subject, "iat": now, "exp": now + lifetime}).encode())
    return f"{header}.{claims}."


def _pem_inline(path: Path) -> str:
    # A properties value on one line: Kafka's PEM parser ignores the spaces in between.
    return " ".join(path.read_text().split("\n")).strip()


def _keystore(certs: ServerCerts) -> dict[str, str]:
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": _pem_inline(certs.cert_file),
        "ssl.keystore.key": _pem_inline(certs.key_file),
    }


def _sasl(reauth_ms: int | None = None) -> dict[str, str]:
    plain_users = f'user_{USER}="{PASSWORDS["PLAIN"]}"'
    settings = {
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "plain.sasl.jaas.config": (
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};"
        ),
        "scram-sha-256.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "oauthbearer.sasl.jaas.config": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
        ),
    }
    if reauth_ms is not None:
        settings["connections.max.reauth.ms"] = str(reauth_ms)
    return settings


def scram_format_args() -> list[str]:
    """``StorageTool format`` arguments that create the SCRAM users."""
    args: list[str] = []
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        args += ["--add-scram", f"{mechanism}=[name={USER},password={PASSWORDS[mechanism]}]"]
    return args


@dataclass
class SecureKafka:
    """A started node with the listeners above, and how clients reach each."""

    cluster: KafkaCluster
    certs: ServerCerts  # the CA and the certificate of SSL, SASL_SSL and REAUTH
    other_host_certs: ServerCerts  # SSL_OTHERHOST's (same CA layout, names OTHER_HOST)

    def bootstrap(self, listener: str) -> str:
        return self.cluster.bootstrap(listener)

    def protocol(self, listener: str) -> str:
        return next(lst.protocol for lst in self.cluster.listeners if lst.name == listener)

    def producer_config(self, listener: str, mechanism: str | None = None) -> dict[str, Any]:
        """Our producer's (aiokafka's) options for ``listener`` and ``mechanism``."""
        protocol = self.protocol(listener)
        config: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap(listener),
            "security_protocol": protocol,
        }
        if protocol in ("SSL", "SASL_SSL"):
            certs = self.other_host_certs if listener == "SSL_OTHERHOST" else self.certs
            config["ssl_cafile"] = str(certs.ca_file)
        if protocol.startswith("SASL_"):
            assert mechanism is not None
            config["sasl_mechanism"] = mechanism
            if mechanism == "OAUTHBEARER":
                config["sasl_oauth_token_provider"] = unsecured_token
            else:
                config["sasl_plain_username"] = USER
                config["sasl_plain_password"] = PASSWORDS[mechanism]
        return config

    def confluent_config(self, listener: str, mechanism: str | None = None) -> dict[str, Any]:
        """librdkafka's settings for the same listener and mechanism (an independent reader)."""
        protocol = self.protocol(listener)
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap(listener),
            "security.protocol": protocol,
        }
        if protocol in ("SSL", "SASL_SSL"):
            config["ssl.ca.location"] = str(self.certs.ca_file)
        if protocol.startswith("SASL_"):
            assert mechanism is not None
            config["sasl.mechanisms"] = mechanism
            if mechanism == "OAUTHBEARER":
                config["enable.sasl.oauthbearer.unsecure.jwt"] = True
                config["sasl.oauthbearer.config"] = f"principal={USER}"
            else:
                config["sasl.username"] = USER
                config["sasl.password"] = PASSWORDS[mechanism]
        return config


def secure_listeners(certs: ServerCerts, other_host: ServerCerts) -> list[Listener]:
    """The listeners of the table above."""
    return [
        Listener("PLAINTEXT"),
        Listener("SSL", "SSL", _keystore(certs)),
        Listener("SSL_OTHERHOST", "SSL", _keystore(other_host)),
        Listener("SASL_PLAINTEXT", "SASL_PLAINTEXT", _sasl()),
        Listener("SASL_SSL", "SASL_SSL", {**_keystore(certs), **_sasl()}),
        Listener("REAUTH", "SASL_SSL", {**_keystore(certs), **_sasl(REAUTH_MS)}),
    ]


@contextmanager
def secure_kafka(work_dir: Path) -> Iterator[SecureKafka]:
    """Start one node with every listener above; stop it on exit."""
    certs = make_server_certs(work_dir / "tls", hosts=("127.0.0.1", "localhost"))
    other = make_server_certs(work_dir / "tls-other", hosts=(OTHER_HOST,), name="other")
    cluster = KafkaCluster(
        work_dir / "kafka",
        listeners=secure_listeners(certs, other),
        format_args=scram_format_args(),
    )
    with cluster:
        yield SecureKafka(cluster, certs, other)


#: The OIDC listener's ``connections.max.reauth.ms``: long, so that the token's
#: expiry is what ends a session.
OIDC_REAUTH_MS = 60_000


@contextmanager
def oidc_kafka(work_dir: Path, jwks_url: str, issuer: str, audience: str) -> Iterator[KafkaCluster]:
    """One node whose OIDC listener (SASL_PLAINTEXT, OAUTHBEARER) validates JWTs with
    Kafka's own ``OAuthBearerValidatorCallbackHandler`` against ``jwks_url``.

    Kafka 4.x fetches only URLs allowed by the ``org.apache.kafka.sasl.oauthbearer
    .allowed.urls`` system property; the node gets it for ``jwks_url``. Kafka 4.1.1's
    default ``DefaultJwtValidator`` was found to accept tokens signed by any key and
    from any issuer here (it fell back to the client-side validator, which checks no
    signature), so ``BrokerJwtValidator`` is named, broker-wide.
    """
    validator = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
    oidc = Listener(
        "OIDC",
        "SASL_PLAINTEXT",
        {
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "oauthbearer.sasl.jaas.config": (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
            ),
            "oauthbearer.sasl.server.callback.handler.class": validator,
            "oauthbearer.connections.max.reauth.ms": str(OIDC_REAUTH_MS),
        },
    )
    cluster = KafkaCluster(
        work_dir / "kafka-oidc",
        listeners=[Listener("PLAINTEXT"), oidc],
        settings={
            "sasl.oauthbearer.jwt.validator.class": (
                "org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator"
            ),
            "sasl.oauthbearer.jwks.endpoint.url": jwks_url,
            "sasl.oauthbearer.expected.issuer": issuer,
            "sasl.oauthbearer.expected.audience": audience,
        },
        jvm_options=[f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={jwks_url}"],
    )
    with cluster:
        yield cluster


async def stream_across_sessions(config: dict[str, Any], topic: str, seconds: float) -> list[bytes]:
    """Send a record every 10 ms for ``seconds`` (values ``b"0"``, ``b"1"``, ...; keys
    alternating over partitions) through one producer, and wait for all of them.

    Asserts that the leader's one connection (node 1) was never replaced and authenticated
    at least three times (the first login and two re-authentications), and that offsets are
    dense in send order. Returns the values in log order (by partition, then offset).
    """
    futures = []
    async with AIOKafkaProducer(**config) as producer:
        await producer.partitions_for(topic)
        leader = producer._client.connection(1)  # the node's one connection (internal)
        assert leader is not None
        deadline = time.monotonic() + seconds
        i = 0
        while time.monotonic() < deadline:
            futures.append(await producer.send(topic, b"%d" % i, key=b"%d" % (i % 2)))
            i += 1
            await asyncio.sleep(0.01)
        results = await asyncio.wait_for(asyncio.gather(*futures), 30)
        assert producer._client.connection(1) is leader  # never cut off, never reconnected
        assert leader.authentications >= 3  # the first login and two re-authentications
    assert len(results) == len(futures) == i
    written = sorted((md.partition, md.offset, b"%d" % n) for n, md in enumerate(results))
    for partition in {p for p, _, _ in written}:  # dense offsets, in send order
        offsets = [o for p, o, _ in written if p == partition]
        assert offsets == list(range(len(offsets)))
    return [v for _, _, v in written]
