"""``send_many``: one call, one future, many records; checked by independent consumers."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
import tracemalloc
from typing import Any

import pytest
from conftest import TopicFactory
from loop_turns import counting_turns
from partition_checks import java_partition
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer, ProducerRecord, RecordMetadata
from aiokafka_lite._internal import bulk_send
from aiokafka_lite._internal.bulk_send import CHUNK
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.errors import (
    DeliveryFailedError,
    KafkaTimeoutError,
    RecordTooLargeError,
    SerializationError,
)
from aiokafka_lite.structs import DeliveryReport, DeliverySegment, TopicPartition


def assert_in_call_order(read: list[Any], positions: dict[tuple[int, int], int], n: int) -> None:
    """Each of the ``n`` partitions holds its records in call order (``positions``: where
    the report put each call index, by (partition, offset))."""
    for p in range(n):
        order = [positions[(r.partition, r.offset)] for r in read if r.partition == p]
        assert order == sorted(order), f"partition {p} is not in call order"


async def test_records_land_where_the_report_says_in_call_order(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(3)
    rng = random.Random(3)
    pairs: list[tuple[bytes | None, bytes | None]] = []
    for i in range(30_000):
        key = f"k{rng.randrange(700)}".encode() if i % 5 else None  # some keyless (sticky)
        value = None if i % 1009 == 0 else b"%d:" % i + rng.randbytes(rng.randrange(0, 150))
        pairs.append((key, value))

    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=2) as producer:
        await producer.partitions_for(topic)
        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0)
        ticks = 0
        fut = await producer.send_many(topic, pairs)
        # The buffer is big enough for all: only send_many's own yields (at a full
        # batch, once per hand-over slice) let other tasks run while it encodes ~3 MB.
        assert ticks >= 3, "send_many kept the event loop to itself"
        ticker.cancel()
        report = await asyncio.wait_for(fut, 30)

    assert isinstance(report, DeliveryReport)
    assert len(report) == len(pairs) and not report.errors
    positions = {(md.partition, md.offset): i for i, md in enumerate(report)}
    assert len(positions) == len(pairs), "two records reported the same partition/offset"

    read = read_all_confluent(bootstrap, topic, expected=len(pairs))
    assert len(read) == len(pairs)
    for r in read:
        i = positions[(r.partition, r.offset)]
        key, value = pairs[i]
        assert (r.key, r.value) == (key, value)
        assert r.timestamp == report[i].timestamp
        if key is not None:
            assert r.partition == java_partition(key, 3)
    assert_in_call_order(read, positions, 3)


async def test_keyless_records_are_appended_in_runs(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """Plain keyless records go into the sticky partition's open batch a run at a time
    (one report segment per run), not one record at a time; they still land as send()
    would put them (tests/test_entry_points.py compares the batches), and every record is
    read back where the report says by confluent-kafka."""
    topic = topic_factory(4)
    pairs: list[tuple[bytes | None, bytes | None]] = [
        (None, b"%06d" % i + b"x" * 94) for i in range(6_000)
    ]
    pairs[3_000] = (b"a key", b"a keyed record between two runs of keyless ones")
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        report = await (await producer.send_many(topic, pairs))
    assert len(report) == len(pairs) and not report.errors
    # ~110 records per 16 KiB batch, about two runs each (a batch's first record starts it
    # alone): ~150 segments, where one per record would be 6,000.
    assert len(report._segments) < len(pairs) // 20, len(report._segments)
    read = read_all_confluent(bootstrap, topic, expected=len(pairs))
    where = {(r.partition, r.offset): (r.key, r.value) for r in read}
    for i, md in enumerate(report):
        assert where[(md.partition, md.offset)] == pairs[i]


async def test_interleaved_with_send_under_a_small_buffer(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    # 64 KiB of buffer for ~2.5 MB: send_many must wait for memory (and yield),
    # and per-record send()s of another task get into the same batches.
    topic = topic_factory(1)
    bulk = [(None, b"bulk-%06d" % i + b"x" * 100) for i in range(20_000)]
    lowest_free = []
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, buffer_memory=64 * 1024, linger_ms=1
    ) as producer:
        await producer.partitions_for(topic)

        async def single() -> list[RecordMetadata]:
            futures = [await producer.send(topic, b"one-%06d" % i) for i in range(2_000)]
            return await asyncio.gather(*futures)

        async def watch() -> None:
            while True:
                lowest_free.append(producer.metrics()["buffer-available-bytes"])
                await asyncio.sleep(0.001)

        watcher = asyncio.create_task(watch())
        single_task = asyncio.create_task(single())
        report = await (await producer.send_many(topic, bulk))
        singles = await single_task
        watcher.cancel()

    assert min(lowest_free) >= 0, "more than buffer_memory was buffered"
    read = {r.value: r.offset for r in read_all_confluent(bootstrap, topic, 22_000)}
    assert len(read) == 22_000
    assert [read[v] for _, v in bulk] == [md.offset for md in report]
    assert [read[b"one-%06d" % i] for i in range(2_000)] == [md.offset for md in singles]
    offsets = sorted(read.values())
    assert offsets == list(range(22_000)), "a record is missing or duplicated"


async def test_a_bad_record_fails_alone(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(2)

    def serialize(value: Any) -> bytes:
        if value == "boom":
            raise ValueError("cannot serialize boom")
        return str(value).encode()

    values: list[Any] = [f"v{i}" for i in range(500)]
    values[7] = "boom"
    values[300] = "x" * 20_000  # > max_request_size below
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, value_serializer=serialize, max_request_size=10_000
    ) as producer:
        fut = await producer.send_many(topic, [(None, v) for v in values])
        with pytest.raises(DeliveryFailedError) as info:
            await fut

    err = info.value
    assert sorted(err.errors) == [7, 300]
    assert isinstance(err.errors[7], SerializationError) and topic in str(err.errors[7])
    assert isinstance(err.errors[300], RecordTooLargeError)
    assert "2 of 500 records" in str(err) and "record 7" in str(err)
    with pytest.raises(SerializationError):
        err.report[7]
    good = {i: err.report[i] for i in range(500) if i not in (7, 300)}
    read = read_all_confluent(bootstrap, topic, expected=498)
    assert sorted(r.value for r in read if r.value) == sorted(serialize(values[i]) for i in good)
    for r in read:
        i = int(r.value[1:]) if r.value else -1
        assert (good[i].partition, good[i].offset) == (r.partition, r.offset)


def _boom_or_bytes(value: Any) -> bytes | None:
    """A value serializer that fails for "boom" and passes bytes (and None) through."""
    if value == "boom":
        raise ValueError("cannot serialize boom")
    assert value is None or isinstance(value, bytes)
    return value


@pytest.mark.parametrize("serialized", [False, True], ids=["plain", "serializer"])
async def test_a_call_of_many_chunks_reports_each_record_at_its_own_index(
    bootstrap: str, topic_factory: TopicFactory, serialized: bool
) -> None:
    """A call of more than three chunks (send_runs places CHUNK records at a time and keeps
    their keys/values in chunk-sized lists) with keyed, keyless, converted and failing
    records, failures packed at the chunk edges: each failure is reported at its own
    index, each good record lands once where the report says, and no failed record's
    slot lets a record of an earlier chunk in again (the read-back count is exact).
    Without a serializer the plain paths (place_plain, keyless runs) run beside the full
    checks; with one, every record takes the full checks."""
    topic = topic_factory(3)
    n = 3 * CHUNK + 17
    rng = random.Random(5)
    edges = {e + d for e in range(CHUNK, n, CHUNK) for d in (-2, -1, 0, 1)}
    items: list[Any] = []
    bad: dict[int, type[BaseException]] = {}
    for i in range(n):
        value: Any = b"%d:" % i + rng.randbytes(rng.randrange(0, 60))
        key: Any = b"k%d" % rng.randrange(500) if rng.random() < 0.6 else None
        kind = rng.randrange(40) if i not in edges else rng.randrange(4)
        if kind == 0:
            items.append((key, b"x" * 20_000))  # > max_request_size below
            bad[i] = RecordTooLargeError
        elif kind == 1:
            items.append(value)  # not a (key, value) pair
            bad[i] = TypeError
        elif kind == 2:  # no bytes: the serializer fails, or there is none to make them
            items.append((key, "boom"))
            bad[i] = SerializationError if serialized else TypeError
        elif kind == 3:
            items.append((bytearray(b"k%d" % i), value))  # converted by the full checks
        else:
            items.append((key, value if i % 997 else None))
    assert len(bad) > 100 and edges & set(bad)

    serializer = _boom_or_bytes if serialized else None
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        value_serializer=serializer,
        max_request_size=10_000,
        linger_ms=2,
    ) as producer:
        fut = await producer.send_many(topic, items)
        with pytest.raises(DeliveryFailedError) as info:
            await asyncio.wait_for(fut, 60)

    report = info.value.report
    assert len(report) == n
    assert sorted(report.errors) == sorted(bad)
    for i, kind in bad.items():
        assert isinstance(report.errors[i], kind), (i, report.errors[i])
    assert all(
        f"record {i} " in str(report.errors[i])
        for i in bad
        if bad[i] is TypeError and not isinstance(items[i], tuple)
    )
    good = [i for i in range(n) if i not in bad]
    positions = {(report[i].partition, report[i].offset): i for i in good}
    assert len(positions) == len(good), "two records reported the same partition/offset"

    read = read_all_confluent(bootstrap, topic, expected=len(good))
    assert len(read) == len(good)
    for r in read:
        i = positions[(r.partition, r.offset)]
        key, value = items[i]
        assert (r.key, r.value) == (None if key is None else bytes(key), value), i
        if key is not None:
            assert r.partition == java_partition(bytes(key), 3)
    assert_in_call_order(read, positions, 3)


async def test_keys_and_values_are_held_one_chunk_at_a_time(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """send_runs keeps a call's keys and values in lists of one chunk, not of the call:
    lists the length of a big call cost the garbage collector a visit per slot in each
    collection that sees them.

    Checked two ways, both robust to timing and to the build: every run the appender is
    given (``append_run``, wrapped to look, then called as is) comes with lists of
    ``min(CHUNK, count)`` slots and a base from which all its records' slots are in
    them; and, while the call runs (a snapshot taken in that wrapper, mid-call),
    tracemalloc shows no block allocated in bulk_send.py bigger than a list of two
    chunks' slots (the lists of a 200,000-record call would be 1.6 MB each). A peak of
    the whole process would mix in the batches' buffers; one block per list does not.
    """
    topic = topic_factory(3)
    n = 200_000
    items = [(b"k%d" % (i % 1000), b"v%d" % i) for i in range(n)]
    seen: list[tuple[int, int, int, int, int]] = []
    biggest: list[int] = []
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=2) as producer:
        await producer.partitions_for(topic)
        acc = producer._acc
        append_run = acc.append_run

        async def looking(*args: Any) -> None:
            _, _, _, keys, values, base, order, *_ = args
            seen.append((len(keys), len(values), base, min(order), max(order)))
            if base == CHUNK and not biggest:  # mid-call: the lists are alive
                snapshot = tracemalloc.take_snapshot().filter_traces(
                    [tracemalloc.Filter(True, bulk_send.__file__)]
                )
                biggest.append(max((t.size for t in snapshot.traces), default=0))
            await append_run(*args)

        acc.append_run = looking  # type: ignore[method-assign]
        tracemalloc.start()
        try:
            report = await (await producer.send_many(topic, items))
        finally:
            tracemalloc.stop()
        big, seen[:] = list(seen), []
        small = await (await producer.send_many(topic, items[:10]))

    assert len(report) == n and not report.errors and len(small) == 10
    assert {s[2] for s in big} == set(range(0, n, CHUNK))
    assert all(k == v == CHUNK and base <= lo and hi < base + CHUNK for k, v, base, lo, hi in big)
    # A call shorter than a chunk: lists of its length.
    assert seen and all(s[:3] == (10, 10, 0) for s in seen)
    assert biggest and 0 < biggest[0] <= 2 * 8 * CHUNK + 1024, biggest


async def test_interceptors_see_every_record(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    acks: list[RecordMetadata | None] = []

    class Upper:
        def on_send(self, record: ProducerRecord) -> ProducerRecord:
            assert record.value is not None
            return record._replace(value=record.value.upper())

        def on_acknowledgement(self, md: RecordMetadata | None, exc: BaseException | None) -> None:
            acks.append(md)

    async with AIOKafkaProducer(bootstrap_servers=bootstrap, interceptors=[Upper()]) as producer:
        report = await (await producer.send_many(topic, [(b"k", b"v%d" % i) for i in range(300)]))

    assert len(acks) == 300 and all(md is not None for md in acks)
    read = read_all_confluent(bootstrap, topic, expected=300)
    assert [r.value for r in read] == [b"V%d" % i for i in range(300)]
    assert [r.offset for r in read] == [md.offset for md in report]


async def test_explicit_partition_acks_0_and_empty(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(3)
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks=0, enable_idempotence=False
    ) as producer:
        with pytest.raises(ValueError, match="out of range"):
            await producer.send_many(topic, [(b"k", b"v")], partition=3)
        report = await (
            await producer.send_many(topic, [(b"k%d" % i, b"v") for i in range(50)], partition=2)
        )
        empty = await (await producer.send_many(topic, []))
    assert len(empty) == 0
    assert {(md.partition, md.offset) for md in report} == {(2, -1)}  # acks=0: no offsets
    read = read_all_confluent(bootstrap, topic, expected=50)
    assert {r.partition for r in read} == {2} and len(read) == 50


def test_report_indexing() -> None:
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    report = DeliveryReport(
        5,
        [DeliverySegment(tp1, 10, 99, 0, 0, [1, 3]), DeliverySegment(tp0, 4, 98, 1, 2, [0])],
        {2: RuntimeError("x"), 4: RuntimeError("y")},
    )
    assert report[0] == RecordMetadata("t", 0, tp0, 4, 98, 1, 2)
    assert report[3] == RecordMetadata("t", 1, tp1, 11, 99, 0, 0)
    assert report[-2] == report[3]
    assert [md.offset for md in report[:2]] == [4, 10]
    with pytest.raises(RuntimeError, match="y"):
        report[4]
    with pytest.raises(IndexError):
        report[5]


@pytest.mark.tansu_only(
    "freezes its broker (SIGSTOP through fresh_broker) so that memory never frees"
)
async def test_max_block_ms_bounds_the_whole_call(
    fresh_broker: EmbeddedBroker, topic_factory: TopicFactory
) -> None:
    # A frozen broker never answers, so buffer memory never frees up. The call's
    # max_block_ms is one budget for the whole call: records that got no memory by
    # then fail in the report with KafkaTimeoutError; the call does not wait
    # max_block_ms again for each partition and each chunk (3 x 3 of them here).
    bootstrap = fresh_broker.bootstrap_servers
    topic = topic_factory(3, bootstrap=bootstrap)
    pairs = [(b"k%d" % i, b"v" * 200) for i in range(12_000)]
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, buffer_memory=256 * 1024, max_block_ms=1000
    ) as producer:
        await producer.send_and_wait(topic, b"warm-up")
        assert fresh_broker.pid is not None
        os.kill(fresh_broker.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            fut = await producer.send_many(topic, pairs)
            took = time.monotonic() - t0
        finally:
            os.kill(fresh_broker.pid, signal.SIGCONT)
        with pytest.raises(DeliveryFailedError) as info:
            await asyncio.wait_for(fut, 60)
    assert took < 5, f"send_many blocked {took:.1f} s with max_block_ms=1000"
    errors = info.value.errors
    assert errors and all(isinstance(e, KafkaTimeoutError) for e in errors.values())
    delivered = [i for i in range(len(pairs)) if i not in errors]
    assert delivered, "what fit in the buffer is delivered once the broker thaws"
    read = read_all_confluent(bootstrap, topic, expected=1 + len(delivered))
    assert len(read) == 1 + len(delivered)


@pytest.mark.parametrize(("size", "batch_size"), [(500, 600), (1_000, 2_048)])
async def test_a_keyless_call_yields_after_each_batch_it_fills(
    bootstrap: str, topic_factory: TopicFactory, size: int, batch_size: int
) -> None:
    """A keyless call hands over after each batch it fills (hand_over.pass_on), also when
    the batch is closed by the first record of a run (it did not fit the open batch).
    Records of more than half a batch: each starts a batch and the next closes it (N
    records, N - 1 fills). With the hand-over slice set to 0 (as ``linger_ms=0`` sets
    it; linger 0 itself would let the sender take each open batch before it fills) the
    call yields at each hand-over, and a task that counts its turns of the loop while
    the call runs sees one turn per yield."""
    topic = topic_factory(3)
    count = 400
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, batch_size=batch_size, linger_ms=60_000
    ) as producer:
        producer._acc.hand_over_slice = 0.0
        await producer.partitions_for(topic)
        async with counting_turns() as turns:
            fut = await producer.send_many(topic, [(None, bytes(size))] * count)
        await producer.flush()
        report = await fut
    assert len(report) == count and not report.errors
    assert turns.count >= count - 1, turns
