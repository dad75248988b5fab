"""The compiled build's Arrow write path gives what the pure path gives, row for row.

The same Arrow batches go through the pure path (``TaskWriter.write`` of the
converter's Python lists) and the compiled one (``ArrowPath``: rows read from the
Arrow buffers): each row must land on the same partition, each sent batch must have
the same bytes, a bad row must fail with the same message and the task's report
must count the same. The property test sends to a recording producer, because
hypothesis's hundreds of examples against a broker would take minutes: it records
what ``send_batch`` is given (the real batches, closed as the sender closes them)
instead of sending it. A second test writes through a real broker, both ways, and
reads both back with confluent-kafka.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest

pytest.importorskip("pyarrow", reason="the spark extra is not installed")
import pyarrow as pa
from conftest import TopicFactory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from partition_checks import run_lengths
from readers import read_all_confluent

from aiokafka_lite import speedups
from aiokafka_lite._internal.batch_builder import BatchBuilder
from aiokafka_lite._internal.placement import RecordPartitioner
from aiokafka_lite.errors import KafkaError, UnknownTopicOrPartitionError
from aiokafka_lite.spark import arrow_rows
from aiokafka_lite.spark.arrow import Converter
from aiokafka_lite.spark.arrow_rows import ArrowPath
from aiokafka_lite.spark.contract import Plan
from aiokafka_lite.spark.summary import TaskReport
from aiokafka_lite.spark.task import TaskWriter, run_task
from aiokafka_lite.testing.mock_parts import AllAvailable

needs_compiled = pytest.mark.skipif(not speedups.COMPILED, reason="the pure build")
PARTITIONS = {"a": 3, "b": 1}  # "gone" is not a topic: its rows fail
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


class RecordingProducer:
    """What TaskWriter uses of a producer; ``send_batch`` records the closed batch."""

    def __init__(self, batch_size: int, max_request_size: int) -> None:
        self.config = SimpleNamespace(
            batch_size=batch_size, max_request_size=max_request_size, delivery_timeout_ms=1000
        )
        # The producer's partitioner, over metadata of PARTITIONS; its sticky draws
        # follow the random module's seed.
        partitioner = RecordPartitioner(None, batch_size, random.Random(random.getrandbits(64)))
        partitioner.metadata = AllAvailable(lambda topic: PARTITIONS.get(topic, 0))  # type: ignore[assignment]
        self._placement = SimpleNamespace(
            key_serializer=None, value_serializer=None, partitioner=partitioner
        )
        self.sent: list[tuple[str, int, bytes] | str] = []

    async def partitions_for(self, topic: str) -> set[int]:
        if topic not in PARTITIONS:
            raise UnknownTopicOrPartitionError(f"no topic {topic}")
        return set(range(PARTITIONS[topic]))

    def create_batch(self) -> BatchBuilder:
        return BatchBuilder(self.config.batch_size)

    async def send_batch(
        self, batch: BatchBuilder, topic: str, *, partition: int
    ) -> asyncio.Future[None]:
        try:
            builder = batch._take(topic, self.config.max_request_size)
        except KafkaError as e:
            self.sent.append(f"{topic}[{partition}]: {e}")
            raise
        assert builder is not None
        self.sent.append((topic, partition, bytes(builder.close())))
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


def make_plan(topic_column: bool, map_headers: bool = False) -> Plan:
    return Plan(
        topic=None if topic_column else "a",
        config={},
        key_name="key",
        partition_name="partition",
        headers_name="headers",
        topic_name="topic",
        value_name="value",
        headers_as_pairs=not map_headers,
        key_at=0,
        value_at=(1,),
        partition_at=2,
        timestamp_at=3,
        headers_at=4,
        topic_at=5 if topic_column else None,
    )


async def write_all(
    plan: Plan, batches: list[pa.RecordBatch], producer: RecordingProducer, compiled: bool
) -> tuple[Any, ...]:
    """Both paths as write_batches runs them; what was sent and reported, or the error."""
    report = TaskReport.for_this_task()
    writer = TaskWriter(producer, plan, report)  # type: ignore[arg-type]
    converter = Converter(plan)
    fast = ArrowPath.for_task(writer, converter) if compiled else None
    assert (fast is not None) == compiled
    error = None
    try:
        for batch in batches:
            report.rows += batch.num_rows
            if fast is None or not await fast.write(batch):
                assert not compiled, "the Arrow path must serve these batches"
                await writer.write(converter.convert(batch))
        await writer.finish(1.0)
    except Exception as e:  # e.g. a negative timestamp: the task fails, the same way
        error = f"{type(e).__name__}: {e}"
    await asyncio.sleep(0)
    return (
        producer.sent,
        error,
        report.rows_sent,
        report.rows_failed,
        report.first_error,
        sorted(report.topics),
        {name: (t.sticky, t.produced) for name, t in writer.topics.items()},
    )


def both_paths(
    plan: Plan, batches: list[pa.RecordBatch], sizes: tuple[int, int], seed: int = 0
) -> list[tuple[Any, ...]]:
    """What each path (pure, then compiled) sends and reports, from the same start."""
    outcomes = []
    for compiled in (False, True):
        random.seed(seed)  # the sticky partitions' draws
        with mock.patch.object(time, "time", return_value=1_700_000_000.0):  # rows' "now"
            producer = RecordingProducer(*sizes)
            outcomes.append(asyncio.run(write_all(plan, batches, producer, compiled)))
    return outcomes


keys = st.one_of(st.none(), st.sampled_from([b"", b"k1", b"k2", b"key-3"]), st.binary(max_size=12))
values = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=200, max_size=900))
headers = st.one_of(
    st.none(),
    st.lists(
        st.fixed_dictionaries(
            {
                "key": st.one_of(st.text(max_size=4), st.none() | st.just("h")),
                "value": st.one_of(st.none(), st.binary(max_size=8)),
            }
        ),
        max_size=3,
    ),
)
rows = st.lists(
    st.tuples(
        keys,
        values,
        st.one_of(st.none(), st.integers(-1, 3)),
        st.one_of(st.none(), st.integers(0, 1 << 42), st.just(-5)),
        headers,
        st.one_of(st.none(), st.sampled_from(["a", "a", "b", "gone"])),
    ),
    max_size=60,
)
types = st.tuples(
    st.sampled_from([pa.binary(), pa.string(), pa.large_binary()]),
    st.sampled_from([pa.binary(), pa.large_binary(), pa.large_string()]),
)


def arrow_batches(
    data: list[Any],
    key_type: pa.DataType,
    value_type: pa.DataType,
    cut: int,
    headers_type: pa.DataType = HEADERS,
) -> list[pa.RecordBatch]:
    def text(b: bytes | None, t: pa.DataType) -> Any:
        if b is None or t in (pa.binary(), pa.large_binary()):
            return b
        return b.decode("latin-1")  # (any bytes as a valid string: its UTF-8 differs)

    schema = pa.schema(
        [
            ("key", key_type),
            ("value", value_type),
            ("partition", pa.int32()),
            ("timestamp", pa.int64()),
            ("headers", headers_type),
            ("topic", pa.string()),
        ]
    )
    columns: list[list[Any]] = [[] for _ in schema]
    for k, v, p, ts, h, t in data:
        if h is not None and pa.types.is_map(headers_type):
            h = [(e["key"], e["value"]) for e in h]
        for column, x in zip(
            columns, (text(k, key_type), text(v, value_type), p, ts, h, t), strict=True
        ):
            column.append(x)
    batch = pa.RecordBatch.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)], schema=schema
    )
    cut = min(cut, batch.num_rows)
    return [batch.slice(0, cut), batch.slice(cut)]  # sliced: offsets into shared buffers


@needs_compiled
@settings(
    max_examples=int(os.environ.get("ARROW_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    data=rows,
    column_types=types,
    cut=st.integers(0, 60),
    topic_column=st.booleans(),
    sizes=st.sampled_from([(300, 2000), (1000, 600), (16384, 1 << 20)]),
    seed=st.integers(0, 1000),
)
def test_arrow_path_sends_what_the_pure_path_sends(
    data: list[Any],
    column_types: tuple[pa.DataType, pa.DataType],
    cut: int,
    topic_column: bool,
    sizes: tuple[int, int],
    seed: int,
) -> None:
    batches = arrow_batches(data, *column_types, cut)
    pure, fast = both_paths(make_plan(topic_column), batches, sizes, seed)
    assert fast == pure


@needs_compiled
def test_bad_rows_fail_alone_with_the_pure_paths_messages() -> None:
    data = [
        (b"k", b"v", 7, None, None, "a"),  # partition out of range
        (b"k", b"v", None, None, [{"key": None, "value": b"x"}], "a"),  # null header name
        (b"k", b"v", None, None, None, None),  # null topic
        (b"k", b"v", None, None, None, "gone"),  # unknown topic
        (b"k", b"x" * 3000, None, None, None, "b"),  # too large alone
        (b"k", b"v", None, None, None, "b"),
    ]
    batches = arrow_batches(data, pa.binary(), pa.binary(), 6)
    got = both_paths(make_plan(True), batches, (1000, 2000))
    assert got[1] == got[0]
    sent, error, rows_sent, rows_failed, first_error, *_ = got[1]
    assert error is None and (rows_sent, rows_failed) == (1, 5)
    assert first_error == (
        "column 'partition' (partition) of row 0: partition 7 is out of range for 'a', "
        "which has 3 partition(s)"
    )
    assert any("RecordTooLargeError" not in s and "b[0]" in s for s in sent if isinstance(s, str))


def test_only_the_compiled_build_takes_the_arrow_path() -> None:
    report = TaskReport.for_this_task()
    writer = TaskWriter(RecordingProducer(100, 100), make_plan(False), report)  # type: ignore[arg-type]
    fast = ArrowPath.for_task(writer, Converter(writer.plan))
    assert (fast is not None) is speedups.COMPILED  # the pure build keeps the pure path
    json_plan = Plan(topic="a", config={}, value_format="json", value_at=(0,))
    writer = TaskWriter(RecordingProducer(100, 100), json_plan, report)  # type: ignore[arg-type]
    assert ArrowPath.for_task(writer, Converter(json_plan)) is None  # values to encode


@needs_compiled
def test_both_paths_land_the_same_records(
    bootstrap: str, topic_factory: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    data = [
        (
            f"k{rng.randrange(50)}".encode() if i % 5 else None,
            rng.randbytes(rng.randrange(0, 300)) if i % 11 else None,
            2 if i % 13 == 0 else None,
            1_700_000_000_000 + i,
            [{"key": "h", "value": str(i).encode()}] if i % 7 == 0 else None,
            None,
        )
        for i in range(3000)
    ]
    got = []
    for compiled in (False, True):
        topic = topic_factory(3)
        if not compiled:
            monkeypatch.setattr(arrow_rows, "_compiled", lambda: None)
        else:
            monkeypatch.undo()
        plan = make_plan(False)
        plan = Plan(**{**plan.__dict__, "topic": topic, "config": {"bootstrap_servers": bootstrap}})
        report = run_task(plan, arrow_batches(data, pa.string(), pa.binary(), 1234))
        assert (report.rows_sent, report.rows_failed) == (3000, 0)
        records = read_all_confluent(bootstrap, topic, expected=3000, timeout=20, idle=1.0)
        placed = []
        for r in records:
            k, v, p, _ts, h, _ = data[r.timestamp - 1_700_000_000_000]  # the row it came from
            assert (r.key, r.value, r.headers or None) == (
                k,
                v,
                [(e["key"], e["value"]) for e in h] if h else None,
            )
            # Keyless rows go where the sticky partitioner's random draws put them.
            placed.append((r.timestamp, r.partition if k is not None or p is not None else -1))
        got.append(sorted(placed))
    assert got[0] == got[1]
    assert len(got[1]) == len(data)


@needs_compiled
def test_map_headers_are_encoded_as_the_pure_path_encodes_them() -> None:
    # write_to_kafka's map<string, binary> headers: (name, value) pairs in map order.
    rng = random.Random(3)
    data = [
        (
            b"k%d" % rng.randrange(9),
            rng.randbytes(rng.randrange(60)),
            None,
            1_700_000_000_000 + i,
            [{"key": f"h{j}", "value": None if j == 1 else b"%d" % i} for j in range(i % 4)],
            "a",
        )
        for i in range(200)
    ]
    map_type = pa.map_(pa.string(), pa.binary())
    batches = arrow_batches(data, pa.binary(), pa.binary(), 77, map_type)
    pure, fast = both_paths(make_plan(True, map_headers=True), batches, (500, 1 << 20))
    assert fast == pure
    assert pure[2] == 200 and pure[3] == 0  # every row sent


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_keyless_rows_move_on_as_javas_producer_does(seed: int) -> None:
    """Java's sticky rule (KIP-794) on the task's own batches, in each path there is:
    the row that does not fit closes a batch after fewer than batch.size bytes, so the
    partition takes a second batch, and the row that does not fit that one moves the
    topic on. So the sent batches change partition after an even number of batches (a
    draw may repeat the partition, which merges two stints)."""
    data = [(None, b"%05d" % i + b"x" * 45, None, None, None, "a") for i in range(400)]
    batches = arrow_batches(data, pa.binary(), pa.binary(), 150)
    outcomes = []
    for compiled in (False, True) if speedups.COMPILED else (False,):
        random.seed(seed)  # the sticky partitions' draws
        with mock.patch.object(time, "time", return_value=1_700_000_000.0):  # rows' "now"
            producer = RecordingProducer(1000, 1 << 20)
            outcomes.append(asyncio.run(write_all(make_plan(False), batches, producer, compiled)))
    for sent, error, rows_sent, *_ in outcomes:
        assert error is None and rows_sent == 400
        runs = run_lengths(p for _, p, _ in sent)
        assert len(runs) > 5 and all(r % 2 == 0 for r in runs[:-1]), runs
    assert outcomes[-1] == outcomes[0]
