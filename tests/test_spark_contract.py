"""The Spark sink's driver-side rules and its task write path, without a JVM.

Part of the default run: nothing here starts Spark. The data source's schema and
option checks (Spark's Kafka sink contract) are called as Spark's planner calls
them, with pyspark's own types; the task path (:func:`run_task`) is fed Arrow
batches directly and writes to the embedded broker, read back with confluent-kafka.
The same code under a real cluster: test_spark_datasource.py (marker ``spark``).
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
import pyarrow as pa
from conftest import TopicFactory
from partition_checks import java_partition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)
from readers import read_all_confluent

from aiokafka_lite.errors import ConfigError
from aiokafka_lite.spark import (
    KafkaDataSource,
    KafkaWriteError,
    TaskReport,
    WriteSummary,
    kafka_batch_writer,
)
from aiokafka_lite.spark.contract import SPARK_KAFKA_SINK_GUIDE, datasource_plan
from aiokafka_lite.spark.summary import summarize
from aiokafka_lite.spark.task import run_task

HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9"}


def schema(**columns: Any) -> StructType:
    return StructType([StructField(name, t) for name, t in columns.items()])


# -- Spark's Kafka sink contract ---------------------------------------------------------


def test_columns_are_found_by_name_and_others_ignored() -> None:
    s = schema(
        other=LongType(),
        partition=IntegerType(),
        value=BinaryType(),
        headers=HEADERS,
        key=StringType(),
        topic=StringType(),
    )
    plan = datasource_plan(s, BOOT)
    assert (plan.partition_at, plan.value_at, plan.headers_at, plan.key_at, plan.topic_at) == (
        1,
        (2,),
        3,
        4,
        5,
    )
    assert plan.topic is None and plan.headers_as_pairs and plan.value_format == "bytes"
    # The topic option wins over the topic column (which is then not read at all).
    plan = datasource_plan(s, {**BOOT, "topic": "orders"})
    assert (plan.topic, plan.topic_at) == ("orders", None)
    # Only value is required.
    plan = datasource_plan(schema(value=StringType()), {**BOOT, "topic": "t"})
    assert (plan.key_at, plan.headers_at, plan.partition_at) == (None, None, None)


@pytest.mark.parametrize(
    ("columns", "options", "error", "message"),
    [
        ({"payload": StringType()}, {"topic": "t"}, ValueError, r"no 'value' column"),
        ({"Value": StringType()}, {"topic": "t"}, ValueError, r"no 'value' column"),
        ({"value": LongType()}, {"topic": "t"}, TypeError, r"column 'value' has type bigint"),
        (
            {"value": StringType(), "key": IntegerType()},
            {"topic": "t"},
            TypeError,
            r"column 'key' has type int: Spark's Kafka sink takes string or binary",
        ),
        (
            {"value": StringType(), "partition": LongType()},
            {"topic": "t"},
            TypeError,
            r"column 'partition' has type bigint: .* takes int",
        ),
        (
            {"value": StringType(), "headers": MapType(StringType(), BinaryType())},
            {"topic": "t"},
            TypeError,
            r"'headers' has type map<string,binary>: .*array<struct<key:string,value:binary>>",
        ),
        (
            {"value": StringType(), "headers": ArrayType(schema(key=StringType(), x=LongType()))},
            {"topic": "t"},
            TypeError,
            r"column 'headers'",
        ),
        ({"value": StringType()}, {}, ValueError, r"'topic' option is required"),
        (
            {"value": StringType(), "topic": BinaryType()},
            {},
            TypeError,
            r"column 'topic' has type binary",
        ),
        ({"value": StringType()}, {"topic": " "}, ValueError, r"option 'topic' is empty"),
    ],
)
def test_contract_violations_name_the_column(
    columns: dict[str, Any], options: dict[str, str], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message) as info:
        datasource_plan(schema(**columns), {**BOOT, **options})
    if error is TypeError or "value" in message:
        assert SPARK_KAFKA_SINK_GUIDE in str(info.value)


def test_kafka_options_become_producer_settings() -> None:
    s = schema(value=StringType())
    plan = datasource_plan(
        s,
        {
            **BOOT,
            "topic": "t",
            # Spark passes every option as a string, with lower-cased names
            "kafka.acks": "1",
            "kafka.retries": "3",
            "kafka.linger.ms": "20",
            "kafka.enable.idempotence": "false",
            "kafka.compression.type": "zstd",
            "checkpointLocation": "/x",  # not a kafka. option: not the producer's
        },
    )
    assert plan.config == {
        "bootstrap_servers": "127.0.0.1:9",
        "acks": 1,
        "retries": 3,
        "linger.ms": "20",  # converted by ProducerConfig, as dotted names are
        "enable.idempotence": "false",
        "compression.type": "zstd",
    }
    # As Java's producer (and Spark's sink): topics may be auto-created unless told not to.
    assert "allow_auto_create_topics" not in plan.config


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({}, ValueError, r"'kafka.bootstrap.servers' is required"),
        ({**BOOT, "kafka.key.serializer": "x"}, ValueError, r"'kafka.key.serializer' is not used"),
        (
            {**BOOT, "kafka.value.serializer": "x"},
            ValueError,
            r"'kafka.value.serializer' is not used",
        ),
        (
            {**BOOT, "kafka.partitioner.class": "org.example.P"},
            ValueError,
            r"'kafka.partitioner.class' names a Java class",
        ),
        ({**BOOT, "kafka.linger.mss": "5"}, ConfigError, r"linger.mss.*kafka.<name>"),
        ({**BOOT, "kafka.acks": "2"}, ConfigError, r"acks"),
        (
            {**BOOT, "kafka.transactional.id": "q"},
            ValueError,
            r"transactional_id is not a producer option",
        ),
    ],
)
def test_bad_options_are_refused_naming_them(
    options: dict[str, str], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        datasource_plan(schema(value=StringType()), {"topic": "t", **options})


def test_data_source_makes_writers_that_pickle() -> None:
    # Spark pickles the writer on the driver and unpickles it in every task.
    source = KafkaDataSource({**BOOT, "topic": "t", "summarypath": "/tmp/s.jsonl"})
    assert KafkaDataSource.name() == "aiokafka_lite"
    with pytest.raises(ValueError, match=r"save mode overwrite is not allowed for Kafka"):
        source.writer(schema(value=StringType()), overwrite=True)
    for writer in (
        source.writer(schema(value=StringType()), overwrite=False),
        source.streamWriter(schema(value=StringType()), overwrite=True),
    ):
        copy = pickle.loads(pickle.dumps(writer))
        assert copy.plan == writer.plan and copy.summary_path == "/tmp/s.jsonl"


# -- summaries -----------------------------------------------------------------------------


def test_summary_says_when_tasks_were_retried() -> None:
    reports = [
        TaskReport(0, attempt=0, rows=100, rows_sent=100, started_at=10.0, finished_at=12.0),
        TaskReport(1, attempt=2, rows=300, rows_sent=300, started_at=11.0, finished_at=14.5),
        TaskReport(2, attempt=1, rows=50, rows_sent=49, rows_failed=1, first_error="boom"),
    ]
    reports[2].started_at, reports[2].finished_at = 10.5, 13.0
    summary = summarize("orders", reports)
    assert (summary.rows_sent, summary.rows_failed, summary.tasks) == (449, 1, 3)
    assert (summary.tasks_retried, summary.attempts_retried) == (2, 3)
    assert summary.rows_maybe_duplicated == 350
    assert summary.elapsed_s == pytest.approx(4.5)  # first start to last end
    assert summary.errors == ("partition 2: boom",)
    text = str(summary)
    assert "2 task(s) ran again after 3 failed attempt(s)" in text
    assert "up to 350 of their rows may have been written more than once" in text
    # Without retries the summary says nothing about them.
    clean = summarize("orders", [reports[0]])
    assert clean.tasks_retried == 0 and "ran again" not in str(clean)
    # Summaries survive the summaryPath file, and errors survive pickling (Spark does).
    assert WriteSummary.from_json(summary.to_json()) == summary
    error = pickle.loads(pickle.dumps(KafkaWriteError(summary)))
    assert error.summary == summary
    assert "1 of 450 rows were not written to 'orders': partition 2: boom" in str(error)


def test_exactly_once_options_are_checked_at_the_call() -> None:
    boot = "127.0.0.1:9"
    with pytest.raises(ValueError, match=r"exactly_once=True needs transactional_id"):
        kafka_batch_writer("t", bootstrap_servers=boot, exactly_once=True)
    with pytest.raises(ValueError, match=r"exactly_once=True needs transactional_id"):
        kafka_batch_writer("t", bootstrap_servers=boot, exactly_once=True, transactional_id="")
    # Transactions need the idempotent producer: Java's name for the option refuses to turn
    # it off (as Java); aiokafka's turns it back on (as aiokafka).
    no_idempotence: dict[str, Any] = {"enable.idempotence": "false"}
    with pytest.raises(ConfigError, match=r"transactional_id requires enable_idempotence"):
        kafka_batch_writer(
            "t", bootstrap_servers=boot, exactly_once=True, transactional_id="q", **no_idempotence
        )
    writer = kafka_batch_writer(
        "t",
        bootstrap_servers=boot,
        exactly_once=True,
        transactional_id="q",
        enable_idempotence=False,
    )
    assert writer is not None
    with pytest.raises(ValueError, match=r"only used with exactly_once=True"):
        kafka_batch_writer("t", bootstrap_servers=boot, transactional_id="q")
    # Every task would start a producer with this id, each fencing the one before.
    kafka_style: dict[str, Any] = {"transactional.id": "q"}
    with pytest.raises(ValueError, match=r"transactional_id is not a producer option"):
        kafka_batch_writer("t", bootstrap_servers=boot, **kafka_style)


# -- the task write path, fed Arrow directly ----------------------------------------------


def test_task_writes_rows_where_the_columns_say(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    a, b = topic_factory(3), topic_factory(2)
    s = schema(
        key=StringType(),
        value=StringType(),
        headers=HEADERS,
        topic=StringType(),
        partition=IntegerType(),
    )
    plan = datasource_plan(s, {"kafka.bootstrap.servers": bootstrap})
    batch_type = pa.schema(
        [
            ("key", pa.string()),
            ("value", pa.large_string()),  # Arrow may carry large strings: cast the same
            ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
            ("topic", pa.string()),
            ("partition", pa.int32()),
        ]
    )
    rows = [
        ("k1", "v0", [{"key": "h", "value": b"0"}], a, None),
        (None, "v1", None, b, None),
        ("k2", None, [], a, 2),  # a null value: a tombstone
        ("k3", "v3", None, None, None),  # a null topic: this row fails
        ("k4", "v4", None, b, 7),  # out of range for b: this row fails
        ("k5", "\u00e9", [{"key": "h", "value": None}], b, 1),
    ]
    columns = list(zip(*rows, strict=True))
    batch = pa.RecordBatch.from_arrays(
        [pa.array(list(c), type=f.type) for c, f in zip(columns, batch_type, strict=True)],
        schema=batch_type,
    )
    report = run_task(plan, [batch.slice(0, 3), batch.slice(3)])
    assert (report.rows, report.rows_sent, report.rows_failed) == (6, 4, 2)
    assert report.partition_id == -1 and report.attempt == 0  # not in a Spark task
    assert report.first_error is not None and "row 3: null topic" in report.first_error
    assert sorted(report.topics) == sorted([a, b])

    got_a = read_all_confluent(bootstrap, a, expected=3, timeout=10, idle=1.0)
    got_b = read_all_confluent(bootstrap, b, expected=3, timeout=10, idle=1.0)
    assert [(r.key, r.value, r.headers) for r in got_a] in (
        [(b"k1", b"v0", [("h", b"0")]), (b"k2", None, [])],
        [(b"k2", None, []), (b"k1", b"v0", [("h", b"0")])],
    )
    placed = {r.key: r.partition for r in got_a}
    assert placed == {b"k1": java_partition(b"k1", 3), b"k2": 2}
    assert sorted((r.key or b"", r.value, r.headers, r.partition) for r in got_b)[1:] == [
        (b"k5", "\u00e9".encode(), [("h", None)], 1)
    ]
    assert any(r.key is None and r.value == b"v1" for r in got_b)


def test_a_row_too_large_alone_fails_alone(bootstrap: str, topic_factory: TopicFactory) -> None:
    # max.request.size below batch.size: the task closes batches before they outgrow it.
    topic = topic_factory(1)
    options = {"kafka.bootstrap.servers": bootstrap, "topic": topic}
    plan = datasource_plan(
        schema(value=StringType()), {**options, "kafka.max.request.size": "2000"}
    )
    values = [str(i) * (5000 if i == 42 else 1) for i in range(300)]
    report = run_task(plan, [pa.RecordBatch.from_pydict({"value": values})])
    assert (report.rows_sent, report.rows_failed) == (299, 1)
    assert report.first_error is not None and "RecordTooLargeError" in report.first_error
    records = read_all_confluent(bootstrap, topic, expected=300, timeout=10, idle=1.0)
    assert [r.value for r in records] == [v.encode() for i, v in enumerate(values) if i != 42]


# -- exactly-once from the executors: the options ----------------------------------------


def test_exactly_once_options_are_checked_on_the_driver() -> None:
    from aiokafka_lite.spark.task_transaction import task_transactional_id

    s = schema(value=BinaryType())
    plan = datasource_plan(s, {**BOOT, "topic": "t", "exactlyOnce": "TRUE"})
    assert (plan.exactly_once, plan.transactional_id_prefix) == (True, None)
    plan = datasource_plan(
        s, {**BOOT, "topic": "t", "exactlyonce": "true", "transactionalIdPrefix": "orders"}
    )
    assert plan.transactional_id_prefix == "orders"
    assert not datasource_plan(s, {**BOOT, "topic": "t"}).exactly_once
    with pytest.raises(ValueError, match="'exactlyOnce' is 'yes': give true or false"):
        datasource_plan(s, {**BOOT, "topic": "t", "exactlyOnce": "yes"})
    with pytest.raises(ValueError, match="needs the 'topic' option"):
        datasource_plan(
            schema(value=BinaryType(), topic=StringType()), {**BOOT, "exactlyOnce": "true"}
        )
    with pytest.raises(ValueError, match="'transactionalIdPrefix' needs"):
        datasource_plan(s, {**BOOT, "topic": "t", "transactionalIdPrefix": "orders"})
    # The batch writer refuses it: only a stream's micro-batches can be replayed.
    source = KafkaDataSource(options={**BOOT, "topic": "t", "exactlyOnce": "true"})
    with pytest.raises(ValueError, match="applies to streaming writes"):
        source.writer(s, overwrite=False)
    assert source.streamWriter(s, overwrite=False).plan.exactly_once
    # One id per Spark partition, the same in every attempt and micro-batch.
    assert task_transactional_id("orders", "q-1", 3) == "orders-3"
    assert task_transactional_id(None, "q-1", 0) == "aiokafka-lite-q-1-0"
    with pytest.raises(RuntimeError, match="streaming writes"):
        task_transactional_id(None, None, 0)


def test_a_summary_of_task_transactions_counts_skipped_and_retried_tasks() -> None:
    reports = [
        TaskReport(0, rows=10, rows_sent=10, transactional=True, finished_at=1.0),
        TaskReport(1, attempt=1, rows=7, rows_sent=7, transactional=True, finished_at=1.0),
        TaskReport(2, rows=5, transactional=True, skipped=True, finished_at=1.0),
    ]
    summary = summarize("t", reports, batch_id=4)
    assert (summary.transactional, summary.tasks_skipped, summary.tasks_retried) == (True, 1, 1)
    assert summary.rows_maybe_duplicated == 0  # the retried task's first attempt was aborted
    text = str(summary)
    assert "micro-batch 4: 17 rows sent to 't' in one transaction per task" in text
    assert "1 task(s) found their rows committed before (a replay) and sent none" in text
    assert "whose transactions were aborted" in text
    # The mapInArrow path carries the new fields too.
    back = TaskReport.from_row(_Row(reports[2].to_arrow().to_pylist()[0]))
    assert back == reports[2]


class _Row:
    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def asDict(self) -> dict[str, Any]:  # noqa: N802 (pyspark's Row method)
        return dict(self.values)


# -- the task's batch reader ---------------------------------------------------------


async def test_batch_reader_reads_one_batch_ahead_in_order_and_closes_cleanly() -> None:
    """Every batch, in order, each next one read (in a thread) while the caller holds
    the last, never more than one ahead; close waits for the read under way."""
    import asyncio
    import threading

    from aiokafka_lite.spark.task import BatchReader

    taken: list[int] = []
    threads: set[int] = set()
    release = threading.Event()

    def source() -> Any:
        for i in range(4):
            if i == 3:
                release.wait(5)  # the last read is still under way when close() is called
            threads.add(threading.get_ident())
            taken.append(i)
            yield i

    reader = BatchReader(source(), first=-1)
    assert await reader.next() == -1  # the batch read before the reader, first
    got = []
    for _ in range(3):
        got.append(await reader.next())
        await asyncio.sleep(0.05)
        assert len(taken) <= got[-1] + 2  # at most one batch read ahead
    assert got == [0, 1, 2]
    assert threading.get_ident() not in threads  # read in threads, not on the loop
    closing = asyncio.ensure_future(reader.close())
    await asyncio.sleep(0.05)
    assert not closing.done()  # waits for the read of batch 3
    release.set()
    await closing
    assert taken == [0, 1, 2, 3]


async def test_batch_reader_ends_at_the_end_and_raises_the_source_error() -> None:
    from aiokafka_lite.spark.task import BatchReader

    reader = BatchReader(iter([1]))
    assert await reader.next() == 1
    assert await reader.next() is None
    await reader.close()

    def failing() -> Any:
        yield 1
        raise ValueError("the JVM went away")

    reader = BatchReader(failing())
    assert await reader.next() == 1
    with pytest.raises(ValueError, match="the JVM went away"):
        await reader.next()
    await reader.close()
