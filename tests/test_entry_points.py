"""Every way into a batch places, counts and encodes a record alike.

The same records go through each entry point of one fresh producer per entry point:
``send()`` (its fast path and its general path), ``try_send()``, ``send_many()``,
``create_batch()``/``send_batch()`` (one open batch per partition, as a user of the batch
API fills them) and the Spark task writer (``spark.task.write_batches``, driven directly
without Spark: the pure writer, and in the compiled build the Arrow path too). Each
producer's partitioner starts from the same seed. What must be equal: every batch each
partition sends (its record count, base timestamp and the bytes of its records, read as
the sender drains it: the partition and the bytes on the wire), and the partitioner's
sticky state at the end (each topic's sticky partition and the bytes its keyless
records added there: the bytes the sticky rule counted). ``time.time`` is fixed, so
that each path stamps the records alike (the Spark writer and ``send_many`` stamp them
with the time of the call). A real broker takes the batches; ``linger_ms`` is long, so
that only full batches leave before the final ``flush()``. The suite runs in both
builds (CI), so both twins of each path are compared.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiokafka_lite import AIOKafkaProducer, speedups
from aiokafka_lite._internal.records import BATCH_HEADER_SIZE

pa = pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from aiokafka_lite.spark.contract import Plan  # noqa: E402
from aiokafka_lite.spark.summary import TaskReport  # noqa: E402
from aiokafka_lite.spark.task import write_batches  # noqa: E402

NOW = 1_700_000_000.123
PARTITIONS = 3
Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


async def started(bootstrap: str, batch_size: int, seed: int) -> AIOKafkaProducer[Any, Any]:
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=bootstrap, batch_size=batch_size, linger_ms=60_000
    )
    producer._placement.partitioner.seed(random.Random(seed))
    await producer.start()
    return producer


def recording(producer: AIOKafkaProducer[Any, Any]) -> dict[int, list[tuple[int, int, bytes]]]:
    """Each partition's batches as the sender drains them: (count, base timestamp, records)."""
    drained: dict[int, list[tuple[int, int, bytes]]] = {}
    acc = producer._acc
    drain = acc.drain

    def recorded(queues: Any, max_request_size: int) -> Any:
        batches = drain(queues, max_request_size)
        for b in batches:
            drained.setdefault(b.queue.tp.partition, []).append(
                (b.count, b.base_timestamp, bytes(b.buf[BATCH_HEADER_SIZE:]))
            )
        return batches

    acc.drain = recorded  # type: ignore[method-assign]
    return drained


async def through_send(
    producer: AIOKafkaProducer[Any, Any], topic: str, records: list[Record]
) -> None:
    futures = [await producer.send(topic, v, k, headers=h) for k, v, h in records]
    await producer.flush()
    await asyncio.gather(*futures)


async def through_try_send(
    producer: AIOKafkaProducer[Any, Any], topic: str, records: list[Record]
) -> None:
    futures = [producer.try_send(topic, v, k, headers=h) for k, v, h in records]
    await producer.flush()
    await asyncio.gather(*futures)


async def through_send_many(
    producer: AIOKafkaProducer[Any, Any], topic: str, records: list[Record]
) -> None:
    assert all(h is None for _, _, h in records)  # (send_many takes no headers)
    fut = await producer.send_many(topic, [(k, v) for k, v, _ in records])
    await producer.flush()
    report = await fut
    assert not report.errors


async def through_send_batch(
    producer: AIOKafkaProducer[Any, Any], topic: str, records: list[Record]
) -> None:
    """The batch API as a user fills it: one open batch per partition, each record on
    the partition the producer's partitioner gives its key (keyed records only)."""
    partitioner = producer._placement.partitioner
    ts = int(time.time() * 1000)
    open_batches: dict[int, Any] = {}
    futures = []
    for k, v, h in records:
        assert k is not None
        p = partitioner.partition(topic, k, PARTITIONS, None)
        b = open_batches.get(p) or open_batches.setdefault(p, producer.create_batch())
        if b.append(key=k, value=v, timestamp=ts, headers=h) is None:
            futures.append(await producer.send_batch(b, topic, partition=p))
            b = open_batches[p] = producer.create_batch()
            assert b.append(key=k, value=v, timestamp=ts, headers=h) is not None
    for p, b in open_batches.items():
        futures.append(await producer.send_batch(b, topic, partition=p))
    await producer.flush()
    await asyncio.gather(*futures)


