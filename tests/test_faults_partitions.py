"""Partitions added to a topic while producing.

Neither broker the tests run can add partitions: Tansu and librdkafka's mock cluster
both leave CreatePartitions (API key 37) out of their ApiVersions (confluent-kafka's
AdminClient.create_partitions answers "not supported by broker"), and the mock has
no call that grows a topic. So this uses the smallest honest stand-in: a scripted
broker (tests/scripted_broker.py) that keeps a real log: it stores every batch it
is sent, parsed with kafka-python's record-batch reader (not our code), gives out
offsets, and describes the topic with 2 partitions, then with 4.

What is checked: after the next metadata refresh (``metadata_max_age_ms``), keyless
records land on the new partitions too, keyed ones go where murmur2 (kafka-python's)
over the new count says, and nothing is lost, doubled or reordered.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from kafka.partitioner.default import murmur2  # type: ignore[import-untyped]
from kafka.record.memory_records import MemoryRecords  # type: ignore[import-untyped]
from scripted_broker import ReceivedRequest, ScriptedBroker, answer
from test_faults_checks import Outcome, check_fault_outcome, value

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.protocol.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from aiokafka_lite.protocol.produce import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from aiokafka_lite.protocol.transactions import InitProducerIdResponse

TOPIC = "growing"
NODE = 1


@dataclass(frozen=True)
class Stored:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass
class LogBroker:
    """Answers Metadata (``partitions`` of one topic, led by this broker),
    InitProducerId, and Produce (appends to an in-memory log)."""

    partitions: int
    broker: ScriptedBroker = field(init=False)
    log: dict[int, list[Stored]] = field(default_factory=dict)
    metadata_requests: int = 0

    def __call__(self, req: ReceivedRequest) -> bytes | None:
        if req.api_key == 3:
            self.metadata_requests += 1
            topic = MetadataResponseTopic(
                name=TOPIC,
                partitions=[
                    MetadataResponsePartition(
                        partition_index=p, leader_id=NODE, leader_epoch=0, replica_nodes=[NODE]
                    )
                    for p in range(self.partitions)
                ],
            )
            broker = MetadataResponseBroker(node_id=NODE, host="127.0.0.1", port=self.broker.port)
            return answer(
                req,
                MetadataResponse(
                    brokers=[broker], cluster_id="scripted", controller_id=NODE, topics=[topic]
                ),
            )
        if req.api_key == 22:
            return answer(req, InitProducerIdResponse(producer_id=4711, producer_epoch=0))
        if req.api_key == 0:
            produce = req.decode()
            topics = []
            for t in produce.topic_data:
                results = []
                for pd in t.partition_data:
                    results.append(PartitionProduceResponse(pd.index, 0, self._append(pd)))
                topics.append(TopicProduceResponse(name=t.name, partition_responses=results))
            return answer(req, ProduceResponse(responses=topics))
        return None

    def _append(self, pd: object) -> int:
        index: int = pd.index  # type: ignore[attr-defined]
        log = self.log.setdefault(index, [])
        base = len(log)
        records = MemoryRecords(bytes(pd.records))  # type: ignore[attr-defined]
        while (batch := records.next_batch()) is not None:
            for r in batch:
                log.append(Stored(index, len(log), r.key, r.value))
        return base

    def everything(self) -> list[Stored]:
        return [r for p in sorted(self.log) for r in self.log[p]]


def key_of(i: int) -> bytes | None:
    """Even records are keyed (50 keys), odd ones keyless."""
    return None if i % 2 else f"key-{i % 50}".encode()


def murmur2_partition(key: bytes, partitions: int) -> int:
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


async def test_keyless_and_keyed_records_follow_added_partitions() -> None:
    log = LogBroker(partitions=2)
    async with ScriptedBroker(log) as broker:
        log.broker = broker
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
        log.partitions = 4  # the topic grows
        requests_before = log.metadata_requests
        for _ in range(200):  # the next periodic refresh (metadata_max_age_ms) sees it
            if len(await producer.partitions_for(TOPIC)) == 4:
                break
            await asyncio.sleep(0.05)
        assert len(await producer.partitions_for(TOPIC)) == 4
        assert log.metadata_requests > requests_before
        grown_at = len(futures)
        for i in range(grown_at, grown_at + 600):
            futures.append(await producer.send(TOPIC, value(i), key=key_of(i)))
            if i % 100 == 0:
                await asyncio.sleep(0.01)

        async def read(_: Outcome) -> list[Stored]:
            return log.everything()

        outcome = await check_fault_outcome(producer, futures, read, key=key_of)
    assert len(outcome.acked) == len(futures)
    for i, md in outcome.acked.items():
        k = key_of(i)
        count = 2 if i < grown_at else 4
        if k is not None:
            assert md.partition == murmur2_partition(k, count), (i, md.partition)
        else:
            assert md.partition < count
    keyless_after = {md.partition for i, md in outcome.acked.items() if i >= grown_at and i % 2}
    assert keyless_after & {2, 3}, f"keyless records never used a new partition: {keyless_after}"
    keyed_after = {md.partition for i, md in outcome.acked.items() if i >= grown_at and i % 2 == 0}
    assert keyed_after & {2, 3}, "no key moved to a new partition"
