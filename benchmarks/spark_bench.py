"""Rows/s from a Spark DataFrame into Kafka: aiokafka_lite's sink against what PySpark
users write today without the JVM connector.

    python benchmarks/spark_bench.py                   # 1M rows, local[2], embedded broker
    python benchmarks/spark_bench.py --rows 200000 --repeat 1
    python benchmarks/spark_bench.py --bootstrap-server host:9092 --master spark://...

Variants, all in the same Spark session, on the same cached DataFrame (keyed rows:
10,000 keys, 100-byte values, 2 Spark partitions = 2 tasks), each into its own fresh
8-partition topic:

* ``aiokafka_lite``: ``write_to_kafka(df, topic, key_col="key")`` (mapInArrow, one
  producer per task, batches built per partition), idempotent as by default; and
  ``aiokafka_lite (idem. off)``. Without idempotence our producer keeps one batch in
  flight per partition (ordering), with it up to five.
* ``confluent-kafka``: ``df.foreachPartition`` with one ``confluent_kafka.Producer``
  per task: ``produce()`` per Row (``poll(0)`` every 1,000 rows, ``poll(0.05)`` and a
  retry on ``BufferError``), ``flush()``, delivery errors counted by an accumulator;
  idempotence off (librdkafka's default) and on.
* ``kafka-python``: ``df.foreachPartition`` with one ``kafka.KafkaProducer`` per task:
  ``send()`` per Row, ``flush()``, errors counted from the futures (not idempotent).

Same producer settings wherever the client has them: acks=all, linger 5 ms, no
compression; batch sizes are each client's default (16 KiB for ours and
kafka-python, 1 MB for librdkafka). The clock runs from the action's start to its return (Spark
scheduling and Python worker start-up included, which every variant pays alike); a
warm-up write of 20,000 rows per variant runs first so each variant finds warm Python
workers. With ``--repeat K`` the variants are interleaved K times and the median is
reported. The broker and Spark share the machine's cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from typing import Any

from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.spark import local_session, write_to_kafka

TOPIC_PARTITIONS = 8
KEYS = 10_000
WARMUP_ROWS = 20_000
COMMON = {"acks": "all", "linger_ms": 5}


def create_topic(bootstrap: str) -> str:
    name = f"spark-bench-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics([NewTopic(name, num_partitions=TOPIC_PARTITIONS)])
    futures[name].result(timeout=30)
    return name


def run_aiokafka_lite(idempotent: bool) -> Callable[[Any, str, str], int]:
    def run(df: Any, topic: str, bootstrap: str) -> int:
        summary = write_to_kafka(
            df,
            topic,
            bootstrap_servers=bootstrap,
            key_col="key",
            value_col="value",
            enable_idempotence=idempotent,
            **COMMON,
        )
        return summary.rows_sent

    return run


def run_confluent(idempotent: bool) -> Callable[[Any, str, str], int]:
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


VARIANTS: dict[str, Callable[[Any, str, str], int]] = {
    "aiokafka_lite": run_aiokafka_lite(idempotent=True),  # the sink's default
    "aiokafka_lite (idem. off)": run_aiokafka_lite(idempotent=False),
    "confluent-kafka": run_confluent(idempotent=False),  # librdkafka's default
    "confluent-kafka (idem. on)": run_confluent(idempotent=True),
    "kafka-python": run_kafka_python,
}


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


def measure(name: str, df: Any, rows: int, bootstrap: str) -> float:
    topic = create_topic(bootstrap)
    start = time.perf_counter()
    delivered = VARIANTS[name](df, topic, bootstrap)
    elapsed = time.perf_counter() - start
    if delivered != rows:
        raise RuntimeError(f"{name}: {delivered} of {rows} rows delivered")
    return rows / elapsed


def table(results: dict[str, list[float]], rows: int) -> Iterator[str]:
    base = statistics.median(results["confluent-kafka"]) if results.get("confluent-kafka") else 0
    yield f"{'variant':<28} {'rows/s (median)':>16} {'runs':>30} {'vs confluent':>13}"
    for name, rates in results.items():
        med = statistics.median(rates)
        runs = ", ".join(f"{r:,.0f}" for r in rates)
        ratio = f"{med / base:.2f}x" if base else "-"
        yield f"{name:<28} {med:>16,.0f} {runs:>30} {ratio:>13}"
    yield f"({rows:,} rows per run)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--bootstrap-server", help="an existing cluster (default: embedded)")
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated, of {list(VARIANTS)}"
    )
    args = parser.parse_args()
    names = [v.strip() for v in args.variants.split(",")]
    unknown = set(names) - VARIANTS.keys()
    if unknown:
        parser.error(f"unknown variants: {sorted(unknown)}")

    with ExitStack() as stack:
        bootstrap = args.bootstrap_server
        if bootstrap is None:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        spark = local_session(
            args.master, "aiokafka-lite-spark-bench", **{"spark.ui.showConsoleProgress": "false"}
        )
        stack.callback(spark.stop)
        spark.sparkContext.setLogLevel("ERROR")
        print(
            f"Spark {spark.version} {args.master}, {os.cpu_count()} CPUs, Python "
            f"{sys.version.split()[0]}, broker {bootstrap}",
            flush=True,
        )
        warm = make_frame(spark, WARMUP_ROWS, args.value_size)
        for name in names:
            measure(name, warm, WARMUP_ROWS, bootstrap)
        df = make_frame(spark, args.rows, args.value_size)
        results: dict[str, list[float]] = {name: [] for name in names}
        for run in range(args.repeat):
            for name in names:
                rate = measure(name, df, args.rows, bootstrap)
                results[name].append(rate)
                print(f"run {run + 1}: {name:<28} {rate:>12,.0f} rows/s", flush=True)
        print()
        for line in table(results, args.rows):
            print(line)


if __name__ == "__main__":
    main()
