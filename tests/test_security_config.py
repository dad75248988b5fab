"""Security options: validation at construction, librdkafka/Java names, secrets never shown."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest
from certs import make_server_certs
from cryptography.hazmat.primitives import serialization

from aiokafka_lite import AIOKafkaProducer, ProducerConfig
from aiokafka_lite.errors import ConfigError
from aiokafka_lite.security import OAuthToken, Security

SECRET = "hunter2-very-secret"


class Provider:
    async def token(self) -> str:
        return SECRET


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256"},
            "needs sasl_plain_username and sasl_plain_password",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_plain_username": "u"},
            "sasl_mechanism='PLAIN' needs sasl_plain_password",
        ),
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"},
            "needs sasl_oauth_token_provider",
        ),
        (
            {
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "OAUTHBEARER",
                "sasl_oauth_token_provider": "not callable",
            },
            "token\\(\\) method or a callable",
        ),
        ({"sasl_plain_username": "u", "sasl_plain_password": "p"}, "does not use SASL"),
        ({"ssl_cafile": "/x.pem"}, "does not use TLS"),
        ({"security_protocol": "SSL", "ssl_cafile": "/nonexistent/ca.pem"}, "ssl_cafile"),
        ({"security_protocol": "SSL", "ssl_context": "nope"}, "ssl_context: expected"),
        ({"security_protocol": "SSL", "ssl_keyfile": "/k.pem"}, "ssl_certfile is not"),
        ({"sasl_mechanism": "GSSAPI"}, "sasl_mechanism"),
        ({"security_protocol": "TLS"}, "security_protocol"),
        ({"ssl.endpoint.identification.algorithm": "yes"}, "'https' or 'none'"),
    ],
)
def test_bad_security_options_fail_at_construction(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        AIOKafkaProducer(**kwargs)


def test_ssl_context_and_files_are_exclusive(tmp_path: Path) -> None:
    certs = make_server_certs(tmp_path)
    with pytest.raises(ConfigError, match="either ssl_context or ssl_cafile"):
        ProducerConfig.from_kwargs(
            security_protocol="SSL",
            ssl_context=ssl.create_default_context(),
            ssl_cafile=str(certs.ca_file),
        )


def test_librdkafka_names_map(tmp_path: Path) -> None:
    certs = make_server_certs(tmp_path)
    cfg = ProducerConfig.from_kwargs(
        **{
            "security.protocol": "sasl_ssl",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": SECRET,
            "ssl.ca.location": str(certs.ca_file),
            "ssl.endpoint.identification.algorithm": "none",
        }
    )
    assert cfg.security_protocol == "SASL_SSL"
    assert cfg.sasl_mechanism == "SCRAM-SHA-512"
    assert (cfg.sasl_plain_username, cfg.sasl_plain_password) == ("alice", SECRET)
    assert cfg.ssl_cafile == str(certs.ca_file)
    assert cfg.ssl_check_hostname is False
    context = Security(cfg).ssl_context
    assert context is not None and context.check_hostname is False
    # Java's name for the mechanism maps too.
    java = ProducerConfig.from_kwargs(
        **{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"},
        sasl_oauth_token_provider=Provider(),
    )
    assert java.sasl_mechanism == "OAUTHBEARER"


def test_default_context_verifies_hostnames_and_certificates(tmp_path: Path) -> None:
    certs = make_server_certs(tmp_path)
    cfg = ProducerConfig.from_kwargs(security_protocol="SSL", ssl_cafile=str(certs.ca_file))
    context = Security(cfg).ssl_context
    assert context is not None
    assert context.check_hostname is True
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_encrypted_client_key_loads_with_ssl_password(tmp_path: Path) -> None:
    certs = make_server_certs(tmp_path)
    key = serialization.load_pem_private_key(certs.key_file.read_bytes(), None)
    encrypted = tmp_path / "client.key"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(SECRET.encode()),
        )
    )
    options = {
        "security_protocol": "SSL",
        "ssl_cafile": str(certs.ca_file),
        "ssl_certfile": str(certs.cert_file),
        "ssl_keyfile": str(encrypted),
    }
    ProducerConfig.from_kwargs(**options, ssl_password=SECRET)  # loads
    with pytest.raises(ConfigError, match="ssl_certfile/ssl_keyfile") as info:
        ProducerConfig.from_kwargs(**options, ssl_password="wrong-" + SECRET)
    assert SECRET not in str(info.value)


def test_secrets_are_masked_everywhere(tmp_path: Path) -> None:
    """describe() (logged at start), repr, str and rich's repr never show a secret."""
    sasl = ProducerConfig.from_kwargs(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="alice",
        sasl_plain_password=SECRET,
    )

    class LeakyProvider:
        def token(self) -> str:
            return SECRET

        def __repr__(self) -> str:
            return f"LeakyProvider({SECRET})"

    oauth = ProducerConfig.from_kwargs(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=LeakyProvider(),
    )
    for cfg in (sasl, oauth):
        shown = [
            cfg.describe(),
            repr(cfg),
            str(cfg),
            repr(cfg.__rich_repr__()),
            repr(Security(cfg)),
        ]
        for text in shown:
            assert SECRET not in text
    assert "sasl_plain_password=[hidden]" in sasl.describe()
    assert "sasl_plain_username='alice'" in sasl.describe()  # not a secret
    assert "sasl_oauth_token_provider=[hidden]" in oauth.describe()
    assert SECRET not in repr(OAuthToken(SECRET, 1.0))
