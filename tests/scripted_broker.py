"""A scripted Kafka broker: a loopback TCP server whose answers a test dictates.

The embedded broker (Tansu) always answers correctly, so it cannot show how the
client copes with a broker that answers in a layout we did not ask for, out of
order, with garbage, in pieces, late, or never. This one reads size-prefixed
request frames, parses the request header itself (int16 api_key, int16
api_version, int32 correlation_id, int16-length client_id, then a tagged-field
section for flexible versions), records every request, and hands it to a
per-test *script*: ``script(request) -> reply``.

A reply is performed in order and may be:

* ``None``: no answer (yet); keep reading requests.
* ``bytes``: written to the socket as they are, in one write (a whole response
  frame made by :func:`response_frame`, several frames joined, or garbage).
* :class:`Trickle`: bytes written ``chunk`` bytes at a time with a pause between.
* :data:`CLOSE`: close the socket (after whatever was written before it).
* :data:`HANG`: never answer again on this connection: later requests are
  read and dropped unseen, the socket stays open until the client closes it.
* a list or tuple of the above, performed one after the other.

The script may also be a coroutine function. ApiVersions requests are answered
by the broker itself from ``api_versions`` (the way a real broker does,
including the UNSUPPORTED_VERSION answer in v0 layout to a version it does not
speak) unless ``answer_api_versions=False``.

Responses are encoded with our own codec (``aiokafka_lite._internal.protocol.codec``);
the frame and header around them are written here, independently.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import socket
import struct
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from aiokafka_lite._internal.protocol.admin import CreateTopicsRequest
from aiokafka_lite._internal.protocol.codec import Request, Response, decode, encode, read_uvarint
from aiokafka_lite._internal.protocol.handshake import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from aiokafka_lite._internal.protocol.metadata import MetadataRequest
from aiokafka_lite._internal.protocol.produce import ProduceRequest
from aiokafka_lite._internal.protocol.transactions import InitProducerIdRequest

__all__ = [
    "CLOSE",
    "DEFAULT_API_VERSIONS",
    "HANG",
    "ReceivedRequest",
    "ScriptedBroker",
    "Trickle",
    "response_frame",
    "size_prefixed",
]

API_VERSIONS = 18
UNSUPPORTED_VERSION = 35

REQUEST_CLASSES: dict[int, type[Request]] = {
    cls.API_KEY: cls
    for cls in (
        ApiVersionsRequest,
        MetadataRequest,
        ProduceRequest,
        CreateTopicsRequest,
        InitProducerIdRequest,
        SaslHandshakeRequest,
        SaslAuthenticateRequest,
    )
}

# api_key -> (min, max) advertised by default: a current broker.
DEFAULT_API_VERSIONS: dict[int, tuple[int, int]] = {
    0: (0, 11),  # Produce
    3: (0, 12),  # Metadata
    18: (0, 4),  # ApiVersions
    19: (0, 7),  # CreateTopics
    22: (0, 5),  # InitProducerId
}


class _Close:
    def __repr__(self) -> str:
        return "CLOSE"


class _Hang:
    def __repr__(self) -> str:
        return "HANG"


CLOSE = _Close()
HANG = _Hang()


@dataclass(frozen=True)
class Trickle:
    """Write ``data`` ``chunk`` bytes at a time, pausing ``pause`` seconds in between."""

    data: bytes
    chunk: int = 1
    pause: float = 0.001


Reply: TypeAlias = "bytes | bytearray | Trickle | _Close | _Hang | Sequence[Reply] | None"
Script: TypeAlias = Callable[["ReceivedRequest"], "Reply | Awaitable[Reply]"]


@dataclass
class ReceivedRequest:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: bytes
    connection: int  # 0 for the first connection the broker accepted, 1 for the next...

    def decode(self) -> Any:
        """The request body decoded with our codec (for assertions on its content)."""
        msg, end = decode(REQUEST_CLASSES[self.api_key], self.api_version, self.body)
        assert end == len(self.body), f"{end} != {len(self.body)}: trailing bytes in request"
        return msg


def parse_request(payload: bytes, connection: int) -> ReceivedRequest:
    """Parse a request header (v1, or v2 for flexible versions) off a frame's payload."""
    api_key, api_version, correlation_id, client_len = struct.unpack_from(">hhih", payload, 0)
    pos = 10
    client_id = None
    if client_len >= 0:
        client_id = payload[pos : pos + client_len].decode()
        pos += client_len
    cls = REQUEST_CLASSES.get(api_key)
    if cls is not None and api_version >= cls.FLEXIBLE_SINCE:
        count, pos = read_uvarint(payload, pos)  # header tagged fields
        for _ in range(count):
            _, pos = read_uvarint(payload, pos)
            size, pos = read_uvarint(payload, pos)
            pos += size
    return ReceivedRequest(
        api_key, api_version, correlation_id, client_id, bytes(payload[pos:]), connection
    )


