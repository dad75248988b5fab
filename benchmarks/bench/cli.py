"""The command line: ``python -m benchmarks.bench [options]`` (``--help`` lists them)."""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .brokers import add_broker_option
from .clients import client_available, uvloop_factory
from .plan import Plan, run_plan
from .report import machine_info, render_footer, render_table, write_chart, write_json
from .stats import add_cpu_vs_w1, add_ratios, summarize
from .worker import worker_main
from .workloads import CLIENT_CHOICES, WORKLOAD_LIST, WORKLOADS, Workload

RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"  # benchmarks/results


def parse_list(text: str, allowed: Sequence[str], what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in items if t not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return items


def select_workloads(args: argparse.Namespace) -> list[Workload]:
    """--workloads names ids or groups (W6 = W6/keyless + W6/keyed); default: every
    workload that is not an extra, unless only --sizes / --idempotence were asked for."""
    groups: dict[str, list[str]] = {}
    for w in WORKLOAD_LIST:
        groups.setdefault(w.group_name, []).append(w.id)
    names = list(WORKLOADS) + [g for g in groups if g not in WORKLOADS]
    wanted: list[str] = []
    if args.workloads is not None:
        for item in parse_list(args.workloads, names, "workload"):
            wanted.extend([item] if item in WORKLOADS else groups[item])
    elif not (args.sizes or args.idempotence):
        wanted = [w.id for w in WORKLOAD_LIST if not w.extra]
    if args.sizes:
        wanted.extend(groups["sizes"])
    if args.idempotence:
        wanted.extend(groups["idempotence"])
    return [WORKLOADS[w] for w in dict.fromkeys(wanted)]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench",
        description="Producer benchmarks: aiokafka_lite side by side with its peers.",
        epilog="More --repeat is better on a noisy machine: the median of each metric is shown.",
    )
    parser.add_argument("--quick", action="store_true", help="small N; the whole run ~1 min")
    parser.add_argument(
        "--workloads", help="ids or groups, e.g. W1,W3,W6 (default: W1-W6 without the extras)"
    )
    parser.add_argument(
        "--clients",
        default=",".join(CLIENT_CHOICES),
        help="comma-separated (java: Java's ProducerPerformance, W1 and W3 only)",
    )
    add_broker_option(parser)
    parser.add_argument(
        "--repeat", type=int, help="interleaved runs; median and range shown (default 3; quick 1)"
    )
    parser.add_argument(
        "--pure", action="store_true", help="add aiokafka_lite+pure rows (pure-Python twins)"
    )
    parser.add_argument(
        "--records", type=int, help="override N for every workload (W5 is time-boxed)"
    )
    parser.add_argument(
        "--sizes", action="store_true", help="add W1 with 10 B, 1 KB, 10 KB, 100 KB values"
    )
    parser.add_argument(
        "--idempotence",
        action="store_true",
        help="add W1 and W3 with idempotence on (W1/idem, W3/idem)",
    )
    parser.add_argument("--uvloop", action="store_true", help="uvloop for async clients")
    parser.add_argument(
        "--deadline", type=float, help="seconds a timed run may take (default 120; quick 20)"
    )
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "latest.json")
    parser.add_argument("--worker", metavar="SPEC_JSON", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def make_plan(args: argparse.Namespace, notes: list[str]) -> Plan:
    workloads = select_workloads(args)
    clients = []
    for name in parse_list(args.clients, CLIENT_CHOICES, "client"):
        reason = client_available(name)
        if reason is None:
            clients.append(name)
        else:
            notes.append(f"skipped {name}: {reason}")
    if args.uvloop and uvloop_factory() is None:
        notes.append("--uvloop given but uvloop is not importable: asyncio's loop used")
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    if repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    if any(w.runner_kind == "W5" for w in workloads):
        try:
            importlib.import_module("psutil")
        except ImportError:
            raise SystemExit("W5 samples RSS with psutil: pip install psutil") from None
    deadline = args.deadline if args.deadline is not None else (20.0 if args.quick else 120.0)
    return Plan(
        workloads,
        clients,
        repeat,
        args.quick,
        args.records,
        deadline,
        args.uvloop,
        args.pure,
        args.broker,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        return worker_main(args.worker)
    notes: list[str] = []
    plan = make_plan(args, notes)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    started = time.perf_counter()
    runs = run_plan(plan, lambda text: print(text, file=sys.stderr, flush=True))
    rows = [summarize(key, results) for key, results in runs.items()]
    add_ratios(rows)
    add_cpu_vs_w1(rows)
    machine = machine_info(plan)
    chart = args.output.with_suffix(".png")
    no_chart = write_chart(chart, rows)
    if no_chart is not None:
        notes.append(no_chart)
    print(render_table(rows))
    print(render_footer(plan, machine, rows, notes))
    outputs = f"{args.output}" + ("" if no_chart else f" and {chart}")
    print(f"total {time.perf_counter() - started:.1f} s; results in {outputs}")
    write_json(args.output, plan, machine, rows, runs, notes)
    return 0 if all(r.failed == r.known_failures for r in rows) else 1
