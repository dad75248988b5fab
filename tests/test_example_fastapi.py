"""examples/fastapi_app.py run as a user runs it: uvicorn in its own process, real HTTP.

Hundreds of concurrent requests go through httpx; the records are then read back with
confluent-kafka, and the server must shut down cleanly (exit 0) on SIGINT and SIGTERM,
delivering its fire-and-forget records before it exits.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import TopicFactory
from readers import read_all_confluent

REPO_ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    def __init__(
        self, bootstrap: str, topic: str, log_path: Path, app: str = "examples.fastapi_app:app"
    ) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                app,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--backlog",
                "4096",
            ],
            cwd=REPO_ROOT,
            env={
                **os.environ,
                "PYTHONPATH": str(REPO_ROOT),
                "KAFKA_BOOTSTRAP": bootstrap,
                "KAFKA_TOPIC": topic,
                # Long enough that the last fire-and-forget records are still
                # buffered when the signal arrives: only the lifespan's stop() sends them.
                "KAFKA_LINGER_MS": "3000",
            },
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 30, path: str = "/health") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"uvicorn exited early:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}{path}", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError(f"uvicorn not ready within {timeout}s:\n{self.output()}")

    def stop(self, sig: signal.Signals, timeout: float = 30) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[type[Server]]:
    started: list[Server] = []

    class Tracked(Server):
        def __init__(
            self, bootstrap: str, topic: str, app: str = "examples.fastapi_app:app"
        ) -> None:
            super().__init__(bootstrap, topic, tmp_path / f"uvicorn-{len(started)}.log", app)
            started.append(self)

    yield Tracked  # type: ignore[misc]
    for server in started:
        server.kill()


async def _drive(url: str, n_wait: int, n_nowait: int) -> list[httpx.Response]:
    """All requests at once, up to 400 in flight.

    Spread over 16 clients of 25 connections: one httpx client with hundreds of
    connections spends seconds in its own pool bookkeeping (measured here: 200
    requests took 5 s through one httpx client, 0.5 s through aiohttp).
    """
    clients = [
        httpx.AsyncClient(base_url=url, limits=httpx.Limits(max_connections=25), timeout=60)
        for _ in range(16)
    ]
    try:
        requests = [
            clients[i % 16].post("/events", json={"key": f"k{i % 37}", "value": f"wait-{i}"})
            for i in range(n_wait)
        ] + [
            clients[i % 16].post(
                "/events/nowait", json={"key": f"k{i % 37}", "value": f"nowait-{i}"}
            )
            for i in range(n_nowait)
        ]
        return await asyncio.gather(*requests)
    finally:
        for client in clients:
            await client.aclose()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_fastapi_app_under_uvicorn(
    bootstrap: str, topic_factory: TopicFactory, server_factory: type[Server], sig: signal.Signals
) -> None:
    topic = topic_factory(3)
    server = server_factory(bootstrap, topic)  # type: ignore[call-arg]
    await asyncio.to_thread(server.wait_ready)
    n_wait, n_nowait = 400, 400
    responses = await _drive(server.url, n_wait, n_nowait)
    waited, queued = responses[:n_wait], responses[n_wait:]
    assert [r.status_code for r in waited] == [200] * n_wait, waited[0].text
    assert [r.status_code for r in queued] == [202] * n_nowait, queued[0].text
    positions = {(r.json()["partition"], r.json()["offset"]) for r in waited}
    assert len(positions) == n_wait  # every acknowledged record has its own place

    # Stop right after the fire-and-forget burst: the lifespan must deliver them first.
    code = await asyncio.to_thread(server.stop, sig)
    output = server.output()
    # After a graceful shutdown uvicorn re-raises the signal it caught, so that a
    # supervisor sees it: SIGINT ends in exit status 0, SIGTERM in "killed by SIGTERM".
    assert code in (0, -sig), output
    assert "Finished server process" in output, output
    assert "Traceback" not in output, output
    assert "Application shutdown complete" in output, output

    records = read_all_confluent(bootstrap, topic, n_wait + n_nowait)
    values = sorted(r.value or b"" for r in records)
    expected = sorted(
        [f"wait-{i}".encode() for i in range(n_wait)]
        + [f"nowait-{i}".encode() for i in range(n_nowait)]
    )
    assert values == expected  # nothing lost, nothing twice
    by_position = {(r.partition, r.offset): r.value for r in records}
    for response in waited:
        body = response.json()
        assert (body["partition"], body["offset"]) in by_position


async def test_producer_started_at_import_fails_clearly_under_uvicorn(
    bootstrap: str, topic_factory: TopicFactory, server_factory: type[Server]
) -> None:
    """The report this guards against: under uvicorn, a client started in another loop hung."""
    topic = topic_factory(1)
    server = server_factory(bootstrap, topic, "tests.apps.wrong_loop_app:app")  # type: ignore[call-arg]
    await asyncio.to_thread(server.wait_ready, path="/docs")
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        responses = await asyncio.gather(*(client.post("/send") for _ in range(20)))
    assert [r.status_code for r in responses] == [500] * 20  # at once: no timeout
    await asyncio.to_thread(server.stop, signal.SIGINT)
    output = server.output()
    assert "WrongEventLoopError" in output, output
    assert "this producer was started in event loop" in output, output
    assert read_all_confluent(bootstrap, topic, 1, timeout=3) == []
