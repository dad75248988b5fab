"""Kafka protocol messages, declared as data.

Each class transcribes one of Apache Kafka's JSON message schemas: field order,
wire types, version ranges, nullable versions and tags are copied from the
schema (``tests/test_protocol_schemas.py`` checks every declaration against the
JSON files). Field names are the schema's names in snake_case. Every field has
a default so that fields absent from a version decode to their schema default.
"""

from __future__ import annotations

from typing import Annotated as A

from .codec import F, Message, Request, Response

# ---------------------------------------------------------------------------
# ApiVersions (18)


class ApiVersion(Message):
    api_key: A[int, F("int16")] = 0
    min_version: A[int, F("int16")] = 0
    max_version: A[int, F("int16")] = 0


class SupportedFeatureKey(Message):
    name: A[str, F("string", "3+")] = ""
    min_version: A[int, F("int16", "3+")] = 0
    max_version: A[int, F("int16", "3+")] = 0


class FinalizedFeatureKey(Message):
    name: A[str, F("string", "3+")] = ""
    max_version_level: A[int, F("int16", "3+")] = 0
    min_version_level: A[int, F("int16", "3+")] = 0


class ApiVersionsResponse(Response):
    API_KEY = 18
    FLEXIBLE_SINCE = 3

    error_code: A[int, F("int16")] = 0
    api_keys: A[list[ApiVersion], F("[]ApiVersion")] = []
    throttle_time_ms: A[int, F("int32", "1+")] = 0
    supported_features: A[list[SupportedFeatureKey], F("[]SupportedFeatureKey", "3+", tag=0)] = []
    finalized_features_epoch: A[int, F("int64", "3+", tag=1)] = -1
    finalized_features: A[list[FinalizedFeatureKey], F("[]FinalizedFeatureKey", "3+", tag=2)] = []
    zk_migration_ready: A[bool, F("bool", "3+", tag=3)] = False


class ApiVersionsRequest(Request):
    API_KEY = 18
    MIN_VERSION = 0
    MAX_VERSION = 4
    FLEXIBLE_SINCE = 3
    RESPONSE = ApiVersionsResponse

    client_software_name: A[str, F("string", "3+")] = ""
    client_software_version: A[str, F("string", "3+")] = ""


# ---------------------------------------------------------------------------
# Metadata (3)


class MetadataRequestTopic(Message):
    topic_id: A[bytes, F("uuid", "10+")] = bytes(16)
    name: A[str | None, F("string", nullable="10+")] = ""


class MetadataResponseBroker(Message):
    node_id: A[int, F("int32")] = 0
    host: A[str, F("string")] = ""
    port: A[int, F("int32")] = 0
    rack: A[str | None, F("string", "1+", nullable="1+")] = None


class MetadataResponsePartition(Message):
    error_code: A[int, F("int16")] = 0
    partition_index: A[int, F("int32")] = 0
    leader_id: A[int, F("int32")] = 0
    leader_epoch: A[int, F("int32", "7+")] = -1
    replica_nodes: A[list[int], F("[]int32")] = []
    isr_nodes: A[list[int], F("[]int32")] = []
    offline_replicas: A[list[int], F("[]int32", "5+")] = []


class MetadataResponseTopic(Message):
    error_code: A[int, F("int16")] = 0
    name: A[str | None, F("string", nullable="12+")] = ""
    topic_id: A[bytes, F("uuid", "10+")] = bytes(16)
    is_internal: A[bool, F("bool", "1+")] = False
    partitions: A[list[MetadataResponsePartition], F("[]MetadataResponsePartition")] = []
    topic_authorized_operations: A[int, F("int32", "8+")] = -2147483648


class MetadataResponse(Response):
    API_KEY = 3
    FLEXIBLE_SINCE = 9

    throttle_time_ms: A[int, F("int32", "3+")] = 0
    brokers: A[list[MetadataResponseBroker], F("[]MetadataResponseBroker")] = []
    cluster_id: A[str | None, F("string", "2+", nullable="2+")] = None
    controller_id: A[int, F("int32", "1+")] = -1
    topics: A[list[MetadataResponseTopic], F("[]MetadataResponseTopic")] = []
    cluster_authorized_operations: A[int, F("int32", "8-10")] = -2147483648


class MetadataRequest(Request):
    API_KEY = 3
    MIN_VERSION = 1  # v0 cannot express "no topics" vs "all topics"; every broker has v1
    MAX_VERSION = 12
    FLEXIBLE_SINCE = 9
    RESPONSE = MetadataResponse

    topics: A[list[MetadataRequestTopic] | None, F("[]MetadataRequestTopic", nullable="1+")] = []
    allow_auto_topic_creation: A[bool, F("bool", "4+")] = True
    include_cluster_authorized_operations: A[bool, F("bool", "8-10")] = False
    include_topic_authorized_operations: A[bool, F("bool", "8+")] = False


# ---------------------------------------------------------------------------
# Produce (0)


