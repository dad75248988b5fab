"""The accumulator's append core (:mod:`aiokafka_lite._internal.append_core`, in C when built).

``append_record`` (one record into a batch: place, the open batch or a new one, memory,
the sticky count) and ``append_run`` (a run of ``send_many()`` records into one batch)
run on a real accumulator and a real partitioner. Each implementation is checked for
what it must do (a keyless record that closes a batch is placed again, a refusal changes
nothing, a run stopped by the budget does not close its batch), and both side by side:
the same operations on identical accumulators leave the same batches (bytes, counts,
memory, full marks), the same budget and the same sticky state. The pure one always, the
compiled one when built (it reads the compiled batches as C).
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiokafka_lite import speedups
from aiokafka_lite._internal import append_core
from aiokafka_lite._internal.accumulator import RecordAccumulator
from aiokafka_lite._internal.buffer_pool import BATCH_MEMORY, BULK_RECORD_MEMORY
from aiokafka_lite._internal.placement import RecordPartitioner
from aiokafka_lite._internal.records import record_size
from aiokafka_lite.testing.mock_parts import AllAvailable

TS = 1_700_000_000_000
TOPIC = "t"
PARTITIONS = 4
HELD = 100  # what a record holds beside its bytes (a send()'s future, say)


class Core:
    """One implementation of the core's three functions."""

    def __init__(self, record: Any, run: Any, sticky: Any) -> None:
        self.append_record = record
        self.append_run = run
        self.sticky_partition = sticky


PURE = Core(
    append_core.py_append_record, append_core.py_append_run, append_core.py_sticky_partition
)
IMPLS = [pytest.param(PURE, id="pure")]
if speedups.COMPILED:  # the compiled twin needs the compiled batches it reads as C
    COMPILED = Core(append_core.append_record, append_core.append_run, append_core.sticky_partition)
    IMPLS.append(pytest.param(COMPILED, id="compiled"))


def parts(
    batch_size: int = 1000, buffer_memory: int = 1 << 24, seed: int = 7
) -> tuple[RecordAccumulator, RecordPartitioner]:
    """An accumulator and a partitioner over a topic of PARTITIONS partitions, all up."""
    acc = RecordAccumulator(
        batch_size=batch_size,
        linger_ms=0,
        buffer_memory=buffer_memory,
        delivery_timeout_ms=60_000,
        max_in_flight_per_partition=5,
        wakeup=lambda: None,
    )
    keyless = RecordPartitioner(None, batch_size, random.Random(seed))
    keyless.metadata = AllAvailable(lambda topic: PARTITIONS)  # type: ignore[assignment]
    return acc, keyless


def state(acc: RecordAccumulator, keyless: RecordPartitioner) -> tuple[Any, ...]:
    """Everything the core may change: every batch, the budget, the sticky state, fills."""
    batches = tuple(
        (
            topic,
            p,
            q.batch_limit,
            tuple(
                (bytes(b.buf), b.count, b.memory, b.full, b.base_timestamp, b.max_timestamp)
                for b in q.batches
            ),
        )
        for topic, queues in sorted(acc.queues.items())
        for p, q in sorted(queues.items())
    )
    return (
        batches,
        acc.budget.used,
        dict(keyless.current),
        dict(keyless.produced),
        acc.fills,
        len(acc._incomplete),
        sorted(q.tp for q in acc._nonempty),
    )


def open_batch(acc: RecordAccumulator, partition: int) -> Any:
    q = acc.queue_for(TOPIC, partition)
    return q.batches[-1] if q.batches and not q.batches[-1].full else None


def keyless_record(
    core: Core, acc: RecordAccumulator, keyless: RecordPartitioner, size: int
) -> Any:
    """A keyless record of a ``size``-byte value, with room for it."""
    return core.append_record(acc, TOPIC, -1, TS, None, b"v" * size, None, keyless, 0, 1 << 40, 0)


# -- what each implementation does ---------------------------------------------------------


@pytest.mark.parametrize("core", IMPLS)
async def test_a_new_batch_counts_its_header_and_memory(core: Core) -> None:
    acc, _ = parts()
    batch = core.append_record(acc, TOPIC, 2, TS, b"k", b"value", None, None, 0, 1 << 40, HELD)
    assert batch is open_batch(acc, 2)
    assert batch.count == 1
    assert batch.memory == BATCH_MEMORY + len(batch.buf) - 61 + HELD  # (61: the header)
    assert acc.budget.used == batch.memory
    before = batch.memory
    again = core.append_record(acc, TOPIC, 2, TS + 1, b"k", b"value", None, None, 0, 1, HELD)
    assert again is batch and batch.count == 2  # the open batch takes it (need 0 <= room 1)
    assert acc.budget.used == batch.memory > before


