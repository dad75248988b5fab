"""``perf``: Kafka's ``kafka-producer-perf-test`` for this producer.

Sends ``--num-records`` records of ``--record-size`` random uppercase letters (as the
Java tool does), at most ``--throughput`` records/s (-1: as fast as possible), and
reports records/s, MB/s and the latency from each ``send()`` call to its delivery.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import string
import sys
import time
from array import array
from typing import Any

from ..errors import KafkaError
from ..producer import AIOKafkaProducer
from ..structs import RecordMetadata
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    CliError,
    add_bootstrap,
    add_command,
    add_producer_options,
    cluster,
    producer_options,
    rich_module,
    started_producer,
)
from ._progress import progress_bar

__all__ = ["add_parser", "run"]

# Records between yields to the event loop: the sender task runs in between, so
# batches leave while sending goes on (as the Java tool's I/O thread does).
_YIELD_EVERY = 100


class _Stats:
    """Latencies (ms) and failures, filled by one done-callback per record."""

    def __init__(self) -> None:
        self.started: dict[asyncio.Future[RecordMetadata], float] = {}
        self.latencies = array("d")
        self.failed = 0
        self.first_error: BaseException | None = None
        self.metrics: dict[str, float] = {}

    def on_done(self, fut: asyncio.Future[RecordMetadata]) -> None:
        self.latencies.append((time.perf_counter() - self.started.pop(fut)) * 1000)
        exc = fut.exception()
        if exc is not None:
            self.failed += 1
            if self.first_error is None:
                self.first_error = exc

    @property
    def done(self) -> int:
        return len(self.latencies)


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "perf",
        "measure producer throughput and latency (like kafka-producer-perf-test)",
        (__doc__ or "").replace("``", ""),
    )
    add_bootstrap(p, embedded=True)
    p.add_argument("--topic", default="perf-test", help="the topic to send to (default: perf-test)")
    p.add_argument("--num-records", type=int, required=True, help="how many records to send")
    p.add_argument("--record-size", type=int, required=True, help="bytes per record value")
    p.add_argument(
        "--throughput", type=float, default=-1, help="records/s cap; -1 (default): no cap"
    )
    p.add_argument(
        "--partitions",
        type=int,
        default=4,
        help="partitions of the topic on an embedded broker (default: 4)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument(
        "--print-metrics",
        action="store_true",
        help="also print the producer's metrics at the end (as Java's tool does)",
    )
    add_producer_options(p)
    p.set_defaults(handler=run)


async def run(args: argparse.Namespace) -> int:
    if args.num_records < 1 or args.record_size < 0:
        raise CliError("--num-records must be >= 1 and --record-size >= 0")
    if args.throughput == 0:
        raise CliError("--throughput must be positive, or -1 for no cap")
    async with cluster(args.bootstrap_server, args.topic, args.partitions) as bootstrap:
        options = producer_options(args, bootstrap)
        stats, elapsed = await _measure(args, options)
    results = _results(args, stats, elapsed)
    if args.print_metrics:
        results["metrics"] = stats.metrics
    if args.json:
        print(json.dumps(results))
    else:
        _print_table(results)
        if args.print_metrics:
            _print_metrics(stats.metrics)
    if stats.failed:
        print(f"first error: {stats.first_error}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


async def _measure(args: argparse.Namespace, options: dict[str, Any]) -> tuple[_Stats, float]:
    rng = random.Random(0)
    payload = "".join(rng.choices(string.ascii_uppercase, k=args.record_size)).encode()
    stats = _Stats()
    async with (
        started_producer(options, args.topic) as producer,
        progress_bar(
            f"perf {args.topic}",
            args.num_records,
            lambda: stats.done,
            enabled=not args.no_progress,
        ),
    ):
        start = time.perf_counter()
        await _send(producer, args, payload, stats, start)
        await producer.flush(timeout=None)
        elapsed = time.perf_counter() - start
        stats.metrics = producer.metrics()
    return stats, elapsed


async def _send(
    producer: AIOKafkaProducer[bytes, bytes],
    args: argparse.Namespace,
    payload: bytes,
    stats: _Stats,
    start: float,
) -> None:
    send, topic, now = producer.send, args.topic, time.perf_counter
    started, on_done = stats.started, stats.on_done
    interval = 0.0 if args.throughput < 0 else 1.0 / args.throughput
    for i in range(args.num_records):
        t0 = now()
        try:
            fut = await send(topic, payload)
        except KafkaError as e:
            raise CliError(f"send failed after {i:,} records: {e}", EXIT_FAILED) from e
        started[fut] = t0
        fut.add_done_callback(on_done)
        if i % _YIELD_EVERY == 0 or interval:
            # Ahead of the cap: sleep until this record is due (else just let the sender run).
            ahead = start + (i + 1) * interval - now() if interval else 0.0
            await asyncio.sleep(ahead if ahead > 0.001 else 0)


def _results(args: argparse.Namespace, stats: _Stats, elapsed: float) -> dict[str, Any]:
    lat = sorted(stats.latencies)
    n = len(lat)

    def pct(p: float) -> float:
        return lat[min(n - 1, int(p / 100 * n))] if n else 0.0

    delivered = n - stats.failed
    return {
        "records": n,
        "failed": stats.failed,
        "record_size": args.record_size,
        "seconds": round(elapsed, 3),
        "records_per_sec": round(delivered / elapsed, 1),
        "mb_per_sec": round(delivered * args.record_size / elapsed / 1e6, 2),
        "latency_avg_ms": round(statistics.fmean(lat), 2) if n else 0.0,
        "latency_p50_ms": round(pct(50), 2),
        "latency_p95_ms": round(pct(95), 2),
        "latency_p99_ms": round(pct(99), 2),
        "latency_max_ms": round(lat[-1], 2) if n else 0.0,
    }


def _print_table(r: dict[str, Any]) -> None:
    table = rich_module("table").Table(title="producer performance")
    table.add_column("records", justify="right")
    table.add_column("rec/s", justify="right")
    table.add_column("MB/s", justify="right")
    for name in ("avg", "p50", "p95", "p99", "max"):
        table.add_column(f"{name} ms", justify="right")
    table.add_row(
        f"{r['records']:,}" + (f" ({r['failed']:,} failed)" if r["failed"] else ""),
        f"{r['records_per_sec']:,.0f}",
        f"{r['mb_per_sec']:,.2f}",
        *(f"{r[f'latency_{k}_ms']:,.1f}" for k in ("avg", "p50", "p95", "p99", "max")),
    )
    rich_module("console").Console().print(table)


def _print_metrics(metrics: dict[str, float]) -> None:
    table = rich_module("table").Table(title="producer metrics (rates and averages: last 30 s)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in sorted(metrics.items()):
        table.add_row(name, f"{value:,.2f}" if isinstance(value, float) else f"{value:,}")
    rich_module("console").Console().print(table)
