"""Token providers without a broker: refresh timing, the OIDC client, MSK IAM signing.

The OIDC client runs against ``oidc_server.LocalIdP`` over real TLS (certificates from
``certs.py``); its login to Apache Kafka is in test_oauth_kafka.py. MSK IAM signs with
AWS's own library and fake credentials from the environment: no AWS account is used,
and what is checked is the signed token's form and that signing ran off the loop.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiokafka.abc  # type: ignore[import-untyped]
import pytest
from certs import make_server_certs
from oidc_server import LocalIdP

from aiokafka_lite.errors import ConfigError
from aiokafka_lite.oauth import (
    OAuthToken,
    OIDCClientCredentials,
    RefreshingTokenProvider,
    TokenEndpointError,
)
from aiokafka_lite.security import Security

CLIENT, SECRET = "svc", "pa:ss/word&more"


class Counting(RefreshingTokenProvider):
    """Tokens ``t1``, ``t2``, ... each living ``lifetime`` s; ``fail`` makes fetch raise."""

    def __init__(self, lifetime: float | None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.lifetime = lifetime
        self.calls = 0
        self.fail = False

    async def fetch(self) -> OAuthToken:
        self.calls += 1
        await asyncio.sleep(0.01)
        if self.fail:
            raise RuntimeError("identity provider down")
        expires = None if self.lifetime is None else time.time() + self.lifetime
        return OAuthToken(f"t{self.calls}", expires)


async def test_token_is_reused_until_its_refresh_point_then_refetched() -> None:
    provider = Counting(4.0, refresh_factor=0.25)
    assert await provider.token() == "t1"
    assert await provider.token() == "t1"  # cached
    await asyncio.sleep(1.1)  # past 25 % of its life
    assert await provider.token() == "t2"
    assert (await provider.oauth_token()).expires_at is not None


async def test_concurrent_callers_share_one_fetch() -> None:
    provider = Counting(60.0)
    tokens = await asyncio.gather(*(provider.token() for _ in range(20)))
    assert set(tokens) == {"t1"} and provider.calls == 1


async def test_failed_refresh_keeps_the_valid_token_then_raises_once_expired() -> None:
    provider = Counting(2.0, refresh_factor=0.05)
    assert await provider.token() == "t1"
    provider.fail = True
    await asyncio.sleep(0.2)
    assert await provider.token() == "t1"  # refresh failed; t1 has ~1.8 s left
    assert provider.calls == 2
    await asyncio.sleep(2.0)
    provider.invalidate()
    with pytest.raises(RuntimeError, match="identity provider down"):
        await provider.token()


async def test_is_an_aiokafka_token_provider_and_gives_the_producer_its_expiry() -> None:
    """aiokafka's own clients accept it (isinstance, token() -> str); our producer's
    Security takes the expiry from oauth_token()."""
    provider = Counting(30.0)
    assert isinstance(provider, aiokafka.abc.AbstractTokenProvider)
    assert isinstance(await provider.token(), str)

    class Options:
        security_protocol = "SASL_PLAINTEXT"
        ssl_context = ssl_cafile = ssl_certfile = ssl_keyfile = ssl_password = None
        ssl_check_hostname = True
        sasl_mechanism = "OAUTHBEARER"
        sasl_plain_username = sasl_plain_password = None
        sasl_oauth_token_provider = provider

    _, expiry = await Security(Options()).new_mechanism()  # type: ignore[arg-type]
    assert expiry is not None and 25 < expiry - time.monotonic() <= 30


@pytest.fixture
def https_idp(tmp_path: Path) -> tuple[LocalIdP, ssl.SSLContext]:
    certs = make_server_certs(tmp_path / "idp", hosts=("127.0.0.1",))
    idp = LocalIdP({CLIENT: SECRET}, lifetime=120, certs=certs).start()
    context = ssl.create_default_context(cafile=str(certs.ca_file))
    yield idp, context  # type: ignore[misc]
    idp.stop()


async def test_oidc_client_credentials_over_https(
    https_idp: tuple[LocalIdP, ssl.SSLContext],
) -> None:
    idp, context = https_idp
    provider = OIDCClientCredentials(
        idp.token_url, CLIENT, SECRET, scope="kafka.write", ssl_context=context
    )
    before = time.time()
    token = await provider.oauth_token()
    assert token.token.count(".") == 2  # the JWT itself
    assert token.expires_at is not None and before + 115 <= token.expires_at <= time.time() + 120
    assert idp.issued[-1]["sub"] == CLIENT and idp.issued[-1]["scope"] == "kafka.write"
    assert idp.requests[-1]["basic"] and "client_secret" not in idp.requests[-1]["form"]
    assert SECRET not in repr(provider)


async def test_oidc_credentials_in_body(https_idp: tuple[LocalIdP, ssl.SSLContext]) -> None:
    idp, context = https_idp
    provider = OIDCClientCredentials(
        idp.token_url, CLIENT, SECRET, credentials_in_body=True, ssl_context=context
    )
    assert await provider.token()
    assert not idp.requests[-1]["basic"] and idp.requests[-1]["form"]["client_id"] == CLIENT


async def test_oidc_refused_client_is_a_clear_error(
    https_idp: tuple[LocalIdP, ssl.SSLContext],
) -> None:
    idp, context = https_idp
    provider = OIDCClientCredentials(idp.token_url, CLIENT, "wrong", ssl_context=context)
    with pytest.raises(TokenEndpointError, match=r"401.*invalid_client: bad client secret"):
        await provider.token()


async def test_oidc_untrusted_endpoint_certificate(
    https_idp: tuple[LocalIdP, ssl.SSLContext],
) -> None:
    idp, _ = https_idp
    provider = OIDCClientCredentials(idp.token_url, CLIENT, SECRET)  # system CAs only
    with pytest.raises(TokenEndpointError, match="certificate verify failed"):
        await provider.token()


async def test_oidc_chunked_answer_and_jwt_expiry_without_expires_in() -> None:
    """An endpoint answering with chunked transfer coding and no expires_in: the expiry
    comes from the JWT's exp claim."""
    exp = int(time.time()) + 300
    claims = base64.urlsafe_b64encode(b'{"exp": %d}' % exp).rstrip(b"=").decode()
    body = b'{"access_token": "h.%s.s", "token_type": "bearer"}' % claims.encode()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        half = len(body) // 2
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for part in (body[:half], body[half:]):
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        token = await OIDCClientCredentials(f"http://127.0.0.1:{port}/t", "c", "s").oauth_token()
    finally:
        server.close()
        await server.wait_closed()
    assert token.token == f"h.{claims}.s" and token.expires_at == exp


