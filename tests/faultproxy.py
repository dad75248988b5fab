"""A loopback TCP proxy that can cut, refuse, black-hole, delay and stall connections.

Put it between the producer and a broker that advertises the proxy's port, and
every byte the producer exchanges with the broker passes through it. ``cut()``
aborts every open connection (mid-request or mid-response, whatever is in
flight); ``refusing = True`` closes new connections as soon as they are
accepted, which looks to a client like a broker that is down;
``drop_responses = True`` forwards requests but swallows the answers;
``delay = s`` holds every chunk of answer bytes ``s`` seconds before passing it
on (a slow network or broker; requests still reach the broker at once);
``stall()`` holds answers back until ``resume()`` (a broker that has stopped
answering but keeps its connections open: past ``request_timeout_ms`` the
client gives up on the connection, and what was held for it is dropped with
it). ``target`` may be changed at any time: new connections go to the new
address (e.g. a replacement broker).
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
        # Seconds each chunk of answer bytes is held before it is passed on.
        self.delay = 0.0
        self._flowing = asyncio.Event()
        self._flowing.set()
        self.connections = 0

    @property
    def stalled(self) -> bool:
        return not self._flowing.is_set()

    def stall(self) -> None:
        """Hold every answer (requests still reach the broker) until :meth:`resume`."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

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
                if downstream:
                    if self.drop_responses:
                        continue
                    if self.delay > 0:
                        await asyncio.sleep(self.delay)
                    await self._flowing.wait()
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