class BatchIndexAndErrorMessage(Message):
    batch_index: A[int, F("int32", "8+")] = 0
    batch_index_error_message: A[str | None, F("string", "8+", nullable="8+")] = None


class LeaderIdAndEpoch(Message):
    leader_id: A[int, F("int32", "10+")] = -1
    leader_epoch: A[int, F("int32", "10+")] = -1


class PartitionProduceResponse(Message):
    index: A[int, F("int32")] = 0
    error_code: A[int, F("int16")] = 0
    base_offset: A[int, F("int64")] = 0
    log_append_time_ms: A[int, F("int64", "2+")] = -1
    log_start_offset: A[int, F("int64", "5+")] = -1
    record_errors: A[list[BatchIndexAndErrorMessage], F("[]BatchIndexAndErrorMessage", "8+")] = []
    error_message: A[str | None, F("string", "8+", nullable="8+")] = None
    current_leader: A[LeaderIdAndEpoch | None, F("LeaderIdAndEpoch", "10+", tag=0)] = None


class TopicProduceResponse(Message):
    name: A[str, F("string")] = ""
    partition_responses: A[list[PartitionProduceResponse], F("[]PartitionProduceResponse")] = []


class NodeEndpoint(Message):
    node_id: A[int, F("int32", "10+")] = 0
    host: A[str, F("string", "10+")] = ""
    port: A[int, F("int32", "10+")] = 0
    rack: A[str | None, F("string", "10+", nullable="10+")] = None


class ProduceResponse(Response):
    API_KEY = 0
    FLEXIBLE_SINCE = 9

    responses: A[list[TopicProduceResponse], F("[]TopicProduceResponse")] = []
    throttle_time_ms: A[int, F("int32", "1+")] = 0
    node_endpoints: A[list[NodeEndpoint], F("[]NodeEndpoint", "10+", tag=0)] = []


class PartitionProduceData(Message):
    index: A[int, F("int32")] = 0
    records: A[bytes | bytearray | None, F("records", nullable="0+")] = None


class TopicProduceData(Message):
    name: A[str, F("string")] = ""
    partition_data: A[list[PartitionProduceData], F("[]PartitionProduceData")] = []


class ProduceRequest(Request):
    API_KEY = 0
    MIN_VERSION = 3  # record batch v2 (magic 2) needs Produce v3+
    MAX_VERSION = 11
    FLEXIBLE_SINCE = 9
    RESPONSE = ProduceResponse

    transactional_id: A[str | None, F("string", "3+", nullable="3+")] = None
    acks: A[int, F("int16")] = -1
    timeout_ms: A[int, F("int32")] = 30000
    topic_data: A[list[TopicProduceData], F("[]TopicProduceData")] = []


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
# InitProducerId (22)


class InitProducerIdResponse(Response):
    API_KEY = 22
    FLEXIBLE_SINCE = 2

    throttle_time_ms: A[int, F("int32")] = 0
    error_code: A[int, F("int16")] = 0
    producer_id: A[int, F("int64")] = -1
    producer_epoch: A[int, F("int16")] = -1


class InitProducerIdRequest(Request):
    API_KEY = 22
    MIN_VERSION = 0
    MAX_VERSION = 5
    FLEXIBLE_SINCE = 2
    RESPONSE = InitProducerIdResponse

    transactional_id: A[str | None, F("string", nullable="0+")] = None
    transaction_timeout_ms: A[int, F("int32")] = 2147483647
    producer_id: A[int, F("int64", "3+")] = -1
    producer_epoch: A[int, F("int16", "3+")] = -1


# ---------------------------------------------------------------------------
# SaslHandshake (17) and SaslAuthenticate (36)

# SaslHandshake has no flexible version ("flexibleVersions": "none").
_NEVER_FLEXIBLE = 0x7FFF


class SaslHandshakeResponse(Response):
    API_KEY = 17
    FLEXIBLE_SINCE = _NEVER_FLEXIBLE

    error_code: A[int, F("int16")] = 0
    mechanisms: A[list[str], F("[]string")] = []


class SaslHandshakeRequest(Request):
    API_KEY = 17
    MIN_VERSION = 1  # v0 sends the SASL tokens unframed; v1 wraps them in SaslAuthenticate
    MAX_VERSION = 1
    FLEXIBLE_SINCE = _NEVER_FLEXIBLE
    RESPONSE = SaslHandshakeResponse

    mechanism: A[str, F("string")] = ""


class SaslAuthenticateResponse(Response):
    API_KEY = 36
    FLEXIBLE_SINCE = 2

    error_code: A[int, F("int16")] = 0
    error_message: A[str | None, F("string", nullable="0+")] = None
    auth_bytes: A[bytes, F("bytes")] = b""
    session_lifetime_ms: A[int, F("int64", "1+")] = 0


class SaslAuthenticateRequest(Request):
    API_KEY = 36
    MIN_VERSION = 0
    MAX_VERSION = 2
    FLEXIBLE_SINCE = 2
    RESPONSE = SaslAuthenticateResponse

    auth_bytes: A[bytes, F("bytes")] = b""
