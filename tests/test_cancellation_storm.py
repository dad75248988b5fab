"""A storm of cancellations: 10,000 tasks on ``send_and_wait``, half cancelled at random.

Cancelled at any point (waiting for buffer memory, for the topic's metadata, or for
the delivery itself), a task must leave the producer whole: every record whose
``send_and_wait`` returned is in the log exactly once (read by confluent-kafka), no
record is there twice, the buffer's accounting comes back to zero, the producer
still sends, and ``stop()`` leaves no task and no pending future behind.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from conftest import TopicFactory
from invariants import Watch
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer, RecordMetadata

TASKS = 10_000


async def test_cancellation_storm(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(4)
    rng = random.Random(20261124)
    watch = Watch.begin()
    # A small buffer, so that many sends wait for memory when they are cancelled.
    producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(
        bootstrap_servers=bootstrap, buffer_memory=256 * 1024, linger_ms=2
    )
    await producer.start()

    async def one(i: int) -> RecordMetadata:
        await asyncio.sleep(rng.random() * 0.05)
        return await producer.send_and_wait(topic, b"v%05d" % i + b"." * 200, key=b"k%d" % i)

    tasks = [asyncio.create_task(one(i)) for i in range(TASKS)]
    for task in rng.sample(tasks, TASKS // 2):
        asyncio.get_running_loop().call_later(rng.random() * 0.5, task.cancel)
    async with asyncio.timeout(120):
        outcomes: list[Any] = await asyncio.gather(*tasks, return_exceptions=True)
    acked = {i for i, o in enumerate(outcomes) if isinstance(o, RecordMetadata)}
    cancelled = sum(isinstance(o, asyncio.CancelledError) for o in outcomes)
    others = [o for o in outcomes if not isinstance(o, RecordMetadata | asyncio.CancelledError)]
    assert not others, others[:3]  # every task was delivered or cancelled, nothing else
    assert 0 < cancelled < TASKS and acked

    await producer.flush()
    assert producer._acc.used == 0 and producer._acc.waiting_for_memory == 0
    final = await producer.send_and_wait(topic, b"after the storm")  # still sends
    assert final.offset >= 0
    await watch.stop_and_check(producer, stop_timeout=10)

    records = read_all_confluent(bootstrap, topic, expected=TASKS + 1, idle=3.0, at_least=1)
    values = [r.value for r in records]
    assert len(values) == len(set(values)), "a record was written twice"
    written = {int(v[1:6]) for v in values if v is not None and v.startswith(b"v")}
    assert acked <= written, f"{len(acked - written)} acknowledged records not in the log"
    assert b"after the storm" in values