@pytest.mark.parametrize("core", IMPLS)
async def test_a_refusal_returns_none_and_changes_nothing(core: Core) -> None:
    acc, keyless = parts()
    core.append_record(acc, TOPIC, 1, TS, b"k", b"v" * 50, None, None, 0, 1 << 40, HELD)
    acc.queue_for(TOPIC, 0)  # (a queue with no batch: a refusal there may make it)
    before = state(acc, keyless)
    # An open batch: need over room.
    assert core.append_record(acc, TOPIC, 1, TS, b"k", b"v", None, None, 80, 79, HELD) is None
    # No open batch: need fits, but not with a new batch's memory.
    room = 80 + BATCH_MEMORY - 1
    assert core.append_record(acc, TOPIC, 0, TS, b"k", b"v", None, None, 80, room, HELD) is None
    assert state(acc, keyless) == before


@pytest.mark.parametrize("core", IMPLS)
async def test_a_keyless_record_that_closes_a_batch_is_placed_again(core: Core) -> None:
    acc, keyless = parts(batch_size=1000)
    batch = keyless_record(core, acc, keyless, 300)  # 309 bytes a record: 3 a batch
    fills = 0
    while fills < 2:
        open_, produced, partition = batch, keyless.produced[TOPIC], keyless.current[TOPIC]
        before = acc.fills
        batch = keyless_record(core, acc, keyless, 300)
        if acc.fills == before:
            assert batch is open_
            continue
        fills += 1  # the record did not fit: it closed the batch and went to a new one
        assert open_.full and batch is not open_ and batch.count == 1
        if fills == 1:  # 1,000 bytes not counted yet: the same partition
            assert produced < 1000
            assert batch.queue.tp.partition == partition
            assert keyless.produced[TOPIC] == produced + len(batch.buf)
        else:  # counted: the closed batch moved the topic on, the record counted there
            assert produced >= 1000
            assert keyless.current[TOPIC] == batch.queue.tp.partition
            assert keyless.produced[TOPIC] == len(batch.buf)  # (with the batch's header)


@pytest.mark.parametrize("core", IMPLS)
async def test_the_sticky_partition_moves_on_when_its_batches_are_all_full(core: Core) -> None:
    acc, keyless = parts(batch_size=1000)
    for _ in range(4):  # 309 bytes a record: the 4th closes the first batch, starts one
        batch = keyless_record(core, acc, keyless, 300)
    produced = keyless.produced[TOPIC]
    assert produced >= 1000 and batch.count == 1 and not batch.full
    p = batch.queue.tp.partition
    assert core.sticky_partition(acc, keyless, TOPIC) == p  # an open batch: it stays
    assert keyless.produced[TOPIC] == produced
    batch.full = True  # (drained by the sender)
    moved = core.sticky_partition(acc, keyless, TOPIC)
    assert keyless.current[TOPIC] == moved
    assert keyless.produced[TOPIC] == 0  # moved on (maybe to the same partition, drawn)


@pytest.mark.parametrize("core", IMPLS)
async def test_a_run_is_counted_and_closes_its_batch_only_at_the_limit(core: Core) -> None:
    acc, _ = parts(batch_size=1000)
    batch = core.append_record(acc, TOPIC, 0, TS, b"k", b"v", None, None, 0, 1 << 40, HELD)
    keys = [b"key-%d" % i for i in range(40)]
    values = [b"x" * 60] * 40
    order = list(range(40))[::-1]
    used, memory, size = acc.budget.used, batch.memory, len(batch.buf)
    # A budget for three records: the run stops there, the batch stays open.
    per = record_size(keys[0], values[0], None) + BULK_RECORD_MEMORY
    end = core.append_run(acc, batch, TS, keys, values, 0, order, 0, 3 * per)
    assert end == 3 and not batch.full
    added = len(batch.buf) - size + 3 * BULK_RECORD_MEMORY
    assert (batch.memory - memory, acc.budget.used - used) == (added, added)
    # No budget bound: the batch limit stops it, and closes the batch.
    end = core.append_run(acc, batch, TS, keys, values, 0, order, end, 1 << 40)
    assert 3 < end < 40 and batch.full
    assert len(batch.buf) <= 1000 < len(batch.buf) + record_size(keys[end], values[end], None)


