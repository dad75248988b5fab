"""``send()``'s fast path: a plain record appended to its partition's open batch.

Most records a producer sends are the same case: a bytes key and a bytes value (or None),
or no key and a bytes value; no headers, no explicit partition or timestamp, a topic
whose partitions are known, room in the budget and in the partition's open batch. A
keyless record goes to the topic's sticky partition while its open batch takes it, and
its bytes are counted as the general path counts them (Java's rule:
:meth:`~aiokafka_lite._internal.placement.RecordPartitioner.update`).
:meth:`SendPath.append` does exactly that case, start to end (size, murmur2 or sticky
placement, timestamp, encode, memory, future), and answers :data:`NOT_PLAIN` for
anything else, having changed nothing the general path would see differently (it may
have remembered the key's hash). When the record does not fit the open batch it marks
the batch full, as the general path would, and answers :data:`FILLED`: the task filled
a batch (see :mod:`aiokafka_lite._internal.hand_over`). ``send()`` then takes its general
path, which checks each argument, waits for metadata or memory and starts new batches.

It is Java's ``RecordAccumulator.tryAppend`` on the last batch, with the partitioner's
hash in front. :class:`ProducerBatchBase` is the base class of
:class:`~aiokafka_lite._internal.producer_batch.ProducerBatch`: the part of a batch it
reads and writes. :class:`MemoryBudget` is the
:class:`~aiokafka_lite._internal.buffer_pool.BufferPool`'s count of ``buffer_memory``
bytes taken (its ``budget``). This module is the pure-Python twin; ``_csend_path.pyx``
(used when it was built, see :mod:`aiokafka_lite.speedups`) does the same in C, with
those fields as C fields, so that a record on this path runs no interpreted code from
the fast path's call to its future.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .. import speedups
from .delivery import RecordFutures
from .hand_over import FILLED, NOT_PLAIN, Declined
from .records import MAX_RECORD_OVERHEAD, RecordBatchBuilder

if TYPE_CHECKING:
    from ..structs import RecordMetadata
    from .placement import RecordPartitioner

__all__ = [
    "FILLED",
    "NOT_PLAIN",
    "Declined",
    "MemoryBudget",
    "ProducerBatchBase",
    "PyMemoryBudget",
    "PyProducerBatchBase",
    "PySendPath",
    "SendPath",
]


class ProducerBatchBase(RecordBatchBuilder):
    """The base class of a ProducerBatch: its encoder plus the fields
    :meth:`SendPath.append` changes beside its bytes (C fields in the compiled twin)."""

    __slots__ = ("full", "memory", "records")

    full: bool  # no more appends: filled up, or drained for sending
    memory: int  # bytes of buffer_memory the batch holds
    records: RecordFutures  # the futures of its send() records


class MemoryBudget:
    """The ``buffer_memory`` budget's count of bytes taken (a BufferPool's ``budget``),
    which :meth:`SendPath.append` changes too (a C field in the compiled twin)."""

    __slots__ = ("used",)

    def __init__(self) -> None:
        self.used = 0  # bytes of the budget taken


class PartitionBatches(Protocol):
    """What the fast path reads of a partition's queue (a PartitionQueue)."""

    @property
    def batches(self) -> Sequence[ProducerBatchBase]: ...  # oldest first, the last may be open

    @property
    def batch_limit(self) -> int: ...  # the uncompressed bytes its open batch may take


class Accumulator(Protocol):
    """What the fast path reads of its accumulator (a RecordAccumulator), never replaced."""

    @property
    def budget(self) -> MemoryBudget: ...  # the count of buffer_memory taken

    @property
    def limit(self) -> int: ...  # buffer_memory

    @property
    def waiters(self) -> collections.deque[Any]: ...  # callers waiting for the budget

    @property
    def queues(self) -> Mapping[str, Mapping[int, PartitionBatches]]: ...


