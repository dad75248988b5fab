"""Exactly-once from the executors (``exactlyOnce``), on the standalone cluster, under failure.

Each micro-batch's tasks write their rows in one transaction per task
(aiokafka_lite/spark/task_transaction.py). The source is Spark's ``rate-micro-batch``:
``ROWS_PER_BATCH`` rows per micro-batch, values numbered 0, 1, 2, ... in order, split
over 2 Spark partitions the same way on every replay. After each scenario an
independent ``read_committed`` consumer (confluent-kafka) must find:

* every row of every micro-batch in Spark's commit log exactly once;
* no row more than once, whatever the failure (rows of a batch Spark had not
  recorded as done when the query died are there at most once: their tasks had
  committed in Kafka, and the restarted query skips them).

Scenarios: a micro-batch replayed after Spark's commit of it was lost; an executor
killed with kill -9 mid-batch (its attempt's transaction is aborted: a
``read_uncommitted`` reader sees its rows twice, a ``read_committed`` one once); the
driver killed with kill -9 mid-stream and the query restarted from its checkpoint (a
driver of its own in a subprocess, ``local[2]``); and a zombie task's producer fenced.
The session broker runs them (tests/conftest.py): the replay on both brokers, the
kills and the zombie on Apache Kafka alone. The embedded broker (Tansu) does not abort
the open transaction of a producer killed with kill -9 when the next one of the same
transactional id starts, so its records become visible to ``read_committed`` readers
and no client can be exactly-once there under kills (and it closes a fenced
producer's connection instead of answering its EndTxn); the last test pins the first
gap on both brokers.
Marked ``spark``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
from conftest import create_topic
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf
from readers import read_all_confluent
from spark_cluster import executor_pids, slow_first_attempt

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import ProducerFenced
from aiokafka_lite.spark import KafkaDataSource, StandaloneCluster, read_summaries

pytestmark = [pytest.mark.spark, pytest.mark.timeout(420)]

ROWS_PER_BATCH = 4_000
PARTITIONS = 3
READ_COMMITTED = {"isolation.level": "read_committed"}
#: a reader stops once it has what must be there and nothing came for this long (a loaded
#: machine can pause a fetch for seconds: stopping sooner would miss rows, not find them)
IDLE = 10.0
READ_UNCOMMITTED = {"isolation.level": "read_uncommitted"}


@pytest.fixture(scope="session")
def spark(spark: SparkSession) -> SparkSession:
    """conftest's session, with the ``kafka`` data source registered."""
    spark.dataSource.register(KafkaDataSource)
    return spark


#: why the kill and fencing scenarios run on Apache Kafka alone
TANSU_GAP = (
    "Tansu neither aborts the open transaction of a producer killed mid-transaction when "
    "the next one of its transactional id starts, nor answers a fenced producer's EndTxn "
    "(it closes the connection): see the last test"
)


def numbered(spark: SparkSession, rows_per_batch: int = ROWS_PER_BATCH) -> DataFrame:
    return (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows_per_batch)
        .option("numPartitions", 2)
        .load()
        .select(
            sf.concat(sf.lit("k"), (sf.col("value") % 101).cast("string")).alias("key"),
            sf.col("value").cast("string").alias("value"),
        )
    )


