"""The idempotent producer (the default) against the real broker.

Faults come from tests/faultproxy.py between the producer and a Tansu broker
that advertises the proxy's address, so every request passes through it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest
from faultproxy import FaultProxy
from readers import read_all_confluent
from txnlog import read_log_async

from aiokafka_lite import AIOKafkaProducer, NewTopic, create_topics
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.errors import KafkaTimeoutError, PartitionAbortedError
from aiokafka_lite.protocol.messages import InitProducerIdRequest


@pytest.fixture
async def proxied() -> AsyncIterator[tuple[FaultProxy, str]]:
    """A fresh broker behind a fault proxy; yields (proxy, bootstrap through the proxy)."""
    proxy = await FaultProxy("127.0.0.1", 0).start()
    broker = EmbeddedBroker(advertised_port=proxy.port)
    await broker.astart()
    proxy.target = ("127.0.0.1", broker.port)
    try:
        yield proxy, f"127.0.0.1:{proxy.port}"
    finally:
        await proxy.stop()
        await broker.astop()


async def read_back(bootstrap: str, topic: str, expected: int) -> list[bytes | None]:
    # The proxy runs on this loop: read from a thread so it keeps pumping.
    records = await asyncio.to_thread(read_all_confluent, bootstrap, topic, expected, 10.0)
    return [r.value for r in records]


async def new_topic(bootstrap: str, partitions: int = 1) -> str:
    topic = f"idem-{random.randrange(1 << 30)}"
    await create_topics(bootstrap, [NewTopic(topic, partitions)])
    return topic


async def test_idempotence_is_on_by_default_and_gets_a_producer_id(bootstrap: str) -> None:
    topic = await new_topic(bootstrap)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        assert producer.config.enable_idempotence
        await producer.send_and_wait(topic, b"v")
        idem = producer._sender._idem
        assert idem is not None and idem.producer_id >= 0 and idem.epoch >= 0
        # What the broker stored (read by aiokafka's parser) carries that id and epoch.
        (batch,) = await read_log_async(bootstrap, topic, 1)
        assert (batch.producer_id, batch.producer_epoch) == (idem.producer_id, idem.epoch)
        assert not batch.transactional and batch.values == (b"v",)
        # Tansu answers InitProducerId v0-v2 with UNKNOWN_SERVER_ERROR (aiokafka
        # hard-codes v0); we negotiate the newest version both sides speak.
        conn = next(iter(producer._client._conns.values()))
        assert conn.version_for(InitProducerIdRequest) >= 3


async def test_lost_response_is_retried_without_a_duplicate(
    proxied: tuple[FaultProxy, str],
) -> None:
    proxy, bootstrap = proxied
    topic = await new_topic(bootstrap)
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, request_timeout_ms=1000, retry_backoff_ms=20
    ) as producer:
        await producer.send_and_wait(topic, b"first")
        proxy.drop_responses = True  # the broker writes the batch; we never hear so
        fut = await producer.send(topic, b"second")
        await asyncio.sleep(0.5)
        assert not fut.done()
        proxy.drop_responses = False  # the timed-out request is retried, same sequence
        md = await asyncio.wait_for(fut, timeout=15)
        assert producer.metrics()["record-retry-total"] >= 1
        third = await producer.send_and_wait(topic, b"third")
    values = await read_back(bootstrap, topic, expected=3)
    assert values == [b"first", b"second", b"third"], "a retried batch was written twice"
    # The broker answered the retry DUPLICATE_SEQUENCE_NUMBER (success); Kafka only
    # reports the original offset if it still has it cached, else -1 (Tansu: -1).
    assert md.offset in (1, -1)
    assert third.offset == 2


async def test_many_in_flight_per_partition_keep_order_across_cuts(
    proxied: tuple[FaultProxy, str],
) -> None:
    proxy, bootstrap = proxied
    topic = await new_topic(bootstrap, partitions=2)
    sent: list[bytes] = []
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        request_timeout_ms=1000,
        retry_backoff_ms=20,
        batch_size=512,
        linger_ms=1,
    ) as producer:
        futures = []
        for i in range(3000):
            value = b"%06d" % i
            sent.append(value)
            futures.append(await producer.send(topic, value, partition=i % 2))
            if i % 500 == 250:
                proxy.cut()  # whatever is in flight now is retried
                await asyncio.sleep(0.05)
        results = await asyncio.gather(*futures, return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, failures[:3]
    values = await read_back(bootstrap, topic, expected=len(sent))
    assert sorted(values) == sorted(sent), "records lost or duplicated"  # type: ignore[type-var]
    for p in range(2):
        in_partition = [v for v in values if v is not None and int(v) % 2 == p]
        assert in_partition == sorted(in_partition), "order within a partition broke"


@pytest.mark.parametrize("fail_partition", [False, True])
async def test_what_happens_behind_a_failed_record(
    proxied: tuple[FaultProxy, str], fail_partition: bool
) -> None:
    """A record expires while the broker is unreachable; a later one waits behind it.

    By default (as Java) the later record is still delivered; with
    fail_partition_on_error it fails too, so the partition has no gap.
    """
    proxy, bootstrap = proxied
    topic = await new_topic(bootstrap)
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        request_timeout_ms=400,
        delivery_timeout_ms=1000,
        retry_backoff_ms=20,
        batch_size=64,  # one record per batch
        reconnect_backoff_max_ms=50,  # reconnect well within the second record's time
        fail_partition_on_error=fail_partition,
    ) as producer:
        await producer.send_and_wait(topic, b"before")
        proxy.refusing = True
        proxy.cut()
        first = await producer.send(topic, b"expires")
        await asyncio.sleep(0.6)
        second = await producer.send(topic, b"behind")
        with pytest.raises(KafkaTimeoutError, match="delivery_timeout_ms"):
            await asyncio.wait_for(first, timeout=10)
        if fail_partition:
            with pytest.raises(PartitionAbortedError, match="earlier record of the partition"):
                await asyncio.wait_for(second, timeout=5)
            proxy.refusing = False
            after = await producer.send_and_wait(topic, b"after")  # the partition resumes
            expected = [b"before", b"after"]
        else:
            proxy.refusing = False
            await asyncio.wait_for(second, timeout=10)
            after = await producer.send_and_wait(topic, b"after")
            expected = [b"before", b"behind", b"after"]
        assert after.offset >= 1
    assert await read_back(bootstrap, topic, expected=len(expected)) == expected
