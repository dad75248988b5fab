"""A local OpenID Connect identity provider for the tests: a key set and a token endpoint.

:class:`LocalIdP` serves, on loopback, in a thread of its own (Kafka's broker fetches
the key set from its JVM while the test's event loop runs):

* ``GET /jwks``: the JSON Web Key Set with one RSA key (``kid`` ``test-key``);
* ``POST /token``: the client-credentials grant (RFC 6749 section 4.4): HTTP Basic or
  form credentials, answered with an RS256 JWT signed by that key (``sub`` is the
  client id, ``iss``, ``aud``, ``scope``, ``iat``, ``exp``) and ``expires_in``; a wrong
  secret gets 401 ``invalid_client``.

With ``certs``, both are served over TLS. Tokens are signed with ``cryptography``.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

from certs import ServerCerts
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

KID = "test-key"
AUDIENCE = "kafka"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int_bytes(n: int) -> bytes:
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


class LocalIdP:
    """Key set and token endpoint on 127.0.0.1; ``lifetime`` is each token's in seconds."""

    def __init__(
        self,
        clients: dict[str, str],
        *,
        lifetime: float = 3600.0,
        certs: ServerCerts | None = None,
    ) -> None:
        self.clients = dict(clients)
        self.lifetime = lifetime
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.issued: list[dict[str, Any]] = []  # the claims of every token issued
        self.requests: list[dict[str, Any]] = []  # every token request's form and auth
        self._certs = certs
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        if certs is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(certs.cert_file, certs.key_file)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="local-idp", daemon=True
        )

    @property
    def base_url(self) -> str:
        scheme = "https" if self._certs is not None else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    @property
    def issuer(self) -> str:
        return self.base_url

    @property
    def jwks_url(self) -> str:
        return f"{self.base_url}/jwks"

    @property
    def token_url(self) -> str:
        return f"{self.base_url}/token"

    def start(self) -> LocalIdP:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> LocalIdP:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def jwks(self) -> dict[str, Any]:
        public = self.key.public_key().public_numbers()
        return {
            "keys": [
                {
                    "kty": "RSA",
                    "kid": KID,
                    "use": "sig",
                    "alg": "RS256",
                    "n": b64url(_int_bytes(public.n)),
                    "e": b64url(_int_bytes(public.e)),
                }
            ]
        }

    def sign(self, claims: dict[str, Any]) -> str:
        """An RS256 JWT of ``claims``."""
        header = b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": KID}).encode())
        payload = b64url(json.dumps(claims).encode())
        signing_input = f"{header}.{payload}".encode()
        signature = self.key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{payload}.{b64url(signature)}"

    def _token(self, client_id: str, scope: str | None) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "sub": client_id,
            "iss": self.issuer,
            "aud": AUDIENCE,
            "iat": now,
            "exp": now + int(self.lifetime),
            "scope": scope or "kafka",
        }
        self.issued.append(claims)
        return {
            "access_token": self.sign(claims),
            "token_type": "Bearer",
            "expires_in": int(self.lifetime),
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        idp = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/jwks":
                    self._answer(200, idp.jwks())
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                client_id, secret = form.get("client_id"), form.get("client_secret")
                auth = self.headers.get("Authorization", "")
                if auth.startswith("Basic "):
                    pair = base64.b64decode(auth[6:]).decode()
                    user, _, password = pair.partition(":")
                    client_id, secret = unquote(user), unquote(password)
                idp.requests.append({"form": form, "basic": auth.startswith("Basic ")})
                if self.path != "/token":
                    self._answer(404, {"error": "not_found"})
                elif form.get("grant_type") != "client_credentials":
                    self._answer(400, {"error": "unsupported_grant_type"})
                elif client_id is None or idp.clients.get(client_id) != secret:
                    self._answer(
                        401,
                        {"error": "invalid_client", "error_description": "bad client secret"},
                    )
                else:
                    self._answer(200, idp._token(client_id, form.get("scope")))

        return Handler
