"""Keyless records follow Java's uniform sticky partitioner (KIP-794), in both builds.

Java's ``BuiltInPartitioner``, as ``RecordAccumulator.append`` drives it: before an
append, the topic moves on if its partition's batches are all full (none open, the last
closed or at its limit) and ``batch.size`` bytes went there; a record that does not fit
the open batch closes it and is placed again; after an append, the bytes it added are
counted (a record's encoded size, plus the batch header for the record that starts a
batch) and the topic moves on at ``batch.size`` if the batch is now full, at twice
``batch.size`` regardless. The next partition is a uniform draw among all available.

:class:`JavaModel` is that rule written out from Java's code, over batches of our own
encoder (so a record's size in a batch is the real one). The producer's parts (its
accumulator, placement and send()'s fast path, pure and compiled, and send_many()'s door
to the accumulator) must pick the same
partition for every record, with the same seeded draws, while a "sender" takes batches
at random moments. No broker: the sequence of picks is the point, and
``tests/test_java_partition_parity.py`` compares with Java's own producer on Apache
Kafka. ``time.time`` is fixed (patched) so that the records' timestamp deltas, and so
their sizes, do not depend on the clock.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from partition_checks import run_lengths

from aiokafka_lite import speedups
from aiokafka_lite._internal import partitioner, send_path
from aiokafka_lite._internal.accumulator import BulkDelivery, RecordAccumulator
from aiokafka_lite._internal.placement import RecordPlacement
from aiokafka_lite._internal.records import MAX_RECORD_OVERHEAD, RecordBatchBuilder
from aiokafka_lite.config import ProducerConfig

# The one decision, in each build there is.
MOVES_ON = [pytest.param(partitioner.py_sticky_moves_on, id="pure")]
# The fast path's twins; None: every record through the general path (the accumulator);
# "send_many": each record through send_many()'s door (one keyless record per call).
PATHS: list[Any] = [
    pytest.param(None, id="general"),
    pytest.param("send_many", id="send_many"),
    pytest.param(send_path.PySendPath, id="pure"),
]
if speedups.COMPILED:
    MOVES_ON.append(pytest.param(partitioner.sticky_moves_on, id="compiled"))
    PATHS.append(pytest.param(send_path.SendPath, id="compiled"))

NOW = 1_700_000_000.0
TOPIC = "t"


@pytest.mark.parametrize("moves_on", MOVES_ON)
def test_the_switch_is_javas(moves_on: Any) -> None:
    limit = 1000
    assert not moves_on(999, limit, True)  # not enough bytes, full batch or not
    assert not moves_on(999, limit, False)
    assert moves_on(1000, limit, True)  # enough bytes and the batch is full
    assert not moves_on(1999, limit, False)  # enough, but the batch still takes records
    assert moves_on(2000, limit, False)  # twice batch.size: regardless
    assert moves_on(0, 0, False)


@pytest.mark.skipif(not speedups.COMPILED, reason="the extensions are not built")
@settings(max_examples=500, deadline=None)
@given(
    produced=st.integers(0, 2**31 - 1),
    limit=st.integers(1, 2**30),
    full=st.booleans(),
)
def test_compiled_switch_equals_pure(produced: int, limit: int, full: bool) -> None:
    expected = partitioner.py_sticky_moves_on(produced, limit, full)
    assert partitioner.sticky_moves_on(produced, limit, full) is expected


class JavaModel:
    """Java's keyless placement over per-partition queues of our batch encoder."""

    def __init__(self, n: int, batch_size: int, rng: random.Random) -> None:
        self.n, self.limit, self.rng = n, batch_size, rng
        self.queues: dict[int, deque[tuple[RecordBatchBuilder, list[bool]]]] = {
            p: deque() for p in range(n)
        }
        self.sticky: int | None = None
        self.produced = 0

    def _next(self) -> int:  # BuiltInPartitioner.nextPartition, all partitions available
        self.sticky, self.produced = self.rng.randrange(self.n), 0
        return self.sticky

    def _all_full(self, p: int) -> bool:
        q = self.queues[p]
        return not q or q[-1][1][0] or len(q[-1][0].buf) >= self.limit

    def append(self, value: bytes, timestamp: int) -> int:
        p = self._next() if self.sticky is None else self.sticky
        while True:  # RecordAccumulator.append's retry loop
            if self._all_full(p) and self.produced >= self.limit:
                p = self._next()  # partitionChanged: the switch deferred at the last append
                continue
            q = self.queues[p]
            if q and not q[-1][1][0]:
                batch = q[-1][0]
                added = batch.append(timestamp, None, value, None, self.limit)
                if added:
                    break
                q[-1][1][0] = True  # closeForRecordAppends; then place again
                continue
            batch = RecordBatchBuilder(timestamp)
            batch.append(timestamp, None, value, None, self.limit)
            q.append((batch, [False]))
            added = len(batch.buf)  # a new batch counts its header
            break
        self.produced += added
        full = len(batch.buf) >= self.limit
        if self.produced >= 2 * self.limit or (full and self.produced >= self.limit):
            self._next()
        return p

    def drain(self, p: int) -> None:
        if self.queues[p]:
            self.queues[p].popleft()


