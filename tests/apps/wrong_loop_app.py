"""The mistake the wrong-loop check is for: a producer started at import time.

It is started in a loop made at import, and uvicorn then serves requests from its
own loop. Every send must fail at once with WrongEventLoopError (a 500 here), not hang.
"""

from __future__ import annotations

import asyncio
import os

from fastapi import FastAPI

from aiokafka_lite import AIOKafkaProducer

producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(
    bootstrap_servers=os.environ["KAFKA_BOOTSTRAP"]
)
import_loop = asyncio.new_event_loop()
import_loop.run_until_complete(producer.start())

app = FastAPI()


@app.post("/send")
async def send() -> dict[str, int]:
    md = await producer.send_and_wait(os.environ["KAFKA_TOPIC"], b"never")
    return {"offset": md.offset}
