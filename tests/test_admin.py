"""admin helpers: what the caller is told when a broker never gets there, and
fetch_committed_offsets (the replay check of the Spark sink's exactly-once mode).

The embedded broker elects a leader at once and always answers, so these
use the scripted broker (tests/scripted_broker.py) to hold a topic leaderless.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTopicPartition
from conftest import TopicFactory
from scripted_broker import ReceivedRequest, ScriptedBroker, answer

from aiokafka_lite import (
    AIOKafkaProducer,
    NewTopic,
    OffsetAndMetadata,
    TopicPartition,
    create_topics,
)
from aiokafka_lite._internal.protocol.admin import (
    CreatableTopicResult,
    CreateTopicsResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from aiokafka_lite._internal.protocol.codec import decode
from aiokafka_lite._internal.protocol.metadata import (
    Coordinator,
    FindCoordinatorResponse,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from aiokafka_lite.admin import fetch_committed_offsets
from aiokafka_lite.errors import KafkaTimeoutError

METADATA, CREATE_TOPICS = 3, 19


async def test_create_topics_times_out_naming_the_leaderless_topic() -> None:
    holder: list[ScriptedBroker] = []

    def script(req: ReceivedRequest) -> bytes | None:
        if req.api_key == CREATE_TOPICS:
            return answer(req, CreateTopicsResponse(topics=[CreatableTopicResult(name="orphan")]))
        if req.api_key != METADATA:
            return None
        leaderless = MetadataResponsePartition(partition_index=0, leader_id=-1)
        topics = [MetadataResponseTopic(name="orphan", partitions=[leaderless])]
        broker = MetadataResponseBroker(node_id=1, host="127.0.0.1", port=holder[0].port)
        resp = MetadataResponse(brokers=[broker], controller_id=1, topics=topics)
        return answer(req, resp)

    async with ScriptedBroker(script) as broker:
        holder.append(broker)
        with pytest.raises(KafkaTimeoutError, match=r"\['orphan'\].*300 ms"):
            await create_topics(broker.address, [NewTopic("orphan")], timeout_ms=300)
    assert broker.requests_for(CREATE_TOPICS), "the topic was never asked for"


# -- fetch_committed_offsets (the replay check of the exactly-once mode) ---------------


async def test_fetch_committed_offsets_reads_transactional_commits(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    group = f"g-{uuid.uuid4().hex}"
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=f"tx-{uuid.uuid4().hex}"
    )
    async with producer, producer.transaction():
        await producer.send(topic, b"x", partition=0)
        await producer.send_offsets_to_transaction(
            {TopicPartition(topic, 0): OffsetAndMetadata(42, "m"), TopicPartition(topic, 1): 7},
            group,
        )
    asked = [TopicPartition(topic, 1), TopicPartition(topic, 0), TopicPartition(topic, 5)]
    got = await fetch_committed_offsets(bootstrap, group, asked, timeout_ms=10_000)
    assert list(got) == asked
    # (Tansu does not keep the metadata string: confluent-kafka reads None there too.)
    assert [got[tp].offset for tp in asked] == [7, 42, -1]  # no such partition: -1
    unknown = await fetch_committed_offsets(
        bootstrap, f"g-{uuid.uuid4().hex}", asked[:1], timeout_ms=10_000
    )
    assert unknown == {asked[0]: OffsetAndMetadata(-1, "")}
    assert await fetch_committed_offsets(bootstrap, group, [], timeout_ms=10_000) == {}

    # An independent reader agrees.
    def confluent_committed() -> list[int]:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
        try:
            tps = [CkTopicPartition(topic, p) for p in (1, 0)]
            return [tp.offset for tp in consumer.committed(tps, timeout=10)]
        finally:
            consumer.close()

    assert await asyncio.to_thread(confluent_committed) == [7, 42]


async def test_fetch_committed_offsets_retries_coordinator_errors() -> None:
    # A broker that is still loading the group, then says it is not its coordinator,
    # then answers: each error sends the client back to FindCoordinator.
    holder: list[ScriptedBroker] = []
    errors = [14, 16, 0]  # COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, none

    def script(req: ReceivedRequest) -> bytes | None:
        port = holder[0].port
        if req.api_key == 3:
            broker = MetadataResponseBroker(node_id=1, host="127.0.0.1", port=port)
            return answer(req, MetadataResponse(brokers=[broker], controller_id=1))
        if req.api_key == 10:
            found = Coordinator(key="grp", node_id=1, host="127.0.0.1", port=port)
            return answer(req, FindCoordinatorResponse(coordinators=[found], node_id=1))
        if req.api_key == 9:
            # (The scripted broker leaves the flexible header's empty tag section on.)
            assert req.api_version >= 6 and req.body[0] == 0
            fetch, _ = decode(OffsetFetchRequest, req.api_version, req.body[1:])
            assert fetch.group_id == "grp" and fetch.require_stable
            partition = OffsetFetchResponsePartition(partition_index=3, committed_offset=99)
            topic = OffsetFetchResponseTopic(name="t", partitions=[partition])
            return answer(req, OffsetFetchResponse(topics=[topic], error_code=errors.pop(0)))
        return None

    versions = {0: (3, 11), 3: (1, 12), 9: (1, 9), 10: (0, 6), 18: (0, 4)}
    async with ScriptedBroker(script, api_versions=versions) as broker:
        holder.append(broker)
        got = await fetch_committed_offsets(
            broker.address, "grp", [TopicPartition("t", 3)], timeout_ms=10_000, retry_backoff_ms=1
        )
        assert got == {TopicPartition("t", 3): OffsetAndMetadata(99, "")}
        assert len(broker.requests_for(9)) == 3 and len(broker.requests_for(10)) == 3
        assert {r.api_version for r in broker.requests_for(9)} == {7}

        # An error that never goes away ends in a timeout naming it.
        errors[:] = [15] * 1000  # COORDINATOR_NOT_AVAILABLE
        with pytest.raises(KafkaTimeoutError, match=r"'grp'.*300 ms.*COORDINATOR_NOT_AVAILABLE"):
            await fetch_committed_offsets(
                broker.address, "grp", [TopicPartition("t", 3)], timeout_ms=300
            )
