"""``send_many()``'s path: many ``(key, value)`` pairs to one topic, with one future for all.

Java sends record by record; aiokafka has no bulk send. Here a call's records are
checked, serialized and placed as ``send()`` would, a chunk at a time, and then each
partition's records of the chunk are encoded into its batches in one run
(:meth:`~aiokafka_lite._internal.appender.RecordAppender.append_run`): no future and no
call per record. Runs of plain records (bytes, no serializer, the default
partitioner) are placed in one call (:func:`~aiokafka_lite._internal.partitioner.place_plain`,
compiled when built), and plain keyless ones gathered in order with no check per record
beyond their type and size. Keyless records (with the default partitioner) are placed by
the accumulator as they are appended, a run at a time into the sticky partition's open
batch while no record of the run could move the topic on (KIP-794), so they land where
``send()`` would put them. The outcome reaches the call's
:class:`~aiokafka_lite._internal.bulk_delivery.BulkDelivery` per batch. A bad record fails
alone, in the delivery report. With interceptors, each record goes through
``send()`` instead (:func:`send_each`), so that they see it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from ..structs import DeliveryReport, RecordMetadata
from .accumulator import RecordAccumulator
from .bulk_delivery import BulkDelivery
from .partitioner import place_plain
from .placement import RecordPlacement
from .records import MAX_RECORD_OVERHEAD

__all__ = ["CHUNK", "send_each", "send_many", "send_runs"]

# Records of a send_many() call checked and placed at a time (see send_runs).
CHUNK = 4096

SendOne = Callable[[str, Any, Any, int | None], Awaitable[asyncio.Future[RecordMetadata]]]


async def send_many(
    acc: RecordAccumulator,
    placement: RecordPlacement,
    send: SendOne | None,
    topic: str,
    records: Iterable[tuple[Any, Any]],
    partition: int | None,
    parts: Sequence[Any],
    deadline: float,
) -> asyncio.Future[DeliveryReport]:
    """``records`` appended (through ``send``, when given), and the future of them all.

    ``partition`` and the metadata (``parts``) are checked and known; ``deadline``
    (monotonic) bounds the waits for memory.
    """
    items = records if isinstance(records, list) else list(records)
    delivery = BulkDelivery(acc.create_future(), topic, len(items))
    if send is not None:
        await send_each(send, topic, items, partition, delivery)
    else:
        await send_runs(acc, placement, topic, items, partition, parts, delivery, deadline)
    delivery.seal()
    return delivery.future


async def send_runs(
    acc: RecordAccumulator,
    placement: RecordPlacement,
    topic: str,
    items: list[tuple[Any, Any]],
    partition: int | None,
    parts: Sequence[Any],
    delivery: BulkDelivery,
    deadline: float,
) -> None:
    """Send ``items`` (none of them seen by interceptors) into ``delivery``.

    send()'s checks for a chunk of records at a time, then each partition's records of
    the chunk are encoded in one run. Chunks let the sender ship early batches while
    later ones are still being encoded.

    The keys and values (serialized) are held for one chunk only: record ``i`` of the
    chunk from ``lo`` is at ``keys[i - lo]``, ``values[i - lo]``, while the indices that
    reach ``delivery`` stay the records' own. A chunk's records are all encoded (or
    failed) before the next one is placed, and a record's slots are written before its
    index joins a run, so no run reads a slot left by another chunk (a record that fails
    its checks joins none). The lists are reused: a call's whole length would be two
    lists the garbage collector walks, slot by slot, in each collection it sees them.
    """
    count = len(items)
    keys: list[bytes | None] = [None] * min(CHUNK, count)
    values: list[bytes | None] = [None] * min(CHUNK, count)
    ts = int(time.time() * 1000)
    for lo in range(0, count, CHUNK):
        hi = min(lo + CHUNK, count)
        segments = _group(placement, topic, items, lo, hi, keys, values, partition, parts, delivery)
        for by_partition in segments:
            for p, order in by_partition.items():
                # p -1: keyless, placed where each is appended, as send() places them
                keyless = placement.partitioner if p < 0 else None
                await acc.append_run(
                    topic, p, ts, keys, values, lo, order, delivery, deadline, keyless
                )


def _group(
    placement: RecordPlacement,
    topic: str,
    items: list[tuple[Any, Any]],
    lo: int,
    hi: int,
    keys: list[bytes | None],
    values: list[bytes | None],
    partition: int | None,
    parts: Sequence[Any],
    delivery: BulkDelivery,
) -> list[dict[int, list[int]]]:
    """Check, serialize and place ``items[lo:hi]`` into keys/values (record ``i`` at
    ``i - lo``: they hold this chunk): segments of partition -> indices, in call order.
    A segment holds either keyed records (grouped by partition) or a run of keyless ones
    (under -1, placed as they are appended), so that each partition takes its records in
    call order."""
    segments: list[dict[int, list[int]]] = [{}]
    plain = placement.plain
    limit = placement.max_request_size - MAX_RECORD_OVERHEAD
    i = lo
    while i < hi:
        if plain:
            if partition is None and _keyless_plain(items[i], limit):
                order = _keyless_order(segments)
                i = _place_keyless(items, i, hi, keys, values, lo, limit, order)
                continue
            by_partition = segments[-1]
            if -1 in by_partition:
                by_partition = {}
                segments.append(by_partition)
            # A run of plain keyed records in one call (compiled when built).
            stop = place_plain(
                items,
                i,
                hi,
                keys,
                values,
                lo,
                partition,
                len(parts),
                limit,
                placement.partitioner.hashes,
                by_partition,
            )
            if stop > i or stop == hi:
                i = stop
                continue
        p = _group_one(placement, topic, items, i, keys, values, lo, partition, parts, delivery)
        if p is not None:
            if segments[-1] and ((p < 0) != (-1 in segments[-1])):
                segments.append({})  # keyed after keyless records, or keyless after keyed
            segments[-1].setdefault(p, []).append(i)
        i += 1
    return segments


def _keyless_plain(item: object, limit: int) -> bool:
    """Whether ``item`` is a plain keyless record: ``(None, bytes | None)`` of at most
    ``limit`` bytes (no serializer, default partitioner: nothing to check beyond this)."""
    if type(item) is not tuple or len(item) != 2 or item[0] is not None:
        return False
    value = item[1]
    return value is None or (type(value) is bytes and len(value) <= limit)


def _keyless_order(segments: list[dict[int, list[int]]]) -> list[int]:
    """The last segment's keyless indices, in a new segment after keyed records."""
    last = segments[-1]
    if last and -1 not in last:
        last = {}
        segments.append(last)
    return last.setdefault(-1, [])


