"""How much the blocking facade (aiokafka_lite.sync.Producer) costs over the async producer.

    python benchmarks/sync_facade.py [--count 200000] [--bootstrap-server host:port]

Sends ``count`` 100-byte records, keeps every future, flushes, and prints records/s
(wall clock) and the process's CPU time per record, for: the async producer, the
facade from one thread, and the facade from several threads at once. CPU per record
is the steadier figure on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from aiokafka_lite import AIOKafkaProducer, NewTopic, create_topics
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.sync import Producer

VALUE = b"x" * 100
CONFIG: dict[str, Any] = {"linger_ms": 5}


def measure(label: str, count: int, run: Callable[[], None]) -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{label:<28} {count / wall:>10,.0f} rec/s {cpu / count * 1e6:>8.1f} us CPU/record")


def run_async(bootstrap: str, topic: str, count: int) -> None:
    async def main() -> None:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, **CONFIG) as producer:
            await producer.partitions_for(topic)
            futures = [await producer.send(topic, VALUE) for _ in range(count)]
            await producer.flush()
            assert all(f.exception() is None for f in futures)

    asyncio.run(main())


def run_sync(producer: Producer[bytes, bytes], topic: str, count: int, threads: int) -> None:
    results: list[list[Future[Any]]] = [[] for _ in range(threads)]

    def work(i: int) -> None:
        results[i] = [producer.send(topic, VALUE) for _ in range(count // threads)]

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    producer.flush()
    assert all(f.exception() is None for futures in results for f in futures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--bootstrap-server")
    args = parser.parse_args()
    broker = None
    if args.bootstrap_server:
        bootstrap = args.bootstrap_server
    else:
        broker = EmbeddedBroker().start()
        bootstrap = broker.bootstrap_servers
    try:
        topic = f"sync-bench-{int(time.time())}"
        asyncio.run(create_topics(bootstrap, [NewTopic(topic, num_partitions=4)]))
        count = args.count
        measure("async producer", count, lambda: run_async(bootstrap, topic, count))
        with Producer(bootstrap_servers=bootstrap, **CONFIG) as producer:
            producer.partitions_for(topic)
            for threads in (1, 4, 16):
                measure(
                    f"sync.Producer, {threads} thread(s)",
                    count,
                    lambda threads=threads: run_sync(producer, topic, count, threads),
                )
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