class SendPath:
    """The fast path of one producer's ``send()`` (see the module docstring).

    Built by its accumulator
    (:meth:`~aiokafka_lite._internal.appender.RecordAppender.send_path`) over the
    accumulator's own budget, waiters and queues and the producer's
    :class:`~aiokafka_lite._internal.placement.RecordPartitioner`: it reads and changes
    them in place.
    """

    __slots__ = (
        "_bound",
        "_budget",
        "_hash",
        "_limit",
        "_max_size",
        "_metadata",
        "_peek",
        "_queues",
        "_record_memory",
        "_sticky",
        "_update",
        "_waiters",
    )

    def __init__(
        self, acc: Accumulator, partitioner: RecordPartitioner, max_request_size: int
    ) -> None:
        self._metadata = partitioner.metadata
        self._peek = partitioner.hashes.peek
        self._hash = partitioner.hashes.hash
        self._sticky = partitioner.current  # keyless: each topic's sticky partition
        self._update = partitioner.update  # ... and what counts a keyless append
        self._budget = acc.budget  # the accumulator's count of buffer_memory taken
        self._queues = acc.queues  # its topic -> partition -> queue (never replaced)
        self._waiters = acc.waiters  # the callers waiting for the budget (never replaced)
        self._limit = acc.limit  # buffer_memory
        self._max_size = max_request_size
        from .buffer_pool import SEND_BOUND, SEND_RECORD_MEMORY  # (it imports MemoryBudget)

        self._record_memory = SEND_RECORD_MEMORY  # buffer_memory a record holds besides its bytes
        self._bound = SEND_BOUND  # ... and what it may take, should it start a batch

    def append(self, topic: Any, key: Any, value: Any) -> asyncio.Future[RecordMetadata] | Declined:
        """Append the record and return its future; else why not: :data:`FILLED` (it did
        not fit the open batch, now marked full) or :data:`NOT_PLAIN` (not this case).

        The first step of ``send()``, before the accumulator's door: the one-record case
        of the appender's routine (``append_core.append_record``) on an open batch,
        written again here by design (no Python call from ``send()`` to its future). Its
        placement, memory and count of a keyless record's bytes must stay that routine's
        (``tests/test_entry_points.py``, ``tests/test_sticky_partitioning.py``)."""
        try:
            parts = self._metadata.partitions_by_topic.get(topic)
        except TypeError:  # unhashable: the general path names the problem
            return NOT_PLAIN
        if parts is None:
            return NOT_PLAIN
        if key is None:
            if type(value) is not bytes:
                return NOT_PLAIN
            size = MAX_RECORD_OVERHEAD + len(value)
        elif type(key) is not bytes:
            return NOT_PLAIN
        elif type(value) is bytes:
            size = MAX_RECORD_OVERHEAD + len(key) + len(value)
        elif value is None:
            size = MAX_RECORD_OVERHEAD + len(key)
        else:
            return NOT_PLAIN
        budget = self._budget
        if size > self._max_size or self._waiters or budget.used + size + self._bound > self._limit:
            return NOT_PLAIN
        if key is None:  # the topic's sticky partition (its open batch: no move before)
            if type(topic) is not str:  # (a str subclass could run code in the dict lookups)
                return NOT_PLAIN
            partition = self._sticky.get(topic)
            if partition is None or partition >= len(parts):
                return NOT_PLAIN
        else:
            h = self._peek(key)
            if h is None:
                h = self._hash(key)
            partition = h % len(parts)
        parts_of_topic = self._queues.get(topic)
        if parts_of_topic is None:
            return NOT_PLAIN
        q = parts_of_topic.get(partition)
        if q is None or not q.batches:
            return NOT_PLAIN
        batch: ProducerBatchBase = q.batches[-1]
        if batch.full:
            return NOT_PLAIN
        ms = time.time() * 1000
        if not -9.2e18 < ms < 9.2e18:  # NaN, infinite or past int64: the general path
            return NOT_PLAIN  # raises as int(time.time() * 1000) does
        timestamp = int(ms)
        limit = q.batch_limit
        added = batch.append(timestamp, key, value, None, limit)
        if not added:
            batch.full = True  # as append would mark it; the general path starts the next
            return FILLED
        memory = added + self._record_memory
        batch.memory += memory
        budget.used += memory
        fut: asyncio.Future[RecordMetadata] = batch.records.add(batch.count - 1, timestamp)
        if key is None:  # counted as the accumulator's append counts it
            self._update(topic, partition, added, limit, len(batch.buf) >= limit)
        return fut


# The pure class stays reachable (tests run both); the compiled twin takes the name
# when it was built (see aiokafka_lite.speedups).
PySendPath = SendPath
PyProducerBatchBase = ProducerBatchBase
PyMemoryBudget = MemoryBudget
_compiled = speedups.compiled_module("_csend_path")
if _compiled is not None and not TYPE_CHECKING:
    SendPath = _compiled.SendPath
    ProducerBatchBase = _compiled.ProducerBatchBase
    MemoryBudget = _compiled.MemoryBudget
