"""Request and response headers, and the 4-byte size prefix around both.

Request header v1 is ``api_key:int16 api_version:int16 correlation_id:int32
client_id:nullable string``; v2 (used with flexible request versions) appends
an empty tagged-field section. The client id stays a classic (non-compact)
string in v2: the schema marks it ``"flexibleVersions": "none"``.

Response header v0 is the correlation id; v1 adds tagged fields. ApiVersions
responses always use v0 so that a client can parse the broker's answer before
it knows which versions the broker speaks.
"""

from __future__ import annotations

import struct

from .codec import Request, read_uvarint

_HEADER = struct.Struct(">ihhi")  # size prefix placeholder, api key, version, correlation id
_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")

API_VERSIONS_KEY = 18


def encode_client_id(client_id: str | None) -> bytes:
    """The client id as it appears in every request header (encoded once per connection)."""
    if client_id is None:
        return b"\xff\xff"
    data = client_id.encode()
    return struct.pack(">h", len(data)) + data


def request_header(
    api_key: int, version: int, correlation_id: int, client_id: bytes, flexible: bool
) -> bytearray:
    """The size placeholder and header of a request; the body is appended after it."""
    out = bytearray(_HEADER.pack(0, api_key, version, correlation_id))
    out += client_id
    if flexible:
        out.append(0)  # no tagged fields
    return out


def seal_frame(frame: bytearray) -> bytearray:
    """Write the size prefix once the body has been appended."""
    _SIZE.pack_into(frame, 0, len(frame) - 4)
    return frame


def response_body_offset(request_cls: type[Request], version: int, frame: bytes) -> tuple[int, int]:
    """Return the response's correlation id and where its body starts in ``frame``."""
    (correlation_id,) = _CORRELATION.unpack_from(frame, 0)
    pos = 4
    if version >= request_cls.FLEXIBLE_SINCE and request_cls.API_KEY != API_VERSIONS_KEY:
        count, pos = read_uvarint(frame, pos)
        for _ in range(count):  # header tags are not used by any API we speak: skip them
            _, pos = read_uvarint(frame, pos)
            size, pos = read_uvarint(frame, pos)
            pos += size
    return correlation_id, pos
