"""One TCP connection to one broker: framing, correlation ids, in-flight requests.

An ``asyncio.Protocol`` rather than streams: ``data_received`` cuts frames and
completes the matching request's future directly, so a response costs no task
switch and no intermediate reader buffer. Kafka answers requests on a
connection in the order they were sent, so the in-flight requests form a FIFO
and each response must carry the correlation id at its head; anything else
means the stream is corrupt and the connection is closed, failing every
request on it with an error that says so.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import ssl
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from .._version import __version__
from ..errors import (
    AuthenticationFailedError,
    IncompatibleBrokerVersion,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    ProtocolError,
    UnsupportedVersionError,
)
from ..security import Security
from . import protocol
from .protocol.codec import DecodeError, Request, Response
from .protocol.frames import encode_client_id, request_header, response_body_offset, seal_frame
from .protocol.handshake import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from .sasl_authenticate import reauth_due, sasl_authenticate, sasl_handshake
from .tasks import Handle

__all__ = ["BrokerConnection"]

log = logging.getLogger("aiokafka_lite.connection")

_SIZE = struct.Struct(">i")
# Far above any sane response (a Produce response is tiny, Metadata for 10k
# topics a few MiB): a larger size prefix means the stream is garbage.
MAX_RESPONSE_SIZE = 100 * 1024 * 1024

# What one read of the socket takes at most (a longer answer is read in parts).
_READ_SIZE = 64 * 1024

UNSUPPORTED_VERSION = 35
_UNSUPPORTED = struct.pack(">h", UNSUPPORTED_VERSION)
_QUOTED = 40  # bytes of a server's non-Kafka answer quoted in the error


def _kind_of(answer: bytes) -> str:
    """A guess at what answered, from its first bytes (protocol facts, not proof)."""
    if answer.startswith(b"HTTP/"):
        return " (an HTTP server)"
    if answer[:1] in (b"\x15", b"\x16") and answer[1:2] == b"\x03":
        return " (a TLS record: the listener expects TLS, security_protocol 'SSL' or 'SASL_SSL')"
    return ""


R = TypeVar("R", bound=Response)
# Starts a background task in the owner's task group (BackgroundTasks.spawn).
Spawn = Callable[..., "Handle[Any]"]


@dataclass(slots=True, eq=False)
class _InFlight(Generic[R]):
    """A request sent and not answered yet, and its timeout (``timer``)."""

    correlation_id: int
    request_cls: type[Request]
    version: int
    future: asyncio.Future[Any]
    sent_at: float
    timer: asyncio.TimerHandle | None = None


class BrokerConnection(asyncio.BufferedProtocol):
    """A connection to ``host:port``; use :meth:`open` then :meth:`send`.

    Answers are read into one buffer the connection owns (``asyncio.BufferedProtocol``):
    a plain ``Protocol`` gets a new bytes object per read (asyncio allocates 256 KiB and
    shrinks it to what came), which glibc's allocator maps and unmaps afresh each time."""

    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        *,
        client_id: str | None,
        request_timeout_ms: float,
        on_lost: Callable[[BrokerConnection], None] | None = None,
        on_answered: Callable[[BrokerConnection], None] | None = None,
        security: Security | None = None,
        spawn: Spawn | None = None,
    ) -> None:
        self.node_id = node_id
        # Called after each answer (its request's slot is free again), whatever the request.
        self._on_answered = on_answered
        self._security = security
        # Where re-authentication runs: the owner's task group (a plain task without one).
        self._spawn = spawn
        # KIP-368 re-authentication: when due, new requests are held back until
        # the in-flight ones are answered, then SASL runs again on this
        # connection and the held requests go out after it.
        self._reauth_pending = False
        self._reauth_timer: asyncio.TimerHandle | None = None
        self._reauth_task: Handle[None] | asyncio.Task[None] | None = None
        self._held: collections.deque[tuple[Request, int, bool, asyncio.Future[Any]]] = (
            collections.deque()
        )
        self.authentications = 0
        self._on_lost = on_lost
        self.host = host
        self.port = port
        self._client_id = encode_client_id(client_id)
        self._request_timeout = request_timeout_ms / 1000
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray()  # an answer's first bytes, until the rest is read
        self._read_into = memoryview(bytearray(_READ_SIZE))  # (get_buffer)
        self._in_flight: collections.deque[_InFlight[Any]] = collections.deque()
        self._next_correlation = 0
        self._closed: BaseException | None = None
        self._lost = self._loop.create_future()
        self.api_versions: dict[int, tuple[int, int]] = {}
        #: The cluster's finalized features (ApiVersions v3+), e.g. ``transaction.version``.
        self.finalized_features: dict[str, int] = {}
        self.last_activity = time.monotonic()
        # Until the first Kafka response decodes, the server has not shown that it speaks
        # Kafka: an error then says so (an HTTP server, a TLS listener, a wrong port).
        self._spoke_kafka = False
        self._first_bytes = b""  # what it sent before that, to quote

    def __repr__(self) -> str:
        return f"<BrokerConnection node={self.node_id} {self.host}:{self.port}>"

    # -- lifecycle ----------------------------------------------------------------

    async def open(self, timeout: float) -> None:
        """Connect and negotiate API versions, within ``timeout`` seconds."""
        try:
            async with asyncio.timeout(timeout):
                await self._connect_transport()
                await self._negotiate_versions()
                if self._security is not None and self._security.sasl_mechanism is not None:
                    await self._authenticate()
        except ssl.SSLCertVerificationError as e:
            # As Java's SslAuthenticationException: a wrong CA or host name is not
            # fixed by retrying.
            self.close(KafkaConnectionError(str(e)))
            raise AuthenticationFailedError(
                f"TLS handshake with node {self.node_id} at {self.host}:{self.port} failed: "
                + _verify_failure(e, self.host)
            ) from None
        except TimeoutError:
            # A plaintext listener reads a TLS ClientHello as the start of a huge
            # frame and waits for the rest: the handshake just never completes.
            tls_hint = (
                " (the TLS handshake did not complete: does this listener speak TLS?)"
                if self._transport is None and self._security and self._security.ssl_context
                else ""
            )
            if self._transport is not None and not self._spoke_kafka:
                error = KafkaConnectionError(self._no_kafka_answer(f"{timeout:.1f}s"))
                self.close(error)
                raise error from None
            self.close(KafkaConnectionError(f"connecting to {self.host}:{self.port} timed out"))
            raise KafkaConnectionError(
                f"connecting to node {self.node_id} at {self.host}:{self.port} timed out "
                f"after {timeout:.1f}s{tls_hint}"
            ) from None
        except KafkaError as e:  # the broker's answers (ApiVersions, SASL) said no
            self.close(e)
            raise
        except Exception as e:
            # Not only OSError (refused, unreachable, gaierror, SSLError): a port
            # past 65535 raises OverflowError, a NUL in the host ValueError, a
            # host IDNA cannot encode UnicodeError. Each is a failed attempt.
            cause = str(e) if isinstance(e, OSError) else f"{type(e).__name__}: {e}"
            if not str(e):  # asyncio's ConnectionResetError() for a close in the handshake
                cause = type(e).__name__
            if (
                self._transport is None
                and self._security is not None
                and self._security.ssl_context is not None
                and isinstance(e, ConnectionResetError | ConnectionAbortedError | ssl.SSLError)
            ):
                # A plaintext Kafka listener reads the ClientHello as a frame too large
                # for it (socket.request.max.bytes) and closes the connection at once.
                cause += " (during the TLS handshake: does this listener speak TLS?)"
            error = KafkaConnectionError(
                f"cannot connect to node {self.node_id} at {self.host}:{self.port}: {cause}"
            )
            self.close(error)
            raise error from e
        except BaseException:
            self.close(KafkaConnectionError("cancelled"))
            raise

    def _not_kafka(self, what: str) -> str:
        return f"the server at {self.host}:{self.port} does not speak Kafka: {what}"

    def _no_kafka_answer(self, after: str) -> str:
        """Connected, yet no Kafka response came: quote what came instead, if anything."""
        if self._first_bytes:
            return self._not_kafka(
                f"it sent {self._first_bytes!r}, not a response to ApiVersions, then "
                f"nothing more for {after}"
            )
        return (
            f"connecting to node {self.node_id} at {self.host}:{self.port} timed out after "
            f"{after}: the TCP connection was established, but no answer to Kafka's first "
            "request (ApiVersions) came. Is a Kafka listener there? (A server that does not "
            "speak Kafka, such as an HTTP server, may wait for more.)"
        )

    async def _connect_transport(self) -> None:
        context = self._security.ssl_context if self._security is not None else None
        if context is None:
            await self._loop.create_connection(lambda: self, self.host, self.port)
        else:
            await self._loop.create_connection(
                lambda: self, self.host, self.port, ssl=context, server_hostname=self.host
            )

    async def _authenticate(self) -> None:
        """SaslHandshake v1, then SaslAuthenticate until the mechanism is done."""
        security = self._security
        assert security is not None
        name = security.sasl_mechanism
        assert name is not None
        started = time.monotonic()
        mechanism, token_expiry = await security.new_mechanism()
        where = f"node {self.node_id} ({self.host}:{self.port})"
        await sasl_handshake(self._send_now, self.version_for(SaslHandshakeRequest), name, where)
        version = self.version_for(SaslAuthenticateRequest)
        lifetime_ms = await sasl_authenticate(self._send_now, version, mechanism, where)
        self.authentications += 1
        log.debug("%s: authenticated with SASL %s", where, name)
        self._schedule_reauth(lifetime_ms, token_expiry, started)

    def _schedule_reauth(
        self, lifetime_ms: int, token_expiry: float | None, started: float
    ) -> None:
        now = time.monotonic()
        due = reauth_due(lifetime_ms, token_expiry, started, now)
        if due is not None:
            self._reauth_timer = self._loop.call_at(
                self._loop.time() + (due - now), self._on_reauth_due
            )

    def _on_reauth_due(self) -> None:
        # Only mark it: the next request starts re-authentication (as Java does),
        # so an idle connection calls no token provider and still closes as idle.
        self._reauth_timer = None
        if self._closed is None:
            self._reauth_pending = True
            self._maybe_start_reauth()

    def _maybe_start_reauth(self) -> None:
        if (
            self._reauth_pending
            and self._held
            and not self._in_flight
            and self._reauth_task is None
        ):
            name = f"aiokafka_lite.reauth.{self.node_id}"
            if self._spawn is not None:
                self._reauth_task = self._spawn(self._reauthenticate, name=name)
            else:
                self._reauth_task = self._loop.create_task(self._reauthenticate(), name=name)

    async def _reauthenticate(self) -> None:
        try:
            async with asyncio.timeout(self._request_timeout):
                await self._authenticate()
        except asyncio.CancelledError:
            return  # closed meanwhile; close() failed what was held
        except TimeoutError:
            self.close(KafkaTimeoutError(f"re-authentication with node {self.node_id} timed out"))
            return
        except Exception as e:
            log.error("node %s: re-authentication failed: %s", self.node_id, e)
            self.close(e)
            return
        finally:
            self._reauth_task = None
        self._reauth_pending = False
        held, self._held = self._held, collections.deque()
        for request, version, expect_response, fut in held:
            if not fut.done():
                self._write(request, version, expect_response, fut)

    async def _negotiate_versions(self) -> None:
        # Ask in the newest version we speak. A broker that does not know it
        # answers UNSUPPORTED_VERSION in v0 layout, listing its own range; then
        # ask again in v0, which every broker understands.
        resp = await self.send(
            ApiVersionsRequest(
                client_software_name="aiokafka-lite", client_software_version=__version__
            ),
            ApiVersionsRequest.MAX_VERSION,
        )
        if resp.error_code == UNSUPPORTED_VERSION:
            resp = await self.send(ApiVersionsRequest(), 0)
        if resp.error_code:
            raise ProtocolError(f"ApiVersions failed with error code {resp.error_code}")
        self.api_versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        self.finalized_features = {f.name: f.max_version_level for f in resp.finalized_features}

    def close(self, reason: BaseException | None = None) -> None:
        """Close now, failing every in-flight request with ``reason``."""
        if self._closed is None:
            self._closed = reason or KafkaConnectionError(
                f"connection to node {self.node_id} closed"
            )
        self._stop_reauth()
        if self._transport is not None:
            self._transport.abort()
        elif not self._lost.done():
            self._lost.set_result(None)  # never connected: nothing will report the loss
        self._fail_all(self._closed)

    def _stop_reauth(self) -> None:
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        if self._reauth_task is not None:
            self._reauth_task.cancel()

    @property
    def closed(self) -> bool:
        return self._closed is not None

    async def wait_closed(self) -> None:
        await asyncio.shield(self._lost)
        task = self._reauth_task
        if isinstance(task, Handle):
            await task.wait()
        elif task is not None:
            await asyncio.gather(task, return_exceptions=True)

    @property
    def in_flight(self) -> int:
        """Requests sent and not answered, and those held back for re-authentication."""
        return len(self._in_flight) + len(self._held)

    # -- versions -----------------------------------------------------------------

    def version_for(self, request_cls: type[Request]) -> int:
        """The newest version of ``request_cls`` that both sides speak."""
        supported = self.api_versions.get(request_cls.API_KEY)
        if supported is None:
            raise UnsupportedVersionError(
                f"broker node {self.node_id} does not support {request_cls.__name__}"
            )
        lo = max(supported[0], request_cls.MIN_VERSION)
        hi = min(supported[1], request_cls.MAX_VERSION)
        if lo > hi:
            raise IncompatibleBrokerVersion(
                f"{request_cls.__name__}: broker node {self.node_id} speaks v{supported[0]}-"
                f"v{supported[1]}, we speak v{request_cls.MIN_VERSION}-v{request_cls.MAX_VERSION}"
            )
        return hi

    # -- requests -----------------------------------------------------------------

    def send(
        self, request: Request, version: int | None = None, *, expect_response: bool = True
    ) -> asyncio.Future[Any]:
        """Write ``request`` and return a future for its decoded response.

        With ``expect_response=False`` (Produce with acks=0 gets no answer)
        the future is already resolved with ``None``.
        """
        if self._closed is not None or self._transport is None:
            raise KafkaConnectionError(f"connection to node {self.node_id} is not open") from (
                self._closed
            )
        if version is None:
            version = self.version_for(type(request))
        fut: asyncio.Future[Any] = self._loop.create_future()
        if self._reauth_pending:
            self._held.append((request, version, expect_response, fut))
            self._maybe_start_reauth()
        else:
            self._write(request, version, expect_response, fut)
        return fut

    def _send_now(self, request: Request, version: int) -> asyncio.Future[Any]:
        """Send at once, even while other requests are held (for the SASL exchange)."""
        if self._closed is not None or self._transport is None:
            raise KafkaConnectionError(f"connection to node {self.node_id} is not open") from (
                self._closed
            )
        fut: asyncio.Future[Any] = self._loop.create_future()
        self._write(request, version, True, fut)
        return fut

    def _write(
        self, request: Request, version: int, expect_response: bool, fut: asyncio.Future[Any]
    ) -> None:
        assert self._transport is not None
        cls = type(request)
        correlation_id = self._next_correlation
        self._next_correlation = (correlation_id + 1) & 0x7FFFFFFF
        frame = request_header(
            cls.API_KEY, version, correlation_id, self._client_id, version >= cls.FLEXIBLE_SINCE
        )
        protocol.encode(request, version, frame)
        self._transport.write(seal_frame(frame))
        self.last_activity = now = time.monotonic()
        if not expect_response:
            fut.set_result(None)
            return
        entry: _InFlight[Any] = _InFlight(correlation_id, cls, version, fut, now)
        entry.timer = self._loop.call_later(self._request_timeout, self._on_timeout, entry)
        self._in_flight.append(entry)

    def _on_timeout(self, entry: _InFlight[Any]) -> None:
        # As Java's NetworkClient does: a request that timed out leaves the
        # connection in an unknown state, so drop the connection entirely.
        if not self._spoke_kafka:
            after = f"{self._request_timeout * 1000:.0f} ms (request_timeout_ms)"
            self.close(KafkaConnectionError(self._no_kafka_answer(after)))
            return
        self.close(
            KafkaTimeoutError(
                f"{entry.request_cls.__name__} to node {self.node_id} got no response within "
                f"{self._request_timeout * 1000:.0f} ms (request_timeout_ms)"
            )
        )

    # -- asyncio.Protocol -------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Duck-typed: uvloop's TCP transports do not subclass asyncio.Transport.
        self._transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._closed is None and not self._spoke_kafka:
            # Not proof that it is no Kafka broker: one at its max.connections.per.ip
            # limit (or shutting down) closes a new connection just so.
            sent = f"sent {self._first_bytes!r} and " if self._first_bytes else ""
            tls = self._security is not None and self._security.ssl_context is not None
            self._closed = KafkaConnectionError(
                f"the server at {self.host}:{self.port} {sent}closed the connection without "
                "answering Kafka's first request (ApiVersions): it does not speak Kafka, "
                + ("" if tls else "it expects TLS (security_protocol 'SSL' or 'SASL_SSL'), ")
                + "or it is a Kafka broker refusing new connections (at its "
                "max.connections.per.ip limit, or shutting down)" + (f" ({exc})" if exc else "")
            )
        elif self._closed is None:
            self._closed = KafkaConnectionError(
                f"connection to node {self.node_id} ({self.host}:{self.port}) was lost"
                + (f": {exc}" if exc else "")
            )
        self._stop_reauth()
        self._fail_all(self._closed)
        if not self._lost.done():
            self._lost.set_result(None)
        if self._on_lost is not None:
            self._on_lost(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._read_into

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self._read_into[:nbytes])

    def data_received(self, data: bytes | memoryview) -> None:
        """Dispatch every whole answer in what was read, keeping the rest for the next
        read. Answers are parsed straight from ``data`` while no earlier bytes wait."""
        if not self._spoke_kafka and len(self._first_bytes) < _QUOTED:
            self._first_bytes += bytes(data[: _QUOTED - len(self._first_bytes)])
        buf = self._buf
        src: bytes | bytearray | memoryview = data
        if buf:
            buf += data
            src = buf
        pos = 0
        n = len(src)
        while n - pos >= 4:
            (size,) = _SIZE.unpack_from(src, pos)
            if size < 4 or size > MAX_RESPONSE_SIZE:
                self._corrupt(f"response frame size {size} is out of range")
                return
            end = pos + 4 + size
            if end > n:
                break
            frame = bytes(src[pos + 4 : end])
            pos = end
            if not self._dispatch(frame):
                return
        if src is buf:
            if pos:
                del buf[:pos]
        elif pos < n:
            buf += data[pos:]
        self.last_activity = time.monotonic()

    def _dispatch(self, frame: bytes) -> bool:
        if not self._in_flight:
            self._corrupt("received a response with no request in flight")
            return False
        entry = self._in_flight.popleft()
        if entry.timer is not None:
            entry.timer.cancel()
        try:
            correlation_id, body_at = response_body_offset(entry.request_cls, entry.version, frame)
            if correlation_id != entry.correlation_id:
                raise DecodeError(
                    f"correlation id {correlation_id} does not match the oldest request "
                    f"in flight ({entry.correlation_id})"
                )
            if (
                entry.request_cls is ApiVersionsRequest
                and frame[body_at : body_at + 2] == _UNSUPPORTED
            ):
                # The broker lacks the version we asked in. Kafka answers in v0
                # layout, others in their own (librdkafka's mock broker writes a
                # body no layout parses): only the error code matters, the
                # caller asks again in v0.
                response: Response = ApiVersionsResponse(error_code=UNSUPPORTED_VERSION)
            else:
                response, _ = protocol.decode(
                    entry.request_cls.RESPONSE, entry.version, frame, body_at
                )
        except (DecodeError, struct.error, IndexError) as e:
            self._in_flight.appendleft(entry)  # fail it with the others
            self._corrupt(
                f"cannot parse {entry.request_cls.RESPONSE.__name__} v{entry.version}: {e}"
            )
            return False
        self._spoke_kafka = True
        if not entry.future.done():
            entry.future.set_result(response)
        if self._on_answered is not None:
            self._on_answered(self)
        if self._reauth_pending and not self._in_flight:
            self._maybe_start_reauth()
        return True

    def _corrupt(self, what: str) -> None:
        if not self._spoke_kafka:
            # Its very first answer is not Kafka's: say what the server is, not how
            # the bytes failed to parse (an HTTP server's "HTTP/1.1 400" is a frame
            # size of 1.2 GB).
            quoted = self._first_bytes
            what = self._not_kafka(
                f"it answered Kafka's first request (ApiVersions) with {quoted!r}"
                + _kind_of(quoted)
            )
            log.info("%s; closing the connection", what)
            self.close(ProtocolError(what))
            return
        log.warning("node %s: %s; closing the connection", self.node_id, what)
        self.close(ProtocolError(f"node {self.node_id}: {what}"))

    def _fail_all(self, exc: BaseException) -> None:
        while self._in_flight:
            entry = self._in_flight.popleft()
            if entry.timer is not None:
                entry.timer.cancel()
            if not entry.future.done():
                entry.future.set_exception(exc)
        while self._held:
            fut = self._held.popleft()[3]
            if not fut.done():
                fut.set_exception(exc)
        self._buf.clear()


# OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH.
_NAME_MISMATCH = (62, 64)


def _verify_failure(e: ssl.SSLCertVerificationError, host: str) -> str:
    """What failed in the broker's certificate, and what to check."""
    reason = e.verify_message or str(e)
    if e.verify_code in _NAME_MISMATCH:
        return (
            f"certificate verify failed: {reason} (the broker's certificate does not name "
            f"{host!r}: connect with a name it holds)"
        )
    return (
        f"certificate verify failed: {reason} (is ssl_cafile, or ssl_context's CA, the "
        "one that signed the broker's certificate?)"
    )
