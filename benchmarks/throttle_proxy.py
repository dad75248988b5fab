"""A TCP proxy that lets client -> server bytes through at no more than ``--rate`` bytes/s.

Used by ``benchmarks.bench``'s W5 ("memory") to make the broker absorb less than a client can
produce: the broker advertises this proxy's port, so every request passes through it.
Run from the repository root::

    python benchmarks/throttle_proxy.py --target 127.0.0.1:9092 --rate 5e6 [--port 0]

It prints ``listening on HOST:PORT`` (one line on stdout) once it accepts connections.

* One token bucket (GCRA, burst ``--burst`` bytes) is shared by all connections, so the
  limit is on the total the broker receives, whatever number of connections a client uses.
* Backpressure is honest: a connection reads one chunk (at most ``--burst`` bytes), waits
  for its tokens, writes it upstream and waits for the write buffer to drain before it
  reads again, so bytes pile up in the *client's* socket and memory, never in the proxy.
* Server -> client bytes (the responses) are forwarded unthrottled.
* SIGUSR1 lifts the limit for good (benchmarks.bench sends it when a timed window is over, so
  that the records still buffered drain in a second instead of at the throttled rate).
  SIGINT / SIGTERM stop the proxy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Sequence

DEFAULT_BURST = 64 * 1024


class TokenBucket:
    """GCRA: a chunk of ``n`` bytes may pass once the virtual clock allows it."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst_s = burst / rate
        self._tat = 0.0  # theoretical arrival time of the next byte
        self.unthrottled = False
        self.throttled_bytes = 0

    async def take(self, n: int) -> None:
        if self.unthrottled:
            return
        self.throttled_bytes += n
        now = time.monotonic()
        self._tat = max(self._tat, now) + n / self.rate
        delay = self._tat - self.burst_s - now
        if delay > 0:
            await asyncio.sleep(delay)

    def unthrottle(self) -> None:
        self.unthrottled = True


async def pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    bucket: TokenBucket | None,
    chunk: int,
) -> None:
    try:
        while data := await reader.read(chunk):
            if bucket is not None:
                await bucket.take(len(data))
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


class Proxy:
    def __init__(self, target_host: str, target_port: int, bucket: TokenBucket, chunk: int):
        self.target_host = target_host
        self.target_port = target_port
        self.bucket = bucket
        self.chunk = chunk

    async def handle(self, down_reader: asyncio.StreamReader, down: asyncio.StreamWriter) -> None:
        try:
            up_reader, up = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError:
            down.close()
            return
        await asyncio.gather(
            pipe(down_reader, up, self.bucket, self.chunk),
            pipe(up_reader, down, None, self.chunk),
        )


def parse_target(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


async def serve(args: argparse.Namespace) -> None:
    bucket = TokenBucket(args.rate, args.burst)
    host, port = parse_target(args.target)
    proxy = Proxy(host, port, bucket, args.burst)
    server = await asyncio.start_server(proxy.handle, args.host, args.port)
    bound = server.sockets[0].getsockname()
    print(f"listening on {bound[0]}:{bound[1]}", flush=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if hasattr(signal, "SIGUSR1"):
        loop.add_signal_handler(signal.SIGUSR1, bucket.unthrottle)
    async with server:
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--rate", type=float, required=True, help="client->server bytes/s")
    parser.add_argument("--burst", type=int, default=DEFAULT_BURST, help="bucket size, bytes")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="listen port (0: any free port)")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
