"""SASL mechanisms as pure, I/O-free state machines.

Each mechanism turns the server's messages into the client's next message;
:mod:`aiokafka_lite._internal.connection` carries them in SaslAuthenticate requests.
The exchange is::

    auth = Scram("SCRAM-SHA-256", "user", "pencil")
    message = auth.start()            # the client's first message
    while message is not None:
        reply = <send message, read the server's answer>
        message = auth.step(reply)   # next message, or None when done

``step`` raises :class:`SaslError` when the server's message is malformed or
fails verification (SCRAM checks the server's signature: a server that does
not know the password cannot complete the exchange).

Implemented from the RFCs: PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802,
RFC 7677; SHA-1 too, for RFC 5802's test vector only) and OAUTHBEARER
(RFC 7628). No SASLprep: names and passwords are sent as UTF-8 as given, as
Kafka's Java client does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from abc import ABC, abstractmethod
from collections.abc import Mapping

__all__ = [
    "MECHANISMS",
    "OAuthBearer",
    "Plain",
    "SaslError",
    "SaslMechanism",
    "Scram",
]

#: Mechanism names accepted by ``sasl_mechanism``.
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

_SCRAM_HASHES = {"SCRAM-SHA-1": "sha1", "SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# As Kafka's broker and Java client: fewer iterations make the stored key cheap to attack.
_MIN_ITERATIONS = 4096


class SaslError(Exception):
    """The server's SASL message is malformed, reports an error or fails verification."""


class SaslMechanism(ABC):
    """One authentication exchange; make a new instance per (re-)authentication."""

    name: str

    @abstractmethod
    def start(self) -> bytes:
        """The client's first message."""

    @abstractmethod
    def step(self, server_message: bytes) -> bytes | None:
        """The client's answer to ``server_message``, or None once authenticated."""

    def __repr__(self) -> str:  # never the credentials
        return f"<{type(self).__name__} {self.name}>"


class Plain(SaslMechanism):
    """RFC 4616: one message, ``authzid NUL authcid NUL passwd``; the server says nothing."""

    name = "PLAIN"

    def __init__(self, username: str, password: str, authzid: str = "") -> None:
        for what, value in (("username", username), ("password", password)):
            if "\0" in value:
                raise ValueError(f"SASL PLAIN {what} must not contain NUL")
        self._message = b"\0".join(s.encode() for s in (authzid, username, password))

    def start(self) -> bytes:
        return self._message

    def step(self, server_message: bytes) -> bytes | None:
        if server_message:
            raise SaslError("SASL PLAIN: the server sent data, but PLAIN has no server message")
        return None


