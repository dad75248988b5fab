"""What a buffered record holds, measured with tracemalloc, against what buffer_memory counts.

Run from the repository root::

    python benchmarks/record_memory.py [--records 100000]

Records are buffered and held (linger_ms of 10 minutes, batches far larger than the
records sent, so none is sent) while Python's allocation tracer measures what they
keep alive; then they are flushed to an embedded broker. For each case it prints the
bytes per record the producer holds, the bytes per record it counts in
buffer_memory, and the difference. ``send()`` records are sent the way a caller that
keeps no future does (a done callback on each, as an ``await`` adds one too);
``send_many()`` records have no future of their own. The constants ``RECORD_MEMORY``
of aiokafka_lite/_internal/delivery.py and _cdelivery.pyx (the twin in use is what
``SEND_RECORD_MEMORY`` in aiokafka_lite/_internal/buffer_pool.py counts) and ``BULK_RECORD_MEMORY``
come from these figures; run it with and without ``AIOKAFKA_LITE_NO_EXTENSIONS=1``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tracemalloc
from typing import Any

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.embedded import EmbeddedBroker


def _retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


async def measure(bootstrap: str, records: int, value_size: int, keyed: bool, bulk: bool) -> str:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        linger_ms=600_000,
        delivery_timeout_ms=700_000,
        batch_size=1 << 30,
        buffer_memory=1 << 34,
        max_request_size=1 << 30,
    )
    await producer.start()
    topic = "record-memory"
    warm = await producer.send(topic, b"warm-up")  # the topic's metadata, outside the count
    await producer.flush()
    await warm
    value = b"v" * value_size
    keys = [b"key-%04d" % i for i in range(1000)]
    pairs = [(keys[i % 1000] if keyed else None, value) for i in range(records)]
    futures: list[asyncio.Future[Any]] = []
    gc.collect()
    counted_before = producer.metrics()["buffer-available-bytes"]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    if bulk:
        futures.append(await producer.send_many(topic, pairs))
    else:
        for key, v in pairs:
            fut = await producer.send(topic, v, key, partition=0)
            fut.add_done_callback(_retrieve)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before - 8 * len(futures)
    tracemalloc.stop()
    counted = counted_before - producer.metrics()["buffer-available-bytes"]
    await producer.flush()
    await asyncio.gather(*futures)
    await producer.stop()
    how = "send_many" if bulk else "send"
    kind = "keyed" if keyed else "keyless"
    return (
        f"{how:9} {value_size:>5} B {kind:7}  held {held / records:6.1f} B/record, "
        f"counted {counted / records:6.1f}, difference {(held - counted) / records:+6.1f}"
    )


async def main(records: int) -> None:
    with EmbeddedBroker() as broker:
        for value_size in (10, 100, 1000):
            for keyed in (False, True):
                for bulk in (False, True):
                    print(await measure(broker.bootstrap_servers, records, value_size, keyed, bulk))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    asyncio.run(main(parser.parse_args().records))
