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
# FindCoordinator (10)


class Coordinator(Message):
    key: A[str, F("string", "4+")] = ""
    node_id: A[int, F("int32", "4+")] = 0
    host: A[str, F("string", "4+")] = ""
    port: A[int, F("int32", "4+")] = 0
    error_code: A[int, F("int16", "4+")] = 0
    error_message: A[str | None, F("string", "4+", nullable="4+")] = None


class FindCoordinatorResponse(Response):
    API_KEY = 10
    FLEXIBLE_SINCE = 3

    throttle_time_ms: A[int, F("int32", "1+")] = 0
    error_code: A[int, F("int16", "0-3")] = 0
    error_message: A[str | None, F("string", "1-3", nullable="1-3")] = None
    node_id: A[int, F("int32", "0-3")] = 0
    host: A[str, F("string", "0-3")] = ""
    port: A[int, F("int32", "0-3")] = 0
    coordinators: A[list[Coordinator], F("[]Coordinator", "4+")] = []


class FindCoordinatorRequest(Request):
    API_KEY = 10
    MIN_VERSION = 1  # v0 has no key type: it can only find group coordinators
    MAX_VERSION = 6
    FLEXIBLE_SINCE = 3
    RESPONSE = FindCoordinatorResponse

    key: A[str, F("string", "0-3")] = ""
    key_type: A[int, F("int8", "1+")] = 0  # 0 = group, 1 = transaction
    coordinator_keys: A[list[str], F("[]string", "4+")] = []


# ---------------------------------------------------------------------------
# AddPartitionsToTxn (24)


class AddPartitionsToTxnTopic(Message):
    name: A[str, F("string")] = ""
    partitions: A[list[int], F("[]int32")] = []


class AddPartitionsToTxnTransaction(Message):
    transactional_id: A[str, F("string", "4+")] = ""
    producer_id: A[int, F("int64", "4+")] = 0
    producer_epoch: A[int, F("int16", "4+")] = 0
    verify_only: A[bool, F("bool", "4+")] = False
    topics: A[list[AddPartitionsToTxnTopic], F("[]AddPartitionsToTxnTopic", "4+")] = []


class AddPartitionsToTxnPartitionResult(Message):
    partition_index: A[int, F("int32")] = 0
    partition_error_code: A[int, F("int16")] = 0


class AddPartitionsToTxnTopicResult(Message):
    name: A[str, F("string")] = ""
    results_by_partition: A[
        list[AddPartitionsToTxnPartitionResult], F("[]AddPartitionsToTxnPartitionResult")
    ] = []


class AddPartitionsToTxnResult(Message):
    transactional_id: A[str, F("string", "4+")] = ""
    topic_results: A[
        list[AddPartitionsToTxnTopicResult], F("[]AddPartitionsToTxnTopicResult", "4+")
    ] = []


class AddPartitionsToTxnResponse(Response):
    API_KEY = 24
    FLEXIBLE_SINCE = 3

    throttle_time_ms: A[int, F("int32")] = 0
    error_code: A[int, F("int16", "4+")] = 0
    results_by_transaction: A[
        list[AddPartitionsToTxnResult], F("[]AddPartitionsToTxnResult", "4+")
    ] = []
    results_by_topic_v3_and_below: A[
        list[AddPartitionsToTxnTopicResult], F("[]AddPartitionsToTxnTopicResult", "0-3")
    ] = []


class AddPartitionsToTxnRequest(Request):
    API_KEY = 24
    MIN_VERSION = 0
    # v4+ is the brokers' batched form (several transactions, verify-only), which
    # a client is not authorized to send; clients use v0-v3.
    MAX_VERSION = 3
    FLEXIBLE_SINCE = 3
    RESPONSE = AddPartitionsToTxnResponse

    transactions: A[
        list[AddPartitionsToTxnTransaction], F("[]AddPartitionsToTxnTransaction", "4+")
    ] = []
    v3_and_below_transactional_id: A[str, F("string", "0-3")] = ""
    v3_and_below_producer_id: A[int, F("int64", "0-3")] = 0
    v3_and_below_producer_epoch: A[int, F("int16", "0-3")] = 0
    v3_and_below_topics: A[
        list[AddPartitionsToTxnTopic], F("[]AddPartitionsToTxnTopic", "0-3")
    ] = []