def size_prefixed(payload: bytes | bytearray) -> bytes:
    return struct.pack(">i", len(payload)) + bytes(payload)


def response_frame(
    correlation_id: int, response: Response, version: int, *, flexible_header: bool | None = None
) -> bytes:
    """A whole response frame: size, header (v0, or v1 when flexible), body.

    The header is flexible when ``version`` is, except for ApiVersions whose
    responses always use header v0.
    """
    if flexible_header is None:
        flexible_header = version >= response.FLEXIBLE_SINCE and response.API_KEY != API_VERSIONS
    header = struct.pack(">i", correlation_id) + (b"\x00" if flexible_header else b"")
    return size_prefixed(header + encode(response, version))


def answer(request: ReceivedRequest, response: Response, version: int | None = None) -> bytes:
    """``response`` framed as the answer to ``request`` (in its version by default)."""
    return response_frame(
        request.correlation_id, response, request.api_version if version is None else version
    )


@dataclass
class ScriptedBroker:
    script: Script | None = None
    api_versions: dict[int, tuple[int, int]] = field(
        default_factory=lambda: dict(DEFAULT_API_VERSIONS)
    )
    answer_api_versions: bool = True
    host: str = "127.0.0.1"

    requests: list[ReceivedRequest] = field(default_factory=list, init=False)
    connections: int = field(default=0, init=False)
    disconnects: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._disconnected = asyncio.Condition()

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def requests_for(self, api_key: int) -> list[ReceivedRequest]:
        return [r for r in self.requests if r.api_key == api_key]

    async def start(self) -> ScriptedBroker:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):
            w.transport.abort()
        # The handlers end on their own once their sockets are gone (cancelling
        # them instead would make asyncio's stream callback log the cancellation).
        if self._tasks:
            async with asyncio.timeout(5):
                await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> ScriptedBroker:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_disconnects(self, n: int = 1) -> None:
        """Wait until ``n`` client connections have ended (seen from the broker's side)."""
        async with self._disconnected:
            await self._disconnected.wait_for(lambda: self.disconnects >= n)

    # -- serving ----------------------------------------------------------------

    def _api_versions_reply(self, req: ReceivedRequest) -> bytes:
        lo, hi = self.api_versions[API_VERSIONS]
        if not lo <= req.api_version <= hi:
            # As a real broker: the error, in v0 layout, listing its ApiVersions range.
            resp = ApiVersionsResponse(
                error_code=UNSUPPORTED_VERSION,
                api_keys=[ApiVersion(api_key=API_VERSIONS, min_version=lo, max_version=hi)],
            )
            return response_frame(req.correlation_id, resp, 0)
        resp = ApiVersionsResponse(
            api_keys=[
                ApiVersion(api_key=k, min_version=v[0], max_version=v[1])
                for k, v in sorted(self.api_versions.items())
            ]
        )
        return answer(req, resp)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        index = self.connections
        self.connections += 1
        try:
            while True:
                try:
                    (size,) = struct.unpack(">i", await reader.readexactly(4))
                    payload = await reader.readexactly(size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                req = parse_request(payload, index)
                self.requests.append(req)
                if req.api_key == API_VERSIONS and self.answer_api_versions:
                    reply: Any = self._api_versions_reply(req)
                elif self.script is None:
                    reply = None
                else:
                    reply = self.script(req)
                    if inspect.isawaitable(reply):
                        reply = await reply
                if not await self._perform(reader, writer, reply):
                    return
        finally:
            self._writers.discard(writer)
            writer.transport.abort()
            self._tasks.discard(task)
            self.disconnects += 1
            async with self._disconnected:
                self._disconnected.notify_all()

    async def _perform(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: Any
    ) -> bool:
        """Carry out ``reply``; False when the connection is to be left alone from now on."""
        if reply is None:
            return True
        if isinstance(reply, bytes | bytearray):
            writer.write(bytes(reply))
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            return True
        if isinstance(reply, Trickle):
            for i in range(0, len(reply.data), reply.chunk):
                writer.write(reply.data[i : i + reply.chunk])
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                await asyncio.sleep(reply.pause)
            return True
        if reply is CLOSE:
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()
            return False
        if reply is HANG:
            # Never answer again; swallow whatever comes (as a stuck broker's
            # kernel would) so that the client's close is still seen.
            with contextlib.suppress(ConnectionError):
                while await reader.read(65536):
                    pass
            return False
        if isinstance(reply, list | tuple):
            for item in reply:
                if not await self._perform(reader, writer, item):
                    return False
            return True
        raise TypeError(f"unknown scripted reply {reply!r}")
