"""``send()``'s fast path: a plain record appended to its partition's open batch.

Most records a producer sends are the same case: a bytes key and a bytes value (or None),
or no key and a bytes value; no headers, no explicit partition or timestamp, a topic
whose partitions are known, room in the budget and in the partition's open batch. A
keyless record goes to the topic's sticky partition while its open batch takes it, and
its bytes are counted as the general path counts them (Java's rule: see
:meth:`~aiokafka_lite.placement.RecordPlacement.sticky_appended`), moving the topic on
when :func:`~aiokafka_lite.partitioner.sticky_moves_on` says so.
:meth:`SendPath.append` does exactly that case, start to end (size, murmur2 or sticky
placement, timestamp, encode, memory, future), and returns None for anything else,
having changed nothing the general path would see differently (it may have remembered
the key's hash). When the record does not fit the open batch it marks the batch full,
as the general path would, and returns False: the task filled a batch (see
:mod:`aiokafka_lite.hand_over`). ``send()`` then takes its general path, which checks
each argument, waits for metadata or memory and starts new batches.

It is Java's ``RecordAccumulator.tryAppend`` on the last batch, with the partitioner's
hash in front. :class:`BatchCore` is the part of a
:class:`~aiokafka_lite.producer_batch.ProducerBatch` it reads and writes, and
:class:`PoolCore` the :class:`~aiokafka_lite.buffer_pool.BufferPool`'s count of bytes
taken. This module is
the pure-Python twin; ``_csend_path.pyx`` (used when it was built, see
:mod:`aiokafka_lite.speedups`) does the same in C, with those fields as C fields, so
that a record on this path runs no interpreted code from the fast path's call to its
future.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from . import speedups
from .delivery import RecordFutures
from .partitioner import py_sticky_moves_on
from .records import RecordBatchBuilder

if TYPE_CHECKING:
    from .metadata import Metadata
    from .partitioner import KeyHashCache
    from .structs import RecordMetadata

__all__ = [
    "BatchCore",
    "PoolCore",
    "PyBatchCore",
    "PyPoolCore",
    "PySendPath",
    "SendPath",
]


class BatchCore(RecordBatchBuilder):
    """A batch's encoder plus what :meth:`SendPath.append` changes beside its bytes."""

    __slots__ = ("full", "memory", "records")

    full: bool  # no more appends: filled up, or drained for sending
    memory: int  # bytes of buffer_memory the batch holds
    records: RecordFutures  # the futures of its send() records


class PoolCore:
    """The ``buffer_memory`` budget's count of bytes taken (a BufferPool's ``budget``),
    which :meth:`SendPath.append` changes too."""

    __slots__ = ("used",)

    def __init__(self) -> None:
        self.used = 0  # bytes of the budget taken


class PartitionBatches(Protocol):
    """What the fast path reads of a partition's queue (a PartitionQueue)."""

    @property
    def batches(self) -> Sequence[BatchCore]: ...  # oldest first, the last may be open

    @property
    def batch_limit(self) -> int: ...  # the uncompressed bytes its open batch may take


class SendPath:
    """The fast path of one producer's ``send()`` (see the module docstring)."""

    __slots__ = (
        "_bound",
        "_hash",
        "_limit",
        "_max_size",
        "_metadata",
        "_move_on",
        "_overhead",
        "_peek",
        "_pool",
        "_queues",
        "_record_memory",
        "_sticky",
        "_sticky_bytes",
        "_waiters",
    )

    def __init__(
        self,
        metadata: Metadata,
        hashes: KeyHashCache,
        pool: PoolCore,
        limit: int,
        waiters: collections.deque[Any],
        queues: Mapping[str, Mapping[int, PartitionBatches]],
        max_request_size: int,
        record_overhead: int,
        record_memory: int,
        send_bound: int,
        sticky: dict[str, int],
        sticky_bytes: dict[str, int],
        move_on: Callable[[str], int],
    ) -> None:
        self._metadata = metadata
        self._peek = hashes.peek
        self._hash = hashes.hash
        self._pool = pool  # the accumulator's count of buffer_memory taken (its budget)
        self._queues = queues  # the accumulator's topic -> partition -> queue (never replaced)
        self._waiters = waiters  # the callers waiting for the budget (never replaced either)
        self._limit = limit  # buffer_memory
        self._max_size = max_request_size
        self._overhead = record_overhead  # the most a record adds besides key and value
        self._record_memory = record_memory  # buffer_memory a record holds besides its bytes
        self._bound = send_bound  # ... and what it may take, should it start a batch
        # Keyless records: the placement's sticky partition per topic, the bytes its
        # keyless records added there, and what moves the topic on.
        self._sticky = sticky
        self._sticky_bytes = sticky_bytes
        self._move_on = move_on

    def append(
        self, topic: Any, key: Any, value: Any
    ) -> asyncio.Future[RecordMetadata] | Literal[False] | None:
        """Append the record and return its future; False if it did not fit the open
        batch (now marked full); None if it is not the plain case."""
        try:
            parts = self._metadata.partitions_by_topic.get(topic)
        except TypeError:  # unhashable: the general path names the problem
            return None
        if parts is None:
            return None
        if key is None:
            if type(value) is not bytes:
                return None
            size = self._overhead + len(value)
        elif type(key) is not bytes:
            return None
        elif type(value) is bytes:
            size = self._overhead + len(key) + len(value)
        elif value is None:
            size = self._overhead + len(key)
        else:
            return None
        pool = self._pool
        if size > self._max_size or self._waiters or pool.used + size + self._bound > self._limit:
            return None
        if key is None:  # the topic's sticky partition (its open batch: no move before)
            if type(topic) is not str:  # (a str subclass could run code in the dict lookups)
                return None
            partition = self._sticky.get(topic)
            if partition is None or partition >= len(parts):
                return None
        else:
            h = self._peek(key)
            if h is None:
                h = self._hash(key)
            partition = h % len(parts)
        parts_of_topic = self._queues.get(topic)
        if parts_of_topic is None:
            return None
        q = parts_of_topic.get(partition)
        if q is None or not q.batches:
            return None
        batch: BatchCore = q.batches[-1]
        if batch.full:
            return None
        ms = time.time() * 1000
        if not -9.2e18 < ms < 9.2e18:  # NaN, infinite or past int64: the general path
            return None  # raises as int(time.time() * 1000) does
        timestamp = int(ms)
        added = batch.append(timestamp, key, value, None, q.batch_limit)
        if not added:
            batch.full = True  # as append would mark it; the general path starts the next
            return False
        appended = added
        added += self._record_memory
        batch.memory += added
        pool.used += added
        fut: asyncio.Future[RecordMetadata] = batch.records.add(batch.count - 1, timestamp)
        if key is None:  # as RecordPlacement.sticky_appended
            produced = self._sticky_bytes.get(topic, 0) + appended
            limit = q.batch_limit
            if py_sticky_moves_on(produced, limit, len(batch.buf) >= limit):
                self._move_on(topic)
            else:
                self._sticky_bytes[topic] = produced
        return fut


# The pure class stays reachable (tests run both); the compiled twin takes the name
# when it was built (see aiokafka_lite.speedups).
PySendPath = SendPath
PyBatchCore = BatchCore
PyPoolCore = PoolCore
_compiled = speedups.compiled_module("_csend_path")
if _compiled is not None and not TYPE_CHECKING:
    SendPath = _compiled.SendPath
    BatchCore = _compiled.BatchCore
    PoolCore = _compiled.PoolCore
