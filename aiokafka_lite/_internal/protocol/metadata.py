"""Finding brokers, as declared data: Metadata (3), the leaders of partitions, and
FindCoordinator (10), the coordinator of a transactional id or consumer group.

(How these declarations are written and checked: :mod:`aiokafka_lite._internal.protocol`.)
"""

from __future__ import annotations

from typing import Annotated as A

from .codec import F, Message, Request, Response

__all__ = [
    "Coordinator",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "MetadataRequest",
    "MetadataRequestTopic",
    "MetadataResponse",
    "MetadataResponseBroker",
    "MetadataResponsePartition",
    "MetadataResponseTopic",
]


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
