"""What the runs come to: medians and ranges per label, the table, each client against
each ceiling and against librdkafka's CPU, and the footer (date, hardware, load, versions,
command)."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import time
from dataclasses import dataclass, field

from ..bench.measure import RunResult
from ..bench.report import package_version
from ..bench.workloads import PARTITIONS, WORKLOADS
from .prebuild import Shape
from .settings import JAVA, LIBRDKAFKA, MODULE, W3

# The targets W3 is held to (issue 24): against each broker's ceiling, and librdkafka's CPU.
CEILING_TARGET = 0.90
CPU_TARGET = 0.5


@dataclass
class Summary:
    """One label's runs over the repeats."""

    label: str
    shape: Shape | None  # None: a client's W3 run
    client: str | None = None  # benchmarks.bench's name of the client; None: the replay
    runs: list[RunResult] = field(default_factory=list)
    workload: str = W3.id  # the client's workload: W3, or W3/idem (idempotence on)

    @property
    def idempotent(self) -> bool:
        if self.shape is not None:
            return self.shape.idempotent
        return WORKLOADS[self.workload].idempotence

    @property
    def ok(self) -> list[RunResult]:
        return [r for r in self.runs if r.ok]

    def median(self) -> float:
        return statistics.median(r.records_per_s for r in self.ok) if self.ok else 0.0

    def cpu_median(self) -> float:
        ok = self.ok
        return statistics.median(r.cpu_us_per_record for r in ok) if ok else 0.0

    def cells(self) -> list[str]:
        ok = self.ok
        if not ok:
            return [self.label, f"0/{len(self.runs)}", "FAILED", "", "", "", ""]
        rates = [r.records_per_s for r in ok]
        broker_us = [r.broker_cpu_s / r.records * 1e6 for r in ok if r.broker_cpu_s is not None]
        busy = [r.broker_cpu_s / r.elapsed_s for r in ok if r.broker_cpu_s is not None]
        return [
            self.label,
            f"{len(ok)}/{len(self.runs)}",
            f"{self.median():,.0f}",
            f"{min(rates):,.0f}-{max(rates):,.0f}",
            f"{statistics.median(r.cpu_us_per_record for r in ok):.3f}",
            f"{statistics.median(broker_us):.2f}" if broker_us else "",
            f"{statistics.median(busy):.2f}" if busy else "",
        ]


HEADERS = [
    "",
    "ok",
    "rec/s (median)",
    "range",
    "client CPU µs/rec",
    "broker CPU µs/rec",
    "broker CPU s / timed s",
]


def render(summaries: list[Summary]) -> str:
    rows = [HEADERS] + [s.cells() for s in summaries]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    return "\n".join(lines)


def paired(numer: Summary, denom: Summary, value: str) -> str:
    """The median and range of the repeats' own ratios (runs of one round side by side:
    on a shared machine, steadier than the ratio of the medians)."""
    ratios = [
        getattr(n, value) / getattr(d, value)
        for n, d in zip(numer.runs, denom.runs, strict=True)
        if n.ok and d.ok and getattr(d, value)
    ]
    if not ratios:
        return ""
    middle = statistics.median(ratios)
    return f" (per repeat: median {middle:.2f}, range {min(ratios):.2f}-{max(ratios):.2f})"


def comparison(ceilings: list[Summary], clients: list[Summary]) -> list[str]:
    """Each client's records/s as a fraction of each ceiling of its own kind (idempotent
    or not; ratio of medians, range over the rounds' own ratios), its CPU per record
    against librdkafka's in the same kind, and where 1.5x librdkafka stands."""
    lines: list[str] = []
    for idempotent in (False, True):
        kind = [c for c in clients if c.idempotent == idempotent]
        tops = [c for c in ceilings if c.idempotent == idempotent]
        lines.extend(compare_kind(tops, kind, "idempotent " if idempotent else ""))
    return lines


def compare_kind(ceilings: list[Summary], clients: list[Summary], kind: str) -> list[str]:
    lines: list[str] = []
    lib = next((c for c in clients if c.client == LIBRDKAFKA and c.ok), None)
    for ceiling in ceilings:
        top = ceiling.median()
        if not top or not clients:
            continue
        lines.append(f"of the {ceiling.label} (target >= {CEILING_TARGET:.2f}):")
        for client in clients:
            rate = client.median()
            if not rate:
                lines.append(f"  {client.client}: failed")
                continue
            spread = paired(client, ceiling, "records_per_s")
            lines.append(f"  {client.client}: {rate / top:.2f}{spread}")
        if lib is not None:
            need = 1.5 * lib.median()
            verdict = "above" if need > top else "within"
            lines.append(
                f"  1.5x librdkafka = {need:,.0f} rec/s = {need / top:.2f}x that ceiling "
                f"({verdict} it)"
            )
    others = [c for c in clients if c is not lib and c.ok]
    if lib is not None and lib.cpu_median() and others:
        lines.append(
            f"{kind}client CPU per record / {kind}librdkafka's (target <= {CPU_TARGET:.2f}):"
        )
        for client in others:
            spread = paired(client, lib, "cpu_us_per_record")
            lines.append(f"  {client.client}: {client.cpu_median() / lib.cpu_median():.2f}{spread}")
    java = next((c for c in clients if c.client == JAVA and c.ok), None)
    mine = [c for c in clients if c.client not in (JAVA, LIBRDKAFKA) and c.ok]
    if java is not None and java.cpu_median() and mine:
        lines.append(f"{kind}client CPU per record / {kind}Java's (keyless, whole JVM's threads):")
        for client in mine:
            spread = paired(client, java, "cpu_us_per_record")
            lines.append(
                f"  {client.client}: {client.cpu_median() / java.cpu_median():.2f}{spread}"
            )
    return lines


def load_average() -> str:
    with contextlib.suppress(OSError):
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return "load average unknown"


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def footer(args: argparse.Namespace, broker: str, argv: list[str]) -> str:
    import confluent_kafka

    return "\n".join(
        [
            f"date: {time.strftime('%Y-%m-%d %H:%M %Z')}; CPU: {cpu_model()}, "
            f"{os.cpu_count()} CPUs; Python {platform.python_version()}, {platform.platform()}",
            f"versions: confluent-kafka {package_version('confluent-kafka')}, librdkafka "
            f"{confluent_kafka.libversion()[0]}; broker: {broker}; at the end: " + load_average(),
            f"W3: {args.records:,} keyed records (1,000 keys, {W3.value_size}-byte values), "
            f"{PARTITIONS} partitions, acks=all, idempotence {args.idempotence}; median of "
            f"{args.repeat} "
            "interleaved repeat(s), each run in its own process on a fresh topic of "
            + ("one broker" if args.shared_broker else "a broker of its own")
            + " on the same machine; every topic read back",
            "client CPU: the process's CPU time over the timed part; broker CPU: the broker "
            "process's over the whole run (start-up included); broker CPU s / timed s: about "
            "the cores it kept busy",
            "command: python -m " + MODULE + " " + " ".join(argv),
        ]
    )