def spark_writer(arrow: bool) -> Any:
    async def through_spark(
        producer: AIOKafkaProducer[Any, Any], topic: str, records: list[Record]
    ) -> None:
        with_headers = any(h is not None for _, _, h in records)
        columns = [
            pa.array([k for k, _, _ in records], pa.binary()),
            pa.array([v for _, v, _ in records], pa.binary()),
        ]
        names = ["key", "value"]
        if with_headers:
            rows = [
                None if h is None else [{"key": n, "value": d} for n, d in h] for *_, h in records
            ]
            columns.append(pa.array(rows, HEADERS))
            names.append("headers")
        batch = pa.RecordBatch.from_arrays(columns, names=names)
        plan = Plan(
            topic=topic,
            config={},
            key_name="key",
            value_name="value",
            headers_name="headers",
            headers_as_pairs=True,
            key_at=0,
            value_at=(1,),
            headers_at=2 if with_headers else None,
        )
        report = TaskReport.for_this_task()
        with (
            mock.patch("aiokafka_lite.spark.arrow_rows._compiled", return_value=None)
            if not arrow
            else contextlib.nullcontext()
        ):
            await write_batches(producer, plan, iter([batch]), report)
        assert report.rows_sent == len(records), report.first_error

    return through_spark


ENTRIES: dict[str, Any] = {
    "send": through_send,
    "try_send": through_try_send,
    "send_many": through_send_many,
    "send_batch": through_send_batch,
    "spark": spark_writer(arrow=False),
}
if speedups.COMPILED:
    ENTRIES["spark/arrow"] = spark_writer(arrow=True)


async def outcome(
    entry: str, bootstrap: str, topic: str, records: list[Record], batch_size: int, seed: int
) -> tuple[Any, ...]:
    producer = await started(bootstrap, batch_size, seed)
    try:
        drained = recording(producer)
        if entry == "try_send":
            await producer.partitions_for(topic)  # (try_send needs the partitions known)
        await ENTRIES[entry](producer, topic, records)
        partitioner = producer._placement.partitioner
        keyless = any(k is None for k, _, _ in records)
        sticky = (
            (partitioner.current.get(topic), partitioner.produced.get(topic)) if keyless else None
        )
        return drained, sticky
    finally:
        await producer.stop()


keys = st.one_of(
    st.none(), st.sampled_from([b"", b"a", b"user-1", b"user-22"]), st.binary(max_size=70)
)
values = st.one_of(st.none(), st.binary(max_size=60), st.binary(min_size=300, max_size=1500))


def bulk(seed: int, count: int, keyless: float) -> list[tuple[bytes | None, bytes | None]]:
    """``count`` more records from ``seed`` (hypothesis keeps its own lists short): enough
    for batches to fill and keyless records to move on."""
    rng = random.Random(seed)
    return [
        (
            None if rng.random() < keyless else b"key-%d" % rng.randrange(40),
            rng.randbytes(rng.randrange(0, 400)),
        )
        for _ in range(count)
    ]


def headers_for(seed: int, count: int) -> list[list[tuple[str, bytes | None]] | None]:
    rng = random.Random(seed + 1)
    return [
        None
        if rng.random() < 0.3
        else [(f"h{j}-\u00e9", rng.randbytes(rng.randrange(6))) for j in range(rng.randrange(3))]
        for _ in range(count)
    ]


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    records=st.lists(st.tuples(keys, values), max_size=60),
    more=st.integers(0, 600),
    keyless=st.sampled_from([0.0, 0.3, 1.0]),
    with_headers=st.sampled_from([False, False, True]),
    batch_size=st.sampled_from([600, 2048, 16384]),
    seed=st.integers(0, 1 << 16),
)
def test_every_entry_point_places_counts_and_encodes_alike(
    bootstrap: str,
    topic_factory: Any,
    records: list[tuple[bytes | None, bytes | None]],
    more: int,
    keyless: float,
    with_headers: bool,
    batch_size: int,
    seed: int,
) -> None:
    topic = topic_factory(PARTITIONS)
    records = records + bulk(seed, more, keyless)
    if not records:
        records = [(None, b"v")]
    header_lists = headers_for(seed, len(records))
    full: list[Record] = [
        (k, v, header_lists[i] if with_headers else None) for i, (k, v) in enumerate(records)
    ]
    entries = [
        e
        for e in ENTRIES
        if not (e == "send_many" and with_headers)
        and not (e == "send_batch" and any(k is None for k, _ in records))
    ]
    got = {}
    with mock.patch.object(time, "time", return_value=NOW):
        for entry in entries:
            got[entry] = asyncio.run(outcome(entry, bootstrap, topic, full, batch_size, seed))
    reference = got["send"]
    assert sum(len(b) for b in reference[0].values()) >= 1  # (flushed: at least one batch)
    for entry, result in got.items():
        assert result == reference, f"{entry} differs from send()"
