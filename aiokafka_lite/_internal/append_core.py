"""The core of the accumulator's append: a record into a batch, a run of records into one.

Java's ``RecordAccumulator.append`` and ``tryAppend`` with no wait in them, synchronous:
the appender's doors (:class:`~aiokafka_lite._internal.appender.RecordAppender`) wait for
memory, hand over and report deliveries, and call these for the rest.

* :func:`append_record`: the one routine by which one record goes into a batch. Place it
  (its partition, or a keyless record's sticky partition: :func:`sticky_partition`), the
  open batch takes it or closes (a keyless record is then placed again), else a new
  batch; count its memory, and a keyless record's bytes for the sticky rule.
* :func:`append_run`: ``send_many()``'s records encoded a run at a time into one batch,
  their memory counted, the batch marked full when its limit stopped the run.

This module is the pure-Python twin; ``_cappend_core.pyx`` (used when it was built, see
:mod:`aiokafka_lite.speedups`) does the same with the batch's fields, its encoder and the
budget's count as C. ``send()``'s fast path (:mod:`~aiokafka_lite._internal.send_path`)
is :func:`append_record`'s one-record case on an open batch, written again there by design.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from .. import speedups
from .buffer_pool import BATCH_MEMORY, BULK_RECORD_MEMORY
from .hand_over import Fills, filled
from .records import record_size

if TYPE_CHECKING:
    from .placement import RecordPartitioner
    from .producer_batch import PartitionQueue, ProducerBatch
    from .records import Header
    from .send_path import MemoryBudget

__all__ = [
    "Appender",
    "append_record",
    "append_run",
    "py_append_record",
    "py_append_run",
    "py_sticky_partition",
    "sticky_partition",
]


class Appender(Fills, Protocol):
    """What the core reads and changes of its appender (a RecordAppender): the budget's
    count, the queues, and where a fill is reported (:func:`~.hand_over.filled`)."""

    @property
    def budget(self) -> MemoryBudget: ...  # the count of buffer_memory taken

    @property
    def queues(self) -> dict[str, dict[int, PartitionQueue]]: ...  # never replaced

    @property
    def batch_size(self) -> int: ...  # the batch limit of a partition with no queue yet

    def queue_for(self, topic: str, partition: int) -> PartitionQueue: ...

    def new_batch(self, q: PartitionQueue, timestamp: int) -> ProducerBatch: ...

    def discard_empty(self, batch: ProducerBatch) -> None: ...


def append_record(
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
) -> ProducerBatch | None:
    """The one way a record goes into a batch of ``acc`` (Java's ``RecordAccumulator.append``).

    Place it: ``partition``, or with ``keyless`` the topic's sticky partition. The
    partition's open batch takes it; a batch it does not fit is closed (marked full, the
    fill reported to :func:`~aiokafka_lite._internal.hand_over.filled`) and a keyless
    record is placed again (the closed batch may move the topic on). Else a new batch
    takes it. Its bytes, a new batch's ``BATCH_MEMORY`` and ``held`` (what the record
    holds beside its bytes) are counted in the budget and the batch; a keyless record's
    bytes (with a new batch's header) in the partitioner (``RecordPartitioner.update``).
    Returns the batch, whose last record it is; None, appending nothing, when ``need``
    bytes (plus ``BATCH_MEMORY`` if it must start a batch) are more than ``room``.
    """
    queues = acc.queues
    added = 0
    while True:
        if keyless is not None:
            partition = py_sticky_partition(acc, keyless, topic)
        try:
            q = queues[topic][partition]
        except KeyError:
            q = acc.queue_for(topic, partition)
        batches = q.batches
        if batches:
            batch = batches[-1]
            if not batch.full:
                if need > room:
                    return None
                added = batch.append(timestamp, key, value, headers, q.batch_limit)
                if not added:
                    batch.full = True
                    filled(acc)
                    if keyless is not None:
                        continue  # the closed batch may move the topic on: place again
        break
    if added:
        appended = added
    else:
        if need + BATCH_MEMORY > room:
            return None
        batch = acc.new_batch(q, timestamp)
        try:
            added = BATCH_MEMORY + batch.append(timestamp, key, value, headers, q.batch_limit)
        except BaseException:
            acc.discard_empty(batch)  # never leave an empty batch in the queue
            raise
        appended = len(batch.buf)  # (Java counts a new batch's header too)
    added += held
    batch.memory += added
    acc.budget.used += added  # (nothing above changed it: no await, no callback)
    if keyless is not None:
        limit = q.batch_limit
        keyless.update(topic, partition, appended, limit, len(batch.buf) >= limit)
    return batch


def sticky_partition(acc: Appender, keyless: RecordPartitioner, topic: str) -> int:
    """The topic's sticky partition for its next keyless record, moved on first if its
    bytes were reached and its batches are all full (Java's ``allBatchesFull``: none
    open, the last closed or sent). A batch at its limit but not marked full refuses the
    next record, which is then placed again: the same move."""
    partition = keyless.peek(topic)
    if keyless.produced.get(topic):
        q = acc.queues.get(topic, {}).get(partition)
        if q is None or not q.batches or q.batches[-1].full:
            limit = acc.batch_size if q is None else q.batch_limit
            partition = keyless.update(topic, partition, 0, limit, True)
    return partition


def append_run(
    acc: Appender,
    batch: ProducerBatch,
    timestamp: int,
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    base: int,
    order: list[int],
    pos: int,
    budget: int,
) -> int:
    """Encode ``order[pos:]`` (records of a ``send_many()`` call: record ``i``'s key and value
    are ``keys[i - base]`` and ``values[i - base]``) into ``batch`` up to its limit or
    ``budget`` bytes (each record counted with ``BULK_RECORD_MEMORY``).

    Counts the bytes in the batch and ``acc``'s budget; marks the batch full when the next
    record would not fit its limit (not when the budget stopped it). Returns the position
    it stopped at.
    """
    limit = batch.queue.batch_limit
    before, count = len(batch.buf), batch.count
    end = batch.append_many(
        timestamp, keys, values, order, pos, limit, budget, BULK_RECORD_MEMORY, base
    )
    added = len(batch.buf) - before + (batch.count - count) * BULK_RECORD_MEMORY
    batch.memory += added
    acc.budget.used += added
    if end < len(order):
        i = order[end] - base
        size = record_size(keys[i], values[i], None)  # (an upper bound)
        # Full only if the limit stopped the run: with room left in the budget for the
        # next record, the encoder refused it for the limit. Else the record is tried
        # again, exactly, by the next append.
        if len(batch.buf) + size > limit and added + size + BULK_RECORD_MEMORY <= budget:
            batch.full = True
    return end


# The pure functions stay reachable (tests run both); the compiled twin takes the names
# when it was built (see aiokafka_lite.speedups). The pure routine calls the pure
# py_sticky_partition, so that each side runs its own code only.
py_append_record = append_record
py_append_run = append_run
py_sticky_partition = sticky_partition
_compiled = speedups.compiled_module("_cappend_core")
if _compiled is not None and not TYPE_CHECKING:
    append_record = _compiled.append_record
    append_run = _compiled.append_run
    sticky_partition = _compiled.sticky_partition