async def test_oidc_unreachable_endpoint() -> None:
    provider = OIDCClientCredentials("http://127.0.0.1:9/token", "c", "s", timeout=3)
    with pytest.raises(TokenEndpointError, match=r"127\.0\.0\.1:9"):
        await provider.token()


async def test_msk_iam_signs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("aws_msk_iam_sasl_signer")
    from aiokafka_lite.msk import MSKIAMTokenProvider

    for name, value in {
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEEXAMPLE00",
        "AWS_SECRET_ACCESS_KEY": "example-secret-key-not-real",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    provider = MSKIAMTokenProvider("eu-west-1")
    threads: list[threading.Thread] = []
    sign = provider._sign

    def spy() -> tuple[str, int]:
        threads.append(threading.current_thread())
        return sign()

    monkeypatch.setattr(provider, "_sign", spy)
    token = await provider.oauth_token()
    assert threads and threads[0] is not threading.main_thread()
    url = base64.urlsafe_b64decode(token.token + "=" * (-len(token.token) % 4)).decode()
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert parts.netloc == "kafka.eu-west-1.amazonaws.com"
    assert query["Action"] == ["kafka-cluster:Connect"]
    assert query["X-Amz-Credential"][0].startswith("AKIAEXAMPLEEXAMPLE00/")
    assert token.expires_at is not None and 800 < token.expires_at - time.time() <= 900
    assert await provider.token() == token.token  # cached until its refresh point


def test_msk_iam_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from aiokafka_lite import msk

    real = importlib.import_module

    def missing(name: str, *args: object) -> object:
        if name.startswith("aws_msk_iam_sasl_signer"):
            raise ImportError(name)
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(msk.importlib, "import_module", missing)
    with pytest.raises(ConfigError, match=r"aiokafka-lite\[msk\]"):
        msk.MSKIAMTokenProvider("us-east-1")


def test_oidc_over_plain_http_to_another_host_warns(caplog: pytest.LogCaptureFixture) -> None:
    OIDCClientCredentials("http://127.0.0.1:8080/token", "c", "s")
    assert not caplog.records  # loopback: a local test endpoint
    with pytest.raises(ValueError, match="http"):
        OIDCClientCredentials("ftp://idp.example.com/token", "c", "s")
    OIDCClientCredentials("http://idp.example.com/token", "c", "s")
    assert "unencrypted" in caplog.text and "idp.example.com" in caplog.text


async def test_msk_iam_without_any_aws_credentials_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A machine with no AWS credentials at all: AWS's signer fails on ``None.access_key``
    (an AttributeError from its internals); the provider names what is missing instead."""
    pytest.importorskip("aws_msk_iam_sasl_signer")
    from aiokafka_lite.msk import MSKIAMTokenProvider

    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in {
        "AWS_EC2_METADATA_DISABLED": "true",  # no instance metadata service to ask
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
    }.items():
        monkeypatch.setenv(name, value)
    provider = MSKIAMTokenProvider("eu-west-1")
    with pytest.raises(ConfigError, match="found no AWS credentials"):
        await provider.oauth_token()
