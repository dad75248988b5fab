"""The contract each pure module and its compiled twin share, as typing Protocols.

:data:`aiokafka_lite.speedups.TWINS` lists the twins and the names each compiled module
gives its pure module; this module says what each of those names must be: a class's
constructor, attributes and methods, a function's parameters, a constant's type.
``mypy aiokafka_lite`` (strict) checks every pure implementation against its contract
(the assignments under ``TYPE_CHECKING`` at the end). ``tests/test_speedups.py`` checks
every compiled twin against the same contract at run time (the same members, the same
parameter names, kinds and defaults), and that the contract names every public member
of the pure implementation, so neither side can gain or change what the other lacks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..structs import BatchRecordMetadata, RecordMetadata, TopicPartition
    from .append_core import Appender
    from .compression import Compressor
    from .delivery import RecordFutures
    from .hand_over import Declined
    from .partitioner import KeyHashCache
    from .placement import RecordPartitioner
    from .producer_batch import ProducerBatch
    from .records import Header
    from .send_path import Accumulator

__all__ = ["CONTRACTS"]

# -- _crecords / records ------------------------------------------------------------------


class RecordBatchBuilderContract(Protocol):
    """``records.RecordBatchBuilder``: one batch's records, encoded as they are appended."""

    base_timestamp: int
    buf: bytearray
    codec_id: int
    compress: Compressor | None
    count: int
    max_timestamp: int

    @property
    def size(self) -> int: ...

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] | None,
        limit: int,
    ) -> int: ...

    def append_many(
        self,
        timestamp: int,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        order: Sequence[int],
        start: int,
        limit: int,
        budget: int,
        per_record: int = 0,
        base: int = 0,
    ) -> int: ...

    def close(
        self,
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
    ) -> bytearray: ...


class NewRecordBatchBuilder(Protocol):
    def __call__(
        self, base_timestamp: int, compress: Compressor | None = None, codec_id: int = 0
    ) -> RecordBatchBuilderContract: ...


# -- _cpartitioner / partitioner ----------------------------------------------------------


class Murmur2(Protocol):
    def __call__(self, data: bytes) -> int: ...


class DefaultPartition(Protocol):
    def __call__(self, key: bytes, num_partitions: int) -> int: ...


class PlacePlain(Protocol):
    def __call__(
        self,
        items: list[tuple[object, object]],
        lo: int,
        hi: int,
        keys: list[bytes | None],
        values: list[bytes | None],
        base: int,
        partition: int | None,
        num_partitions: int,
        max_size: int,
        hashes: KeyHashCache,
        by_partition: dict[int, list[int]],
    ) -> int: ...


class StickyMovesOn(Protocol):
    def __call__(self, produced: int, limit: int, batch_full: bool) -> bool: ...


# -- _cdelivery / delivery ----------------------------------------------------------------


class RecordFuturesContract(Protocol):
    """``delivery.RecordFutures``: one batch's record futures, resolved in one call."""

    loop: asyncio.AbstractEventLoop
    settled: bool

    def add(self, offset_delta: int, timestamp: int) -> asyncio.Future[RecordMetadata]: ...

    def complete(
        self, tp: TopicPartition, base_offset: int, log_append_time: int, log_start_offset: int
    ) -> None: ...

    def complete_none(self) -> None: ...

    def fail(self, exc: BaseException) -> None: ...


class NewRecordFutures(Protocol):
    def __call__(self, loop: asyncio.AbstractEventLoop) -> RecordFuturesContract: ...


# -- _csend_path / send_path --------------------------------------------------------------


class ProducerBatchBaseContract(RecordBatchBuilderContract, Protocol):
    """``send_path.ProducerBatchBase``: the base class of a ProducerBatch, its encoder plus
    what ``SendPath.append`` changes."""

    full: bool
    memory: int
    records: RecordFutures  # whichever build's: the twins of one build go together


class NewProducerBatchBase(Protocol):
    def __call__(
        self, base_timestamp: int, compress: Compressor | None = None, codec_id: int = 0
    ) -> ProducerBatchBaseContract: ...


class MemoryBudgetContract(Protocol):
    """``send_path.MemoryBudget``: the bytes of ``buffer_memory`` taken."""

    used: int


class NewMemoryBudget(Protocol):
    def __call__(self) -> MemoryBudgetContract: ...


class SendPathContract(Protocol):
    """``send_path.SendPath``: ``send()``'s fast path."""

    def append(
        self, topic: Any, key: Any, value: Any
    ) -> asyncio.Future[RecordMetadata] | Declined: ...


