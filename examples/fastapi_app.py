"""A FastAPI app producing to Kafka: one producer per process, started in the lifespan.

    pip install aiokafka-lite fastapi uvicorn
    KAFKA_BOOTSTRAP=127.0.0.1:9092 KAFKA_TOPIC=events uvicorn examples.fastapi_app:app

    curl -X POST localhost:8000/events -H 'content-type: application/json' \\
         -d '{"key": "user-1", "value": "signed up"}'

``POST /events`` waits for the broker's acknowledgement and answers with the record's
partition and offset; ``POST /events/nowait`` answers 202 as soon as the record is
buffered (fire-and-forget: a failure is logged). On shutdown (Ctrl-C, SIGTERM) the
producer delivers what it still holds before the process exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request
from pydantic import BaseModel

from aiokafka_lite import AIOKafkaProducer, KafkaError, RecordMetadata

log = logging.getLogger("fastapi_app")

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "127.0.0.1:9092")
TOPIC = os.environ.get("KAFKA_TOPIC", "events")
LINGER_MS = float(os.environ.get("KAFKA_LINGER_MS", "5"))

KafkaProducer = AIOKafkaProducer[bytes, bytes]


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Created and started here, in the server's own event loop: a producer
    # belongs to the loop that starts it (not to import time, not to another loop).
    producer: KafkaProducer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=LINGER_MS)
    await producer.start()
    app.state.producer = producer
    app.state.pending = set()
    try:
        yield
    finally:
        # Delivers every buffered record (fire-and-forget ones too), then closes.
        await producer.stop()
        log.info("producer stopped; %d fire-and-forget records unresolved", len(app.state.pending))


app = FastAPI(lifespan=lifespan)


def get_producer(request: Request) -> KafkaProducer:
    producer: KafkaProducer = request.app.state.producer
    return producer


Producer = Annotated[KafkaProducer, Depends(get_producer)]


class Event(BaseModel):
    key: str | None = None
    value: str


class Delivered(BaseModel):
    partition: int
    offset: int


def _encode(event: Event) -> tuple[bytes | None, bytes]:
    return (None if event.key is None else event.key.encode()), event.value.encode()


@app.post("/events")
async def send_event(event: Event, producer: Producer) -> Delivered:
    """Produce one record and wait until the broker has it."""
    key, value = _encode(event)
    try:
        md = await producer.send_and_wait(TOPIC, value, key=key)
    except KafkaError as e:
        raise HTTPException(status_code=503, detail=f"not delivered: {e}") from e
    return Delivered(partition=md.partition, offset=md.offset)


@app.post("/events/nowait", status_code=202)
async def send_event_nowait(event: Event, producer: Producer, request: Request) -> dict[str, str]:
    """Buffer one record and answer at once; the delivery is checked in the background."""
    key, value = _encode(event)
    try:
        fut = await producer.send(TOPIC, value, key=key)
    except KafkaError as e:  # buffer full for max_block_ms, record too large, ...
        raise HTTPException(status_code=503, detail=f"not accepted: {e}") from e
    pending: set[asyncio.Future[RecordMetadata]] = request.app.state.pending
    pending.add(fut)
    fut.add_done_callback(pending.discard)
    fut.add_done_callback(_log_failure)
    return {"status": "queued"}


def _log_failure(fut: asyncio.Future[RecordMetadata]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("a fire-and-forget record was not delivered: %r", fut.exception())


@app.get("/health")
async def health(producer: Producer) -> dict[str, object]:
    return {"ok": True, "metrics": producer.metrics()}
