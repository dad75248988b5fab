"""``format("aiokafka_lite")``, Spark's Kafka sink contract, on a Spark standalone cluster.

The cluster (tests/spark_cluster.py: a master, two workers, an executor JVM on each,
from pyspark's own distribution) runs the writes; this process is the driver. What
the writes did is read back by an independent consumer (confluent-kafka,
tests/readers.py) and compared with the DataFrame, and with the placement Java's
partitioner gives a key (kafka-python's murmur2). The driver's summaries are read
from the ``summaryPath`` file the data source's commit appends to. Marked ``spark``.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed")
from confluent_kafka import OFFSET_BEGINNING, Consumer  # noqa: E402
from confluent_kafka import TopicPartition as CkTopicPartition  # noqa: E402
from conftest import TopicFactory  # noqa: E402
from partition_checks import java_partition  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as sf  # noqa: E402
from readers import read_all_confluent  # noqa: E402
from spark_cluster import (  # noqa: E402
    ARROW_BATCH_ROWS,
    executor_pids,
    json_stream_source,
    slow_first_attempt,
)

from aiokafka_lite.spark import (  # noqa: E402
    KafkaDataSource,
    StandaloneCluster,
    WriteSummary,
    read_summaries,
    set_active_session,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


@pytest.fixture(scope="module", autouse=True)
def registered(spark: SparkSession) -> None:
    spark.dataSource.register(KafkaDataSource)


def save(df: DataFrame, bootstrap: str, summary: Path, **options: str) -> WriteSummary:
    """``df.write.format("aiokafka_lite")...save()``; the driver's summary of it."""
    writer = df.write.format("aiokafka_lite").option("kafka.bootstrap.servers", bootstrap)
    for name, value in options.items():
        writer = writer.option(name, value)
    before = len(read_summaries(summary))
    writer.option("summaryPath", str(summary)).mode("append").save()
    summaries = read_summaries(summary)
    assert len(summaries) == before + 1, "the driver's commit wrote one summary"
    return summaries[-1]


