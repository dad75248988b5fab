"""W1 in one process, with the garbage collector's share: where W1's CPU goes.

W1 is ``fut = await send(...)`` per record (1,000 keys, 100-byte values, a new
4-partition topic, linger 5 ms, acks=all, idempotence off), then ``gather`` of every
future; ``python -m benchmarks.bench`` runs it in a worker process. This script runs the
same loop against an embedded Tansu broker it starts, and reports beside the rate and
the client CPU per record what the collector took (``gc.callbacks``: its time, its passes
per generation) and how many futures were done when ``gather`` began. ``--no-gc`` runs
with the collector off; ``--flush`` replaces ``gather`` with ``await flush()`` and reading
each future's result (no done callback per future); ``--client aiokafka`` runs aiokafka's
producer instead. Compare with ``benchmarks/asyncio_floor.py --lag``, the same shape
without Kafka.

    python benchmarks/w1_gc.py [--records 400000] [--repeat 3] [--no-gc] [--flush]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import os
import statistics
import time
import uuid
from typing import Any

from asyncio_floor import GcClock

from aiokafka_lite import NewTopic, create_topics
from aiokafka_lite.embedded import EmbeddedBroker


async def w1(bootstrap: str, args: argparse.Namespace) -> dict[str, Any]:
    topic = "w1-gc-" + uuid.uuid4().hex[:8]
    await create_topics(bootstrap, [NewTopic(topic, 4)])
    producer_cls = importlib.import_module(args.client).AIOKafkaProducer
    producer = producer_cls(
        bootstrap_servers=bootstrap, linger_ms=5, acks="all", enable_idempotence=False
    )
    await producer.start()
    try:
        await producer.partitions_for(topic)
        names = [b"key-%04d" % i for i in range(1000)]
        keys = [names[i % 1000] for i in range(args.records)]
        value = os.urandom(100)
        await (await producer.send(topic, value, keys[0]))  # connected, batches made
        send = producer.send
        futures: list[asyncio.Future[Any]] = []
        append = futures.append
        gc.collect()
        clock = GcClock()
        gc.callbacks.append(clock)
        if args.no_gc:
            gc.disable()
        cpu, start = time.process_time(), time.perf_counter()
        try:
            for key in keys:
                append(await send(topic, value, key))
            done_at_gather = sum(1 for f in futures if f.done())
            if args.flush:
                await producer.flush()
                results = [f.result() for f in futures]
            else:
                results = await asyncio.gather(*futures)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        finally:
            gc.enable()
            gc.callbacks.remove(clock)
        if len(results) != args.records or any(md.offset < 0 for md in results):
            raise SystemExit("not every record was delivered")
    finally:
        await producer.stop()
    return {
        "rate": args.records / wall,
        "cpu_us": cpu / args.records * 1e6,
        "gc_share": clock.seconds / wall,
        "passes": clock.passes,
        "done_at_gather": done_at_gather,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--client", default="aiokafka_lite", choices=["aiokafka_lite", "aiokafka"])
    parser.add_argument("--no-gc", action="store_true", help="with the garbage collector off")
    parser.add_argument("--flush", action="store_true", help="flush() and result(), no gather")
    args = parser.parse_args()
    runs = []
    with EmbeddedBroker() as broker:
        for _ in range(args.repeat):
            run = asyncio.run(w1(broker.bootstrap_servers, args))
            runs.append(run)
            print(
                f"{run['rate']:,.0f} records/s, {run['cpu_us']:.2f} CPU µs/record; "
                f"{run['done_at_gather']:,} done at gather; garbage collector "
                f"{run['gc_share']:.0%} of the run, passes {run['passes']}"
            )
    print(
        f"median of {args.repeat} ({args.client}): "
        f"{statistics.median(r['rate'] for r in runs):,.0f} records/s, "
        f"{statistics.median(r['cpu_us'] for r in runs):.2f} CPU µs/record, garbage collector "
        f"{statistics.median(r['gc_share'] for r in runs):.0%} of the run"
    )


if __name__ == "__main__":
    main()
