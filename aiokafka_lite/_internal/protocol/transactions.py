"""The idempotent and transactional producer's requests, as declared data:
InitProducerId (22), AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26)
and TxnOffsetCommit (28).

(How these declarations are written and checked: :mod:`aiokafka_lite._internal.protocol`.)
"""

from __future__ import annotations

from typing import Annotated as A

from .codec import F, Message, Request, Response

__all__ = [
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnPartitionResult",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "AddPartitionsToTxnResult",
    "AddPartitionsToTxnTopic",
    "AddPartitionsToTxnTopicResult",
    "AddPartitionsToTxnTransaction",
    "EndTxnRequest",
    "EndTxnResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitRequestPartition",
    "TxnOffsetCommitRequestTopic",
    "TxnOffsetCommitResponse",
    "TxnOffsetCommitResponsePartition",
    "TxnOffsetCommitResponseTopic",
]


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
    # v5 is KIP-890's transactions v2: the answer carries the producer id and the new
    # epoch the coordinator gives after every transaction (partitions are added by
    # Produce v12). Spoken only where the cluster runs transactions v2.
    MAX_VERSION = 5
    #: The newest version on transactions v1.
    MAX_VERSION_TXN_V1 = 4
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
    # v5 (KIP-890's transactions v2, the same layout as v4) adds the group's offsets
    # partition to the transaction without AddOffsetsToTxn.
    MAX_VERSION = 5
    #: The newest version on transactions v1.
    MAX_VERSION_TXN_V1 = 4
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
