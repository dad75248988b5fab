"""A minimal HTTP/1.1 client over asyncio streams, for OAuth token endpoints.

Token endpoints need one thing: POST a form, read a JSON answer. This does that
with ``asyncio.open_connection`` (TLS verified for ``https``), one request per
connection (``Connection: close``), bodies by ``Content-Length``, chunked
transfer coding or end of stream. No redirects, proxies or cookies: a token
endpoint that needs them is better served by a provider built on a full HTTP
client (see docs/security.md). Keeping it here avoids a runtime dependency.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["HttpError", "HttpResponse", "post_form"]

#: Larger answers are refused: a token response is a few KiB.
MAX_BODY = 1 << 20
_MAX_HEADER_LINES = 200


class HttpError(Exception):
    """The endpoint could not be reached or did not answer with valid HTTP."""


@dataclass(frozen=True)
class HttpResponse:
    status: int
    reason: str
    headers: dict[str, str]  # names lower-cased; a repeated header keeps the last value
    body: bytes


async def post_form(
    url: str,
    body: bytes,
    *,
    headers: dict[str, str] | None = None,
    ssl_context: ssl.SSLContext | None = None,
    timeout: float = 10.0,
) -> HttpResponse:
    """POST ``body`` (``application/x-www-form-urlencoded``) to ``url``; the answer."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"expected an http:// or https:// URL, got {url!r}")
    host = parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    context = None
    if parts.scheme == "https":
        context = ssl_context if ssl_context is not None else ssl.create_default_context()
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host_header = host if parts.port is None else f"{host}:{parts.port}"
    if ":" in host and not host.startswith("["):  # an IPv6 literal
        host_header = f"[{host}]" if parts.port is None else f"[{host}]:{parts.port}"
    lines = [
        f"POST {target} HTTP/1.1",
        f"Host: {host_header}",
        "Content-Type: application/x-www-form-urlencoded",
        "Accept: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *(f"{k}: {v}" for k, v in (headers or {}).items()),
    ]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(
                host, port, ssl=context, server_hostname=host if context else None
            )
            try:
                writer.write(request)
                await writer.drain()
                return await _read_response(reader)
            finally:
                writer.close()
                # The answer is read; how the peer closes does not matter.
                with contextlib.suppress(OSError, ssl.SSLError):
                    await writer.wait_closed()
    except TimeoutError:
        raise HttpError(f"{url}: no answer within {timeout:g} s") from None
    except ssl.SSLCertVerificationError as e:
        raise HttpError(f"{url}: TLS certificate verify failed: {e.verify_message}") from None
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
        raise HttpError(f"{url}: {type(e).__name__}: {e}") from None


async def _read_response(reader: asyncio.StreamReader) -> HttpResponse:
    status_line = (await reader.readline()).decode("latin-1").rstrip("\r\n")
    version, _, rest = status_line.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise HttpError(f"not an HTTP response: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADER_LINES):
        line = (await reader.readline()).decode("latin-1").rstrip("\r\n")
        if not line:
            break
        name, sep, value = line.partition(":")
        if not sep:
            raise HttpError(f"malformed header line {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    else:
        raise HttpError("too many header lines")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if length > MAX_BODY:
            raise HttpError(f"response body of {length} bytes is too large")
        body = await reader.readexactly(length)
    else:
        body = await reader.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            raise HttpError("response body is too large")
    return HttpResponse(int(code), reason, headers, body)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size_line = (await reader.readline()).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise HttpError(f"malformed chunk size {size_line[:20]!r}") from None
        if size == 0:
            while (await reader.readline()).strip():  # trailers
                pass
            return bytes(body)
        if len(body) + size > MAX_BODY:
            raise HttpError("response body is too large")
        body += await reader.readexactly(size)
        await reader.readexactly(2)  # CRLF after the chunk
