"""examples/aiohttp_app.py served by aiohttp's test server, driven by real HTTP requests.

Hundreds of requests are in flight at once; the records are read back with
confluent-kafka, including the fire-and-forget ones that only the cleanup context's
``stop()`` can have delivered.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from conftest import TopicFactory
from readers import read_all_confluent

from aiokafka_lite.errors import ProducerClosedError

REPO_ROOT = Path(__file__).resolve().parent.parent


def _load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "aiohttp_app", REPO_ROOT / "examples" / "aiohttp_app.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load_example()

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class InFlight:
    """Counts the requests the app is handling at once (to show hundreds overlapped)."""

    def __init__(self) -> None:
        self.now = self.peak = 0

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            return await handler(request)
        finally:
            self.now -= 1


async def test_aiohttp_app_hundreds_of_concurrent_requests(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(3)
    # linger_ms=2000: acknowledged requests park in the handler meanwhile, so that
    # hundreds overlap.
    app: web.Application = example.create_app(bootstrap, topic, linger_ms=2000)
    in_flight = InFlight()
    app.middlewares.append(in_flight.middleware)
    n_wait, n_nowait = 400, 400
    connector = aiohttp.TCPConnector(limit=n_wait + n_nowait)
    async with TestClient(TestServer(app), connector=connector) as client:

        async def post(path: str, i: int) -> tuple[int, dict[str, object]]:
            key = None if i % 5 == 0 else f"k{i % 37}"
            value = f"{path.rsplit('/', 1)[-1]}-{i}"
            async with client.post(path, json={"key": key, "value": value}) as resp:
                return resp.status, await resp.json()

        results = await asyncio.gather(
            *(post("/events", i) for i in range(n_wait)),
            *(post("/events/nowait", i) for i in range(n_nowait)),
        )
        bad = await client.post("/events", data=b"not json")
        assert bad.status == 400
    # Leaving the client shut the server down: the cleanup context stopped the
    # producer, and every fire-and-forget record was resolved.
    await asyncio.sleep(0)  # the futures' done callbacks
    assert not app[example.PENDING]
    with pytest.raises(ProducerClosedError):
        await app[example.PRODUCER].send(topic, b"late")
    waited, queued = results[:n_wait], results[n_wait:]
    assert [status for status, _ in waited] == [200] * n_wait, waited[0]
    assert [status for status, _ in queued] == [202] * n_nowait, queued[0]
    assert in_flight.peak >= 100, in_flight.peak
    records = read_all_confluent(bootstrap, topic, n_wait + n_nowait)
    assert sorted(r.value or b"" for r in records) == sorted(
        [b"events-%d" % i for i in range(n_wait)] + [b"nowait-%d" % i for i in range(n_nowait)]
    )
    by_position = {(r.partition, r.offset): r.value for r in records}
    for i, (_, body) in enumerate(waited):
        assert by_position[(body["partition"], body["offset"])] == b"events-%d" % i
