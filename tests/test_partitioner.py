"""The partitioner against Kafka's murmur2 vectors (tests/data/murmur2-vectors.tsv),
and a user's ``partitioner=`` end to end (read back with confluent-kafka)."""

from __future__ import annotations

import asyncio
import csv
import random
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import TopicFactory
from hypothesis import given
from hypothesis import strategies as st
from mockcluster import MockCluster
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite._internal.partitioner import (
    KeyHashCache,
    StickyPartitioner,
    default_partition,
    murmur2,
    to_positive,
)

VECTORS_PATH = Path(__file__).parent / "data" / "murmur2-vectors.tsv"


class Vector(NamedTuple):
    key: bytes
    hash: int
    partition_of_7: int
    partition_of_100: int


def _load_vectors() -> list[Vector]:
    with VECTORS_PATH.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [
        Vector(
            bytes.fromhex(row["key_hex"]),
            int(row["murmur2_signed32"]),
            int(row["partition_of_7"]),
            int(row["partition_of_100"]),
        )
        for row in rows
    ]


VECTORS = _load_vectors()


def test_vectors_cover_every_tail_length() -> None:
    # Guards the data file itself: the tail switch (0-3 leftover bytes) must all be hit,
    # as well as the empty key and keys with several 4-byte blocks.
    assert len(VECTORS) >= 40
    assert {len(v.key) % 4 for v in VECTORS} == {0, 1, 2, 3}
    assert any(len(v.key) == 0 for v in VECTORS)
    assert any(len(v.key) > 16 for v in VECTORS)


@pytest.mark.parametrize("vec", VECTORS, ids=lambda v: v.key.hex() or "empty")
def test_murmur2_vectors(vec: Vector) -> None:
    assert murmur2(vec.key) == vec.hash
    assert default_partition(vec.key, 7) == vec.partition_of_7
    assert default_partition(vec.key, 100) == vec.partition_of_100


def test_key_hash_cache_vectors() -> None:
    cache = KeyHashCache()
    for _ in range(2):  # first pass fills the cache, second pass hits it
        for vec in VECTORS:
            assert cache.hash(vec.key) == to_positive(vec.hash)
            assert cache.partition(vec.key, 7) == vec.partition_of_7
            assert cache.partition(vec.key, 100) == vec.partition_of_100
    assert len(cache) == len({v.key for v in VECTORS})


def test_key_hash_cache_is_bounded() -> None:
    cache = KeyHashCache(capacity=8)
    keys = [i.to_bytes(4, "big") + b"k" * (i % 5) for i in range(100)]
    for _ in range(3):
        for key in keys:
            assert cache.hash(key) == to_positive(murmur2(key))
            assert 1 <= len(cache) <= 8
    for vec in VECTORS:
        assert cache.hash(vec.key) == to_positive(vec.hash)
        assert len(cache) <= 8


def test_key_hash_cache_rejects_zero_capacity() -> None:
    with pytest.raises(ValueError, match="capacity"):
        KeyHashCache(capacity=0)


def test_to_positive() -> None:
    assert to_positive(0) == 0
    assert to_positive(5) == 5
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0  # Java's Math.abs would overflow here
    assert to_positive(2**31 - 1) == 2**31 - 1


def test_long_key_beyond_precompiled_unpackers() -> None:
    # Keys longer than the precompiled block unpackers take the fallback path.
    for n in (255, 256, 257, 258, 259, 260, 1000, 1003):
        key = bytes(range(256)) * 4
        assert murmur2(key[:n]) == _reference_murmur2(key[:n])


# A deliberately different shape from the implementation: one byte at a time, Java's
# signed `int` emulated by wrapping after every operation, tail handled by fall-through.
def _to_int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _ushr(x: int, bits: int) -> int:
    """Java's >>> on an int."""
    return (x & 0xFFFFFFFF) >> bits