class Scram(SaslMechanism):
    """RFC 5802 SCRAM without channel binding (GS2 header ``n,,``)."""

    def __init__(
        self, mechanism: str, username: str, password: str, *, nonce: str | None = None
    ) -> None:
        if mechanism not in _SCRAM_HASHES:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
        self.name = mechanism
        self._hash = _SCRAM_HASHES[mechanism]
        self._password = password.encode()
        # Printable, no comma (RFC 5802 "printable"); the nonce parameter is for test vectors.
        self._nonce = nonce if nonce is not None else secrets.token_urlsafe(24)
        self._first_bare = f"n={_saslname(username)},r={self._nonce}"
        self._server_signature: bytes | None = None
        self._done = False

    def start(self) -> bytes:
        return b"n,," + self._first_bare.encode()

    def step(self, server_message: bytes) -> bytes | None:
        if self._done:
            raise SaslError(f"{self.name}: unexpected server message after the exchange ended")
        if self._server_signature is None:
            return self._client_final(_decode(server_message, self.name))
        self._verify_server_final(_decode(server_message, self.name))
        self._done = True
        return None

    def _client_final(self, server_first: str) -> bytes:
        attrs = _attributes(server_first, self.name)
        if "e" in attrs:
            raise SaslError(f"{self.name}: server error: {attrs['e']}")
        nonce, salt_b64, iterations = attrs.get("r"), attrs.get("s"), attrs.get("i")
        if nonce is None or salt_b64 is None or iterations is None:
            raise SaslError(f"{self.name}: server-first-message lacks r, s or i")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslError(f"{self.name}: server nonce does not extend the client nonce")
        if not iterations.isdigit() or int(iterations) < _MIN_ITERATIONS:
            raise SaslError(
                f"{self.name}: iteration count {iterations!r} is below the minimum "
                f"{_MIN_ITERATIONS}"
            )
        try:
            salt = base64.b64decode(salt_b64, validate=True)
        except ValueError:
            raise SaslError(f"{self.name}: salt is not valid base64") from None
        salted = hashlib.pbkdf2_hmac(self._hash, self._password, salt, int(iterations))
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"  # biws = base64("n,,")
        auth_message = f"{self._first_bare},{server_first},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify_server_final(self, server_final: str) -> None:
        attrs = _attributes(server_final, self.name)
        if "e" in attrs:
            raise SaslError(f"{self.name}: server error: {attrs['e']}")
        verifier = attrs.get("v")
        if verifier is None:
            raise SaslError(f"{self.name}: server-final-message lacks the verifier")
        try:
            signature = base64.b64decode(verifier, validate=True)
        except ValueError:
            raise SaslError(f"{self.name}: server signature is not valid base64") from None
        assert self._server_signature is not None
        if not hmac.compare_digest(signature, self._server_signature):
            raise SaslError(
                f"{self.name}: the server's signature is wrong (it does not know the password)"
            )

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self._hash).digest()


class OAuthBearer(SaslMechanism):
    """RFC 7628: GS2 header, then ``auth=Bearer <token>`` and extensions as kvpairs.

    On failure the server answers with a JSON error; the client then sends a
    single ``%x01`` and the server fails the exchange (RFC 7628 section 3.2.3).
    """

    name = "OAUTHBEARER"

    def __init__(
        self, token: str, extensions: Mapping[str, str] | None = None, authzid: str = ""
    ) -> None:
        if not token or any(c in token for c in "\x01 "):
            raise ValueError("OAUTHBEARER token must be non-empty, without spaces or %x01")
        pairs = {"auth": f"Bearer {token}"}
        for key, value in (extensions or {}).items():
            if key == "auth" or not key.isalpha() or "\x01" in value:
                raise ValueError(f"invalid OAUTHBEARER extension {key!r}")
            pairs[key] = value
        gs2 = f"n,{'a=' + _saslname(authzid) if authzid else ''},"
        self._message = (
            gs2 + "\x01" + "".join(f"{k}={v}\x01" for k, v in pairs.items()) + "\x01"
        ).encode()
        self.server_error: str | None = None
        self._answered = False

    def start(self) -> bytes:
        return self._message

    def step(self, server_message: bytes) -> bytes | None:
        if not server_message:
            return None  # success: Kafka's server answers with empty bytes
        if self._answered:
            raise SaslError("OAUTHBEARER: unexpected server message after the error reply")
        # The server's JSON error (status, scope, openid-configuration): keep it
        # for the error message, and answer with the dummy %x01 it expects.
        self.server_error = server_message.decode("utf-8", "replace")
        self._answered = True
        return b"\x01"


def _saslname(name: str) -> str:
    # RFC 5802 section 5.1: "=" and "," are escaped in user names.
    return name.replace("=", "=3D").replace(",", "=2C")


def _decode(message: bytes, mechanism: str) -> str:
    try:
        return message.decode()
    except UnicodeDecodeError:
        raise SaslError(f"{mechanism}: server message is not UTF-8") from None


def _attributes(message: str, mechanism: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise SaslError(f"{mechanism}: malformed server message attribute {part!r}")
        attrs.setdefault(key, value)
    return attrs
