"""The SASL mechanisms against the RFCs' own examples, byte for byte.

RFC 7677 section 3 (SCRAM-SHA-256) and RFC 5802 section 5 (SCRAM-SHA-1) publish a
whole exchange for user "user", password "pencil"; given the same client nonce, our
client must produce exactly the published client-final-message and accept exactly the
published server signature. SHA-1 is implemented for this check only (Kafka offers
SCRAM-SHA-256 and -512). scramp, an independent SCRAM implementation, plays the server
for SHA-256 and SHA-512.
"""

from __future__ import annotations

import pytest
from scramp import ScramException, ScramMechanism

from aiokafka_lite._internal.sasl import OAuthBearer, Plain, SaslError, Scram

RFC7677 = {
    "client_nonce": "rOprNGfwEbeRWgbNEkqO",
    "client_first": b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "server_first": b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "client_final": b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "server_final": b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}
RFC5802 = {
    "client_nonce": "fyko+d2lbbFgONRv9qkxdawL",
    "client_first": b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "server_first": b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
    "client_final": b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,"
    b"p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    "server_final": b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
}


@pytest.mark.parametrize(
    ("mechanism", "rfc"), [("SCRAM-SHA-256", RFC7677), ("SCRAM-SHA-1", RFC5802)]
)
def test_scram_reproduces_the_rfc_exchange(mechanism: str, rfc: dict[str, bytes | str]) -> None:
    scram = Scram(mechanism, "user", "pencil", nonce=str(rfc["client_nonce"]))
    assert scram.start() == rfc["client_first"]
    assert scram.step(bytes(rfc["server_first"])) == rfc["client_final"]  # type: ignore[arg-type]
    assert scram.step(bytes(rfc["server_final"])) is None  # type: ignore[arg-type]


def test_scram_rejects_a_server_that_does_not_know_the_password() -> None:
    scram = Scram("SCRAM-SHA-256", "user", "not-pencil", nonce=str(RFC7677["client_nonce"]))
    scram.start()
    scram.step(bytes(RFC7677["server_first"]))  # type: ignore[arg-type]
    # The RFC's server signature was made with "pencil": it cannot match ours.
    with pytest.raises(SaslError, match="signature is wrong"):
        scram.step(bytes(RFC7677["server_final"]))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("server_first", "match"),
    [
        (b"r=someone-elses-nonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000", "below the minimum"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=***,i=4096", "base64"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,i=4096", "lacks"),
        (b"e=unknown-user", "server error: unknown-user"),
        (b"garbage", "malformed"),
    ],
)
def test_scram_rejects_bad_server_first_messages(server_first: bytes, match: str) -> None:
    scram = Scram("SCRAM-SHA-512", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    scram.start()
    with pytest.raises(SaslError, match=match):
        scram.step(server_first)


def test_scram_server_final_error_is_reported() -> None:
    scram = Scram("SCRAM-SHA-256", "user", "pencil", nonce=str(RFC7677["client_nonce"]))
    scram.start()
    scram.step(bytes(RFC7677["server_first"]))  # type: ignore[arg-type]
    with pytest.raises(SaslError, match="server error: invalid-proof"):
        scram.step(b"e=invalid-proof")


def test_scram_escapes_the_user_name_and_makes_fresh_nonces() -> None:
    # RFC 5802 section 5.1: "," and "=" in saslname become "=2C" and "=3D".
    a = Scram("SCRAM-SHA-256", "a,b=c", "pw")
    b = Scram("SCRAM-SHA-256", "a,b=c", "pw")
    first_a, first_b = a.start(), b.start()
    assert first_a.startswith(b"n,,n=a=2Cb=3Dc,r=")
    nonce = first_a.split(b",r=")[1]
    assert len(nonce) >= 24 and b"," not in nonce
    assert first_a != first_b  # a new random nonce per exchange


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_is_accepted_by_an_independent_server(mechanism: str) -> None:
    """scramp (another SCRAM implementation) accepts our proof, we accept its signature."""
    scheme = ScramMechanism(mechanism)
    server = scheme.make_server(lambda user: scheme.make_auth_info("pw", iteration_count=4096))
    scram = Scram(mechanism, "u", "pw")
    server.set_client_first(scram.start().decode())
    client_final = scram.step(server.get_server_first().encode())
    assert client_final is not None
    server.set_client_final(client_final.decode())  # raises if the proof is wrong
    assert scram.step(server.get_server_final().encode()) is None


def test_scram_wrong_password_is_refused_by_the_server() -> None:
    scheme = ScramMechanism("SCRAM-SHA-256")
    server = scheme.make_server(lambda user: scheme.make_auth_info("pw", iteration_count=4096))
    scram = Scram("SCRAM-SHA-256", "u", "wrong")
    server.set_client_first(scram.start().decode())
    client_final = scram.step(server.get_server_first().encode())
    assert client_final is not None
    with pytest.raises(ScramException):
        server.set_client_final(client_final.decode())
    with pytest.raises(SaslError, match="invalid-proof"):
        scram.step(server.get_server_final().encode())


def test_plain_is_rfc4616_message() -> None:
    # RFC 4616 section 4's example: "[NUL]tim[NUL]tanstaaftanstaaf".
    plain = Plain("tim", "tanstaaftanstaaf")
    assert plain.start() == b"\x00tim\x00tanstaaftanstaaf"
    assert plain.step(b"") is None
    assert Plain("tim", "pw", authzid="admin").start() == b"admin\x00tim\x00pw"
    with pytest.raises(ValueError, match="NUL"):
        Plain("t\x00m", "pw")


def test_oauthbearer_client_response_is_rfc7628() -> None:
    # RFC 7628 section 3.1: gs2-header kvsep *kvpair kvsep, kvsep = %x01.
    bearer = OAuthBearer("vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==")
    assert (
        bearer.start() == b"n,,\x01auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==\x01\x01"
    )
    assert bearer.step(b"") is None  # success: the server has nothing to add
    with_ext = OAuthBearer("tok", {"traceId": "123"}, authzid="user@example.com")
    assert with_ext.start() == b"n,a=user@example.com,\x01auth=Bearer tok\x01traceId=123\x01\x01"


def test_oauthbearer_answers_a_server_error_with_kvsep() -> None:
    """RFC 7628 section 3.2.3: on an error challenge the client sends a lone %x01."""
    bearer = OAuthBearer("expired")
    bearer.start()
    error = b'{"status":"invalid_token"}'
    assert bearer.step(error) == b"\x01"
    assert bearer.server_error == error.decode()
    with pytest.raises(SaslError):
        bearer.step(error)


def test_mechanism_reprs_hide_credentials() -> None:
    for mech in (
        Plain("u", "hunter2"),
        Scram("SCRAM-SHA-256", "u", "hunter2"),
        OAuthBearer("hunter2"),
    ):
        assert "hunter2" not in repr(mech)
        assert "hunter2" not in str(vars(mech).keys())
