"""Small public value types, shaped like aiokafka's so code moving over keeps working."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, NamedTuple, SupportsIndex, overload

import msgspec

__all__ = [
    "BatchRecordMetadata",
    "DeliveryReport",
    "OffsetAndMetadata",
    "RecordMetadata",
    "TopicPartition",
]

_astuple = msgspec.structs.astuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class RecordMetadata(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """Where a record landed. ``timestamp_type`` is 0 for CreateTime, 1 for LogAppendTime.

    Read like aiokafka's (a named tuple): by attribute, by index, by unpacking, with
    ``_replace``, ``_asdict`` and ``_fields``; it compares equal to another
    ``RecordMetadata`` of the same values. It is not a ``tuple`` subclass: a producer
    makes one per record, and unlike tuples these are never tracked by the cyclic
    garbage collector (``gc=False``: they hold only strings and integers).
    """

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int
    timestamp_type: int
    log_start_offset: int

    # -- named-tuple reading, for code written against aiokafka's RecordMetadata ---------

    _fields: ClassVar[tuple[str, ...]] = (
        "topic",
        "partition",
        "topic_partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "log_start_offset",
    )

    @overload
    def __getitem__(self, index: SupportsIndex) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Any, ...]: ...
    def __getitem__(self, index: SupportsIndex | slice) -> Any:
        return _astuple(self)[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(_astuple(self))

    def __len__(self) -> int:
        return 7

    def _replace(self, **changes: Any) -> RecordMetadata:
        return msgspec.structs.replace(self, **changes)

    def _asdict(self) -> dict[str, Any]:
        return msgspec.structs.asdict(self)


class BatchRecordMetadata(msgspec.Struct, frozen=True, gc=False):
    """What ``BatchBuilder.append`` returns for a record it took (aiokafka's shape, read by
    attribute): its offset within the batch, its encoded size in bytes, its timestamp in ms.
    One is made per appended record, so it is a struct the garbage collector never tracks."""

    offset: int
    size: int
    timestamp: int

    @property
    def crc(self) -> None:
        """Record batches v2 have one CRC per batch, none per record (None, as aiokafka)."""
        return None


class DeliverySegment(NamedTuple):
    """Records of one ``send_many()`` call that landed together in one batch."""

    topic_partition: TopicPartition
    first_offset: int  # -1 with acks=0: every record reports -1
    timestamp: int
    timestamp_type: int
    log_start_offset: int
    indices: list[int]  # the records' positions in the call, in offset order


class DeliveryReport(Sequence[RecordMetadata]):
    """Every record's metadata of one ``send_many()`` call, in call order.

    Built lazily from its segments (records that landed together in a batch), so
    that a call's cost does not include a ``RecordMetadata`` per record unless the
    caller looks. Reading the entry of a record that failed raises that record's
    exception (as its future's ``result()`` would); ``errors`` maps those indices
    to them.
    """

    __slots__ = ("_by_index", "_count", "_segments", "errors")

    def __init__(
        self, count: int, segments: list[DeliverySegment], errors: dict[int, BaseException]
    ) -> None:
        self._count = count
        self._segments = segments
        self.errors = errors
        self._by_index: list[int] | None = None  # per record: segment << 32 | position

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> RecordMetadata: ...
    @overload
    def __getitem__(self, index: slice) -> list[RecordMetadata]: ...
    def __getitem__(self, index: int | slice) -> RecordMetadata | list[RecordMetadata]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("delivery report index out of range")
        error = self.errors.get(index)
        if error is not None:
            raise error
        if self._by_index is None:
            self._by_index = self._build_index()
        where = self._by_index[index]
        seg = self._segments[where >> 32]
        position = where & 0xFFFFFFFF
        tp = seg.topic_partition
        offset = seg.first_offset + position if seg.first_offset >= 0 else -1
        return RecordMetadata(
            tp.topic,
            tp.partition,
            tp,
            offset,
            seg.timestamp,
            seg.timestamp_type,
            seg.log_start_offset,
        )

    def _build_index(self) -> list[int]:
        by_index = [0] * self._count
        for s, seg in enumerate(self._segments):
            for position, i in enumerate(seg.indices):
                by_index[i] = s << 32 | position
        return by_index

    def __repr__(self) -> str:
        return f"<DeliveryReport records={self._count} failed={len(self.errors)}>"


class OffsetAndMetadata(NamedTuple):
    """A consumer offset to commit, with optional metadata (aiokafka's)."""

    offset: int
    metadata: str = ""
