"""Rows/s and CPU of one Spark task's write path alone (no Spark): Arrow batches into Kafka.

    python benchmarks/spark_task_bench.py                    # 300,000 rows, 3 rounds
    python benchmarks/spark_task_bench.py --rows 1000000 --repeat 5

The task path of the data source and ``write_to_kafka`` (:func:`~aiokafka_lite.spark.
task.run_task`, as a Spark executor runs it) is fed the Arrow batches Spark would give
it (10,000 rows each, Spark's ``maxRecordsPerBatch``; keyed rows: 10,000 keys, 100-byte
values, as ``spark_bench.py``'s frame), into a fresh 8-partition topic of an embedded
broker. Two variants, interleaved, in this one process:

* ``python lists``: each batch's columns become Python lists first (the pure build's
  path; here forced in the compiled build, whose twins encode the records);
* ``arrow buffers``: the compiled build's rows appended from the Arrow buffers.

Reported: the median rows/s (the clock runs from the task's start to its return, every
delivery acknowledged) and this process's CPU seconds per million rows (the broker is
another process).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

import pyarrow as pa
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from aiokafka_lite import speedups
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.spark import arrow_rows
from aiokafka_lite.spark.contract import Plan
from aiokafka_lite.spark.task import run_task

BATCH_ROWS = 10_000
KEYS = 10_000
PARTITIONS = 8
VARIANTS = ("python lists", "arrow buffers")


def batches(rows: int, value_size: int) -> list[pa.RecordBatch]:
    keys = pa.array([f"user-{i % KEYS}".encode() for i in range(rows)], pa.binary())
    values = pa.array([b"x" * value_size] * rows, pa.binary())
    whole = pa.RecordBatch.from_arrays([keys, values], names=["key", "value"])
    return [whole.slice(i, BATCH_ROWS) for i in range(0, rows, BATCH_ROWS)]


def create_topic(bootstrap: str) -> str:
    name = f"task-bench-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    admin.create_topics([NewTopic(name, num_partitions=PARTITIONS)])[name].result(timeout=30)
    return name


def measure(variant: str, data: list[pa.RecordBatch], bootstrap: str) -> tuple[float, float]:
    """(rows/s, CPU seconds) of one task writing ``data``."""
    plan = Plan(
        topic=create_topic(bootstrap),
        config={"bootstrap_servers": bootstrap, "acks": "all", "linger_ms": 5},
        key_name="key",
        value_name="value",
        key_at=0,
        value_at=(1,),
    )
    compiled = arrow_rows._compiled
    if variant == "python lists":
        arrow_rows._compiled = lambda: None  # type: ignore[assignment]
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        report = run_task(plan, data)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        arrow_rows._compiled = compiled  # type: ignore[method-assign]
    rows = sum(b.num_rows for b in data)
    if report.rows_sent != rows:
        raise RuntimeError(f"{variant}: {report.rows_sent} of {rows} rows sent")
    return rows / wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not speedups.COMPILED:
        sys.exit(f"the compiled twins are not in use ({speedups.REASON})")
    data = batches(args.rows, args.value_size)
    results: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
    with EmbeddedBroker() as broker:
        bootstrap = broker.bootstrap_servers
        for variant in VARIANTS:  # warm-up
            measure(variant, data[:2], bootstrap)
        for _ in range(args.repeat):
            for variant in VARIANTS:
                results[variant].append(measure(variant, data, bootstrap))
    name = Path(__file__).name
    print(f"{name}: {args.rows:,} rows of {args.value_size} bytes, {args.repeat} rounds")
    print(f"{'variant':<16} {'rows/s (median)':>16} {'CPU s / 1M rows':>16}   runs (rows/s)")
    for variant, runs in results.items():
        rate = statistics.median(r for r, _ in runs)
        cpu = statistics.median(c for _, c in runs) / args.rows * 1e6
        each = ", ".join(f"{r:,.0f}" for r, _ in runs)
        print(f"{variant:<16} {rate:>16,.0f} {cpu:>16.2f}   {each}")


if __name__ == "__main__":
    main()
