"""OpenID Connect logins against Apache Kafka's own OIDC token validation.

A local identity provider (``oidc_server.LocalIdP``: a JWKS endpoint and a
client-credentials token endpoint, RS256 tokens signed with ``cryptography``) and one
Kafka node whose OIDC listener validates tokens with Kafka's
``OAuthBearerValidatorCallbackHandler`` against that key set, checking issuer and
audience. Our producer logs in with ``aiokafka_lite.oauth.OIDCClientCredentials``;
confluent-kafka reads back what it wrote.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka_cluster import KafkaCluster, missing_reason
from kafka_security import oidc_kafka, stream_across_sessions
from oidc_server import AUDIENCE, LocalIdP
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer, NewTopic, create_topics
from aiokafka_lite.errors import AuthenticationFailedError
from aiokafka_lite.oauth import OIDCClientCredentials

pytestmark = [
    pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason())),
    pytest.mark.xdist_group("apache_kafka_oidc"),
    pytest.mark.timeout(300),  # the first test also starts the node
]

CLIENT, SECRET = "orders-service", "s3cret-Value/with:odd&chars"
#: Each token's lifetime: short, so that tokens expire while records stream.
LIFETIME = 6.0


@pytest.fixture(scope="module")
def idp() -> Iterator[LocalIdP]:
    with LocalIdP({CLIENT: SECRET}, lifetime=LIFETIME) as server:
        yield server


@pytest.fixture(scope="module")
def kafka(idp: LocalIdP, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    work = tmp_path_factory.mktemp("oidc-kafka")
    with oidc_kafka(work, idp.jwks_url, idp.issuer, AUDIENCE) as cluster:
        yield cluster


def oidc_config(kafka: KafkaCluster, provider: Any) -> dict[str, Any]:
    return {
        "bootstrap_servers": kafka.bootstrap("OIDC"),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauth_token_provider": provider,
    }


async def new_topic(kafka: KafkaCluster, partitions: int = 2) -> str:
    topic = f"oidc-{uuid.uuid4().hex[:12]}"
    await create_topics(kafka.bootstrap("PLAINTEXT"), [NewTopic(topic, partitions)])
    return topic


async def test_token_that_expires_mid_stream_loses_and_duplicates_nothing(
    kafka: KafkaCluster, idp: LocalIdP
) -> None:
    """6 s tokens, records streaming for 13 s: Kafka ends each session when its token
    expires, so the leader's one connection must re-authenticate with a fresh token
    from the endpoint each time; confluent-kafka reads every record once, in order."""
    provider = OIDCClientCredentials(idp.token_url, CLIENT, SECRET, scope="kafka")
    topic = await new_topic(kafka)
    config = {**oidc_config(kafka, provider), "linger_ms": 5}
    written = await stream_across_sessions(config, topic, 2 * LIFETIME + 1)
    assert provider.fetches >= 3 and len(idp.issued) == provider.fetches
    assert all(r["basic"] for r in idp.requests)  # client secret in the Basic header
    records = await asyncio.to_thread(
        read_all_confluent,
        kafka.bootstrap("PLAINTEXT"),
        topic,
        len(written) + 1,
        30.0,
        idle=1.0,
        at_least=len(written),
    )
    assert [r.value for r in records] == written


async def test_wrong_client_secret_is_a_clear_error(kafka: KafkaCluster, idp: LocalIdP) -> None:
    """The token endpoint refuses the client: start() says so, without the secret."""
    wrong = "wrong-" + uuid.uuid4().hex
    provider = OIDCClientCredentials(idp.token_url, CLIENT, wrong)
    producer = AIOKafkaProducer(**oidc_config(kafka, provider))
    with pytest.raises(AuthenticationFailedError) as caught:
        await asyncio.wait_for(producer.start(), 30)
    message = str(caught.value)
    assert "token provider failed" in message and "401" in message
    assert "invalid_client" in message and wrong not in message
    await producer.stop()


async def test_token_signed_by_another_key_is_refused_by_kafka(
    kafka: KafkaCluster, idp: LocalIdP
) -> None:
    """A well-formed token from a different key set: Kafka's validator refuses it."""
    with LocalIdP({CLIENT: SECRET}) as impostor:
        provider = OIDCClientCredentials(impostor.token_url, CLIENT, SECRET)
        producer = AIOKafkaProducer(**oidc_config(kafka, provider))
        with pytest.raises(AuthenticationFailedError) as caught:
            await asyncio.wait_for(producer.start(), 30)
        await producer.stop()
    assert "SASL OAUTHBEARER" in str(caught.value) and "invalid_token" in str(caught.value)
