"""``write_to_kafka`` and ``kafka_batch_writer`` on a Spark standalone cluster.

The cluster (tests/spark_cluster.py: a master, two workers, an executor JVM on each)
runs from pyspark's own distribution; this process is the driver. Every record is
read back with confluent-kafka (tests/readers.py) and compared with the DataFrame:
count, key, value, headers, and the partition Java's partitioner gives the key
(kafka-python's murmur2, an independent implementation). Marked ``spark``: run with
``python -m pytest -m spark``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed")
from confluent_kafka.admin import AdminClient  # noqa: E402
from conftest import TopicFactory  # noqa: E402
from mockcluster import API_PRODUCE, ERR_NOT_ENOUGH_REPLICAS, MockCluster  # noqa: E402
from partition_checks import java_partition  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as sf  # noqa: E402
from readers import ReadRecord, read_all_confluent  # noqa: E402
from spark_cluster import (  # noqa: E402
    ARROW_BATCH_ROWS,
    NO_JAVA,
    cmdline,
    executor_pids,
    json_stream_source,
)
from txnlog import ABORT, COMMIT, committed_view, read_log  # noqa: E402

from aiokafka_lite import KafkaTimeoutError  # noqa: E402
from aiokafka_lite.admin import fetch_committed_offsets  # noqa: E402
from aiokafka_lite.spark import (  # noqa: E402
    SINK_GROUP_PREFIX,
    KafkaWriteError,
    StandaloneCluster,
    kafka_batch_writer,
    write_to_kafka,
)
from aiokafka_lite.spark.cluster import java_runtime  # noqa: E402
from aiokafka_lite.structs import TopicPartition  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


REPO_ROOT = Path(__file__).resolve().parent.parent
T0 = 1_600_000_000_000  # ms: record timestamps taken from a column


def test_executors_are_separate_processes_running_this_interpreter(
    spark: SparkSession, spark_cluster: StandaloneCluster
) -> None:
    assert spark.sparkContext.master == spark_cluster.master_url
    executors = executor_pids(spark_cluster, spark.sparkContext.applicationId)
    assert len(executors) == 2  # one executor JVM per worker
    ran = spark.sparkContext.parallelize(range(2), 2).map(lambda _: (sys.executable, os.getpid()))
    seen = ran.collect()
    assert [exe for exe, _ in seen] == [sys.executable] * 2
    assert os.getpid() not in {pid for _, pid in seen}  # not this (the driver's) process


def test_cluster_stop_ends_every_process_it_started(tmp_path: Path) -> None:
    """A private cluster with an application's executor and Python worker busy in a task:
    stop() leaves none of its processes behind."""
    if java_runtime() is None:
        pytest.skip(NO_JAVA)
    app = tmp_path / "app.py"
    app.write_text(
        "import time\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "spark.sparkContext.parallelize([0], 1).map(lambda x: time.sleep(600)).collect()\n"
    )
    cluster = StandaloneCluster(workers=1, cores=1, memory="512m", work_dir=tmp_path / "c")
    cluster.start()
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    driver = subprocess.Popen(
        [str(submit), "--master", cluster.master_url, "--executor-memory", "512m", str(app)],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        seen: dict[int, str] = {}
        while time.monotonic() < deadline:
            seen = {pid: cmdline(pid) for pid in cluster.process_ids()}
            kinds = " ".join(seen.values())
            if "CoarseGrainedExecutorBackend" in kinds and "pyspark.daemon" in kinds:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"no executor with a Python worker came up: {seen}")
        started = {pid: _start_time(pid) for pid in seen}
    finally:
        cluster.stop()
        os.killpg(driver.pid, signal.SIGKILL)  # the application's driver: ours, not the cluster's
        driver.wait(30)
    alive = [pid for pid, t in started.items() if t is not None and _start_time(pid) == t]
    assert alive == [], {pid: seen[pid] for pid in alive}


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    if stat[stat.rindex(")") + 2] == "Z":  # a zombie has ended, only not been reaped
        return None
    return stat[stat.rindex(")") + 2 :].split()[19]


def _events(spark: SparkSession, n: int) -> DataFrame:
    """n rows over 4 Spark partitions: keys repeat, every 10th key is null, some headers."""
    return (
        spark.range(n)
        .select(
            sf.col("id"),
            sf.when(sf.col("id") % 10 == 0, sf.lit(None))
            .otherwise(sf.concat(sf.lit("user-"), (sf.col("id") % 97).cast("string")))
            .alias("key"),
            sf.concat(sf.lit("payload-"), sf.col("id").cast("string"), sf.lit("-\u00e9")).alias(
                "value"
            ),
            sf.when(
                sf.col("id") % 3 == 0,
                sf.create_map(sf.lit("seq"), sf.col("id").cast("string").cast("binary")),
            ).alias("headers"),
        )
        # Every row of a key in one task, in id order (shuffle blocks arrive in any order).
        .repartition(4, "key")
        .sortWithinPartitions("id")
    )


def test_rows_read_back_with_content_and_java_placement(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory
) -> None:
    n, partitions = 10_000, 5
    topic = topic_factory(partitions)
    df = _events(spark, n)
    summary = write_to_kafka(
        df,
        topic,
        bootstrap_servers=bootstrap,
        key_col="key",
        value_col="value",
        headers_col="headers",
        # Small batches: each task's keyless rows fill several, so by Java's sticky rule
        # (move on after a full batch) they reach several partitions, whatever the draws.
        batch_size=2048,
    )
    assert (summary.rows_sent, summary.rows_failed, summary.tasks) == (n, 0, 4)

    records = read_all_confluent(bootstrap, topic, expected=n, timeout=60)
    assert len(records) == n
    expected = {
        r["id"]: (
            None if r["key"] is None else r["key"].encode(),
            r["value"].encode(),
            [] if r["headers"] is None else [("seq", bytes(r["headers"]["seq"]))],
        )
        for r in df.collect()
    }
    got: dict[int, ReadRecord] = {}
    for rec in records:
        assert rec.value is not None
        row_id = int(rec.value.decode().split("-")[1])
        assert row_id not in got, f"row {row_id} written twice"
        got[row_id] = rec
        assert (rec.key, rec.value, rec.headers) == expected[row_id]
        if rec.key is not None:
            assert rec.partition == java_partition(rec.key, partitions)
    assert got.keys() == expected.keys()
    # Keyless rows spread over the partitions (a batch or two at a time), not stuck.
    assert len({r.partition for r in records if r.key is None}) > 1
    # Rows of one key keep their DataFrame order (one task writes them, in order).
    by_key: dict[bytes, list[int]] = defaultdict(list)
    for rec in records:  # sorted by (partition, offset)
        if rec.key is not None:
            assert rec.value is not None
            by_key[rec.key].append(int(rec.value.decode().split("-")[1]))
    assert all(ids == sorted(ids) for ids in by_key.values())


def test_json_msgpack_values_and_explicit_partitions(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory
) -> None:
    n, partitions = 3_000, 3
    df = spark.range(n).select(
        sf.col("id"),
        (sf.col("id") % partitions).cast("short").alias("part"),
        sf.concat(sf.lit("u"), sf.col("id").cast("string")).alias("user name"),
        (sf.col("id") / 4).alias("amount"),
        sf.when(sf.col("id") % 5 == 0, sf.lit(None)).otherwise(sf.lit("EU")).alias("region"),
        sf.array(sf.col("id"), sf.col("id") + 1).alias("pair"),
        sf.create_map(sf.lit("n"), sf.col("id")).alias("attrs"),
        sf.array(  # headers as pairs: order, duplicates and null values are kept
            sf.struct(sf.lit("h").alias("key"), sf.col("id").cast("string").alias("value")),
            sf.struct(sf.lit("h").alias("key"), sf.lit(None).cast("string").alias("value")),
        ).alias("hdrs"),
        (sf.col("id") + T0).alias("ts_ms"),
        sf.timestamp_millis(sf.col("id") + T0).alias("at"),
    )
    df = df.withColumn(
        "doc",
        sf.when(sf.col("id") % 7 == 0, sf.lit(None)).otherwise(
            sf.struct("user name", "amount", "region")
        ),
    )
    rows = {r["id"]: r for r in df.collect()}

    # json: several columns make one object per row; explicit partitions; int keys.
    json_topic = topic_factory(partitions)
    columns = ["id", "user name", "amount", "region", "pair", "attrs"]
    summary = write_to_kafka(
        df,
        json_topic,
        bootstrap_servers=bootstrap,
        key_col="id",
        value_col=columns,
        value_format="json",
        partition_col="part",
        headers_col="hdrs",
        timestamp_col="ts_ms",
    )
    assert summary.rows_sent == n
    records = read_all_confluent(bootstrap, json_topic, expected=n, timeout=60)
    assert len(records) == n
    seen = Counter[int]()
    for rec in records:
        assert rec.value is not None
        doc = json.loads(rec.value)
        row = rows[doc["id"]]
        seen[doc["id"]] += 1
        assert list(doc) == columns  # column order is kept
        assert doc == {c: row[c] for c in columns}
        assert rec.key == str(row["id"]).encode()
        assert rec.partition == row["part"]
        assert rec.headers == [("h", str(row["id"]).encode()), ("h", None)]
        assert rec.timestamp == T0 + row["id"]
    assert seen.keys() == rows.keys() and set(seen.values()) == {1}

    # msgpack: a struct column becomes an object; a null struct a null value.
    mp_topic = topic_factory(partitions)
    write_to_kafka(
        df,
        mp_topic,
        bootstrap_servers=bootstrap,
        key_col="user name",
        value_col="doc",
        value_format="msgpack",
        timestamp_col="at",
    )
    records = read_all_confluent(bootstrap, mp_topic, expected=n, timeout=60)
    assert len(records) == n
    for rec in records:
        assert rec.key is not None
        row = rows[int(rec.key.decode()[1:])]
        if row["doc"] is None:
            assert rec.value is None
        else:
            assert rec.value is not None
            assert msgspec.msgpack.decode(rec.value) == row["doc"].asDict()
        assert rec.partition == java_partition(rec.key, partitions)
        assert rec.timestamp == T0 + row["id"]


def test_unserializable_row_fails_the_write_naming_the_column(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    # Row 42's timestamp (year ~11476) is valid in Spark but beyond Python's datetime.
    df = spark.range(100).select(
        sf.col("id"),
        sf.when(sf.col("id") == 42, sf.timestamp_seconds(sf.lit(300_000_000_000)))
        .otherwise(sf.timestamp_seconds(sf.col("id")))
        .alias("seen_at"),
    )
    with pytest.raises(KafkaWriteError, match=r"column 'seen_at' \(value as json\)") as info:
        write_to_kafka(
            df.coalesce(1),
            topic,
            bootstrap_servers=bootstrap,
            value_col=["id", "seen_at"],
            value_format="json",
        )
    summary = info.value.summary
    assert (summary.rows_sent, summary.rows_failed) == (99, 1)
    assert "row 42" in str(info.value)
    # The other rows were written; the bad one was not.
    records = read_all_confluent(bootstrap, topic, expected=99, timeout=30)
    ids = sorted(json.loads(r.value or b"")["id"] for r in records)
    assert ids == [i for i in range(100) if i != 42]


async def test_write_from_a_coroutine(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory
) -> None:
    # A notebook or an async app calls it with an event loop running in this thread:
    # the driver's own producer (the topic check) then runs on a loop of its own.
    topic = topic_factory(2)
    df = spark.range(50).select(sf.col("id").cast("string").alias("value"))
    summary = write_to_kafka(df, topic, bootstrap_servers=bootstrap)
    assert summary.rows_sent == 50
    records = read_all_confluent(bootstrap, topic, expected=50, timeout=30)
    assert sorted(int(r.value or b"") for r in records) == list(range(50))


def test_columns_are_checked_on_the_driver(spark: SparkSession, bootstrap: str) -> None:
    df = spark.range(3).select(sf.col("id"), sf.col("id").cast("string").alias("s"))
    with pytest.raises(TypeError, match=r"value column 'id' has type bigint"):
        write_to_kafka(df, "t", bootstrap_servers=bootstrap, value_col="id")
    with pytest.raises(ValueError, match=r"key column 'nope' is not in the DataFrame"):
        write_to_kafka(df, "t", bootstrap_servers=bootstrap, key_col="nope", value_col="s")
    with pytest.raises(ValueError, match=r"'key_serializer' is not used by the Spark sink"):
        write_to_kafka(df, "t", bootstrap_servers=bootstrap, value_col="s", key_serializer="str")


def test_unknown_topic_fails_fast_and_is_not_created(spark: SparkSession, bootstrap: str) -> None:
    topic = "no-such-topic-for-spark"
    df = spark.range(10).select(sf.col("id").cast("string").alias("value"))
    with pytest.raises(KafkaTimeoutError, match=rf"'{topic}'.*UNKNOWN_TOPIC_OR_PARTITION"):
        write_to_kafka(df, topic, bootstrap_servers=bootstrap, topic_timeout_ms=2000)
    # Listing all topics does not create any (asking for one by name would, on Tansu).
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    assert topic not in admin.list_topics(timeout=10).topics


def test_delivery_failures_are_counted_and_raised(spark: SparkSession) -> None:
    # The librdkafka mock cluster answers the next Produce requests with an error (not
    # appending them): the only way to make a real broker refuse some batches on cue.
    n = 5_000
    with MockCluster(brokers=1) as cluster:
        cluster.create_topic("refused", partitions=2)
        cluster.push_errors(API_PRODUCE, [ERR_NOT_ENOUGH_REPLICAS] * 2)
        df = spark.range(n).select(sf.col("id").cast("string").alias("value")).coalesce(1)
        with pytest.raises(KafkaWriteError, match=r"NotEnoughReplicas") as info:
            write_to_kafka(df, "refused", bootstrap_servers=cluster.bootstrap_servers, retries=0)
        summary = info.value.summary
        assert summary.rows_failed > 0
        assert summary.rows_sent + summary.rows_failed == n
        records = read_all_confluent(
            cluster.bootstrap_servers, "refused", expected=summary.rows_sent, timeout=30
        )
        assert len(records) == summary.rows_sent


def fail_first_attempt_after(batches_ok: int) -> Any:
    """An upstream ``mapInArrow`` step whose first attempt of Spark partition 0 raises
    after passing ``batches_ok`` Arrow batches on: a task failing mid-write (as a flaky
    source would make it), which Spark then runs again."""

    def step(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        doomed = ctx is not None and ctx.partitionId() == 0 and ctx.attemptNumber() == 0
        for i, batch in enumerate(batches):
            if doomed and i == batches_ok:
                time.sleep(2)  # the sink has delivered what it was given by now
                raise RuntimeError("upstream failure on the first attempt")
            yield batch

    return step


def test_retried_task_is_reported_and_loses_no_row(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory
) -> None:
    n, per_task = 200_000, 100_000
    topic = topic_factory(4)
    rows = spark.range(n, numPartitions=2).select(
        sf.concat(sf.lit("k"), (sf.col("id") % 1000).cast("string")).alias("key"),
        sf.col("id").cast("string").alias("value"),
    )
    df = rows.mapInArrow(fail_first_attempt_after(3), rows.schema)
    summary = write_to_kafka(df, topic, bootstrap_servers=bootstrap, key_col="key")
    # The retried attempt wrote all of its partition; Spark kept only its report.
    assert (summary.rows_sent, summary.rows_failed, summary.tasks) == (n, 0, 2)
    assert (summary.tasks_retried, summary.attempts_retried) == (1, 1)
    assert summary.rows_maybe_duplicated == per_task
    assert "1 task(s) ran again after 1 failed attempt(s)" in str(summary)
    assert "up to 100,000 of their rows may have been written more than once" in str(summary)

    records = read_all_confluent(
        bootstrap, topic, expected=n + per_task, timeout=30, idle=3.0, at_least=n
    )
    counts = Counter(int(r.value or b"") for r in records)
    assert counts.keys() == set(range(n))  # no row lost
    duplicated = {i for i, c in counts.items() if c > 1}
    # The failed attempt's delivered batches are there twice: only rows of the retried
    # task, of its first three Arrow batches, and never more than twice.
    assert duplicated, "the failed attempt had delivered rows before it failed"
    assert max(duplicated) < 3 * ARROW_BATCH_ROWS
    assert set(counts.values()) <= {1, 2}
    assert len(records) - n == len(duplicated) <= summary.rows_maybe_duplicated


def test_foreach_batch_writer_streams_micro_batches(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source, sent = json_stream_source(tmp_path)
    topic = topic_factory(3)
    writer = kafka_batch_writer(
        topic,
        bootstrap_servers=bootstrap,
        key_col="user",
        value_col=["user", "n"],
        value_format="json",
    )
    stream = (
        spark.readStream.schema("user string, n long")
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
    )
    query = (
        stream.writeStream.foreachBatch(writer)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    assert writer.batches == 3 and writer.rows_sent == 300

    records = read_all_confluent(bootstrap, topic, expected=300, timeout=30)
    got = sorted((json.loads(r.value or b"")["n"], r.key, r.partition) for r in records)
    want = sorted((x["n"], x["user"].encode(), java_partition(x["user"].encode(), 3)) for x in sent)
    assert got == want


# -- exactly-once foreachBatch mode ---------------------------------------------------

READ_COMMITTED = {"isolation.level": "read_committed"}
READ_UNCOMMITTED = {"isolation.level": "read_uncommitted"}  # librdkafka defaults to committed


def _numbered(spark: SparkSession, start: int, n: int) -> DataFrame:
    """Rows ``start..start+n-1``: the value is the number, keys repeat, over 3 Spark partitions."""
    return (
        spark.range(start, start + n)
        .select(
            sf.concat(sf.lit("k"), (sf.col("id") % 13).cast("string")).alias("key"),
            sf.col("id").cast("string").alias("value"),
            sf.create_map(sf.lit("n"), sf.col("id").cast("string")).alias("headers"),
        )
        .repartition(3)
    )


def _read_numbers(bootstrap: str, topic: str, expected: int) -> Counter[int]:
    """Every committed record's number, counted; reads until one more than ``expected``
    arrived or, once ``expected`` are in, 2 s passed without a new one (15 s at most, for
    a loaded machine), so that a duplicate is seen, not cut off."""
    records = read_all_confluent(
        bootstrap,
        topic,
        expected=expected + 1,
        timeout=15,
        extra_config=READ_COMMITTED,
        idle=2.0,
        at_least=expected,
    )
    for rec in records:
        assert rec.key is not None and rec.value is not None
        assert rec.partition == java_partition(rec.key, 3)
        assert rec.headers == [("n", rec.value)]
    return Counter(int(r.value or b"") for r in records)


def _committed_batch(bootstrap: str, transactional_id: str, topic: str) -> int:
    marker = TopicPartition(topic, 0)
    group = SINK_GROUP_PREFIX + transactional_id
    offsets = asyncio.run(fetch_committed_offsets(bootstrap, group, [marker], timeout_ms=10_000))
    return offsets[marker].offset


def test_exactly_once_replayed_micro_batch_is_not_written_twice(
    spark: SparkSession,
    bootstrap: str,
    topic_factory: TopicFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = topic_factory(3)
    tid = f"query-{uuid.uuid4().hex}"
    options: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "key_col": "key",
        "value_col": "value",
        "headers_col": "headers",
        "exactly_once": True,
        "transactional_id": tid,
    }
    df, df2 = _numbered(spark, 0, 400), _numbered(spark, 1000, 150)
    writer = kafka_batch_writer(topic, **options)
    assert writer.group_id == SINK_GROUP_PREFIX + tid
    assert _committed_batch(bootstrap, tid, topic) == -1
    writer(df, 7)
    first = writer.last_summary
    assert first is not None
    assert (first.rows_sent, first.rows_failed, first.batch_id, first.replay_skipped) == (
        400,
        0,
        7,
        False,
    )
    assert _committed_batch(bootstrap, tid, topic) == 8  # the next batch id

    # The driver crashed after the Kafka commit, before Spark's checkpoint commit: the
    # restarted query (a new writer, nothing in memory) gets batch 7 again.
    restarted = kafka_batch_writer(topic, **options)
    with caplog.at_level(logging.INFO, logger="aiokafka_lite.spark"):
        restarted(df, 7)
    replay = restarted.last_summary
    assert replay is not None and replay.replay_skipped
    assert (replay.rows_sent, replay.batch_id) == (0, 7)
    assert "micro-batch 7" in str(replay) and "skipped" in str(replay)
    assert any("committed before: skipped" in r.getMessage() for r in caplog.records)

    restarted(df2, 8)
    second = restarted.last_summary
    assert second is not None and not second.replay_skipped and second.rows_sent == 150
    assert (restarted.batches, restarted.rows_sent, restarted.replays_skipped) == (2, 150, 1)
    assert _committed_batch(bootstrap, tid, topic) == 9

    # An older batch id than the last committed one is skipped too, with a warning.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="aiokafka_lite.spark"):
        restarted(df2, 3)
    older = restarted.last_summary
    assert older is not None and older.replay_skipped and older.rows_sent == 0
    assert any("older than the last one committed (8)" in r.getMessage() for r in caplog.records)

    got = _read_numbers(bootstrap, topic, 550)
    assert got == Counter([*range(400), *range(1000, 1150)])  # each row exactly once


def test_exactly_once_failed_row_aborts_and_does_not_commit_the_batch(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    tid = f"query-{uuid.uuid4().hex}"
    writer = kafka_batch_writer(
        topic,
        bootstrap_servers=bootstrap,
        value_col=["id", "seen_at"],
        value_format="json",
        exactly_once=True,
        transactional_id=tid,
    )

    def batch(bad: int | None) -> DataFrame:
        # Row ``bad``'s timestamp (year ~11476) is valid in Spark but beyond Python's datetime.
        return spark.range(60).select(
            sf.col("id"),
            sf.when(sf.col("id") == sf.lit(bad), sf.timestamp_seconds(sf.lit(300_000_000_000)))
            .otherwise(sf.timestamp_seconds(sf.col("id")))
            .alias("seen_at"),
        )

    with pytest.raises(KafkaWriteError, match=r"row 13.*transaction was aborted") as info:
        writer(batch(13), 0)
    summary = info.value.summary
    assert (summary.rows_sent, summary.rows_failed, summary.batch_id) == (0, 60, 0)
    assert _committed_batch(bootstrap, tid, topic) == -1  # batch 0 is not marked done
    # Spark replays batch 0 (fixed upstream): it is written, not skipped.
    writer(batch(None), 0)
    assert writer.last_summary is not None
    assert (writer.last_summary.rows_sent, writer.last_summary.replay_skipped) == (60, False)
    assert _committed_batch(bootstrap, tid, topic) == 1

    def ids(values: list[bytes]) -> Counter[int]:
        return Counter(msgspec.json.decode(v)["id"] for v in values)

    retried = Counter(range(60))  # the retry's rows, each once
    # The first attempt's other 59 rows were delivered (the writer waits for every
    # delivery) inside the transaction that was then aborted.
    aborted = Counter(i for i in range(60) if i != 13)
    uncommitted = read_all_confluent(
        bootstrap,
        topic,
        expected=retried.total() + aborted.total() + 1,  # one more: a duplicate would show
        timeout=15,
        extra_config=READ_UNCOMMITTED,
        idle=2.0,
        at_least=retried.total() + aborted.total(),
    )
    assert len(uncommitted) > 60  # the first attempt really wrote rows, then aborted
    assert ids([r.value or b"" for r in uncommitted]) == retried + aborted
    # Which of them count is Kafka's read_committed rule over the raw log (txnlog.py):
    # the retry's 60 rows once each, behind a COMMIT marker; the 59 behind an ABORT.
    view = committed_view(read_log(bootstrap, topic, 2))
    assert ids(view.committed) == retried
    assert ids(view.aborted) == aborted
    assert view.open == []
    assert sorted({t for _, t in view.markers}) == [ABORT, COMMIT]
    # Tansu writes the markers but answers Fetch with no aborted_transactions, so a
    # read_committed consumer there sees the aborted rows too (docs/transactions.md, txnlog.py): it
    # cannot be asked for "exactly 0..59 once". It must see every committed row, and
    # anything beyond one of each must be an aborted row.
    committed = read_all_confluent(
        bootstrap,
        topic,
        expected=retried.total() + aborted.total() + 1,
        timeout=15,
        extra_config=READ_COMMITTED,
        idle=2.0,
        at_least=retried.total(),
    )
    seen = ids([r.value or b"" for r in committed])
    assert not retried - seen, f"committed rows missing: {sorted(retried - seen)}"
    assert not (seen - retried) - aborted, f"not aborted, yet extra: {(seen - retried) - aborted}"


def test_exactly_once_stream_replayed_after_a_lost_checkpoint_commit(
    spark: SparkSession, bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    for f in range(3):
        lines = [{"key": f"k{i % 13}", "value": str(f * 100 + i)} for i in range(100)]
        (source / f"part-{f}.json").write_text("\n".join(json.dumps(x) for x in lines))
    topic = topic_factory(3)
    checkpoint = tmp_path / "checkpoint"
    tid = f"query-{uuid.uuid4().hex}"

    def run() -> Any:
        writer = kafka_batch_writer(
            topic,
            bootstrap_servers=bootstrap,
            key_col="key",
            value_col="value",
            headers_col="headers",
            exactly_once=True,
            transactional_id=tid,
        )
        stream = (
            spark.readStream.schema("key string, value string")
            .option("maxFilesPerTrigger", 1)
            .json(str(source))
            .withColumn("headers", sf.create_map(sf.lit("n"), sf.col("value")))
        )
        query = (
            stream.writeStream.foreachBatch(writer)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120)
        assert query.exception() is None
        return writer

    first = run()
    assert (first.batches, first.rows_sent, first.replays_skipped) == (3, 300, 0)
    # Lose Spark's commit of the last batch, as if the driver died right after the
    # Kafka transaction committed: the restarted query runs batch 2 again.
    commits = checkpoint / "commits"
    (commits / "2").unlink()
    for crc in commits.glob(".2.crc"):
        crc.unlink()
    second = run()
    assert (second.batches, second.rows_sent, second.replays_skipped) == (1, 0, 1)
    assert (commits / "2").exists()
    assert _read_numbers(bootstrap, topic, 300) == Counter(range(300))
    shutil.rmtree(checkpoint)


def test_example_pipeline_runs_with_one_command() -> None:
    # Its own Spark (local[*]) and embedded broker, as a user would run it: the
    # promise is one command on one machine, not the cluster.
    if java_runtime() is None:
        pytest.skip(NO_JAVA)
    example = REPO_ROOT / "examples" / "spark_pipeline.py"
    proc = subprocess.run(
        [sys.executable, str(example), "--events", "3000"],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    found = re.search(r"kept ([\d,]+) after cleaning", out)
    assert found is not None, out
    kept = int(found[1].replace(",", ""))
    assert 2500 < kept < 3000  # the generated dirt was removed
    assert re.search(rf"purchases-clean: +{kept:,} rows sent .*, 0 failed", out)
    assert re.search(r"user-hourly-spend: +[\d,]+ rows sent .*, 0 failed", out)
    assert re.search(r"region-spend: +4 rows sent .*, 0 failed", out)