class Metadata:
    """What the placement and the fast path read of the metadata: all partitions up."""

    def __init__(self, n: int) -> None:
        self.partitions_by_topic = {TOPIC: tuple(range(n))}
        self.cluster = self
        self.available_partitions_by_topic = {TOPIC: list(range(n))}


async def ours(
    path_cls: Any, n: int, batch_size: int, seed: int, ops: list[tuple[str, int]]
) -> list[int]:
    """The partitions our producer's parts pick for ``ops``' records."""
    acc = RecordAccumulator(
        batch_size=batch_size,
        linger_ms=0,
        buffer_memory=1 << 30,
        delivery_timeout_ms=120_000,
        max_in_flight_per_partition=5,
        wakeup=lambda: None,
    )
    placement = RecordPlacement(ProducerConfig.from_kwargs(max_batch_size=batch_size))
    placement.metadata = Metadata(n)  # type: ignore[assignment]
    placement.partitioner.seed(random.Random(seed))
    fast = None
    if path_cls is not None and path_cls != "send_many":
        fast = path_cls(acc, placement.partitioner, 1 << 20)
    timestamp = int(NOW * 1000)
    picked = []
    for op, arg in ops:
        queues = acc.queues.get(TOPIC, {})
        if op == "drain":
            if arg in queues and queues[arg].batches:
                acc.drain([queues[arg]], 1 << 30)
            continue
        value = b"v" * arg
        counts = {p: sum(b.count for b in q.batches) for p, q in queues.items()}
        if path_cls == "send_many":
            delivery = BulkDelivery(acc.create_future(), TOPIC, 1)
            deadline = time.monotonic() + 5
            keyless = placement.partitioner
            await acc.append_run(
                TOPIC, -1, timestamp, [None], [value], 0, [0], delivery, deadline, keyless
            )
            fut = delivery.future
        else:
            fut = fast.append(TOPIC, None, value) if fast is not None else None
        if not fut:  # not taken (NOT_PLAIN) or the open batch was full (FILLED): general path
            size = MAX_RECORD_OVERHEAD + len(value)
            fut = acc.try_append(
                TOPIC, -1, timestamp, None, value, None, size, keyless=placement.partitioner
            )
            assert fut is not None
        grew = [
            p
            for p, q in acc.queues[TOPIC].items()
            if sum(b.count for b in q.batches) > counts.get(p, 0)
        ]
        assert len(grew) == 1
        picked.append(grew[0])
    return picked


def javas(n: int, batch_size: int, seed: int, ops: list[tuple[str, int]]) -> list[int]:
    model = JavaModel(n, batch_size, random.Random(seed))
    picked = []
    for op, arg in ops:
        if op == "drain":
            model.drain(arg)
        else:
            picked.append(model.append(b"v" * arg, int(NOW * 1000)))
    return picked


# Values up to 300 bytes, batches of at least 512: no record is larger than a batch (Java
# gives such a record a buffer of its own size, whose slack may take a further record).
ops_strategy = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.integers(0, 300)),
        st.tuples(st.just("drain"), st.integers(0, 4)),
    ),
    max_size=400,
)


@pytest.mark.parametrize("path_cls", PATHS)
@settings(max_examples=150, deadline=None)
@given(
    ops=ops_strategy,
    n=st.integers(1, 5),
    batch_size=st.sampled_from([512, 700, 1024, 4096]),
    seed=st.integers(0, 2**32),
)
def test_keyless_picks_are_javas(
    path_cls: Any,
    ops: list[tuple[str, int]],
    n: int,
    batch_size: int,
    seed: int,
) -> None:
    ops = [(op, arg % n if op == "drain" else arg) for op, arg in ops]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "time", lambda: NOW)
        got = asyncio.run(ours(path_cls, n, batch_size, seed, ops))
    assert got == javas(n, batch_size, seed, ops)


@pytest.mark.parametrize("path_cls", PATHS)
def test_full_batches_move_the_topic_every_second_batch(
    path_cls: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches that fill before they are sent: the record that does not fit closes the
    first after fewer than batch.size bytes, so the partition takes a second batch; the
    record that does not fit that one moves the topic (2 batches per move, as Java)."""
    monkeypatch.setattr(time, "time", lambda: NOW)
    timestamp = int(NOW * 1000)
    batch, per_batch = RecordBatchBuilder(timestamp), 0
    while batch.append(timestamp, None, b"v" * 100, None, 1000):
        per_batch += 1
    assert len(batch.buf) < 1000  # the batch closes before batch.size bytes
    ops = [("send", 100)] * 400
    picked = asyncio.run(ours(path_cls, 1000, 1000, 1, ops))
    assert picked == javas(1000, 1000, 1, ops)
    runs = run_lengths(picked)
    # Two batches per move (of 1,000 partitions, this seed's draws never repeat one).
    assert set(runs[:-1]) == {2 * per_batch}
