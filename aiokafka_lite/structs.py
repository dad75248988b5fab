"""Small public value types, shaped like aiokafka's so code moving over keeps working."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["OffsetAndMetadata", "RecordMetadata", "TopicPartition"]


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class RecordMetadata(NamedTuple):
    """Where a record landed. ``timestamp_type`` is 0 for CreateTime, 1 for LogAppendTime."""

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int
    timestamp_type: int
    log_start_offset: int


class OffsetAndMetadata(NamedTuple):
    """A consumer offset to commit, with optional metadata (aiokafka's)."""

    offset: int
    metadata: str = ""