# ---------------------------------------------------------------------------
# AddOffsetsToTxn (25)


class AddOffsetsToTxnResponse(Response):
    API_KEY = 25
    FLEXIBLE_SINCE = 3

    throttle_time_ms: A[int, F("int32")] = 0
    error_code: A[int, F("int16")] = 0


class AddOffsetsToTxnRequest(Request):
    API_KEY = 25
    MIN_VERSION = 0
    MAX_VERSION = 4
    FLEXIBLE_SINCE = 3
    RESPONSE = AddOffsetsToTxnResponse

    transactional_id: A[str, F("string")] = ""
    producer_id: A[int, F("int64")] = 0
    producer_epoch: A[int, F("int16")] = 0
    group_id: A[str, F("string")] = ""


# ---------------------------------------------------------------------------
# EndTxn (26)


class EndTxnResponse(Response):
    API_KEY = 26
    FLEXIBLE_SINCE = 3

    throttle_time_ms: A[int, F("int32")] = 0
    error_code: A[int, F("int16")] = 0
    producer_id: A[int, F("int64", "5+")] = -1
    producer_epoch: A[int, F("int16", "5+")] = -1


class EndTxnRequest(Request):
    API_KEY = 26
    MIN_VERSION = 0
    # v5 is KIP-890's "transactions v2" (a new epoch after every transaction,
    # partitions added by Produce v12): a different protocol, not spoken here.
    MAX_VERSION = 4
    FLEXIBLE_SINCE = 3
    RESPONSE = EndTxnResponse

    transactional_id: A[str, F("string")] = ""
    producer_id: A[int, F("int64")] = 0
    producer_epoch: A[int, F("int16")] = 0
    committed: A[bool, F("bool")] = False


# ---------------------------------------------------------------------------
# TxnOffsetCommit (28)


class TxnOffsetCommitRequestPartition(Message):
    partition_index: A[int, F("int32")] = 0
    committed_offset: A[int, F("int64")] = 0
    committed_leader_epoch: A[int, F("int32", "2+")] = -1
    committed_metadata: A[str | None, F("string", nullable="0+")] = None


class TxnOffsetCommitRequestTopic(Message):
    name: A[str, F("string")] = ""
    partitions: A[
        list[TxnOffsetCommitRequestPartition], F("[]TxnOffsetCommitRequestPartition")
    ] = []


class TxnOffsetCommitResponsePartition(Message):
    partition_index: A[int, F("int32")] = 0
    error_code: A[int, F("int16")] = 0


class TxnOffsetCommitResponseTopic(Message):
    name: A[str, F("string")] = ""
    partitions: A[
        list[TxnOffsetCommitResponsePartition], F("[]TxnOffsetCommitResponsePartition")
    ] = []


class TxnOffsetCommitResponse(Response):
    API_KEY = 28
    FLEXIBLE_SINCE = 3

    throttle_time_ms: A[int, F("int32")] = 0
    topics: A[list[TxnOffsetCommitResponseTopic], F("[]TxnOffsetCommitResponseTopic")] = []


class TxnOffsetCommitRequest(Request):
    API_KEY = 28
    MIN_VERSION = 0
    MAX_VERSION = 4
    FLEXIBLE_SINCE = 3
    RESPONSE = TxnOffsetCommitResponse

    transactional_id: A[str, F("string")] = ""
    group_id: A[str, F("string")] = ""
    producer_id: A[int, F("int64")] = 0
    producer_epoch: A[int, F("int16")] = 0
    generation_id: A[int, F("int32", "3+")] = -1
    member_id: A[str, F("string", "3+")] = ""
    group_instance_id: A[str | None, F("string", "3+", nullable="3+")] = None
    topics: A[list[TxnOffsetCommitRequestTopic], F("[]TxnOffsetCommitRequestTopic")] = []


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
