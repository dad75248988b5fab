"""Rows/s from a Spark DataFrame into Kafka on a Spark standalone cluster: aiokafka_lite's
data source and functions against what PySpark users write today without the JVM connector.

    python benchmarks/spark_bench.py                   # 1M rows, a local standalone cluster
    python benchmarks/spark_bench.py --rows 200000 --repeat 1
    python benchmarks/spark_bench.py --master spark://host:7077 --bootstrap-server host:9092
    python benchmarks/spark_bench.py --master local[2]

By default it starts a Spark standalone cluster on this host from pyspark's own
distribution (:class:`aiokafka_lite.spark.StandaloneCluster`: a master and two workers
of 1 core each, one executor per worker, ``--executor-memory`` each) and an embedded
broker; this process is the driver. Variants, all in the same Spark application, on
the same cached DataFrame (keyed rows: 10,000 keys, 100-byte values, 2 Spark
partitions = 2 tasks, one per executor), each into its own fresh 8-partition topic:

* ``data source``: ``df.write.format("aiokafka_lite")`` with Spark's Kafka sink
  columns (``key``, ``value``) and options (``kafka.bootstrap.servers``, ``topic``,
  ``kafka.acks``, ``kafka.linger.ms``); idempotent, as by default.
* ``write_to_kafka``: ``write_to_kafka(df, topic, key_col="key")`` (mapInArrow); the
  same task write path.
* ``confluent-kafka``: ``df.foreachPartition`` with one ``confluent_kafka.Producer``
  per task: ``produce()`` per Row (``poll(0)`` every 1,000 rows, ``poll(0.05)`` and a
  retry on ``BufferError``), ``flush()``, delivery errors counted by an accumulator;
  idempotence off (librdkafka's default) and on.
* ``spark kafka sink``: ``df.write.format("kafka")``, Spark's own JVM connector
  (spark-sql-kafka-0-10 from Maven, at the version of the installed PySpark; its jars
  go to ``spark.jars``), with ``kafka.acks`` and ``kafka.linger.ms`` as above; its
  producer's own defaults otherwise (idempotent, 16 KiB batches).
* ``stream`` and ``stream (exactly once)`` (not run unless named in ``--variants``):
  the same number of rows as a stream of 4 micro-batches of the data source
  (``rate-micro-batch``, 2 partitions, the same keys and values), at-least-once and
  with ``exactlyOnce`` (one transaction per task and micro-batch); the clock includes
  the query's start.
* ``no-op data source`` and ``spark noop sink`` (not run unless named in
  ``--variants``): what a write costs without Kafka. A Python data source whose
  Arrow writer reads every batch and sends nothing (Spark's planning worker, task
  workers and commit worker, as for ``format("aiokafka_lite")``), and Spark's own
  ``format("noop")`` (no Python at all): the ceiling of each kind of sink here.
* ``kafka-python`` (not run unless named in ``--variants``): ``df.foreachPartition``
  with one ``kafka.KafkaProducer`` per task, ``send()`` per Row, ``flush()``.

Same producer settings wherever the client has them: acks=all, linger 5 ms, no
compression; batch sizes are each client's default (16 KiB for ours, 1 MB for
librdkafka). ``--broker kafka`` runs one Apache Kafka node (tests/kafka_cluster.py)
instead of the embedded broker. Besides rows/s, each run reports the executors' CPU
per row: user and system time of the executor JVMs and every process under them
(Python workers included), read before and after the run. The clock runs from the
action's start to its return (Spark scheduling and task start-up included, which
every variant pays alike); a warm-up write of 20,000 rows per variant runs first so
each finds warm Python workers. With
``--repeat K`` the variants are interleaved K times and the median is reported. The
broker, the cluster and the driver share this host's cores.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

# tests/ holds the Apache Kafka nodes and Spark's connector (both resolved by Maven)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import kafka_cluster
import spark_connector

from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.spark import (
    KafkaDataSource,
    StandaloneCluster,
    read_summaries,
    write_to_kafka,
)

_EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"

TOPIC_PARTITIONS = 8
KEYS = 10_000
WARMUP_ROWS = 20_000
COMMON = {"acks": "all", "linger_ms": 5}
SUMMARIES = Path(tempfile.gettempdir()) / f"spark-bench-{uuid.uuid4().hex[:8]}.jsonl"

Variant = Callable[[Any, str, str], int]


def create_topic(bootstrap: str) -> str:
    name = f"spark-bench-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics([NewTopic(name, num_partitions=TOPIC_PARTITIONS)])
    futures[name].result(timeout=30)
    return name


def _kafka_writer(df: Any, source: str, topic: str, bootstrap: str) -> Any:
    """``df.write`` to ``topic`` through data source ``source``, with the options both
    data sources read the same way (Kafka's, prefixed ``kafka.``)."""
    return (
        df.write.format(source)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("kafka.acks", COMMON["acks"])
        .option("kafka.linger.ms", str(COMMON["linger_ms"]))
        .mode("append")
    )


def run_data_source(df: Any, topic: str, bootstrap: str) -> int:
    _kafka_writer(df, "aiokafka_lite", topic, bootstrap).option(
        "summaryPath", str(SUMMARIES)
    ).save()
    return read_summaries(SUMMARIES)[-1].rows_sent


def run_spark_kafka_sink(df: Any, topic: str, bootstrap: str) -> int:
    _kafka_writer(df, "kafka", topic, bootstrap).save()
    # The JVM sink reports no count: a failed delivery fails the job instead.
    return int(df.count())


def run_write_to_kafka(df: Any, topic: str, bootstrap: str) -> int:
    summary = write_to_kafka(
        df, topic, bootstrap_servers=bootstrap, key_col="key", value_col="value", **COMMON
    )
    return summary.rows_sent


def run_confluent(idempotent: bool) -> Variant:
    return lambda df, topic, bootstrap: _run_confluent(df, topic, bootstrap, idempotent)


def _run_confluent(df: Any, topic: str, bootstrap: str, idempotent: bool) -> int:
    sc = df.sparkSession.sparkContext
    delivered = sc.accumulator(0)
    failed = sc.accumulator(0)

    def send_partition(rows: Iterable[Any]) -> None:
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 5,
                "enable.idempotence": idempotent,
            }
        )
        ok = bad = 0

        def on_delivery(err: Any, _msg: Any) -> None:
            nonlocal ok, bad
            if err is None:
                ok += 1
            else:
                bad += 1

        for i, row in enumerate(rows):
            while True:
                try:
                    producer.produce(topic, value=row.value, key=row.key, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 1000 == 0:
                producer.poll(0)
        producer.flush(120)
        delivered.add(ok)
        failed.add(bad)

    df.foreachPartition(send_partition)
    if failed.value:
        raise RuntimeError(f"confluent-kafka: {failed.value} deliveries failed")
    return int(delivered.value)


def run_kafka_python(df: Any, topic: str, bootstrap: str) -> int:
    sc = df.sparkSession.sparkContext
    delivered = sc.accumulator(0)

    def send_partition(rows: Iterable[Any]) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        futures = [producer.send(topic, value=row.value, key=row.key) for row in rows]
        producer.flush(120)
        delivered.add(sum(1 for f in futures if f.succeeded()))
        producer.close()

    df.foreachPartition(send_partition)
    return int(delivered.value)


def run_noop_data_source(df: Any, topic: str, bootstrap: str) -> int:
    df.write.format("aiokafka_lite_bench_noop").mode("append").save()
    return int(df.count())


def run_spark_noop(df: Any, topic: str, bootstrap: str) -> int:
    df.write.format("noop").mode("overwrite").save()
    return int(df.count())


def noop_data_source() -> type:
    """A Python data source whose writer reads every Arrow batch and writes nothing."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class NoopWriter(DataSourceArrowWriter):
        def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
            for _ in iterator:
                pass
            return WriterCommitMessage()

    class NoopDataSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "aiokafka_lite_bench_noop"

        def writer(self, schema: Any, overwrite: bool) -> NoopWriter:
            return NoopWriter()

    return NoopDataSource


STREAM_BATCHES = 4


def run_stream(exactly_once: bool) -> Variant:
    return lambda df, topic, bootstrap: _run_stream(df, topic, bootstrap, exactly_once)


def _run_stream(df: Any, topic: str, bootstrap: str, exactly_once: bool) -> int:
    """The same rows as a stream: STREAM_BATCHES micro-batches of the data source, each
    of 2 Spark partitions (``rate-micro-batch``), at-least-once or exactly-once."""
    from pyspark.sql import functions as sf

    rows = int(df.count())
    value_size = len(df.first()["value"])
    stream = (
        df.sparkSession.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows // STREAM_BATCHES)
        .option("numPartitions", 2)
        .load()
        .select(
            sf.concat(sf.lit("user-"), (sf.col("value") % KEYS).cast("string"))
            .cast("binary")
            .alias("key"),
            sf.expr(f"cast(repeat('x', {value_size}) as binary)").alias("value"),
        )
    )
    writer = (
        stream.writeStream.format("aiokafka_lite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("kafka.acks", COMMON["acks"])
        .option("kafka.linger.ms", str(COMMON["linger_ms"]))
        .option("checkpointLocation", tempfile.mkdtemp(prefix="spark-bench-checkpoint-"))
        .trigger(processingTime="10 milliseconds")
    )
    if exactly_once:
        writer = writer.option("exactlyOnce", "true")
    query = writer.start()
    try:
        while True:
            if query.exception() is not None:
                raise RuntimeError(f"the stream failed: {query.exception()}")
            progress = query.lastProgress
            if progress is not None and progress["batchId"] >= STREAM_BATCHES - 1:
                return STREAM_BATCHES * (rows // STREAM_BATCHES)  # (rows: a multiple)
            time.sleep(0.01)
    finally:
        query.stop()


VARIANTS: dict[str, Variant] = {
    "data source": run_data_source,  # idempotent, as by default
    "write_to_kafka": run_write_to_kafka,
    "spark kafka sink": run_spark_kafka_sink,
    "confluent-kafka": run_confluent(idempotent=False),  # librdkafka's default
    "confluent-kafka (idem. on)": run_confluent(idempotent=True),
    "kafka-python": run_kafka_python,
    "no-op data source": run_noop_data_source,
    "spark noop sink": run_spark_noop,
    "stream": run_stream(exactly_once=False),
    "stream (exactly once)": run_stream(exactly_once=True),
}
DEFAULT_VARIANTS = [
    "data source",
    "write_to_kafka",
    "spark kafka sink",
    "confluent-kafka",
    "confluent-kafka (idem. on)",
]


def make_frame(spark: Any, rows: int, value_size: int) -> Any:
    from pyspark.sql import functions as sf

    df = spark.range(rows, numPartitions=2).select(
        sf.concat(sf.lit("user-"), (sf.col("id") % KEYS).cast("string"))
        .cast("binary")
        .alias("key"),
        sf.expr(f"cast(repeat('x', {value_size}) as binary)").alias("value"),
    )
    df = df.cache()
    df.count()  # materialized once: every variant reads the same cached rows
    return df


def executor_cpu() -> float:
    """CPU seconds (user + system) of the executor JVMs and every process under them."""
    import psutil

    total = 0.0
    for proc in psutil.process_iter(["cmdline"]):
        if _EXECUTOR_CLASS not in " ".join(proc.info["cmdline"] or ()):
            continue
        with contextlib.suppress(psutil.Error):
            for p in [proc, *proc.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    t = p.cpu_times()
                    total += t.user + t.system + t.children_user + t.children_system
    return total


def measure(name: str, df: Any, rows: int, bootstrap: str) -> tuple[float, float]:
    """Rows/s and executor CPU µs/row of one run of ``name``."""
    topic = create_topic(bootstrap)
    cpu = executor_cpu()
    start = time.perf_counter()
    delivered = VARIANTS[name](df, topic, bootstrap)
    elapsed = time.perf_counter() - start
    cpu = executor_cpu() - cpu
    if delivered != rows:
        raise RuntimeError(f"{name}: {delivered} of {rows} rows delivered")
    return rows / elapsed, cpu * 1e6 / rows


def table(results: dict[str, list[tuple[float, float]]], rows: int) -> Iterator[str]:
    def med(name: str, i: int) -> float:
        return statistics.median(r[i] for r in results[name])

    base = {k: med(k, 0) for k in ("spark kafka sink", "confluent-kafka") if results.get(k)}
    yield (
        f"{'variant':<28} {'rows/s (median)':>16} {'executor CPU µs/row':>20} "
        f"{'runs (rows/s)':>30} {'vs Spark sink':>14} {'vs confluent':>13}"
    )
    for name, runs in results.items():
        rate = med(name, 0)
        each = ", ".join(f"{r:,.0f}" for r, _ in runs)
        ratios = [
            f"{rate / base[k]:.2f}x" if k in base else "-"
            for k in ("spark kafka sink", "confluent-kafka")
        ]
        yield (
            f"{name:<28} {rate:>16,.0f} {med(name, 1):>20.1f} {each:>30} "
            f"{ratios[0]:>14} {ratios[1]:>13}"
        )
    yield f"({rows:,} rows per run)"


def session(master: str, executor_memory: str, jars: list[str]) -> Any:
    from pyspark.sql import SparkSession

    # The driver's and the executors' Python workers: this interpreter, this checkout.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    here = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    builder = (
        SparkSession.builder.master(master)
        .appName("aiokafka-lite-spark-bench")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.executor.memory", executor_memory)
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        .config("spark.executorEnv.PYTHONPATH", path)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(noop_data_source())
    return spark


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", help="a Spark master URL (default: a local standalone one)")
    parser.add_argument("--executor-memory", default="1g")
    parser.add_argument("--bootstrap-server", help="an existing cluster (default: embedded)")
    parser.add_argument(
        "--broker",
        choices=["tansu", "kafka"],
        default="tansu",
        help="without --bootstrap-server: the embedded broker, or one Apache Kafka node",
    )
    parser.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        help=f"comma-separated, of {list(VARIANTS)}",
    )
    args = parser.parse_args()
    names = [v.strip() for v in args.variants.split(",")]
    unknown = set(names) - VARIANTS.keys()
    if unknown:
        parser.error(f"unknown variants: {sorted(unknown)}")

    with ExitStack() as stack:
        bootstrap = args.bootstrap_server
        if bootstrap is None and args.broker == "kafka":
            work = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            kafka = kafka_cluster.KafkaCluster(work, nodes=1, heap="1g")
            bootstrap = stack.enter_context(kafka).bootstrap_servers
        elif bootstrap is None:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        jars: list[str] = []
        if "spark kafka sink" in names:
            reason = spark_connector.missing_reason()
            if reason is not None:
                parser.error(f"spark kafka sink: {reason}")
            jars = spark_connector.connector_jars()
        master = args.master
        if master is None:
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            cluster = StandaloneCluster(workers=2, cores=1, memory=args.executor_memory)
            master = stack.enter_context(cluster).master_url
        spark = session(master, args.executor_memory, jars)
        stack.callback(spark.stop)
        stack.callback(SUMMARIES.unlink, missing_ok=True)
        where = "standalone, 2 workers x 1 core" if args.master is None else "given"
        print(
            f"Spark {spark.version} at {master} ({where}), "
            f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), Python "
            f"{sys.version.split()[0]}, broker {bootstrap}",
            flush=True,
        )
        warm = make_frame(spark, WARMUP_ROWS, args.value_size)
        for name in names:
            measure(name, warm, WARMUP_ROWS, bootstrap)
        df = make_frame(spark, args.rows, args.value_size)
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for run in range(args.repeat):
            for name in names:
                rate, cpu = measure(name, df, args.rows, bootstrap)
                results[name].append((rate, cpu))
                print(
                    f"run {run + 1}: {name:<28} {rate:>12,.0f} rows/s {cpu:>8.1f} CPU µs/row",
                    flush=True,
                )
        print()
        for line in table(results, args.rows):
            print(line)


if __name__ == "__main__":
    main()