class NewSendPath(Protocol):
    def __call__(
        self, acc: Accumulator, partitioner: RecordPartitioner, max_request_size: int
    ) -> SendPathContract: ...


# -- _cappend_core / append_core ----------------------------------------------------------


class AppendRecord(Protocol):
    def __call__(
        self,
        acc: Appender,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] | None,
        keyless: RecordPartitioner | None,
        need: int,
        room: int,
        held: int,
    ) -> ProducerBatch | None: ...


class StickyPartition(Protocol):
    def __call__(self, acc: Appender, keyless: RecordPartitioner, topic: str) -> int: ...


class AppendRun(Protocol):
    def __call__(
        self,
        acc: Appender,
        batch: ProducerBatch,
        timestamp: int,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        base: int,
        order: list[int],
        pos: int,
        budget: int,
    ) -> int: ...


# -- _cbatch_builder / batch_builder ------------------------------------------------------


class BatchBuilderContract(Protocol):
    """``batch_builder.BatchBuilder``: what ``create_batch()`` returns."""

    def append(
        self,
        *,
        key: Any = None,
        value: Any = None,
        timestamp: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> BatchRecordMetadata | None: ...

    def close(self) -> None: ...

    def closed(self) -> bool: ...

    def record_count(self) -> int: ...

    def size(self) -> int: ...


class NewBatchBuilder(Protocol):
    def __call__(
        self,
        batch_size: int,
        compress: Compressor | None = None,
        codec_id: int = 0,
        *,
        key_serializer: Callable[[Any], bytes | None] | None = None,
        value_serializer: Callable[[Any], bytes | None] | None = None,
    ) -> BatchBuilderContract: ...


#: For each compiled module of ``speedups.TWINS`` that has a pure module: each name it
#: gives that module -> (the contract of what the name is called with, the contract of
#: what it makes, or None for a function; for a constant, its type and None).
CONTRACTS: dict[str, dict[str, tuple[type, type | None]]] = {
    "_crecords": {"RecordBatchBuilder": (NewRecordBatchBuilder, RecordBatchBuilderContract)},
    "_cpartitioner": {
        "murmur2": (Murmur2, None),
        "murmur2_u32": (Murmur2, None),
        "default_partition": (DefaultPartition, None),
        "place_plain": (PlacePlain, None),
        "sticky_moves_on": (StickyMovesOn, None),
    },
    "_cdelivery": {
        "RecordFutures": (NewRecordFutures, RecordFuturesContract),
        "RECORD_MEMORY": (int, None),
        "FUTURES_MEMORY": (int, None),
    },
    "_csend_path": {
        "SendPath": (NewSendPath, SendPathContract),
        "ProducerBatchBase": (NewProducerBatchBase, ProducerBatchBaseContract),
        "MemoryBudget": (NewMemoryBudget, MemoryBudgetContract),
    },
    "_cappend_core": {
        "append_record": (AppendRecord, None),
        "append_run": (AppendRun, None),
        "sticky_partition": (StickyPartition, None),
    },
    "_cbatch_builder": {"BatchBuilder": (NewBatchBuilder, BatchBuilderContract)},
}

if TYPE_CHECKING:  # mypy checks each pure implementation against its contract
    from . import append_core, batch_builder, delivery, partitioner, records, send_path

    _records: NewRecordBatchBuilder = records.PyRecordBatchBuilder
    _murmur2: Murmur2 = partitioner.py_murmur2
    _murmur2_u32: Murmur2 = partitioner.py_murmur2_u32
    _default_partition: DefaultPartition = partitioner.py_default_partition
    _place_plain: PlacePlain = partitioner.py_place_plain
    _sticky_moves_on: StickyMovesOn = partitioner.py_sticky_moves_on
    _futures: NewRecordFutures = delivery.PyRecordFutures
    _record_memory: int = delivery.PY_RECORD_MEMORY
    _futures_memory: int = delivery.PY_FUTURES_MEMORY
    _send_path: NewSendPath = send_path.PySendPath
    _producer_batch_base: NewProducerBatchBase = send_path.PyProducerBatchBase
    _memory_budget: NewMemoryBudget = send_path.PyMemoryBudget
    _batch_builder: NewBatchBuilder = batch_builder.PyBatchBuilder
    _append_record: AppendRecord = append_core.py_append_record
    _append_run: AppendRun = append_core.py_append_run
    _sticky_partition: StickyPartition = append_core.py_sticky_partition