def test_batch_write_with_keys_headers_topic_and_partition_columns(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    n = 6_000
    a, b = topic_factory(3), topic_factory(5)
    id_bytes = sf.col("id").cast("string").cast("binary")
    df = spark.range(n, numPartitions=3).select(
        sf.col("id"),
        # null every 7th row: a keyless record
        sf.when(sf.col("id") % 7 == 0, sf.lit(None))
        .otherwise(sf.concat(sf.lit("user-"), (sf.col("id") % 101).cast("string")))
        .alias("key"),
        # a string value (UTF-8); null (a tombstone) every 11th row that has headers
        sf.when((sf.col("id") % 11 == 0) & (sf.col("id") % 5 != 0), sf.lit(None))
        .otherwise(sf.concat(sf.lit("v-"), sf.col("id").cast("string"), sf.lit("-\u00e9")))
        .alias("value"),
        # headers in order, duplicate names and null values kept; none every 5th row
        sf.when(sf.col("id") % 5 == 0, sf.lit(None))
        .otherwise(
            sf.array(
                sf.struct(sf.lit("id").alias("key"), id_bytes.alias("value")),
                sf.struct(sf.lit("id").alias("key"), sf.lit(None).cast("binary").alias("value")),
            )
        )
        .alias("headers"),
        sf.when(sf.col("id") % 2 == 0, sf.lit(a)).otherwise(sf.lit(b)).alias("topic"),
        # an explicit partition (0, 1 or 2) every 3rd row, else the producer places the row
        sf.when(sf.col("id") % 3 == 0, (sf.col("id") % 9 / 3).cast("int")).alias("partition"),
        sf.lit("ignored").alias("other"),  # not a sink column: ignored, as by Spark's sink
    )
    rows = {r["id"]: r for r in df.collect()}
    summary = save(df, bootstrap, tmp_path / "summary.jsonl")
    assert (summary.rows_sent, summary.rows_failed, summary.tasks) == (n, 0, 3)
    assert summary.tasks_retried == 0 and summary.batch_id is None
    assert set(summary.topic.split(", ")) == {a, b}

    seen: Counter[int] = Counter()
    for topic, parts in ((a, 3), (b, 5)):
        records = read_all_confluent(bootstrap, topic, expected=n // 2 + 1, timeout=30, idle=2.0)
        assert len(records) == n // 2
        for rec in records:
            # A record is known by its first header, or (no headers) by its value.
            if rec.headers:
                row_id = int(rec.headers[0][1] or b"")
            else:
                row_id = int((rec.value or b"").decode().split("-")[1])
            row = rows[row_id]
            seen[row_id] += 1
            assert row["topic"] == topic
            assert rec.key == (None if row["key"] is None else row["key"].encode())
            assert rec.value == (None if row["value"] is None else row["value"].encode())
            want = [] if row["headers"] is None else [("id", str(row_id).encode()), ("id", None)]
            assert rec.headers == want
            if row["partition"] is not None:
                assert rec.partition == row["partition"]
            elif rec.key is not None:
                assert rec.partition == java_partition(rec.key, parts)
    assert seen == Counter(range(n))  # every row once
    nulls = [i for i, r in rows.items() if r["value"] is None]
    assert len(nulls) > 50 and all(rows[i]["headers"] is not None for i in nulls)


def test_topic_option_overrides_the_topic_column(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    wanted, column_topic = topic_factory(2), topic_factory(2)
    df = spark.range(500).select(
        sf.col("id").cast("string").alias("value"), sf.lit(column_topic).alias("topic")
    )
    summary = save(df, bootstrap, tmp_path / "s.jsonl", topic=wanted)
    assert (summary.topic, summary.rows_sent) == (wanted, 500)
    records = read_all_confluent(bootstrap, wanted, expected=500, timeout=30)
    assert sorted(int(r.value or b"") for r in records) == list(range(500))
    assert read_all_confluent(bootstrap, column_topic, expected=1, timeout=3) == []


def test_kafka_options_are_producer_settings(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    # kafka.max.request.size: a record bigger than it fails (and only that one).
    topic = topic_factory(1)
    df = spark.range(100, numPartitions=1).select(
        sf.when(sf.col("id") == 42, sf.expr("repeat('x', 5000)"))
        .otherwise(sf.col("id").cast("string"))
        .alias("value")
    )
    with pytest.raises(Exception, match=r"1 of 100 rows were not written.*RecordTooLarge"):
        save(df, bootstrap, tmp_path / "s.jsonl", topic=topic, **{"kafka.max.request.size": "2000"})
    [summary] = read_summaries(tmp_path / "s.jsonl")  # recorded before the commit raised
    assert (summary.rows_sent, summary.rows_failed) == (99, 1)
    records = read_all_confluent(bootstrap, topic, expected=100, timeout=10, idle=2.0)
    assert sorted(int(r.value or b"") for r in records) == [i for i in range(100) if i != 42]

    # kafka.allow.auto.create.topics and kafka.max.block.ms: an unknown topic fails fast.
    missing = f"missing-{uuid.uuid4().hex}"
    options = {"kafka.allow.auto.create.topics": "false", "kafka.max.block.ms": "1500"}
    with pytest.raises(Exception, match=rf"10 of 10 rows were not written.*{missing}"):
        save(
            spark.range(10).select(sf.lit("v").alias("value")),
            bootstrap,
            tmp_path / "m",
            topic=missing,
            **options,
        )


def test_bad_rows_fail_the_write_naming_them(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = topic_factory(2)
    df = spark.range(50, numPartitions=2).select(  # ids 0-24 in task 0, 25-49 in task 1
        sf.col("id").cast("string").alias("value"),
        sf.when(sf.col("id") == 7, sf.lit(None)).otherwise(sf.lit(topic)).alias("topic"),
        sf.when(sf.col("id") == 30, sf.lit(5)).cast("int").alias("partition"),
    )
    with pytest.raises(Exception, match=r"2 of 50 rows were not written") as info:
        save(df, bootstrap, tmp_path / "s.jsonl")
    assert "row 7: null topic present in the data" in str(info.value)
    [summary] = read_summaries(tmp_path / "s.jsonl")  # recorded before the commit raised
    assert (summary.rows_sent, summary.rows_failed) == (48, 2)
    assert summary.errors == (
        "partition 0: row 7: null topic present in the data: use the 'topic' option for "
        "setting a default topic",
        f"partition 1: column 'partition' (partition) of row 5: partition 5 is out of range "
        f"for {topic!r}, which has 2 partition(s)",
    )
    records = read_all_confluent(bootstrap, topic, expected=49, timeout=10, idle=2.0)
    assert sorted(int(r.value or b"") for r in records) == [
        i for i in range(50) if i not in (7, 30)
    ]


def test_contract_errors_name_the_column_before_any_task_runs(
    spark: SparkSession, bootstrap: str
) -> None:
    sc = spark.sparkContext
    cases = [
        (spark.range(3).select(sf.col("id").cast("string").alias("payload")), r"no 'value' column"),
        (spark.range(3).select(sf.col("id").alias("value")), r"column 'value' has type bigint"),
        (
            spark.range(3).select(sf.lit("v").alias("value"), sf.col("id").alias("partition")),
            r"column 'partition' has type bigint",
        ),
        (spark.range(3).select(sf.lit("v").alias("value")), r"'topic' option is required"),
    ]
    for df, message in cases:
        group = f"contract-{uuid.uuid4().hex}"
        sc.setJobGroup(group, "contract check")
        writer = df.write.format("aiokafka_lite").option("kafka.bootstrap.servers", bootstrap)
        with pytest.raises(Exception, match=message):
            writer.mode("append").save()
        assert list(sc.statusTracker().getJobIdsForGroup(group)) == []  # no job ran
    # (The tracker does see a group's jobs: the check above can fail.)
    sc.setJobGroup(group := f"control-{uuid.uuid4().hex}", "control")
    spark.range(3).count()
    assert list(sc.statusTracker().getJobIdsForGroup(group)) != []
    sc.setJobGroup("", "")


def test_stream_contract_errors_stop_the_query_naming_the_column(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "part-0.json").write_text('{"payload": "x"}\n')
    stream = spark.readStream.schema("payload string").json(str(source))
    query = (
        stream.writeStream.format("aiokafka_lite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", "never-written")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    # Spark plans the sink when the query runs: its first batch fails, before any task.
    with pytest.raises(Exception, match=r"no 'value' column.*columns: \['payload'\]"):
        query.awaitTermination(120)
    assert not query.isActive


def test_write_from_another_thread_needs_its_active_session(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    df = spark.range(20).select(sf.col("id").cast("string").alias("value"))
    outcome: dict[str, BaseException | None] = {}

    def write(name: str, activate: bool) -> None:
        try:
            if activate:
                set_active_session(spark)
            writer = df.write.format("aiokafka_lite").option("kafka.bootstrap.servers", bootstrap)
            writer.option("topic", topic).mode("append").save()
            outcome[name] = None
        except Exception as e:
            outcome[name] = e

    for name, activate in (("bare", False), ("activated", True)):
        thread = threading.Thread(target=write, args=(name, activate))
        thread.start()
        thread.join(120)
    # Spark's JVM looks data sources up in the thread's active session: none, none found.
    assert "DATA_SOURCE_NOT_FOUND" in str(outcome["bare"])
    assert outcome["activated"] is None
    records = read_all_confluent(bootstrap, topic, expected=21, timeout=10, idle=2.0)
    assert sorted(int(r.value or b"") for r in records) == list(range(20))  # written once


def test_stream_of_micro_batches(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source, sent = json_stream_source(tmp_path)
    topic = topic_factory(3)
    summary_path = tmp_path / "summaries.jsonl"
    stream = (
        spark.readStream.schema("user string, n long")
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .select(
            sf.col("user").alias("key"),
            sf.to_json(sf.struct("user", "n")).alias("value"),
            sf.array(
                sf.struct(
                    sf.lit("n").alias("key"),
                    sf.col("n").cast("string").cast("binary").alias("value"),
                )
            ).alias("headers"),
        )
    )
    query = (
        stream.writeStream.format("aiokafka_lite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("summaryPath", str(summary_path))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    summaries = read_summaries(summary_path)
    assert [(s.batch_id, s.rows_sent, s.rows_failed) for s in summaries] == [
        (0, 100, 0),
        (1, 100, 0),
        (2, 100, 0),
    ]
    assert "micro-batch 1: 100 rows sent" in str(summaries[1])

    records = read_all_confluent(bootstrap, topic, expected=301, timeout=30, idle=2.0)
    got = sorted((json.loads(r.value or b"")["n"], r.key, r.partition, r.headers) for r in records)
    want = sorted(
        (
            x["n"],
            x["user"].encode(),
            java_partition(x["user"].encode(), 3),
            [("n", str(x["n"]).encode())],
        )
        for x in sent
    )
    assert got == want


# -- an executor killed mid-write ------------------------------------------------------


class _Watcher:
    """Counts the topic's records per half of the id range while a write runs."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, half: int) -> None:
        self.half = half
        self.counts = [0, 0]
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"watch-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "log_level": 3,
            }
        )
        self.consumer.assign(
            [CkTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
        )

    def wait_until_both_halves_have(self, at_least: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for msg in self.consumer.consume(1000, 0.2):
                if msg.error() is None:
                    self.counts[int(msg.value()) >= self.half] += 1
            if min(self.counts) >= at_least:
                return True
        return False

    def close(self) -> None:
        self.consumer.close()


def test_executor_killed_mid_write_loses_no_row_and_reports_duplicates(
    spark: SparkSession,
    spark_cluster: StandaloneCluster,
    bootstrap: str,
    topic_factory: TopicFactory,
    tmp_path: Path,
) -> None:
    n, partitions = 400_000, 4
    half = n // 2  # Spark partition 0 holds ids below it, partition 1 the rest
    topic = topic_factory(partitions)
    rows = spark.range(n, numPartitions=2).select(
        sf.concat(sf.lit("k"), (sf.col("id") % 1000).cast("string")).alias("key"),
        sf.col("id").cast("string").alias("value"),
    )
    # 20 Arrow batches per task; the first attempts take 20 x 0.5 s, their retry no time.
    df = rows.mapInArrow(slow_first_attempt(0.5), rows.schema)
    app = spark.sparkContext.applicationId
    executors = executor_pids(spark_cluster, app)
    assert len(executors) == 2
    killed: list[int] = []
    watcher = _Watcher(bootstrap, topic, partitions, half)

    def kill_one_executor_mid_write() -> None:
        # Both tasks have written 2+ batches, so both run, one on each executor, and
        # the one killed has rows in Kafka already.
        if watcher.wait_until_both_halves_have(2 * ARROW_BATCH_ROWS, timeout=120):
            victim = executors[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    killer = threading.Thread(target=kill_one_executor_mid_write)
    killer.start()
    try:
        summary = save(df, bootstrap, tmp_path / "summary.jsonl", topic=topic)
    finally:
        killer.join(150)
        watcher.close()
    assert killed, f"the write ended before both tasks had written: {watcher.counts}"
    assert killed[0] not in executor_pids(spark_cluster, app)

    records = read_all_confluent(
        bootstrap, topic, expected=n + half + 1, timeout=60, idle=3.0, at_least=n
    )
    counts = Counter(int(r.value or b"") for r in records)
    assert counts.keys() == set(range(n))  # no row lost
    duplicates = len(records) - n
    assert duplicates >= 2 * ARROW_BATCH_ROWS  # the killed attempt's rows, written again
    assert set(counts.values()) == {1, 2}
    # Spark kept the retried attempt's report: the summary says what may be duplicated.
    assert (summary.rows_sent, summary.rows_failed, summary.tasks) == (n, 0, 2)
    assert (summary.tasks_retried, summary.attempts_retried) == (1, 1)
    assert summary.rows_maybe_duplicated == half >= duplicates
    assert f"up to {half:,} of their rows may have been written more than once" in str(summary)
    print(f"\n{summary}\nrecords in the topic: {len(records):,} for {n:,} rows")
