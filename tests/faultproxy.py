"""A loopback TCP proxy that can cut, refuse and black-hole connections, for fault tests.

Put it between the producer and a broker that advertises the proxy's port, and
every byte the producer exchanges with the broker passes through it. ``cut()``
aborts every open connection (mid-request or mid-response, whatever is in
flight); ``refusing = True`` closes new connections as soon as they are
accepted, which looks to a client like a broker that is down.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl


class FaultProxy:
    def __init__(
        self, target_host: str, target_port: int, *, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        # ssl_context: terminate TLS here (as a TLS load balancer in front of a
        # plaintext broker does) and forward the decrypted bytes.
        self._ssl = ssl_context
        self.target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.refusing = False
        # Forward requests but swallow the broker's answers: the broker acts on
        # a request whose response the client never sees.
        self.drop_responses = False
        self.connections = 0

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self, port: int = 0) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", port, ssl=self._ssl)
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.connections += 1
        pair = (writer, up_writer)
        self._pairs.add(pair)
        pumps = [
            asyncio.ensure_future(self._pump(reader, up_writer)),
            asyncio.ensure_future(self._pump(up_reader, writer, downstream=True)),
        ]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for task in pumps:
            task.cancel()
        self._close(pair)

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, downstream: bool = False
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                if downstream and self.drop_responses:
                    continue
                writer.write(data)
                await writer.drain()

    def _close(self, pair: tuple[asyncio.StreamWriter, asyncio.StreamWriter]) -> None:
        self._pairs.discard(pair)
        for w in pair:
            w.transport.abort()

    def cut(self) -> None:
        """Abort every open connection, in both directions."""
        for pair in list(self._pairs):
            self._close(pair)

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
