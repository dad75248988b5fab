"""From the security options to what a connection needs: a TLS context and SASL mechanisms.

:func:`check_config` validates the options when the producer is built, so a
missing password or an unreadable certificate fails at construction with the
option's name, not at the first connection. :class:`Security` is what
:class:`~aiokafka_lite._internal.connection.BrokerConnection` uses: the ``SSLContext``
(or None) and a factory for a fresh :class:`~aiokafka_lite._internal.sasl.SaslMechanism`
per (re-)authentication, which calls the OAUTHBEARER token provider again.
"""

from __future__ import annotations

import inspect
import logging
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ._internal.sasl import OAuthBearer, Plain, SaslMechanism, Scram
from .errors import AuthenticationFailedError, ConfigError

log = logging.getLogger("aiokafka_lite.security")

__all__ = ["OAuthToken", "Security", "build_ssl_context", "check_config", "create_ssl_context"]

_SSL_FILES = ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password")
_SASL_CREDENTIALS = ("sasl_plain_username", "sasl_plain_password", "sasl_oauth_token_provider")


class SecurityOptions(Protocol):
    """The options this module reads (ProducerConfig has them; declared here so that
    the security module does not depend on the config module, which uses it)."""

    @property
    def security_protocol(self) -> str: ...
    @property
    def ssl_context(self) -> Any: ...
    @property
    def ssl_cafile(self) -> str | None: ...
    @property
    def ssl_certfile(self) -> str | None: ...
    @property
    def ssl_keyfile(self) -> str | None: ...
    @property
    def ssl_password(self) -> str | None: ...
    @property
    def ssl_check_hostname(self) -> bool: ...
    @property
    def sasl_mechanism(self) -> str: ...
    @property
    def sasl_plain_username(self) -> str | None: ...
    @property
    def sasl_plain_password(self) -> str | None: ...
    @property
    def sasl_oauth_token_provider(self) -> Any: ...


@dataclass(frozen=True, repr=False)
class OAuthToken:
    """A token with its expiry, for token providers that know it.

    ``expires_at`` is in seconds since the epoch (``time.time()``). The client
    re-authenticates before ``min(expires_at, broker's session lifetime)``.
    """

    token: str
    expires_at: float | None = None

    def __repr__(self) -> str:  # never the token itself
        return f"OAuthToken(token=[hidden], expires_at={self.expires_at!r})"


def check_config(cfg: SecurityOptions) -> None:
    """Raise :class:`ConfigError` naming the option if the security options do not fit."""
    uses_tls = cfg.security_protocol in ("SSL", "SASL_SSL")
    uses_sasl = cfg.security_protocol.startswith("SASL_")
    if not uses_tls:
        if cfg.ssl_context is not None:
            # aiokafka ignores it too; frameworks pass one along whatever the protocol.
            log.warning(
                "ssl_context is ignored: security_protocol=%r does not use TLS",
                cfg.security_protocol,
            )
        given = [n for n in _SSL_FILES if getattr(cfg, n) is not None]
        if given:
            raise ConfigError(
                f"{given[0]} is set but security_protocol={cfg.security_protocol!r} does not "
                "use TLS (use 'SSL' or 'SASL_SSL')"
            )
    else:
        build_ssl_context(cfg)  # loads the files now, so a bad path fails here
    if not uses_sasl:
        given = [n for n in _SASL_CREDENTIALS if getattr(cfg, n) is not None]
        if given:
            raise ConfigError(
                f"{given[0]} is set but security_protocol={cfg.security_protocol!r} does not "
                "use SASL (use 'SASL_PLAINTEXT' or 'SASL_SSL')"
            )
        return
    if cfg.sasl_mechanism == "OAUTHBEARER":
        provider = cfg.sasl_oauth_token_provider
        if provider is None:
            raise ConfigError("sasl_mechanism='OAUTHBEARER' needs sasl_oauth_token_provider")
        if not callable(getattr(provider, "token", None)) and not callable(provider):
            raise ConfigError(
                "sasl_oauth_token_provider: expected an object with a token() method or a "
                f"callable, got {type(provider).__name__}"
            )
    else:
        missing = [n for n in _SASL_CREDENTIALS[:2] if getattr(cfg, n) is None]
        if missing:
            raise ConfigError(
                f"sasl_mechanism={cfg.sasl_mechanism!r} needs {' and '.join(missing)}"
            )
        if "\0" in (cfg.sasl_plain_username or "") + (cfg.sasl_plain_password or ""):
            raise ConfigError("sasl_plain_username and sasl_plain_password must not contain NUL")


