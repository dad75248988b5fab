"""The server side of SCRAM (RFC 5802 section 3), for tests: checks a client's proof.

Written from the RFC's formulas, independently of ``aiokafka_lite.sasl``: the server
keeps only StoredKey and ServerKey, recovers ClientKey from the proof and compares its
hash with StoredKey, as a broker does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os


class ScramServer:
    def __init__(self, hash_name: str, users: dict[str, str], *, iterations: int = 4096) -> None:
        self.hash_name = hash_name
        self.iterations = iterations
        self.salt = os.urandom(16)
        self.keys: dict[str, tuple[bytes, bytes]] = {}
        for user, password in users.items():
            salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), self.salt, iterations)
            client_key = self._hmac(salted, b"Client Key")
            self.keys[user] = (
                hashlib.new(hash_name, client_key).digest(),
                self._hmac(salted, b"Server Key"),
            )
        self._first_bare = b""
        self._server_first = b""
        self._user = ""

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self.hash_name).digest()

    def first(self, client_first: bytes) -> bytes:
        """The server-first-message (or ``e=unknown-user``)."""
        assert client_first.startswith(b"n,,"), client_first
        self._first_bare = client_first[3:]
        attrs = dict(part.split(b"=", 1) for part in self._first_bare.split(b","))
        self._user = attrs[b"n"].decode().replace("=2C", ",").replace("=3D", "=")
        if self._user not in self.keys:
            return b"e=unknown-user"
        nonce = attrs[b"r"] + base64.b64encode(os.urandom(12))
        self._server_first = (
            b"r=" + nonce + b",s=" + base64.b64encode(self.salt) + b",i=%d" % self.iterations
        )
        return self._server_first

    def final(self, client_final: bytes) -> tuple[bool, bytes]:
        """(proof accepted, server-final-message)."""
        stored_key, server_key = self.keys[self._user]
        without_proof, _, proof_b64 = client_final.rpartition(b",p=")
        auth_message = self._first_bare + b"," + self._server_first + b"," + without_proof
        signature = self._hmac(stored_key, auth_message)
        proof = base64.b64decode(proof_b64)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if hashlib.new(self.hash_name, client_key).digest() != stored_key:
            return False, b"e=invalid-proof"
        return True, b"v=" + base64.b64encode(self._hmac(server_key, auth_message))
