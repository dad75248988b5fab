"""The consumer offsets a transaction commits (``send_offsets_to_transaction``).

Offsets are given as aiokafka takes them: a mapping of ``TopicPartition`` to an
offset, or to an ``(offset, metadata)`` pair (``OffsetAndMetadata``, ours or
aiokafka's, or a plain tuple); they go out as TxnOffsetCommit topics, and the
answer's per-partition errors are sorted out here.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import BrokerResponseError, error_from_response
from ..structs import OffsetAndMetadata, TopicPartition
from .protocol.transactions import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)

__all__ = ["offset_commit_topics", "offset_topics", "take_committed"]


def offset_commit_topics(
    topics: dict[str, dict[int, OffsetAndMetadata]],
) -> list[TxnOffsetCommitRequestTopic]:
    return [
        TxnOffsetCommitRequestTopic(
            topic,
            [
                TxnOffsetCommitRequestPartition(
                    partition_index=p, committed_offset=om.offset, committed_metadata=om.metadata
                )
                for p, om in sorted(parts.items())
            ],
        )
        for topic, parts in topics.items()
    ]


def take_committed(
    response: TxnOffsetCommitResponse,
    remaining: dict[str, dict[int, OffsetAndMetadata]],
    group_id: str,
) -> BrokerResponseError | None:
    """Drop the committed partitions from ``remaining``; return the error worth raising
    (a non-retriable one before a retriable one), if any partition failed."""
    first: BrokerResponseError | None = None
    for topic_result in response.topics:
        parts = remaining.get(topic_result.name, {})
        for p in topic_result.partitions:
            if p.error_code == 0:
                parts.pop(p.partition_index, None)
                continue
            error = error_from_response(
                p.error_code,
                topic=topic_result.name,
                partition=p.partition_index,
                message=f"TxnOffsetCommit for group {group_id!r}",
            )
            if first is None or not error.retriable:
                first = error
    for topic in [t for t, ps in remaining.items() if not ps]:
        del remaining[topic]
    return first


def offset_topics(
    offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
) -> dict[str, dict[int, OffsetAndMetadata]]:
    """The offsets by topic and partition. A value is an offset, or an ``(offset,
    metadata)`` pair (our OffsetAndMetadata, aiokafka's, or a plain tuple), as aiokafka's."""
    if not isinstance(offsets, Mapping):
        raise TypeError(
            "send_offsets_to_transaction(): offsets must be a dict of TopicPartition -> offset, "
            f"got {type(offsets).__name__}"
        )
    topics: dict[str, dict[int, OffsetAndMetadata]] = {}
    for tp, value in offsets.items():
        if not isinstance(tp, tuple) or len(tp) != 2:
            raise TypeError(f"offsets: keys must be TopicPartition, got {tp!r}")
        topic, partition = tp
        om = _offset_and_metadata(value, topic, partition)
        if om.offset < 0:
            raise ValueError(f"offset for {topic}[{partition}] must be >= 0, got {om.offset}")
        topics.setdefault(topic, {})[partition] = om
    if not topics:
        raise ValueError("send_offsets_to_transaction(): no offsets given")
    return topics


def _offset_and_metadata(value: object, topic: str, partition: int) -> OffsetAndMetadata:
    if type(value) is int:
        return OffsetAndMetadata(value, "")
    if isinstance(value, tuple) and len(value) == 2:
        offset, metadata = value
        if type(offset) is int and isinstance(metadata, str):
            return OffsetAndMetadata(offset, metadata)
    raise TypeError(
        f"offset for {topic}[{partition}] must be an int or an (offset, metadata) pair such as "
        f"OffsetAndMetadata, got {value!r}"
    )
