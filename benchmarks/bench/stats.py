"""The summary of repeated runs: one row per (workload, client), with medians and ranges.

Each figure of a row is the median over its successful runs, records/s with its range
(min-max) beside it; rows are compared with aiokafka's and librdkafka's in the same
workload, and W6's CPU per record with the same client's W1.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .measure import RunResult
from .workloads import JAVA, WORKLOADS, base_client

REFERENCE_AIOKAFKA = "aiokafka"


REFERENCE_LIBRDKAFKA = ("confluent", "confluent-aio")  # the first one present in a workload


@dataclass
class Row:
    """The median over the repeated runs of one (workload, client)."""

    workload: str
    client: str
    runs: int
    failed: int
    records: int
    records_per_s: float | None
    records_per_s_range: tuple[float, float] | None
    mb_per_s: float | None
    cpu_us_per_record: float | None
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    peak_rss_mb: float | None
    delivered: int
    vs_aiokafka: float | None = None
    vs_librdkafka: float | None = None
    vs_java: float | None = None
    librdkafka_ref: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    known_failures: int = 0

    @property
    def status(self) -> str:
        return "ok" if not self.failed else f"FAILED {self.failed}/{self.runs}"


def median_of(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def median_extra(results: Sequence[RunResult]) -> dict[str, Any]:
    """The median of each numeric ``extra`` figure (booleans: all of them true)."""
    out: dict[str, Any] = {}
    for name in dict.fromkeys(k for r in results for k in r.extra):
        values = [r.extra[name] for r in results if name in r.extra]
        if all(isinstance(v, bool) for v in values):
            out[name] = all(values)
        elif all(isinstance(v, int | float) or v is None for v in values):
            out[name] = median_of(values)
    return out


def summarize(key: tuple[str, str], results: list[RunResult]) -> Row:
    good = [r for r in results if r.ok]
    measured = good or results  # W5's memory figures are worth showing even when it failed
    # delivered/records of the run that fell shortest (time-boxed runs differ in records)
    worst = max(results, key=lambda r: r.records - r.delivered)
    row = Row(
        workload=key[0],
        client=key[1],
        runs=len(results),
        failed=len(results) - len(good),
        records=worst.records,
        records_per_s=median_of([r.records_per_s for r in good]),
        records_per_s_range=(
            (min(r.records_per_s for r in good), max(r.records_per_s for r in good))
            if good
            else None
        ),
        mb_per_s=median_of([r.mb_per_s for r in good]),
        cpu_us_per_record=median_of([r.cpu_us_per_record for r in good]),
        p50_ms=median_of([r.p50_ms for r in good]),
        p99_ms=median_of([r.p99_ms for r in good]),
        max_ms=median_of([r.max_ms for r in good]),
        peak_rss_mb=median_of([r.peak_rss_mb for r in measured if r.peak_rss_mb]),
        delivered=worst.delivered,
        extra=median_extra(measured),
        errors=[e for r in results for e in r.errors],
        known_failures=sum(1 for r in results if not r.ok and r.known_failure),
    )
    row.notes = row_notes(row)
    return row


def row_notes(row: Row) -> list[str]:
    """The workload-specific figures of a row, as short phrases for the notes column."""
    x, kind = row.extra, WORKLOADS[row.workload].runner_kind
    notes = []
    if row.failed and row.errors:
        notes.append(row.errors[0][:110])
    if "compiled" in x:
        notes.append("compiled" if x["compiled"] else "pure Python")
    if kind == "W3" and x.get("batches"):
        notes.append(f"{x['batches']:,.0f} batches")
    if kind == "W4" and x.get("max_lag_ms") is not None:
        notes.append(f"max lag behind the pace {x['max_lag_ms']:.0f} ms")
    if kind == "W5" and x.get("baseline_rss_mb") is not None:
        notes.extend(memory_notes(row))
    if row.client == JAVA:
        notes.extend(java_notes(x))
    return notes


def java_notes(x: dict[str, Any]) -> list[str]:
    """Java's row: keyless, whole-JVM CPU, the warm figures and its own latency report."""
    notes = ["keyless"]
    if x.get("whole_process_cpu_us") is not None:
        notes.append(f"whole JVM {x['whole_process_cpu_us']:.1f} µs/rec")
    if x.get("warm_records_per_s") is not None:
        notes.append(f"warm {x['warm_records_per_s']:,.0f} rec/s, {x['warm_cpu_us']:.1f} µs/rec")
    if x.get("latency_p50_ms") is not None:
        notes.append(f"send->ack p50/p99 {x['latency_p50_ms']:.0f}/{x['latency_p99_ms']:.0f} ms")
    return notes


def memory_notes(row: Row) -> list[str]:
    x = row.extra

    def rate(name: str) -> str:
        return fmt(x.get(name), ",.0f")

    notes = [
        f"RSS base {x['baseline_rss_mb']:.0f} -> peak {x['peak_rss_mb']:.0f} MB, "
        f"{x['rss_growth_2nd_half_mb']:+.0f} MB in 2nd half",
        f"2nd half {rate('steady_send_per_s')} sends/s vs {rate('steady_ack_per_s')} acks/s",
        f"longest send() wait {x['longest_send_wait_ms']:,.0f} ms",
    ]
    if x.get("min_buffer_available_mb") is not None:
        notes.append(f"buffer free min {x['min_buffer_available_mb']:.1f} MiB")
    if x.get("buffer_full_retries") is not None:
        notes.append(f"BufferError {x['buffer_full_retries']:,.0f}x")
    if "within_bound" in x:
        verdict = "ok" if x["within_bound"] else "EXCEEDED"
        notes.append(f"bound {x['rss_limit_mb']:.0f} MB {verdict}")
    elif base_client(row.client) == "aiokafka":
        notes.append("no buffer-size option")
    return notes


def add_ratios(rows: list[Row]) -> None:
    """records/s of each row against aiokafka, librdkafka and Java in the same workload."""
    by_key = {(r.workload, r.client): r for r in rows}
    for row in rows:
        if WORKLOADS[row.workload].runner_kind == "W4":
            continue  # paced: every client sends W4_RATE records/s by construction
        aiokafka = by_key.get((row.workload, REFERENCE_AIOKAFKA))
        present = [by_key[k] for c in REFERENCE_LIBRDKAFKA if (k := (row.workload, c)) in by_key]
        librdkafka = present[0] if present else None
        row.vs_aiokafka = ratio(row, aiokafka)
        row.vs_librdkafka = ratio(row, librdkafka)
        row.vs_java = ratio(row, by_key.get((row.workload, JAVA)))
        row.librdkafka_ref = librdkafka.client if librdkafka else None


def add_cpu_vs_w1(rows: list[Row]) -> None:
    """W6: CPU µs/record against the same client's W1 (same records, one topic)."""
    by_key = {(r.workload, r.client): r for r in rows}
    for row in rows:
        w1 = by_key.get(("W1", row.client))
        if WORKLOADS[row.workload].runner_kind != "W6" or w1 is None:
            continue
        if row.cpu_us_per_record and w1.cpu_us_per_record:
            row.notes.append(
                f"CPU/rec {row.cpu_us_per_record / w1.cpu_us_per_record:.2f}x W1's "
                f"{w1.cpu_us_per_record:.1f} µs"
            )


def ratio(row: Row, reference: Row | None) -> float | None:
    if reference is None or not row.records_per_s or not reference.records_per_s:
        return None
    return row.records_per_s / reference.records_per_s


def fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix
