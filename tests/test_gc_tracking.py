"""No cyclic-GC work per record: what a buffered or delivered record leaves behind is not
tracked by the garbage collector (whose passes visit every tracked object), in whichever
build is in use.

Tracked per record, the collector's passes grew with the records buffered and took about
a third of a ``send()`` loop's CPU. Here records are sent through a real producer to a real
broker and the tracked objects are counted (``gc.get_objects()``) while they are buffered
and after they are delivered. The one allowance: send()'s futures are ``asyncio.Future``
objects in both builds (what asyncio, anyio and the collector itself expect: a future
that can be part of a cycle must be tracked for the cycle to be collected), one tracked
object per record. The suite runs in both builds (CI: ``AIOKAFKA_LITE_NO_EXTENSIONS=1``),
so a build that silently makes anything else tracked again fails here.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from conftest import TopicFactory

from aiokafka_lite import AIOKafkaProducer

RECORDS = 5_000
# Objects a call may create once, whatever its record count (lists, batches, tasks...).
SLACK = 200


def producer_for(bootstrap: str) -> AIOKafkaProducer[Any, Any]:
    # Records stay buffered until flush(): nothing is sent while they are counted.
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        linger_ms=60_000,
        delivery_timeout_ms=120_000,
        batch_size=1 << 19,
        acks=1,
    )


def tracked() -> int:
    gc.collect()
    return len(gc.get_objects())


async def test_send_records_are_not_tracked(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(2)
    async with producer_for(bootstrap) as producer:
        await producer.partitions_for(topic)
        keys = [b"key-%d" % i for i in range(RECORDS)]
        value = b"v" * 20
        futures: list[asyncio.Future[Any]] = []
        futures.append(await producer.send(topic, value, keys[0]))  # the batches exist now
        before = tracked()
        for key in keys[1:]:
            futures.append(await producer.send(topic, value, key))
        grown = tracked() - before
        assert grown <= RECORDS + SLACK, f"{grown} tracked objects"  # the asyncio.Futures
        await producer.flush()
        results = [await f for f in futures]  # done already: awaiting adds no callback
        assert [md.offset for md in results if md.partition == 0] == list(
            range(sum(1 for md in results if md.partition == 0))
        )
        assert not any(gc.is_tracked(md) for md in results)
        # Awaited by gather: what the records are delivered as is still not tracked.
        more = [await producer.send(topic, value, key) for key in keys[:100]]
        gathering = asyncio.gather(*more)
        await producer.flush()
        delivered = await gathering
        assert not any(gc.is_tracked(md) for md in delivered)


async def test_send_many_records_are_not_tracked(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    async with producer_for(bootstrap) as producer:
        await producer.partitions_for(topic)
        pairs = [(b"key-%d" % i, b"v" * 20) for i in range(RECORDS)]
        before = tracked()
        fut = await producer.send_many(topic, pairs)
        grown = tracked() - before
        # Per run of records in a batch: one index list; per record: nothing tracked.
        assert grown <= SLACK, f"{grown} tracked objects for {RECORDS} records"
        await producer.flush()
        report = await fut
        assert len(report) == RECORDS
        assert not any(gc.is_tracked(report[i]) for i in range(0, RECORDS, 97))


async def test_batch_builder_records_are_not_tracked(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    async with producer_for(bootstrap) as producer:
        batch = producer.create_batch()
        before = tracked()
        appended = [batch.append(key=b"k%d" % i, value=b"v" * 20) for i in range(500)]
        grown = tracked() - before
        assert all(md is not None for md in appended)
        # The list above is the one tracked object; per record: nothing (the metadata
        # append returns is a gc=False struct, the bytes go into the batch's buffer).
        assert grown <= 5, f"{grown} tracked objects for 500 appended records"
        assert not any(gc.is_tracked(md) for md in appended)
        md = await (await producer.send_batch(batch, topic, partition=0))
        assert md.partition == 0