def _reference_murmur2(data: bytes) -> int:
    m = 0x5BD1E995
    h = _to_int32(0x9747B28C ^ len(data))
    whole = len(data) - len(data) % 4
    k = 0
    for i in range(whole):
        k |= data[i] << (8 * (i % 4))
        if i % 4 == 3:
            k = _to_int32(k)
            k = _to_int32(k * m)
            k ^= _ushr(k, 24)
            k = _to_int32(k * m)
            h = _to_int32(h * m)
            h = _to_int32(h ^ k)
            k = 0
    rest = len(data) % 4
    if rest == 3:
        h = _to_int32(h ^ (data[whole + 2] << 16))
    if rest >= 2:
        h = _to_int32(h ^ (data[whole + 1] << 8))
    if rest >= 1:
        h = _to_int32(h ^ data[whole])
        h = _to_int32(h * m)
    h = _to_int32(h ^ _ushr(h, 13))
    h = _to_int32(h * m)
    h = _to_int32(h ^ _ushr(h, 15))
    return h


def test_reference_matches_vectors() -> None:
    # The property test below is only as good as its reference.
    for vec in VECTORS:
        assert _reference_murmur2(vec.key) == vec.hash


@given(st.binary(min_size=0, max_size=64))
def test_murmur2_matches_reference(data: bytes) -> None:
    expected = _reference_murmur2(data)
    assert murmur2(data) == expected
    assert -(2**31) <= expected < 2**31
    assert default_partition(data, 13) == to_positive(expected) % 13
    assert KeyHashCache(capacity=4).hash(data) == to_positive(expected)


# --- sticky partitioner -------------------------------------------------------------


def test_sticky_stays_until_moved_on() -> None:
    sp = StickyPartitioner(random.Random(1))
    available = [0, 1, 2, 3]
    first = sp.partition("t", available, 4)
    assert first in available
    assert sp.produced["t"] == 0
    for _ in range(100):
        assert sp.partition("t", available, 4) == first

    sp.produced["t"] = 500
    second = sp.move_on("t", available, 4)
    assert second in available
    assert sp.produced["t"] == 0  # the count starts again on the new partition
    for _ in range(100):
        assert sp.partition("t", available, 4) == second


def test_sticky_moves_uniformly_over_available_partitions_the_one_left_included() -> None:
    # Java's BuiltInPartitioner.nextPartition: a uniform draw among the available
    # partitions, without excluding the one the topic leaves.
    sp = StickyPartitioner(random.Random(2))
    available = [1, 4, 7]
    prev = sp.partition("t", available, 10)
    counts: Counter[int] = Counter()
    stayed = 0
    for _ in range(3000):
        cur = sp.move_on("t", available, 10)
        counts[cur] += 1
        stayed += cur == prev
        prev = cur
    assert set(counts) == set(available)
    assert all(850 <= c <= 1150 for c in counts.values()), counts
    assert 850 <= stayed <= 1150  # a third of the moves land where they were


def test_sticky_single_available_partition() -> None:
    sp = StickyPartitioner(random.Random(4))
    assert sp.partition("t", [2], 5) == 2
    assert sp.move_on("t", [2], 5) == 2
    assert sp.partition("t", [2], 5) == 2


def test_sticky_leaves_a_partition_that_became_unavailable() -> None:
    sp = StickyPartitioner(random.Random(5))
    first = sp.partition("t", [0, 1, 2], 3)
    remaining = [p for p in (0, 1, 2) if p != first]
    for _ in range(50):
        assert sp.move_on("t", remaining, 3) in remaining


def test_sticky_falls_back_to_all_partitions_when_none_available() -> None:
    sp = StickyPartitioner(random.Random(6))
    seen = {sp.partition("t", [], 4)}
    for _ in range(200):
        seen.add(sp.move_on("t", [], 4))
    assert seen == {0, 1, 2, 3}


def test_sticky_no_partitions_at_all() -> None:
    sp = StickyPartitioner()
    with pytest.raises(ValueError, match="no partitions"):
        sp.partition("t", [], 0)


def test_sticky_spreads_over_all_partitions() -> None:
    sp = StickyPartitioner(random.Random(7))
    n = 10
    available = list(range(n))
    counts: Counter[int] = Counter()
    for _ in range(5000):
        counts[sp.partition("t", available, n)] += 1
        sp.move_on("t", available, n)
    assert set(counts) == set(available)
    # Uniform would be 500 per partition; a biased choice would fall far outside this.
    assert all(400 <= c <= 600 for c in counts.values()), counts


def test_sticky_topics_are_independent() -> None:
    sp = StickyPartitioner(random.Random(8))
    available = list(range(8))
    sp.partition("a", available, 8)
    b = sp.partition("b", available, 8)
    sp.produced["b"] = 77
    for _ in range(20):
        sp.move_on("a", available, 8)
    assert sp.partition("b", available, 8) == b
    assert sp.produced["b"] == 77