def _place_keyless(
    items: list[tuple[Any, Any]],
    lo: int,
    hi: int,
    keys: list[bytes | None],
    values: list[bytes | None],
    base: int,
    limit: int,
    order: list[int],
) -> int:
    """Plain keyless records from ``items[lo]`` on into ``order`` (their partition is the
    sticky one, chosen as each is appended), each at ``i - base`` in keys/values; returns
    the first index that is not one."""
    for i in range(lo, hi):
        item = items[i]
        if not _keyless_plain(item, limit):
            return i
        keys[i - base] = None
        values[i - base] = item[1]
        order.append(i)
    return hi


def _group_one(
    placement: RecordPlacement,
    topic: str,
    items: list[tuple[Any, Any]],
    i: int,
    keys: list[bytes | None],
    values: list[bytes | None],
    base: int,
    partition: int | None,
    parts: Sequence[Any],
    delivery: BulkDelivery,
) -> int | None:
    """send()'s full checks, serializers and placement for record ``i`` alone (its key
    and value to ``i - base`` in keys/values): its partition (-1: keyless, placed when
    appended), None if it failed (its slots then untouched, and read by no run)."""
    try:
        k, v = items[i]
    except (TypeError, ValueError):
        delivery.record_failed(i, _not_a_pair(items[i], i, topic))
        return None
    try:
        k, v, _, _ = placement.prepare(topic, k, v, None)
        p = placement.partitioner.partition(topic, k, len(parts), partition)  # -1: keyless
    except Exception as e:  # this record only
        delivery.record_failed(i, e)
        return None
    keys[i - base] = k
    values[i - base] = v
    return p


async def send_each(
    send: SendOne,
    topic: str,
    items: list[tuple[Any, Any]],
    partition: int | None,
    delivery: BulkDelivery,
) -> None:
    """Send ``items`` through ``send()`` one by one: with interceptors, so that they see each."""
    for i, item in enumerate(items):
        try:
            k, v = item
        except (TypeError, ValueError):
            delivery.record_failed(i, _not_a_pair(item, i, topic))
            continue
        try:
            fut = await send(topic, v, k, partition)
        except Exception as e:  # this record only, as in send_runs
            delivery.record_failed(i, e)
        else:
            delivery.track(i, fut)


def _not_a_pair(item: object, index: int, topic: str) -> TypeError:
    return TypeError(
        f"records for {topic!r}: record {index} must be a (key, value) pair, "
        f"got {type(item).__name__}"
    )