@pytest.mark.parametrize("core", IMPLS)
async def test_a_record_the_encoder_refuses_leaves_no_batch_behind(core: Core) -> None:
    acc, keyless = parts()
    acc.queue_for(TOPIC, 3)
    before = state(acc, keyless)
    with pytest.raises(TypeError):
        core.append_record(acc, TOPIC, 3, TS, "not bytes", b"v", None, None, 0, 1 << 40, HELD)
    assert state(acc, keyless) == before
    assert not acc.has_pending()


# -- both side by side ---------------------------------------------------------------------

payload = st.binary(max_size=400)
record_op = st.tuples(
    st.just("record"),
    st.none() | st.integers(0, PARTITIONS - 1),  # None: keyless
    st.none() | st.binary(max_size=20),  # key (of a record with a partition)
    payload,
    st.none() | st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8))),
    st.integers(0, 3000),  # need
    st.integers(0, 3000) | st.just(1 << 40),  # room
    st.integers(0, 70),  # timestamp delta
)
run_op = st.tuples(
    st.just("run"),
    st.none() | st.integers(0, PARTITIONS - 1),  # None: the sticky partition's
    st.lists(st.tuples(st.none() | st.binary(max_size=20), payload), max_size=30),
    st.integers(0, 4000) | st.just(1 << 40),  # budget
    st.integers(0, 70),
)
take_op = st.tuples(st.just("take"), st.integers(0, PARTITIONS - 1))  # the sender drains
ops_strategy = st.lists(st.one_of(record_op, run_op, take_op), max_size=40)


def play(core: Core, ops: list[Any], batch_size: int, seed: int) -> list[Any]:
    """Run ``ops`` through ``core`` on fresh parts; what each returned, then the state."""

    async def go() -> list[Any]:
        acc, keyless = parts(batch_size=batch_size, seed=seed)
        seen: list[Any] = []
        for op in ops:
            if op[0] == "record":
                _, partition, key, value, headers, need, room, delta = op
                sticky = keyless if partition is None else None
                batch = core.append_record(
                    acc, TOPIC, -1 if partition is None else partition, TS + delta,
                    None if partition is None else key, value, headers, sticky, need, room,
                    HELD,
                )  # fmt: skip
                seen.append(None if batch is None else (batch.queue.tp, batch.count))
            elif op[0] == "run":
                _, partition, pairs, budget, delta = op
                if partition is None:
                    partition = core.sticky_partition(acc, keyless, TOPIC)
                batch = open_batch(acc, partition)
                if batch is None:
                    batch = acc.new_batch(acc.queue_for(TOPIC, partition), TS + delta)
                keys = [k for k, _ in pairs]
                values = [v for _, v in pairs]
                order = list(range(len(pairs)))
                random.Random(len(pairs)).shuffle(order)
                end = core.append_run(acc, batch, TS + delta, keys, values, 0, order, 0, budget)
                seen.append(end)
            else:
                q = acc.queue_for(TOPIC, op[1])
                if q.batches:
                    q.batches[0].full = True
                    q.batches.popleft()
            seen.append(state(acc, keyless))
        return seen

    return asyncio.run(go())


@pytest.mark.skipif(not speedups.COMPILED, reason="the pure build: one implementation")
@settings(max_examples=150, deadline=None)
@given(ops=ops_strategy, batch_size=st.integers(100, 2000), seed=st.integers(0, 1000))
def test_both_implementations_append_alike(ops: list[Any], batch_size: int, seed: int) -> None:
    assert play(COMPILED, ops, batch_size, seed) == play(PURE, ops, batch_size, seed)


# -- edges a reviewer found unchecked ------------------------------------------------------


