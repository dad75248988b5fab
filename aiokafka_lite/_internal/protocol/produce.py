"""Produce (0), as declared data: record batches for partitions, and each partition's
answer (offset, or error with the leader to move to, KIP-951).

(How these declarations are written and checked: :mod:`aiokafka_lite._internal.protocol`.)
"""

from __future__ import annotations

from typing import Annotated as A

from .codec import F, Message, Request, Response

__all__ = [
    "BatchIndexAndErrorMessage",
    "LeaderIdAndEpoch",
    "NodeEndpoint",
    "PartitionProduceData",
    "PartitionProduceResponse",
    "ProduceRequest",
    "ProduceResponse",
    "TopicProduceData",
    "TopicProduceResponse",
]


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
    name: A[str, F("string", "0-12")] = ""
    topic_id: A[bytes, F("uuid", "13+")] = bytes(16)
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
    name: A[str, F("string", "0-12")] = ""
    topic_id: A[bytes, F("uuid", "13+")] = bytes(16)
    partition_data: A[list[PartitionProduceData], F("[]PartitionProduceData")] = []


class ProduceRequest(Request):
    API_KEY = 0
    MIN_VERSION = 3  # record batch v2 (magic 2) needs Produce v3+
    # v12 (the same layout as v11) tells a broker with KIP-890's transactions v2 that a
    # transactional producer lets the broker add partitions to its transaction; a
    # producer on transactions v1 stops at v11. v13 names topics by id (KIP-516): not
    # spoken.
    MAX_VERSION = 12
    #: The newest version for a transactional producer on transactions v1.
    MAX_VERSION_TXN_V1 = 11
    FLEXIBLE_SINCE = 9
    RESPONSE = ProduceResponse

    transactional_id: A[str | None, F("string", "3+", nullable="3+")] = None
    acks: A[int, F("int16")] = -1
    timeout_ms: A[int, F("int32")] = 30000
    topic_data: A[list[TopicProduceData], F("[]TopicProduceData")] = []
