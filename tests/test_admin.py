"""admin helpers against a broker that never gets there: what the caller is told.

The embedded broker elects a leader at once and always answers, so these
use the scripted broker (tests/scripted_broker.py) to hold a topic leaderless.
"""

from __future__ import annotations

import pytest
from scripted_broker import ReceivedRequest, ScriptedBroker, answer

from aiokafka_lite import NewTopic, create_topics
from aiokafka_lite.errors import KafkaTimeoutError
from aiokafka_lite.protocol.messages import (
    CreatableTopicResult,
    CreateTopicsResponse,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

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