def build_ssl_context(cfg: SecurityOptions) -> ssl.SSLContext | None:
    """The context for TLS connections, or None for PLAINTEXT and SASL_PLAINTEXT."""
    if cfg.security_protocol not in ("SSL", "SASL_SSL"):
        return None
    if cfg.ssl_context is not None:
        if not isinstance(cfg.ssl_context, ssl.SSLContext):
            raise ConfigError(
                f"ssl_context: expected an ssl.SSLContext, got {type(cfg.ssl_context).__name__}"
            )
        given = [n for n in _SSL_FILES if getattr(cfg, n) is not None]
        if given:
            raise ConfigError(f"give either ssl_context or {given[0]}, not both")
        return cfg.ssl_context
    if cfg.ssl_keyfile is not None and cfg.ssl_certfile is None:
        raise ConfigError("ssl_keyfile is set but ssl_certfile is not")
    try:
        context = ssl.create_default_context(cafile=cfg.ssl_cafile)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"ssl_cafile: cannot load {cfg.ssl_cafile!r}: {e}") from None
    context.check_hostname = cfg.ssl_check_hostname
    if cfg.ssl_certfile is not None:
        try:
            context.load_cert_chain(cfg.ssl_certfile, cfg.ssl_keyfile, cfg.ssl_password)
        except (OSError, ssl.SSLError) as e:
            # The exception text names files, never the password.
            raise ConfigError(
                f"ssl_certfile/ssl_keyfile: cannot load {cfg.ssl_certfile!r}: {e}"
            ) from None
    return context


def create_ssl_context(
    *,
    cafile: str | None = None,
    capath: str | None = None,
    cadata: str | bytes | None = None,
    certfile: str | None = None,
    keyfile: str | None = None,
    password: str | None = None,
) -> ssl.SSLContext:
    """aiokafka's ``aiokafka.helpers.create_ssl_context``: verifying, TLS 1.2 or newer."""
    context = ssl.create_default_context(cafile=cafile, capath=capath, cadata=cadata)
    if certfile is not None:
        context.load_cert_chain(certfile, keyfile, password)
    return context


class Security:
    """What every connection of one producer needs for TLS and SASL."""

    def __init__(self, cfg: SecurityOptions) -> None:
        self.ssl_context = build_ssl_context(cfg)
        self.check_hostname = cfg.ssl_check_hostname
        self.sasl_mechanism: str | None = (
            cfg.sasl_mechanism if cfg.security_protocol.startswith("SASL_") else None
        )
        self._username = cfg.sasl_plain_username or ""
        self._password = cfg.sasl_plain_password or ""
        self._provider = cfg.sasl_oauth_token_provider

    def __repr__(self) -> str:
        return f"<Security tls={self.ssl_context is not None} sasl={self.sasl_mechanism}>"

    async def new_mechanism(self) -> tuple[SaslMechanism, float | None]:
        """A fresh exchange, and the token's expiry (``time.monotonic()``) if known."""
        mechanism = self.sasl_mechanism
        if mechanism == "PLAIN":
            return Plain(self._username, self._password), None
        if mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            return Scram(mechanism, self._username, self._password), None
        token, expires_at, extensions = await self._fetch_token()
        try:
            return OAuthBearer(token, extensions), expires_at
        except ValueError as e:
            raise AuthenticationFailedError(f"SASL OAUTHBEARER: {e}") from None

    async def _fetch_token(self) -> tuple[str, float | None, Mapping[str, str]]:
        provider = self._provider
        # oauth_token(): aiokafka_lite.oauth's providers, the token with its expiry
        # (their token() returns the str aiokafka expects).
        method = getattr(provider, "oauth_token", None)
        if not callable(method):
            method = getattr(provider, "token", None)
        call = method if callable(method) else provider
        try:
            result = call()
            if inspect.isawaitable(result):
                result = await result
            extensions = _extensions(provider)
            if inspect.isawaitable(extensions):
                extensions = await extensions
        except Exception as e:
            raise AuthenticationFailedError(
                f"SASL OAUTHBEARER: the token provider failed: {type(e).__name__}: {e}"
            ) from e
        token, expires_at = _token_and_expiry(result)
        return token, expires_at, dict(extensions or {})


def _extensions(provider: Any) -> Any:
    method = getattr(provider, "extensions", None)  # aiokafka's AbstractTokenProvider
    return method() if callable(method) else {}


def _token_and_expiry(result: Any) -> tuple[str, float | None]:
    if isinstance(result, str):
        return result, None
    token = getattr(result, "token", None)
    if not isinstance(token, str):
        raise AuthenticationFailedError(
            "SASL OAUTHBEARER: the token provider must return a str or an OAuthToken, "
            f"got {type(result).__name__}"
        )
    expires_at = getattr(result, "expires_at", None)
    if expires_at is None:
        return token, None
    # Convert the wall-clock expiry to the monotonic clock the connection schedules with.
    return token, time.monotonic() + (float(expires_at) - time.time())