@pytest.mark.parametrize("core", IMPLS)
async def test_a_record_whose_need_is_exactly_the_room_is_appended(core: Core) -> None:
    """``room`` is what is free: a record needing all of it takes it (an open batch with
    ``need == room``; a new batch with ``need + BATCH_MEMORY == room``). Refusing it
    would send ``send_many()``'s keyless record to wait for memory it already has."""
    acc, _ = parts()
    first = core.append_record(acc, TOPIC, 1, TS, b"k", b"v", None, None, 80, 80 + BATCH_MEMORY, 0)
    assert first is not None and first.count == 1  # a new batch: exactly its room
    again = core.append_record(acc, TOPIC, 1, TS, b"k", b"v", None, None, 80, 80, 0)
    assert again is first and first.count == 2  # the open batch: exactly its room
    used = acc.budget.used
    assert core.append_record(acc, TOPIC, 1, TS, b"k", b"v", None, None, 81, 80, 0) is None
    assert acc.budget.used == used and first.count == 2  # one byte short: refused


@pytest.mark.parametrize("core", IMPLS)
async def test_a_keyless_record_that_fills_its_batch_exactly_moves_the_topic_on(
    core: Core,
) -> None:
    """A keyless record that brings its batch to exactly its limit reports the batch
    full to the partitioner (``len(buf) >= limit``): with the limit's bytes counted, the
    topic moves on at once (KIP-794), as Java's ``updatePartitionInfo`` does."""
    record = 309  # a keyless record of a 300-byte value, encoded (checked below)
    acc, keyless = parts(batch_size=61 + 3 * record)  # (61: the batch header)
    batch = keyless_record(core, acc, keyless, 300)
    assert len(batch.buf) == 61 + record
    p = batch.queue.tp.partition
    keyless_record(core, acc, keyless, 300)
    assert (keyless.current[TOPIC], keyless.produced[TOPIC]) == (p, 61 + 2 * record)
    third = keyless_record(core, acc, keyless, 300)
    assert third is batch and len(batch.buf) == 61 + 3 * record == batch.queue.batch_limit
    assert keyless.produced[TOPIC] == 0  # moved on (to a partition drawn anew)


@pytest.mark.parametrize("core", IMPLS)
async def test_the_sticky_partition_moves_on_at_its_queues_batch_limit(core: Core) -> None:
    """The sticky rule's limit is the partition queue's batch limit (which compression
    changes: ``RecordAppender.new_batch``), not the producer's ``batch_size``: bytes
    past it, the last batch full, the topic moves on."""
    acc, keyless = parts(batch_size=1000)
    for partition in range(PARTITIONS):  # as a compression estimate of 2x would set it
        acc.queue_for(TOPIC, partition).batch_limit = 500
    first = keyless_record(core, acc, keyless, 200)  # 209 bytes a record: 2 a batch
    p = first.queue.tp.partition
    keyless_record(core, acc, keyless, 200)
    batch = keyless_record(core, acc, keyless, 200)  # closes the first, starts a second
    assert first.full and batch is not first and batch.queue.tp.partition == p
    produced = keyless.produced[TOPIC]
    assert 500 <= produced < 1000 and not batch.full  # counted past 500, not past 1000
    batch.full = True  # (drained by the sender)
    core.sticky_partition(acc, keyless, TOPIC)
    assert keyless.produced[TOPIC] == 0  # moved on


@pytest.mark.parametrize("core", IMPLS)
async def test_a_run_the_budget_stopped_keeps_its_batch_open_for_a_record_that_fits(
    core: Core,
) -> None:
    """A run stopped by the budget leaves its batch open even where the next record's
    upper bound (``record_size``) is past the limit: it may fit exactly, and does. Each
    record here is 68 bytes encoded, 96 by the bound; the budget stops the run after 3
    (4 need 4 * (68 + 40) = 432 > 424) while 3 records' 324 and the bound's 96 fit it."""
    acc, _ = parts(batch_size=61 + 4 * 68)  # room for exactly four records
    batch = acc.new_batch(acc.queue_for(TOPIC, 0), TS)
    values = [b"x" * 60] * 5
    keys: list[bytes | None] = [None] * 5
    assert record_size(None, values[0], None) == 96 and BULK_RECORD_MEMORY == 40
    end = core.append_run(acc, batch, TS, keys, values, 0, list(range(5)), 0, 424)
    assert end == 3 and len(batch.buf) == 61 + 3 * 68
    assert not batch.full  # the budget stopped it: the next record is tried again
    end = core.append_run(acc, batch, TS, keys, values, 0, list(range(5)), end, 1 << 40)
    assert end == 4 and len(batch.buf) == batch.queue.batch_limit  # it fitted exactly
    assert batch.full  # then the limit stopped the run
