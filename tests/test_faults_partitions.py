"""Partitions added to a topic while producing.

Neither broker the tests run can add partitions: Tansu and librdkafka's mock cluster
both leave CreatePartitions (API key 37) out of their ApiVersions (confluent-kafka's
AdminClient.create_partitions answers "not supported by broker"), and the mock has
no call that grows a topic. So this uses the smallest honest stand-in: a scripted
broker (tests/scripted_cluster.py's LogCluster) that keeps a real log: it stores every batch it
is sent, parsed with kafka-python's record-batch reader (not our code), gives out
offsets, and describes the topic with 2 partitions, then with 4.

What is checked: after the next metadata refresh (``metadata_max_age_ms``), keyless
records land on the new partitions too, keyed ones go where murmur2 (kafka-python's)
over the new count says, and nothing is lost, doubled or reordered.
"""

from __future__ import annotations

import asyncio

from partition_checks import java_partition
from scripted_cluster import METADATA, LogCluster, Stored
from test_faults_checks import Outcome, check_fault_outcome, value

from aiokafka_lite import AIOKafkaProducer

TOPIC = "growing"


def key_of(i: int) -> bytes | None:
    """Even records are keyed (50 keys), odd ones keyless."""
    return None if i % 2 else f"key-{i % 50}".encode()


async def test_keyless_and_keyed_records_follow_added_partitions() -> None:
    log = LogCluster(topics={TOPIC: 2})
    async with log.running() as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address,
            metadata_max_age_ms=200,
            batch_size=256,  # keyless records move to another partition every few records
            linger_ms=1,
        )
        await producer.start()
        futures = []
        for i in range(300):
            futures.append(await producer.send(TOPIC, value(i), key=key_of(i)))
        await asyncio.wait_for(asyncio.gather(*futures), 10)
        log.topics[TOPIC] = 4  # the topic grows
        requests_before = log.counts[METADATA]
        for _ in range(200):  # the next periodic refresh (metadata_max_age_ms) sees it
            if len(await producer.partitions_for(TOPIC)) == 4:
                break
            await asyncio.sleep(0.05)
        assert len(await producer.partitions_for(TOPIC)) == 4
        assert log.counts[METADATA] > requests_before
        grown_at = len(futures)
        for i in range(grown_at, grown_at + 600):
            futures.append(await producer.send(TOPIC, value(i), key=key_of(i)))
            if i % 100 == 0:
                await asyncio.sleep(0.01)

        async def read(_: Outcome) -> list[Stored]:
            return log.records(TOPIC)

        outcome = await check_fault_outcome(producer, futures, read, key=key_of)
    assert len(outcome.acked) == len(futures)
    assert log.resent == 0  # no batch was written twice and hidden by the broker's dedup
    for i, md in outcome.acked.items():
        k = key_of(i)
        count = 2 if i < grown_at else 4
        if k is not None:
            assert md.partition == java_partition(k, count), (i, md.partition)
        else:
            assert md.partition < count
    keyless_after = {md.partition for i, md in outcome.acked.items() if i >= grown_at and i % 2}
    assert keyless_after & {2, 3}, f"keyless records never used a new partition: {keyless_after}"
    keyed_after = {md.partition for i, md in outcome.acked.items() if i >= grown_at and i % 2 == 0}
    assert keyed_after & {2, 3}, "no key moved to a new partition"
