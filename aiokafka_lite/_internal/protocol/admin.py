"""The admin requests, as declared data: CreateTopics (19) and OffsetFetch (9),
a consumer group's committed offsets.

(How these declarations are written and checked: :mod:`aiokafka_lite._internal.protocol`.)
"""

from __future__ import annotations

from typing import Annotated as A

from .codec import F, Message, Request, Response

__all__ = [
    "CreatableReplicaAssignment",
    "CreatableTopic",
    "CreatableTopicConfig",
    "CreatableTopicConfigs",
    "CreatableTopicResult",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "OffsetFetchRequest",
    "OffsetFetchRequestGroup",
    "OffsetFetchRequestTopic",
    "OffsetFetchRequestTopics",
    "OffsetFetchResponse",
    "OffsetFetchResponseGroup",
    "OffsetFetchResponsePartition",
    "OffsetFetchResponsePartitions",
    "OffsetFetchResponseTopic",
    "OffsetFetchResponseTopics",
]


# ---------------------------------------------------------------------------
# CreateTopics (19)


class CreatableReplicaAssignment(Message):
    partition_index: A[int, F("int32")] = 0
    broker_ids: A[list[int], F("[]int32")] = []


class CreatableTopicConfig(Message):
    name: A[str, F("string")] = ""
    value: A[str | None, F("string", nullable="0+")] = None


class CreatableTopic(Message):
    name: A[str, F("string")] = ""
    num_partitions: A[int, F("int32")] = -1
    replication_factor: A[int, F("int16")] = -1
    assignments: A[list[CreatableReplicaAssignment], F("[]CreatableReplicaAssignment")] = []
    configs: A[list[CreatableTopicConfig], F("[]CreatableTopicConfig")] = []


class CreatableTopicConfigs(Message):
    name: A[str, F("string", "5+")] = ""
    value: A[str | None, F("string", "5+", nullable="5+")] = None
    read_only: A[bool, F("bool", "5+")] = False
    config_source: A[int, F("int8", "5+")] = -1
    is_sensitive: A[bool, F("bool", "5+")] = False


class CreatableTopicResult(Message):
    name: A[str, F("string")] = ""
    topic_id: A[bytes, F("uuid", "7+")] = bytes(16)
    error_code: A[int, F("int16")] = 0
    error_message: A[str | None, F("string", "1+", nullable="0+")] = None
    topic_config_error_code: A[int, F("int16", "5+", tag=0)] = 0
    num_partitions: A[int, F("int32", "5+")] = -1
    replication_factor: A[int, F("int16", "5+")] = -1
    configs: A[
        list[CreatableTopicConfigs] | None, F("[]CreatableTopicConfigs", "5+", nullable="5+")
    ] = []


class CreateTopicsResponse(Response):
    API_KEY = 19
    FLEXIBLE_SINCE = 5

    throttle_time_ms: A[int, F("int32", "2+")] = 0
    topics: A[list[CreatableTopicResult], F("[]CreatableTopicResult")] = []


class CreateTopicsRequest(Request):
    API_KEY = 19
    MIN_VERSION = 0
    MAX_VERSION = 7
    FLEXIBLE_SINCE = 5
    RESPONSE = CreateTopicsResponse

    topics: A[list[CreatableTopic], F("[]CreatableTopic")] = []
    timeout_ms: A[int, F("int32")] = 60000
    validate_only: A[bool, F("bool", "1+")] = False


# ---------------------------------------------------------------------------
# OffsetFetch (9): a group's committed offsets (single-group form, v1-v7)


class OffsetFetchRequestTopic(Message):
    name: A[str, F("string", "0-7")] = ""
    partition_indexes: A[list[int], F("[]int32", "0-7")] = []


class OffsetFetchRequestTopics(Message):
    name: A[str, F("string", "0-8")] = ""
    topic_id: A[bytes, F("uuid", "9+")] = bytes(16)
    partition_indexes: A[list[int], F("[]int32", "8+")] = []


class OffsetFetchRequestGroup(Message):
    group_id: A[str, F("string", "8+")] = ""
    topics: A[
        list[OffsetFetchRequestTopics] | None,
        F("[]OffsetFetchRequestTopics", "8+", nullable="8+"),
    ] = []


class OffsetFetchResponsePartition(Message):
    partition_index: A[int, F("int32", "0-7")] = 0
    committed_offset: A[int, F("int64", "0-7")] = 0
    committed_leader_epoch: A[int, F("int32", "5-7")] = -1
    metadata: A[str | None, F("string", "0-7", nullable="0-7")] = None
    error_code: A[int, F("int16", "0-7")] = 0


class OffsetFetchResponseTopic(Message):
    name: A[str, F("string", "0-7")] = ""
    partitions: A[
        list[OffsetFetchResponsePartition], F("[]OffsetFetchResponsePartition", "0-7")
    ] = []


class OffsetFetchResponsePartitions(Message):
    partition_index: A[int, F("int32", "8+")] = 0
    committed_offset: A[int, F("int64", "8+")] = 0
    committed_leader_epoch: A[int, F("int32", "8+")] = -1
    metadata: A[str | None, F("string", "8+", nullable="8+")] = None
    error_code: A[int, F("int16", "8+")] = 0


class OffsetFetchResponseTopics(Message):
    name: A[str, F("string", "0-8")] = ""
    topic_id: A[bytes, F("uuid", "9+")] = bytes(16)
    partitions: A[
        list[OffsetFetchResponsePartitions], F("[]OffsetFetchResponsePartitions", "8+")
    ] = []


class OffsetFetchResponseGroup(Message):
    group_id: A[str, F("string", "8+")] = ""
    topics: A[list[OffsetFetchResponseTopics], F("[]OffsetFetchResponseTopics", "8+")] = []
    error_code: A[int, F("int16", "8+")] = 0


class OffsetFetchResponse(Response):
    API_KEY = 9
    FLEXIBLE_SINCE = 6

    throttle_time_ms: A[int, F("int32", "3+")] = 0
    topics: A[list[OffsetFetchResponseTopic], F("[]OffsetFetchResponseTopic", "0-7")] = []
    error_code: A[int, F("int16", "2-7")] = 0
    groups: A[list[OffsetFetchResponseGroup], F("[]OffsetFetchResponseGroup", "8+")] = []


class OffsetFetchRequest(Request):
    API_KEY = 9
    MIN_VERSION = 1  # v0 reads offsets kept in ZooKeeper; v1+ the __consumer_offsets topic
    # v8+ is the multi-group form (and v9 names topics by id): one group is all we ask.
    MAX_VERSION = 7
    FLEXIBLE_SINCE = 6
    RESPONSE = OffsetFetchResponse

    group_id: A[str, F("string", "0-7")] = ""
    topics: A[
        list[OffsetFetchRequestTopic] | None,
        F("[]OffsetFetchRequestTopic", "0-7", nullable="2-7"),
    ] = []
    groups: A[list[OffsetFetchRequestGroup], F("[]OffsetFetchRequestGroup", "8+")] = []
    #: v7+: answer UNSTABLE_OFFSET_COMMIT (retriable) while a transaction holds an offset
    require_stable: A[bool, F("bool", "7+")] = False
