"""send()'s fast path (:mod:`aiokafka_lite._internal.send_path`, in C when built).

A plain keyed record (bytes key and value, no headers, partition or timestamp, known
topic, room in the budget and in the open batch) is appended by ``SendPath.append``;
anything else must come back None with nothing changed, so that the general path
handles it exactly as before. Checked against the real broker, with records read back
by confluent-kafka (which checks CRCs), in both twins: the pure one always, the compiled
one when built (CI runs the suite in both builds).
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

import aiokafka  # type: ignore[import-untyped]
import pytest
from conftest import TopicFactory
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer, speedups
from aiokafka_lite import producer as producer_module
from aiokafka_lite._internal import send_path
from aiokafka_lite._internal.accumulator import SEND_BOUND, SEND_RECORD_MEMORY
from aiokafka_lite._internal.hand_over import FILLED, NOT_PLAIN
from aiokafka_lite._internal.partitioner import py_default_partition
from aiokafka_lite._internal.records import MAX_RECORD_OVERHEAD
from aiokafka_lite.interceptors import ProducerRecord
from aiokafka_lite.producer import _no_fast_path

TWINS = [pytest.param(send_path.PySendPath, id="pure")]
if speedups.COMPILED:  # the compiled twin needs the compiled batches it reads as C
    TWINS.append(pytest.param(send_path.SendPath, id="compiled"))


@asynccontextmanager
async def started(bootstrap: str, **config: Any) -> Any:
    """A started producer; by default its records stay buffered until flush()."""
    config = {"linger_ms": 60_000, "delivery_timeout_ms": 120_000, **config}
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(bootstrap_servers=bootstrap, **config)
    await producer.start()
    try:
        yield producer
    finally:
        await producer.stop()


def path_of(cls: Any, producer: AIOKafkaProducer[Any, Any]) -> Any:
    """A SendPath of twin ``cls`` over the producer's own parts (as its accumulator makes one)."""
    return cls(producer._acc, producer._placement.partitioner, producer._max_request_size)


def state(producer: AIOKafkaProducer[Any, Any]) -> tuple[Any, ...]:
    """Everything an append changes: the budget used and every batch's bytes and count."""
    acc = producer._acc
    batches = tuple(
        (topic, p, len(b.buf), b.count, b.memory, b.full, len(b.records))
        for topic, parts in acc.queues.items()
        for p, q in parts.items()
        for b in q.batches
    )
    return acc.used, batches


def counting(producer: AIOKafkaProducer[Any, Any]) -> Callable[[], int]:
    """Count the records send() hands to the fast path and it appends."""
    taken = 0
    inner = producer._fast_append

    def fast(topic: Any, key: Any, value: Any) -> Any:
        nonlocal taken
        fut = inner(topic, key, value)
        taken += bool(fut)  # (NOT_PLAIN, FILLED: nothing appended)
        return fut

    producer._fast_append = fast
    return lambda: taken


