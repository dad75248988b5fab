"""SASL on one connection: SaslHandshake, then SaslAuthenticate until the mechanism is
done, and when to authenticate again before the session expires (KIP-368).

The mechanisms themselves are I/O-free (:mod:`aiokafka_lite._internal.sasl`); the connection
(:mod:`aiokafka_lite._internal.connection`) sends the requests these functions build, through
``send(request, version)``, before any other request may use it.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import AuthenticationFailedError, KafkaConnectionError
from .protocol.codec import Request
from .protocol.handshake import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from .sasl import OAuthBearer, SaslError, SaslMechanism

__all__ = ["MIN_REAUTH_INTERVAL", "reauth_due", "sasl_authenticate", "sasl_handshake"]

UNSUPPORTED_SASL_MECHANISM = 33
#: Apache Kafka refuses a re-authentication (ILLEGAL_SASL_STATE) that starts less than
#: a second after the previous one started (KafkaChannel's minimum re-auth interval).
MIN_REAUTH_INTERVAL = 1.0

Send = Callable[[Request, int], Awaitable[Any]]


async def sasl_handshake(send: Send, version: int, name: str, where: str) -> None:
    """SaslHandshake for mechanism ``name``; raises naming what the broker offers instead."""
    try:
        handshake: SaslHandshakeResponse = await send(SaslHandshakeRequest(mechanism=name), version)
    except KafkaConnectionError as e:
        # Some brokers (Tansu) close the connection instead of answering
        # UNSUPPORTED_SASL_MECHANISM. Still retriable: it may be a plain outage.
        raise KafkaConnectionError(
            f"{where} closed the connection during the SASL {name} handshake "
            f"(does it enable {name}?): {e}"
        ) from None
    if handshake.error_code == UNSUPPORTED_SASL_MECHANISM:
        raise AuthenticationFailedError(
            f"SASL {name}: broker {where} does not enable this mechanism; it "
            f"offers {', '.join(handshake.mechanisms) or 'none'}"
        )
    if handshake.error_code:
        raise AuthenticationFailedError(
            f"SASL {name}: SaslHandshake to {where} failed with error code {handshake.error_code}"
        )


async def sasl_authenticate(send: Send, version: int, mechanism: SaslMechanism, where: str) -> int:
    """Carry the mechanism's messages in SaslAuthenticate; the session lifetime in ms."""
    message: bytes | None = mechanism.start()
    lifetime_ms = 0
    while message is not None:
        resp: SaslAuthenticateResponse = await send(
            SaslAuthenticateRequest(auth_bytes=message), version
        )
        if resp.error_code:
            detail = resp.error_message or f"error code {resp.error_code}"
            server_error = isinstance(mechanism, OAuthBearer) and mechanism.server_error
            if server_error and server_error not in detail:  # Kafka sends it as both
                detail += f" ({server_error})"
            raise AuthenticationFailedError(
                f"SASL {mechanism.name} authentication with {where} failed: {detail}"
            )
        lifetime_ms = resp.session_lifetime_ms
        try:
            message = mechanism.step(resp.auth_bytes)
        except SaslError as e:
            # e names the mechanism and what the server said.
            raise AuthenticationFailedError(
                f"SASL authentication with {where} failed: {e}"
            ) from None
    return lifetime_ms


def reauth_due(
    lifetime_ms: int, token_expiry: float | None, started: float, now: float
) -> float | None:
    """When (monotonic) to authenticate again, or None for a session that does not expire.

    The broker closes a connection whose session expired (KIP-368), so start again at
    85-95% of the lifetime, as Java does; the jitter keeps the connections of many
    producers from re-authenticating at once. Never sooner than Kafka allows: a session
    that short cannot be kept.
    """
    if lifetime_ms <= 0:
        return None
    expires = now + lifetime_ms / 1000
    if token_expiry is not None:
        expires = min(expires, token_expiry)
    due = now + max(0.0, expires - now) * random.uniform(0.85, 0.95)
    return max(due, started + MIN_REAUTH_INTERVAL)
