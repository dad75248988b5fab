"""An aiohttp app producing to Kafka: the producer lives in a cleanup context.

    pip install aiokafka-lite aiohttp
    KAFKA_BOOTSTRAP=127.0.0.1:9092 KAFKA_TOPIC=events python examples/aiohttp_app.py

    curl -X POST localhost:8080/events -H 'content-type: application/json' \\
         -d '{"key": "user-1", "value": "signed up"}'

``POST /events`` waits for the broker's acknowledgement and answers with the record's
partition and offset; ``POST /events/nowait`` answers 202 once the record is buffered
(fire-and-forget: a failure is logged). The cleanup context starts the producer with
the app and stops it, delivering what it still holds, when the app shuts down.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from aiokafka_lite import AIOKafkaProducer, KafkaError, RecordMetadata

log = logging.getLogger("aiohttp_app")

KafkaProducer = AIOKafkaProducer[bytes, bytes]

BOOTSTRAP = web.AppKey("bootstrap", str)
TOPIC = web.AppKey("topic", str)
CONFIG = web.AppKey("producer_config", dict[str, Any])
PRODUCER = web.AppKey("producer", KafkaProducer)
PENDING = web.AppKey("pending", set[asyncio.Future[RecordMetadata]])


async def producer_context(app: web.Application) -> AsyncIterator[None]:
    # Runs in the app's event loop, which is the loop the producer then belongs to.
    producer: KafkaProducer = AIOKafkaProducer(bootstrap_servers=app[BOOTSTRAP], **app[CONFIG])
    await producer.start()
    app[PRODUCER] = producer
    app[PENDING] = set()
    yield
    await producer.stop()  # delivers buffered (fire-and-forget) records, then closes


async def _read_event(request: web.Request) -> tuple[bytes | None, bytes]:
    try:
        body = await request.json()
        key, value = body.get("key"), body["value"]
    except (ValueError, KeyError, AttributeError):
        raise web.HTTPBadRequest(text='expected JSON {"key": str | null, "value": str}') from None
    return (None if key is None else str(key).encode()), str(value).encode()


async def send_event(request: web.Request) -> web.Response:
    """Produce one record and wait until the broker has it."""
    key, value = await _read_event(request)
    try:
        md = await request.app[PRODUCER].send_and_wait(request.app[TOPIC], value, key=key)
    except KafkaError as e:
        raise web.HTTPServiceUnavailable(text=f"not delivered: {e}") from e
    return web.json_response({"partition": md.partition, "offset": md.offset})


async def send_event_nowait(request: web.Request) -> web.Response:
    """Buffer one record and answer at once; the delivery is checked in the background."""
    key, value = await _read_event(request)
    try:
        fut = await request.app[PRODUCER].send(request.app[TOPIC], value, key=key)
    except KafkaError as e:  # buffer full for max_block_ms, record too large, ...
        raise web.HTTPServiceUnavailable(text=f"not accepted: {e}") from e
    pending = request.app[PENDING]
    pending.add(fut)
    fut.add_done_callback(pending.discard)
    fut.add_done_callback(_log_failure)
    return web.json_response({"status": "queued"}, status=202)


def _log_failure(fut: asyncio.Future[RecordMetadata]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("a fire-and-forget record was not delivered: %r", fut.exception())


def create_app(
    bootstrap: str | None = None, topic: str | None = None, **producer_config: Any
) -> web.Application:
    """The app; ``producer_config`` is passed to the producer (default ``linger_ms=5``)."""
    app = web.Application()
    app[CONFIG] = {"linger_ms": 5, **producer_config}
    app[BOOTSTRAP] = bootstrap or os.environ.get("KAFKA_BOOTSTRAP", "127.0.0.1:9092")
    app[TOPIC] = topic or os.environ.get("KAFKA_TOPIC", "events")
    app.cleanup_ctx.append(producer_context)
    app.router.add_post("/events", send_event)
    app.router.add_post("/events/nowait", send_event_nowait)
    return app


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    web.run_app(create_app(), port=int(os.environ.get("PORT", "8080")))