async def test_records_on_the_fast_path_are_what_the_general_path_sends(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    fast_topic, general_topic = topic_factory(3), topic_factory(3)
    keys = [b"user-%d" % (i % 50) for i in range(3_000)] + [b"k-%d" % i for i in range(500)]
    value = b"v" * 60
    sent: dict[str, list[tuple[bytes, Any]]] = {}
    async with (
        started(bootstrap, batch_size=4096, linger_ms=5) as fast,
        started(bootstrap, linger_ms=5) as general,
    ):
        general._fast_append = _no_fast_path
        taken = counting(fast)
        for producer, topic in ((fast, fast_topic), (general, general_topic)):
            await producer.send_and_wait(topic, b"first", b"first")  # metadata, queues
            before = int(time.time() * 1000)
            futures = [await producer.send(topic, value, key) for key in keys]
            metadata = await asyncio.gather(*futures)
            after = int(time.time() * 1000)
            assert all(before <= md.timestamp <= after for md in metadata)
            sent[topic] = list(zip(keys, metadata, strict=True))
    # Batches of 4 KiB fill every ~50 records: each new batch took the general path.
    assert len(keys) - 3 * len(keys) // 50 <= taken() < len(keys)
    for topic in (fast_topic, general_topic):
        read = {
            (r.partition, r.offset): r for r in read_all_confluent(bootstrap, topic, 1 + len(keys))
        }
        assert len(read) == 1 + len(keys)
        for key, md in sent[topic]:
            assert md.partition == py_default_partition(key, 3)  # Java's murmur2 placement
            record = read[(md.partition, md.offset)]
            assert (record.key, record.value, record.headers) == (key, value, [])
            assert record.timestamp == md.timestamp


@pytest.mark.parametrize("cls", TWINS)
async def test_what_is_not_plain_comes_back_none_with_nothing_changed(
    cls: Any, bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    async with started(bootstrap, max_request_size=10_000) as producer:
        first = await producer.send(topic, b"v", b"k")  # the topic's metadata and queue
        path = path_of(cls, producer)
        before = state(producer)
        not_plain: list[tuple[Any, Any, Any]] = [
            (topic, "str key", b"v"),
            (topic, None, b"v"),  # keyless, before the topic has a sticky partition
            (topic, None, None),  # keyless and no value
            (topic, bytearray(b"k"), b"v"),
            (topic, b"k", "str value"),
            (topic, b"k", 12),
            (topic, b"k", memoryview(b"v")),
            ("no-such-topic-here", b"k", b"v"),
            (["unhashable"], b"k", b"v"),
            (topic, b"k", b"x" * 10_000),  # over max_request_size: the general path names it
        ]
        for args in not_plain:
            assert path.append(*args) is NOT_PLAIN, args
            assert state(producer) == before, args
        # A full open batch: the general path starts the next one.
        (batch,) = producer._acc.queues[topic][py_default_partition(b"k", 2)].batches
        batch.full = True
        full = state(producer)
        assert path.append(topic, b"k", b"v") is NOT_PLAIN
        assert state(producer) == full
        batch.full = False
        # The plain case: the budget grows by the bytes encoded plus a record's overhead.
        size = len(batch.buf)
        fut = path.append(topic, b"k", b"v")
        assert fut is not None and not fut.done()
        assert producer._acc.used == before[0] + len(batch.buf) - size + SEND_RECORD_MEMORY
        # A record that does not fit the open batch: False (the task filled a batch, see
        # test_hand_over), the batch marked full as the general path would, nothing else.
        assert path.append(topic, b"k", b"x" * 9000)  # (16 KiB batches)
        assert not batch.full
        room = state(producer)
        assert path.append(topic, b"k", b"x" * 9000) is FILLED
        assert batch.full
        batch.full = False
        assert state(producer) == room
        await producer.flush()
        assert (await fut).offset == (await first).offset + 1
        # Keyless: once the topic has a sticky partition (the general path picks it), a
        # plain keyless record takes the fast path; under a str subclass's name (whose
        # code could run in the lookups) it is left to the general path.
        await producer.send(topic, b"v")

        class Topic(str):
            pass

        before = state(producer)
        assert path.append(Topic(topic), None, b"v") is NOT_PLAIN
        assert state(producer) == before
        keyless = path.append(topic, None, b"v")
        assert keyless
        await producer.flush()
        assert (await keyless).partition == producer._placement.partitioner.current[topic]


@pytest.mark.parametrize("cls", TWINS)
async def test_a_record_over_the_budget_or_behind_waiters_is_left_to_the_general_path(
    cls: Any, bootstrap: str, topic_factory: TopicFactory
) -> None:
    """The budget is spent for real; the waiter is put in the pool's queue by hand (a
    real one is granted within milliseconds here, as the broker acks the batches that
    a waiting caller makes sendable at once: too soon to observe the fast path then)."""
    topic = topic_factory(1)
    budget = 64 * 1024
    async with started(bootstrap, buffer_memory=budget, batch_size=budget) as producer:
        path = path_of(cls, producer)
        await producer.send(topic, b"v", b"k")
        futures = []
        while fut := path.append(topic, b"k", b"v" * 1000):
            futures.append(fut)
        acc = producer._acc
        assert acc.used + SEND_BOUND + MAX_RECORD_OVERHEAD + 1001 > acc.limit  # spent
        assert len(futures) > 40
        # The general path waits for memory (the fast path never does), and gets it.
        late = await asyncio.wait_for(producer.send(topic, b"v" * 1000, b"k"), 30)
        await producer.flush()
        assert all(f.done() and not f.exception() for f in [*futures, late])
        await producer.send(topic, b"", b"k")  # a new open batch (the others were sent)
        # Behind a waiter even a record that fits is not appended (FIFO, as Java).
        acc._waiters.append((10, asyncio.get_running_loop().create_future()))
        before = state(producer)
        assert path.append(topic, b"k", b"") is NOT_PLAIN
        assert state(producer) == before
        acc._waiters.clear()
        assert path.append(topic, b"k", b"")


def test_batch_core_is_the_base_of_producer_batch() -> None:
    """The fast path reads a batch's fields as C: they must be the compiled base's."""
    from aiokafka_lite._internal.producer_batch import ProducerBatch

    assert ProducerBatch.__mro__[1] is send_path.BatchCore
    for name in ("full", "memory", "records"):
        assert name not in ProducerBatch.__slots__  # a slot would hide the base's field


async def test_records_of_concurrent_sends_keep_the_order_of_the_calls(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """Sends started by concurrent tasks (gather) land in the order the calls started,
    across batches that fill (fast path) and batches started by the general path, as
    aiokafka's do (run side by side): with the topic's metadata known and memory free,
    nothing in send() yields between a record's turn and its append."""
    values = [b"%05d" % i + b"v" * 100 for i in range(2000)]
    lite_topic, peer_topic = topic_factory(1), topic_factory(1)
    peer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, max_batch_size=2048, linger_ms=5)
    async with started(bootstrap, batch_size=2048, linger_ms=5) as producer:
        await peer.start()
        try:
            for p, topic in ((producer, lite_topic), (peer, peer_topic)):
                await p.send_and_wait(topic, b"first", b"k")  # metadata known
                futures = await asyncio.gather(*(p.send(topic, v, b"k") for v in values))
                offsets = [md.offset for md in await asyncio.gather(*futures)]
                assert offsets == list(range(1, 1 + len(values))), p
        finally:
            await peer.stop()
    for topic in (lite_topic, peer_topic):
        read = read_all_confluent(bootstrap, topic, 1 + len(values))
        assert [r.value for r in read] == [b"first", *values]


@pytest.mark.parametrize("cls", TWINS)
async def test_the_key_hash_cache_stays_bounded_on_the_fast_path(
    cls: Any, bootstrap: str, topic_factory: TopicFactory
) -> None:
    """Distinct keys past the cache's capacity: it starts over (murmur2 is pure, so
    dropping entries changes no partition) instead of growing with the keys. (Keys of
    100 bytes: the compiled twin hashes short keys without the cache, see below.)"""
    topic = topic_factory(3)
    async with started(bootstrap) as producer:
        await producer.send(topic, b"v", b"k")
        path = path_of(cls, producer)
        capacity = producer._hashes.capacity
        keys = [b"%08d" % i + b"k" * 92 for i in range(capacity + 1000)]
        for key in keys:
            fut = path.append(topic, key, b"") or await producer.send(topic, b"", key)
            assert len(producer._hashes) <= capacity
        assert len(producer._hashes) == 1000 + 1  # cleared once, when it was full
        tail = keys[-1000:]
        assert all(producer._hashes.hash(k) % 3 == py_default_partition(k, 3) for k in tail)
        await producer.flush()
        assert fut.result().partition == py_default_partition(keys[-1], 3)


@pytest.mark.parametrize("cls", TWINS)
async def test_short_keys_land_on_javas_partition_whether_cached_or_not(
    cls: Any, bootstrap: str, topic_factory: TopicFactory
) -> None:
    """The compiled twin hashes keys up to 64 bytes on every record (murmur2 over them
    costs no more than the cache's lookup) and stores none of them; the pure one, whose
    murmur2 is slow, caches them. Either way each record lands on Java's partition for its
    key, read back by confluent-kafka."""
    topic = topic_factory(5)
    async with started(bootstrap) as producer:
        for p in range(5):  # an open batch in every partition, for the fast path to fill
            await producer.send(topic, b"v", b"k", partition=p)
        path = path_of(cls, producer)
        cached = len(producer._hashes)
        rnd = random.Random(11)
        keys = [rnd.randbytes(rnd.randint(1, 64)) for _ in range(500)]
        keys = [k for k in keys if k != b"k"]  # (b"k" marks the records sent above)
        keys += [bytes(64), b"\xff" * 64, b"\xff" * 65, bytes(65)]
        futures = []
        for key in keys:
            fut = path.append(topic, key, b"v") or await producer.send(topic, b"v", key)
            futures.append(fut)
        await producer.flush()
        stored = len(producer._hashes) - cached
        if cls is send_path.PySendPath:
            assert stored == len(set(keys))
        else:
            assert stored == 2  # only the two 65-byte keys
        assert [f.result().partition for f in futures] == [py_default_partition(k, 5) for k in keys]
        read = read_all_confluent(bootstrap, topic, len(keys) + 5)
        assert sorted((r.partition, r.key) for r in read if r.key != b"k") == sorted(
            (py_default_partition(k, 5), k) for k in keys
        )


class PassThrough:
    """An interceptor that changes nothing (it still has to see every record)."""

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        return record

    def on_acknowledgement(self, metadata: Any, exception: BaseException | None) -> None:
        pass


@pytest.mark.parametrize(
    "config",
    [
        {"transactional_id": "send-path-txn"},
        {"interceptors": [PassThrough()]},
        {"key_serializer": str.encode},
        {"value_serializer": str.encode},
        {"partitioner": lambda key, all_partitions, available: all_partitions[0]},
    ],
    ids=["transactional", "interceptor", "key-serializer", "value-serializer", "partitioner"],
)
async def test_producers_with_more_to_do_per_record_have_no_fast_path(
    config: dict[str, Any], bootstrap: str
) -> None:
    """Transactions, interceptors, serializers and a user partitioner each act on every
    record: such producers send every record through the general path."""
    async with started(bootstrap, **config) as producer:
        assert producer._fast_append is _no_fast_path
    async with started(bootstrap) as plain:
        assert plain._fast_append is not _no_fast_path


async def test_keyless_records_take_the_fast_path_to_the_sticky_partition(
    bootstrap: str, topic_factory: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A keyless record goes where the general path would put it: the topic's sticky
    partition, which moves on by Java's rule (batch_size bytes and a full batch, or twice
    batch_size). Two producers with the same sticky choices (seeded), one without a fast
    path, place every record alike; confluent-kafka reads each record back from its
    partition. No batch leaves by linger before the flush: a batch sent early would
    move the topic on at once, which depends on timing (as in Java). ``time.time`` is
    fixed too: a record's timestamp delta is part of its size, so that a slow moment (a
    loaded machine) would otherwise fill a batch a record early and move the topic."""
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.123)
    fast_topic, general_topic = topic_factory(4), topic_factory(4)
    values = [bytes([65 + i % 26]) * (i % 200) for i in range(4_000)]
    placed: dict[str, list[int]] = {}
    async with (
        # linger far longer than the test: only full batches leave before the flush
        started(bootstrap, batch_size=4096, linger_ms=60_000) as fast,
        started(bootstrap, batch_size=4096, linger_ms=60_000) as general,
    ):
        general._fast_append = _no_fast_path
        for producer in (fast, general):
            producer._placement.partitioner.seed(random.Random(5))
        taken = counting(fast)
        for producer, topic in ((fast, fast_topic), (general, general_topic)):
            futures = [await producer.send(topic, value) for value in values]
            await producer.flush()
            placed[topic] = [md.partition for md in await asyncio.gather(*futures)]
    assert placed[fast_topic] == placed[general_topic]
    assert len(set(placed[fast_topic])) == 4  # it moved on, over every partition
    # The general path took each topic's first record, each move and each new batch.
    assert len(values) // 2 < taken() < len(values)
    read = read_all_confluent(bootstrap, fast_topic, len(values))
    assert sorted((r.partition, r.key, r.value) for r in read) == sorted(
        (p, None, v) for p, v in zip(placed[fast_topic], values, strict=True)
    )


@pytest.mark.parametrize("cls", TWINS)
async def test_a_sticky_partition_the_topic_no_longer_has_is_left_to_the_general_path(
    cls: Any, bootstrap: str, topic_factory: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The topic was created again with fewer partitions while its sticky partition was
    past them (its partitions shrank, the batches are still buffered): the fast path
    appends nothing, leaving the choice of another to the general path."""
    topic = topic_factory(4)
    async with started(bootstrap) as producer:
        for p in range(4):  # an open batch in every partition
            await producer.send(topic, b"v", partition=p)
        path = path_of(cls, producer)
        producer._placement.partitioner.current[topic] = 3
        shrunk = dict(producer._metadata.partitions_by_topic)
        shrunk[topic] = shrunk[topic][:2]
        monkeypatch.setattr(producer._metadata, "partitions_by_topic", shrunk)
        before = state(producer)
        assert path.append(topic, None, b"v") is NOT_PLAIN
        assert state(producer) == before


async def _no_hand_over(fills: Any, filling: bool, wake: Any) -> None:
    """A hand-over that never yields: nothing is sent while a test compares buffers."""


async def test_the_budget_and_batches_are_what_the_general_path_leaves(
    bootstrap: str, topic_factory: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same 3,000 records (200 keys and 30 % keyless, 10 % None values, 0-300 bytes)
    through a producer with the fast path and one without, their sticky choices seeded
    alike: every batch's bytes, count and memory and the budget used are the same. The
    clock stands still (both paths read time.time), so that a slow moment cannot lengthen
    one producer's timestamp deltas and not the other's."""
    rnd = random.Random(7)
    fast_topic, general_topic = topic_factory(5), topic_factory(5)
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.0)
    async with (
        started(bootstrap, batch_size=3000) as fast,
        started(bootstrap, batch_size=3000) as general,
    ):
        general._fast_append = _no_fast_path
        # No hand-over (see test_hand_over) on either path: it would let one
        # producer's sender take batches at moments the other's cannot match.
        monkeypatch.setattr(producer_module, "hand_over", _no_hand_over)
        for producer in (fast, general):
            producer._placement.partitioner.seed(random.Random(3))
        taken = counting(fast)
        await fast.send(fast_topic, b"x", b"x")
        await general.send(general_topic, b"x", b"x")
        for _ in range(3000):
            key = None if rnd.random() < 0.3 else b"k%d" % rnd.randrange(200)
            value = None if rnd.random() < 0.1 else bytes(rnd.randrange(300))
            await fast.send(fast_topic, value, key)
            await general.send(general_topic, value, key)
        assert taken() > 2000

        def layout(producer: AIOKafkaProducer[Any, Any]) -> tuple[Any, ...]:
            used, batches = state(producer)
            return used, [b[1:] for b in batches]  # (without the topic's name)

        assert layout(fast) == layout(general)


async def test_a_patched_clock_stamps_both_paths_alike(
    bootstrap: str, topic_factory: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records are stamped int(time.time() * 1000) on both paths, looked up per record:
    a test that patches time.time (freezegun, mock) gets its time on every record."""
    topic = topic_factory(1)
    async with started(bootstrap, batch_size=2048) as producer:
        taken = counting(producer)
        monkeypatch.setattr(time, "time", lambda: 1_500_000_000.0)
        futures = [await producer.send(topic, b"v" * 100, b"k") for _ in range(100)]
        monkeypatch.undo()
        await producer.flush()
        assert 0 < taken() < 100  # both paths stamped some of them
        assert {(await fut).timestamp for fut in futures} == {1_500_000_000_000}


@pytest.mark.parametrize("clock", [float("nan"), float("inf"), -float("inf")])
async def test_a_clock_with_no_millisecond_is_refused_as_on_the_general_path(
    clock: float, bootstrap: str, topic_factory: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """time.time() returning NaN or an infinity (a broken or patched clock): send() raises,
    as ``int(time.time() * 1000)`` does, and appends nothing; neither twin of the fast path
    stamps the record with a garbage time."""
    topic = topic_factory(1)
    async with started(bootstrap) as producer:
        monkeypatch.setattr(time, "time", lambda: 0.0)
        first = await producer.send(topic, b"v", b"k")  # an open batch, based at time 0
        before = state(producer)
        monkeypatch.setattr(time, "time", lambda: clock)
        for cls in [twin.values[0] for twin in TWINS]:
            assert path_of(cls, producer).append(topic, b"k", b"v") is NOT_PLAIN
        with pytest.raises((ValueError, OverflowError)):
            await producer.send(topic, b"v", b"k")
        monkeypatch.undo()
        assert state(producer) == before
        await producer.flush()
        assert first.result().timestamp == 0


REPLACED_MID_LOOKUP = r"""
import asyncio, sys
from aiokafka_lite import AIOKafkaProducer

async def main(bootstrap, topic):
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=60_000) as p:
        for part in range(30):  # an open batch in every partition
            await p.send(topic, b"v", b"k", partition=part)
        md = p._metadata

        def snapshot():  # what a metadata refresh does: a new dict of new tuples
            md.partitions_by_topic = {t: tuple(list(v)) for t, v in md.partitions_by_topic.items()}

        class Topic(str):
            __hash__ = str.__hash__

            def __eq__(self, other):
                snapshot()  # the dict being searched is dropped mid-lookup
                return str.__eq__(self, other)

        snapshot()
        fut = await p.send(Topic(topic), b"value", b"key")
        await p.flush()
        print((await fut).partition)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_a_topic_whose_eq_replaces_the_metadata_is_memory_safe(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """The fast path looks the topic up in the metadata's dict; a topic whose ``__eq__``
    makes the metadata replace that dict must not leave it reading freed memory. Run in a
    child with PYTHONMALLOC=debug, which poisons freed memory (a read of it crashes)."""
    topic = topic_factory(30)
    env = {**os.environ, "PYTHONMALLOC": "debug"}
    child = subprocess.run(
        [sys.executable, "-c", REPLACED_MID_LOOKUP, bootstrap, topic],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert int(child.stdout) == py_default_partition(b"key", 30)


async def test_a_topic_named_by_a_str_subclass_is_delivered_and_reported(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """A str subclass is a valid topic name (as for aiokafka): its records' futures resolve
    with their metadata, on the fast path and the general one, and the records are there."""

    class Topic(str):
        pass

    topic = topic_factory(2)
    async with started(bootstrap, linger_ms=5) as producer:
        general = await producer.send(Topic(topic), b"v0", b"k", partition=1)
        fast = await producer.send(Topic(topic), b"v1", b"k")
        metadata = [await asyncio.wait_for(f, 30) for f in (general, fast)]
    assert [(m.topic, m.partition) for m in metadata] == [
        (topic, 1),
        (topic, py_default_partition(b"k", 2)),
    ]
    read = read_all_confluent(bootstrap, topic, 2)
    assert sorted(r.value for r in read) == [b"v0", b"v1"]