def test_sticky_choice_is_dropped_when_the_topic_has_fewer_partitions() -> None:
    # A topic deleted and created again with fewer partitions: the old sticky
    # choice would name a partition that does not exist (its records would
    # wait for a leader until they expire).
    sp = StickyPartitioner(random.Random(11))
    assert sp.partition("t", [5], 6) == 5  # the only one available
    assert sp.partition("t", [0, 1], 2) in (0, 1)


# -- a user's partitioner= end to end ------------------------------------------------------


class RecordingPartitioner:
    """Keys ``b"p<N>-..."`` go to partition N; keyless records to the last available one.

    Records every call's arguments, as the producer passed them.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[bytes | None, list[int], list[int]]] = []

    def __call__(self, key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
        self.calls.append((key, list(all_partitions), list(available)))
        if key is None:
            return available[-1]
        return int(key.split(b"-")[0][1:])


async def test_custom_partitioner_places_records_read_back_independently(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(4)
    partitioner = RecordingPartitioner()
    # Keys go through a serializer: the partitioner is given the serialized bytes.
    sent = [(f"p{i % 4}-user-{i}", b"v%d" % i) for i in range(40)]
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, key_serializer="str", partitioner=partitioner
    ) as producer:
        futures = [await producer.send(topic, value, key=key) for key, value in sent]
        futures.append(await producer.send(topic, b"keyless"))
        # An explicit partition wins over the partitioner, which is then not asked.
        futures.append(await producer.send(topic, b"explicit", key="p3-x", partition=0))
        results = await asyncio.gather(*futures)

    assert [c[0] for c in partitioner.calls] == [key.encode() for key, _ in sent] + [None]
    assert all(c[1] == [0, 1, 2, 3] and c[2] == [0, 1, 2, 3] for c in partitioner.calls)
    want = [int(key[1]) for key, _ in sent] + [3, 0]
    assert [md.partition for md in results] == want

    records = read_all_confluent(bootstrap, topic, expected=len(want))
    assert len(records) == len(want)
    where = {r.value: r.partition for r in records}
    for (key, value), partition in zip(sent, want, strict=False):
        assert where[value] == partition, key
    assert where[b"keyless"] == 3 and where[b"explicit"] == 0
    assert {r.partition for r in records} == {0, 1, 2, 3}


async def test_custom_partitioner_is_given_only_partitions_with_a_leader() -> None:
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("t", partitions=4)
        cluster.set_leader("t", 2, -1)  # no leader: not available
        partitioner = RecordingPartitioner()
        async with AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, partitioner=partitioner
        ) as producer:
            md = await producer.send_and_wait("t", b"v")
            md1 = await producer.send_and_wait("t", b"v", key=b"p1-k")
        assert partitioner.calls == [
            (None, [0, 1, 2, 3], [0, 1, 3]),
            (b"p1-k", [0, 1, 2, 3], [0, 1, 3]),
        ]
        assert (md.partition, md1.partition) == (3, 1)


async def test_bad_partitioner_fails_only_that_send(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(3)

    class PartitionerBoomError(Exception):
        pass

    def partitioner(key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
        if key == b"out-of-range":
            return 7
        if key == b"negative":
            return -1
        if key == b"raise":
            raise PartitionerBoomError("partitioner failed")
        return 1

    async with AIOKafkaProducer(bootstrap_servers=bootstrap, partitioner=partitioner) as producer:
        before = await producer.send(topic, b"before", key=b"ok")
        with pytest.raises(
            ValueError, match=rf"partitioner returned 7 for '{topic}' with 3 partitions"
        ):
            await producer.send(topic, b"x", key=b"out-of-range")
        with pytest.raises(ValueError, match=rf"partitioner returned -1 for '{topic}'"):
            await producer.send(topic, b"x", key=b"negative")
        with pytest.raises(PartitionerBoomError, match="partitioner failed"):
            await producer.send(topic, b"x", key=b"raise")
        after = await producer.send(topic, b"after", key=b"ok")
        assert (await before).partition == (await after).partition == 1

    records = read_all_confluent(bootstrap, topic, expected=2)
    assert [(r.partition, r.value) for r in records] == [(1, b"before"), (1, b"after")]
