"""Consume-transform-produce, exactly once: read, transform, write and commit offsets atomically.

    pip install -e ".[dev]"            # the consumer side is aiokafka's
    python examples/transactions.py    # starts its own Tansu broker

Each poll's output records and the consumer group's new offsets are committed in
one transaction: either both become visible or neither does, so a crash between
them can neither lose nor duplicate output.
"""

from __future__ import annotations

import argparse
import asyncio

from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped]

from aiokafka_lite import AIOKafkaProducer, NewTopic, TopicPartition, create_topics
from aiokafka_lite.embedded import EmbeddedBroker

SOURCE, SINK, GROUP = "words", "shouted", "shouter"


async def run(bootstrap: str, count: int) -> None:
    await create_topics(bootstrap, [NewTopic(SOURCE, 1), NewTopic(SINK, 1)])
    plain: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(bootstrap_servers=bootstrap)
    async with plain:
        for i in range(count):
            await plain.send(SOURCE, b"word %d" % i)
    consumer = AIOKafkaConsumer(
        SOURCE,
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        enable_auto_commit=False,  # offsets are committed by the transaction
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id="shouter-1"
    )
    await consumer.start()
    await producer.start()
    done = 0
    try:
        while done < count:
            polled = await consumer.getmany(timeout_ms=1000)
            if not polled:
                continue
            async with producer.transaction():
                offsets = {}
                for tp, records in polled.items():
                    for record in records:
                        await producer.send(SINK, record.value.upper(), key=record.key)
                    offsets[TopicPartition(tp.topic, tp.partition)] = records[-1].offset + 1
                    done += len(records)
                await producer.send_offsets_to_transaction(offsets, GROUP)
            print(f"committed {done} record(s) and offsets {dict(offsets)}")
    finally:
        await producer.stop()
        await consumer.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", help="use this cluster instead of an embedded broker")
    parser.add_argument("--count", type=int, default=100)
    args = parser.parse_args()
    if args.bootstrap_server:
        asyncio.run(run(args.bootstrap_server, args.count))
        return
    with EmbeddedBroker() as broker:
        asyncio.run(run(broker.bootstrap_servers, args.count))


if __name__ == "__main__":
    main()
