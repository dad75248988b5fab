"""broadcaster's Kafka backend run unchanged on aiokafka_lite's producer (tests/test_frameworks.py).

``python broadcaster_app.py BOOTSTRAP TOPIC N [--late]``: ``patch_aiokafka()`` comes first,
then broadcaster's Kafka backend is imported (it does ``from aiokafka import
AIOKafkaProducer`` at import). With ``--late`` the order is the wrong one, the import
first (the test checks that this mistake is reported). Publishes N messages to TOPIC and
receives them through broadcaster's subscriber (aiokafka's consumer). Prints a JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys

import aiokafka_lite

BOOTSTRAP, TOPIC, N = sys.argv[1], sys.argv[2], int(sys.argv[3])
LATE = "--late" in sys.argv

if not LATE:
    aiokafka_lite.patch_aiokafka()

import broadcaster._backends.kafka  # noqa: E402
from broadcaster import Broadcast  # noqa: E402

if LATE:
    aiokafka_lite.patch_aiokafka()


async def main() -> None:
    received = []
    async with Broadcast(f"kafka://{BOOTSTRAP}") as broadcast:
        producer = broadcast._backend._producer
        async with broadcast.subscribe(channel=TOPIC) as subscriber:
            for i in range(N):
                await broadcast.publish(channel=TOPIC, message=f"message {i}")
            for _ in range(N):
                event = await asyncio.wait_for(subscriber.get(), 30)
                received.append(event.message)
    cls = type(producer)
    print(json.dumps({"class": f"{cls.__module__}.{cls.__qualname__}", "received": received}))


assert broadcaster._backends.kafka.AIOKafkaProducer is not None
asyncio.run(main())