def start(df: DataFrame, bootstrap: str, topic: str, tmp_path: Path, prefix: str) -> Any:
    return (
        df.writeStream.format("aiokafka_lite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("exactlyOnce", "true")
        .option("transactionalIdPrefix", prefix)
        .option("kafka.transaction.timeout.ms", "20000")
        .option("summaryPath", str(tmp_path / "summaries.jsonl"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def wait_for_batches(query: Any, count: int, timeout: float = 180.0) -> None:
    """Until micro-batch ``count - 1`` is done (Spark's progress says so)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if query.exception() is not None:
            raise AssertionError(f"the query failed: {query.exception()}")
        progress = query.lastProgress
        if progress is not None and progress["batchId"] >= count - 1:
            return
        time.sleep(0.2)
    raise AssertionError(f"fewer than {count} micro-batches in {timeout} s")


def spark_committed_batches(checkpoint: Path) -> set[int]:
    """The micro-batches Spark recorded as done (its commit log)."""
    return {int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}


def end_open_transactions(bootstrap: str, prefix: str) -> None:
    """What the next run of the query does first: InitProducerId for each task's id
    aborts a transaction a stopped or killed task left open."""

    async def init(tid: str) -> None:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid):
            pass

    async def both() -> None:
        await asyncio.gather(*(init(f"{prefix}-{p}") for p in range(2)))

    asyncio.run(both())


def read_committed_rows(
    bootstrap: str, topic: str, at_least: int, timeout: float = 90
) -> list[Any]:
    """Every record a ``read_committed`` reader sees in ``topic``: read until none came for
    ``IDLE`` s once ``at_least`` arrived, never stopped at a count. Kafka may hold more
    rows than Spark's commit log accounts for (a batch whose tasks committed in Kafka
    before the query died), and a reader stopped at a count of rows would leave a slower
    partition unread: rows missing that are there."""
    return read_all_confluent(
        bootstrap,
        topic,
        10**9,
        timeout=timeout,
        extra_config=READ_COMMITTED,
        idle=IDLE,
        at_least=at_least,
    )


def check_exactly_once(bootstrap: str, topic: str, committed: set[int]) -> Counter[int]:
    """Every row of ``committed`` micro-batches once; no row twice; returns the counts."""
    at_least = len(committed) * ROWS_PER_BATCH
    wanted = {v for b in committed for v in range(b * ROWS_PER_BATCH, (b + 1) * ROWS_PER_BATCH)}
    for attempt in range(2):
        records = read_committed_rows(bootstrap, topic, at_least)
        counts = Counter(int(r.value or b"") for r in records)
        if attempt or wanted <= counts.keys():
            break
        # A task of the stopped query may still have been running when the test ended the
        # open transactions, and opened one after: read_committed readers stop at its first
        # record until the coordinator aborts it (transaction.timeout.ms, 20 s here).
        time.sleep(25)
    twice = {v: c for v, c in counts.items() if c > 1}
    assert not twice, f"{len(twice)} rows read more than once, e.g. {list(twice.items())[:5]}"
    for batch in committed:
        rows = range(batch * ROWS_PER_BATCH, (batch + 1) * ROWS_PER_BATCH)
        missing = [v for v in rows if v not in counts]
        if missing:  # in the log but not committed, or not there at all?
            raw = read_all_confluent(
                bootstrap, topic, 10**7, timeout=20, extra_config=READ_UNCOMMITTED, idle=IDLE
            )
            there = {int(r.value or b"") for r in raw if not (r.value or b"x")[:1].isalpha()}
            where = Counter((r.partition, int(r.value or b"") in missing) for r in records)
            raise AssertionError(
                f"{_transactions_report(bootstrap)}\n"
                f"micro-batch {batch}: {len(missing)} rows missing for read_committed "
                f"({sum(v in there for v in missing)} of them in the log); read per "
                f"partition: {sorted(where.items())}; e.g. {missing[:10]}"
            )
    return counts


def _transactions_report(bootstrap: str) -> str:
    """Apache Kafka's own view of the transactions (its TransactionsCommand), for a failure."""
    import shutil

    if shutil.which("java") is None:
        return ""
    try:
        import kafka_cluster

        out = []
        for args in (["list"], ["find-hanging", "--broker-id", "1"]):
            proc = subprocess.run(
                [
                    "java",
                    "-cp",
                    kafka_cluster.kafka_classpath(),
                    "org.apache.kafka.tools.TransactionsCommand",
                    "--bootstrap-server",
                    bootstrap,
                    *args,
                ],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            out.append(f"$ kafka-transactions {' '.join(args)}\n{proc.stdout}{proc.stderr[-500:]}")
        return "\n".join(out)
    except Exception as e:  # a diagnostic only
        return f"(no transactions report: {e})"


def test_a_replayed_micro_batch_is_skipped_by_every_task(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topic = create_topic(bootstrap, PARTITIONS)
    prefix = f"eos-{uuid.uuid4().hex[:8]}"
    query = start(numbered(spark), bootstrap, topic, tmp_path, prefix)
    try:
        wait_for_batches(query, 3)
    finally:
        query.stop()
    checkpoint = tmp_path / "checkpoint"
    done = max(spark_committed_batches(checkpoint))

    # Spark's commit of the last batch is lost (the driver died after the tasks had
    # committed in Kafka): the restarted query runs that batch again. (A batch the stop
    # interrupted is planned in the offset log already: that one would run instead.)
    def forget(log: str, batch: int) -> None:  # the log entry and its checksum file
        for name in (str(batch), f".{batch}.crc"):
            (checkpoint / log / name).unlink(missing_ok=True)

    for planned in (checkpoint / "offsets").iterdir():
        if planned.name.isdigit() and int(planned.name) > done:
            forget("offsets", int(planned.name))
    forget("commits", done)
    query = start(numbered(spark), bootstrap, topic, tmp_path, prefix)
    try:
        wait_for_batches(query, done + 2)
    finally:
        query.stop()
    end_open_transactions(bootstrap, prefix)
    summaries = read_summaries(tmp_path / "summaries.jsonl")
    replays = [s for s in summaries if s.batch_id == done]
    assert len(replays) == 2, [str(s) for s in summaries]
    assert replays[0].rows_sent == ROWS_PER_BATCH and replays[0].tasks_skipped == 0
    assert (replays[1].rows_sent, replays[1].tasks_skipped) == (0, 2)
    assert "committed before (a replay) and sent none" in str(replays[1])
    assert all(s.transactional for s in summaries)
    check_exactly_once(bootstrap, topic, spark_committed_batches(checkpoint))


@pytest.mark.kafka_only(TANSU_GAP)
def test_executor_killed_mid_batch_loses_and_duplicates_nothing(
    spark: SparkSession, spark_cluster: StandaloneCluster, bootstrap: str, tmp_path: Path
) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    from confluent_kafka import TopicPartition as CkTopicPartition

    topic = create_topic(bootstrap, PARTITIONS)
    prefix = f"eos-{uuid.uuid4().hex[:8]}"
    rows_per_batch = 100_000
    rows = numbered(spark, rows_per_batch=rows_per_batch)
    # 5 Arrow batches per task (of 10,000 rows); first attempts pause 1 s after each.
    df = rows.mapInArrow(slow_first_attempt(1.0), rows.schema)
    app = spark.sparkContext.applicationId
    executors = executor_pids(spark_cluster, app)
    assert len(executors) == 2
    watcher = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"watch-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "log_level": 3,
            **READ_UNCOMMITTED,
        }
    )
    watcher.assign([CkTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    killed: list[int] = []

    def kill_one_executor_mid_batch() -> None:
        # Both tasks of the first micro-batch mid-write: uncommitted rows of each (even
        # values are Spark partition 0's, odd ones partition 1's) and not all of them, so
        # whichever task executor 0 runs (one core each: one task each) is in the middle
        # of its transaction when it dies.
        seen = [0, 0]
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and min(seen) < 10_000:
            for m in watcher.consume(1000, 0.2):
                value = int(m.value() or b"-1") if m.error() is None else -1
                if 0 <= value < rows_per_batch:
                    seen[value % 2] += 1
        if min(seen) >= 10_000 and max(seen) < rows_per_batch // 2:
            os.kill(executors[0], signal.SIGKILL)
            killed.append(executors[0])

    killer = threading.Thread(target=kill_one_executor_mid_batch)
    query = start(df, bootstrap, topic, tmp_path, prefix)
    try:
        killer.start()
        killer.join(160)
        wait_for_batches(query, 2, timeout=300)
    finally:
        query.stop()
        watcher.close()
    assert killed, "the two tasks of the first micro-batch were not both mid-write within 150 s"
    end_open_transactions(bootstrap, prefix)
    committed = spark_committed_batches(tmp_path / "checkpoint")
    assert {0, 1} <= committed
    at_least = len(committed) * rows_per_batch
    records = read_committed_rows(bootstrap, topic, at_least, timeout=120)
    counts = Counter(int(r.value or b"") for r in records)
    assert max(counts.values()) == 1, "a row was read twice by a read_committed reader"
    for batch in committed:
        missing = [
            v
            for v in range(batch * rows_per_batch, (batch + 1) * rows_per_batch)
            if v not in counts
        ]
        assert not missing, f"micro-batch {batch}: {len(missing)} rows missing"
    # The killed attempt's rows are in the log, aborted: a read_uncommitted reader sees them.
    raw = read_all_confluent(
        bootstrap,
        topic,
        len(records) + 20_001,
        timeout=60,
        extra_config=READ_UNCOMMITTED,
        idle=IDLE,
        at_least=len(records) + 1,
    )
    assert len(raw) > len(records)
    first = [s for s in read_summaries(tmp_path / "summaries.jsonl") if s.batch_id == 0]
    assert first and first[0].tasks_retried >= 1 and first[0].rows_maybe_duplicated == 0
    assert "whose transactions were aborted" in str(first[0])


_DRIVER = textwrap.dedent(
    """
    import sys, time
    from pyspark.sql import SparkSession, functions as sf
    from aiokafka_lite.spark import KafkaDataSource

    bootstrap, topic, checkpoint, summaries, rows = sys.argv[1:6]
    spark = (SparkSession.builder.master("local[2]").appName("eos-driver")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaDataSource)
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", int(rows))
          .option("numPartitions", 2).load()
          .select(sf.col("value").cast("string").alias("value")))
    query = (df.writeStream.format("aiokafka_lite")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
             .option("exactlyOnce", "true")
             .option("kafka.transaction.timeout.ms", "20000")
             .option("summaryPath", summaries)
             .option("checkpointLocation", checkpoint)
             .trigger(processingTime="200 milliseconds").start())
    print("QUERY", query.id, flush=True)
    while True:
        p = query.lastProgress
        if p is not None:
            print("BATCH", p["batchId"], flush=True)
        if query.exception() is not None:
            print("FAILED", query.exception(), flush=True)
            sys.exit(1)
        time.sleep(0.2)
    """
)


def run_driver_until(args: list[str], batches: int, timeout: float = 240.0) -> str:
    """Start the driver script; kill -9 it once micro-batch ``batches - 1`` is done."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )
    query_id = ""
    try:
        deadline = time.monotonic() + timeout
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("QUERY"):
                query_id = line.split()[1]
            if line.startswith("FAILED"):
                raise AssertionError(line)
            if line.startswith("BATCH") and int(line.split()[1]) >= batches - 1:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"fewer than {batches} micro-batches in {timeout} s")
        # Mid-stream: the next micro-batch is starting or running.
        time.sleep(0.3)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers
        proc.wait(30)
    return query_id


@pytest.mark.kafka_only(TANSU_GAP)
def test_driver_killed_mid_stream_and_restarted_from_its_checkpoint(
    bootstrap: str, tmp_path: Path
) -> None:
    topic = create_topic(bootstrap, PARTITIONS)
    checkpoint = tmp_path / "checkpoint"
    args = [bootstrap, topic, str(checkpoint), str(tmp_path / "s.jsonl"), str(ROWS_PER_BATCH)]
    first = run_driver_until(args, 3)
    before = spark_committed_batches(checkpoint)
    second = run_driver_until(args, max(before) + 3)
    # The transactional ids derive from the query id, which the checkpoint keeps.
    assert first and first == second
    end_open_transactions(bootstrap, f"aiokafka-lite-{first}")
    committed = spark_committed_batches(checkpoint)
    assert len(committed) > len(before)
    counts = check_exactly_once(bootstrap, topic, committed)
    summaries = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert all(s["transactional"] for s in summaries)
    assert sum(counts.values()) >= len(committed) * ROWS_PER_BATCH


@pytest.mark.kafka_only(TANSU_GAP)
def test_a_zombie_task_producer_is_fenced_and_its_rows_never_committed(
    spark: SparkSession, bootstrap: str, tmp_path: Path
) -> None:
    topic = create_topic(bootstrap, PARTITIONS)
    prefix = f"eos-{uuid.uuid4().hex[:8]}"

    async def zombie_begins() -> AIOKafkaProducer[Any, Any]:
        # An attempt of task 0 that Spark gave up on but that still runs.
        producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=f"{prefix}-0"
        )
        await producer.start()
        await producer.begin_transaction()
        for i in range(50):
            await producer.send_and_wait(topic, b"zombie-%d" % i)
        return producer

    loop = asyncio.new_event_loop()
    try:
        zombie = loop.run_until_complete(zombie_begins())
        query = start(numbered(spark), bootstrap, topic, tmp_path, prefix)
        try:
            wait_for_batches(query, 2)
        finally:
            query.stop()

        async def zombie_commits() -> None:
            try:
                await zombie.commit_transaction()
            finally:
                await zombie.stop()

        with pytest.raises(ProducerFenced):
            loop.run_until_complete(zombie_commits())
    finally:
        loop.close()
    end_open_transactions(bootstrap, prefix)
    committed = spark_committed_batches(tmp_path / "checkpoint")
    at_least = len(committed) * ROWS_PER_BATCH
    records = read_committed_rows(bootstrap, topic, at_least)
    assert not [r for r in records if (r.value or b"").startswith(b"zombie")]
    check_exactly_once(bootstrap, topic, committed)


_KILLED_PRODUCER = textwrap.dedent(
    """
    import asyncio, sys
    from aiokafka_lite import AIOKafkaProducer

    async def main():
        p = AIOKafkaProducer(bootstrap_servers=sys.argv[1], transactional_id=sys.argv[3])
        await p.start()
        await p.begin_transaction()
        for i in range(10):
            await p.send_and_wait(sys.argv[2], b"killed-%d" % i)
        print("SENT", flush=True)
        await asyncio.sleep(120)

    asyncio.run(main())
    """
)


def test_what_each_broker_does_with_a_killed_producers_open_transaction(
    broker_name: str, bootstrap: str
) -> None:
    """A producer killed (kill -9) mid-transaction, then one of the same transactional
    id commits: Apache Kafka aborts the first one's records (read_committed readers
    never see them); Tansu leaves them readable, which is why the kill scenarios above
    run on Apache Kafka only. This test fails if Tansu starts to abort them."""
    topic = create_topic(bootstrap, PARTITIONS)
    tid = f"killed-{uuid.uuid4().hex[:8]}"
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_PRODUCER, bootstrap, topic, tid],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().startswith("SENT")
    finally:
        child.kill()
        child.wait(30)

    async def next_producer_commits() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
        async with producer, producer.transaction():
            for i in range(10):
                await producer.send(topic, b"committed-%d" % i)

    asyncio.run(next_producer_commits())
    records = read_all_confluent(
        bootstrap, topic, 21, timeout=30, extra_config=READ_COMMITTED, idle=IDLE, at_least=10
    )
    killed = [r for r in records if (r.value or b"").startswith(b"killed")]
    assert len(records) - len(killed) == 10
    assert len(killed) == (0 if broker_name == "kafka" else 10)
