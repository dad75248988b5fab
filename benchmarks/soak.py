"""Soak test: minutes of continuous producing through random network faults, then an audit.

Run from the repository root (NOT part of the test suite)::

    python benchmarks/soak.py --quick                 # 20 s
    python benchmarks/soak.py                         # 180 s
    python benchmarks/soak.py --seconds 120 --log /tmp/soak.log   # + DEBUG log of the producer
    python benchmarks/soak.py --quick --no-idempotence            # compare: duplicates expected

Setup: one embedded Tansu broker behind ``tests/faultproxy.py`` (the broker advertises the
proxy's port, so every byte the producer exchanges with it passes through the proxy), a
6-partition topic, and one producer (idempotence on unless ``--no-idempotence``) with a
short ``request_timeout_ms`` and small batches, so there are many requests to break.

* The producer task sends unique values ``b"%012d" % seq`` with keys (``--keys`` distinct),
  ``await``-ing each ``send()`` and recording each delivery future's outcome (partition and
  offset, or the exception type) in a done callback. At most ``--max-pending`` futures are
  unresolved at any time; ``--rate`` caps records/s (0 = as fast as it goes).
* The chaos task sleeps 0.2-3 s, then does one of: ``cut`` (abort every connection, whatever
  is in flight), ``refuse`` (cut, then refuse new connections for 0.5-3 s: a broker outage),
  ``drop`` (forward requests but swallow every response for 0.3-2 s: the broker writes, the
  producer never hears), or nothing.
* At the end chaos stops (the proxy is healed), the producer is stopped (bounded), and the
  topic is read back with an independent client (confluent-kafka, ``tests/readers.py``).

Report (table on stdout, JSON in ``benchmarks/results/soak.json``):

* sent / acknowledged / failed (by exception type) / unresolved (future never completed);
* read back, duplicated (a value read more than once: extra copies), lost (acknowledged but
  not read back), out of order (per partition, taking each value's first copy in offset
  order: records that come after a record sent later), offset mismatches (an acknowledged
  partition/offset holding no copy of the value; for acks with offset -1, which Kafka allows
  for a DUPLICATE_SEQUENCE_NUMBER answer and which are counted apart, only the partition is
  checked), and failed records that were nevertheless written (allowed: e.g.
  DeliveryOutcomeUnknownError).

Exit code 1 if lost, out of order, offset mismatches or unresolved futures are nonzero, or
(with idempotence) duplicated is nonzero. Without idempotence duplicates after lost
responses are expected and only reported.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import logging
import random
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from faultproxy import FaultProxy  # noqa: E402  (tests/ is put on sys.path above)
from readers import ReadRecord, read_all_confluent  # noqa: E402

from aiokafka_lite import AIOKafkaProducer, NewTopic, create_topics  # noqa: E402
from aiokafka_lite.embedded import EmbeddedBroker  # noqa: E402
from aiokafka_lite.structs import RecordMetadata  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"
PARTITIONS = 6
NOT_DONE = -2  # outcome codes in Ledger.partition
FAILED = -1


@dataclass
class ChaosStats:
    events: collections.Counter[str] = field(default_factory=collections.Counter)
    refused_s: float = 0.0
    dropped_s: float = 0.0


class Ledger:
    """What happened to every record sent, indexed by its sequence number."""

    def __init__(self) -> None:
        self.partition: list[int] = []  # NOT_DONE, FAILED, or the acked partition
        self.offset: list[int] = []
        self.errors: dict[int, str] = {}
        self.send_raised: collections.Counter[str] = collections.Counter()
        self.unresolved = 0
        self.last_ack = time.monotonic()
        self.longest_ack_gap = 0.0

    def new(self) -> int:
        self.partition.append(NOT_DONE)
        self.offset.append(-1)
        self.unresolved += 1
        return len(self.partition) - 1

    def done(self, seq: int, fut: asyncio.Future[RecordMetadata]) -> None:
        self.unresolved -= 1
        if fut.cancelled():
            self.partition[seq] = FAILED
            self.errors[seq] = "CancelledError"
            return
        exc = fut.exception()
        if exc is not None:
            self.partition[seq] = FAILED
            self.errors[seq] = type(exc).__name__
            return
        md = fut.result()
        self.partition[seq] = md.partition
        self.offset[seq] = md.offset
        now = time.monotonic()
        self.longest_ack_gap = max(self.longest_ack_gap, now - self.last_ack)
        self.last_ack = now


def value_of(seq: int) -> bytes:
    return b"%012d" % seq


async def produce(
    producer: AIOKafkaProducer[bytes, bytes],
    topic: str,
    ledger: Ledger,
    stop: asyncio.Event,
    rate: float,
    keys: int,
    max_pending: int,
) -> None:
    pending: collections.deque[asyncio.Future[RecordMetadata]] = collections.deque()
    start = time.monotonic()
    while not stop.is_set():
        if rate > 0:
            ahead = len(ledger.partition) - rate * (time.monotonic() - start)
            if ahead >= 1:
                await asyncio.sleep(min(ahead / rate, 0.05))
                continue
        while pending and pending[0].done():
            pending.popleft()
        if len(pending) >= max_pending:
            await asyncio.wait([pending[0]], timeout=0.5)  # bounded: keep checking `stop`
            continue
        seq = ledger.new()
        try:
            fut = await producer.send(topic, value_of(seq), key=b"key-%d" % (seq % keys))
        except Exception as e:  # the record never got a future
            ledger.partition[seq] = FAILED
            ledger.errors[seq] = type(e).__name__
            ledger.send_raised[type(e).__name__] += 1
            ledger.unresolved -= 1
            await asyncio.sleep(0.01)
            continue
        fut.add_done_callback(lambda f, seq=seq: ledger.done(seq, f))
        pending.append(fut)
        if seq % 64 == 0:
            await asyncio.sleep(0)  # let the sender and the proxy run


async def chaos(proxy: FaultProxy, stop: asyncio.Event, rng: random.Random, st: ChaosStats) -> None:
    async def pause(seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)

    try:
        while not stop.is_set():
            await pause(rng.uniform(0.2, 3.0))
            if stop.is_set():
                break
            action = rng.choice(("cut", "refuse", "drop", "nothing"))
            st.events[action] += 1
            if action == "cut":
                proxy.cut()
            elif action == "refuse":
                duration = rng.uniform(0.5, 3.0)
                proxy.cut()
                proxy.refusing = True
                t0 = time.monotonic()
                await pause(duration)
                proxy.refusing = False
                st.refused_s += time.monotonic() - t0
            elif action == "drop":
                duration = rng.uniform(0.3, 2.0)
                proxy.drop_responses = True
                t0 = time.monotonic()
                await pause(duration)
                proxy.drop_responses = False
                st.dropped_s += time.monotonic() - t0
    finally:
        proxy.refusing = False
        proxy.drop_responses = False


def audit(
    ledger: Ledger, records: list[ReadRecord], idempotence: bool
) -> tuple[dict[str, Any], list[str]]:
    """Compare what the producer was told with what the reader found."""
    n = len(ledger.partition)
    where: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
    foreign = 0
    for r in records:
        try:
            seq = int(r.value or b"")
        except ValueError:
            foreign += 1
            continue
        if not 0 <= seq < n:
            foreign += 1
            continue
        where[seq].append((r.partition, r.offset))
    duplicated = sum(len(v) - 1 for v in where.values())
    dup_values = sum(1 for v in where.values() if len(v) > 1)
    acked = [s for s in range(n) if ledger.partition[s] >= 0]
    failed = [s for s in range(n) if ledger.partition[s] == FAILED]
    lost = [s for s in acked if s not in where]
    failed_written = sum(1 for s in failed if s in where)
    ack_no_offset = sum(1 for s in acked if ledger.offset[s] < 0)
    mismatched = [
        s
        for s in acked
        if s in where
        and not any(
            p == ledger.partition[s] and (ledger.offset[s] < 0 or off == ledger.offset[s])
            for p, off in where[s]
        )
    ]
    # Order: per partition, each value's first copy in offset order; a record that comes
    # after one sent later (a higher seq) is out of order.
    by_partition: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
    for seq, places in where.items():
        p, off = min(places, key=lambda x: x[1])
        by_partition[p].append((off, seq))
    out_of_order: list[tuple[int, int, int]] = []  # (partition, seq, after seq)
    for p, items in by_partition.items():
        items.sort()
        highest = -1
        for _off, seq in items:
            if seq < highest:
                out_of_order.append((p, seq, highest))
            highest = max(highest, seq)
    # The acknowledgements alone must also keep send order within a partition.
    ack_order = 0
    last_offset: dict[int, int] = {}
    for s in acked:
        p, off = ledger.partition[s], ledger.offset[s]
        if off < 0:
            continue
        if off <= last_offset.get(p, -1):
            ack_order += 1
        last_offset[p] = off
    errors = collections.Counter(ledger.errors[s] for s in failed)
    result = {
        "sent": n,
        "acknowledged": len(acked),
        "acknowledged_without_offset": ack_no_offset,
        "failed": len(failed),
        "failed_by_error": dict(errors.most_common()),
        "send_raised": dict(ledger.send_raised),
        "unresolved": sum(1 for s in range(n) if ledger.partition[s] == NOT_DONE),
        "read_back": len(records),
        "distinct_read_back": len(where),
        "foreign_records": foreign,
        "duplicated": duplicated,
        "duplicated_values": dup_values,
        "lost": len(lost),
        "out_of_order": len(out_of_order),
        "ack_offsets_not_increasing": ack_order,
        "offset_mismatch": len(mismatched),
        "failed_but_written": failed_written,
        "samples": {
            "lost": lost[:20],
            "duplicated": [{"seq": s, "at": v} for s, v in sorted(where.items()) if len(v) > 1][
                :20
            ],
            "out_of_order": [{"partition": p, "seq": s, "after": h} for p, s, h in out_of_order][
                :20
            ],
            "offset_mismatch": [
                {"seq": s, "acked": [ledger.partition[s], ledger.offset[s]], "read": where[s]}
                for s in mismatched[:20]
            ],
        },
    }
    problems = []
    if result["lost"]:
        problems.append("lost")
    if result["out_of_order"] or ack_order:
        problems.append("out_of_order")
    if result["offset_mismatch"]:
        problems.append("offset_mismatch")
    if result["unresolved"]:
        problems.append("unresolved")
    if idempotence and result["duplicated"]:
        problems.append("duplicated")
    return result, problems


def print_table(report: dict[str, Any]) -> None:
    a, cfg, ch = report["audit"], report["config"], report["chaos"]
    mode = "idempotent" if cfg["enable_idempotence"] else "NOT idempotent"
    rows: list[tuple[str, Any]] = [
        ("mode", f"{mode}, {cfg['seconds']:.0f} s, {cfg['partitions']} partitions"),
        (
            "chaos",
            ", ".join(f"{k}={v}" for k, v in sorted(ch["events"].items()))
            + f" (refusing {ch['refused_s']:.1f} s, dropping {ch['dropped_s']:.1f} s)",
        ),
        ("proxy connections", report["proxy_connections"]),
        ("records sent", a["sent"]),
        ("acknowledged", a["acknowledged"]),
        ("  of which offset -1", a["acknowledged_without_offset"]),
        ("failed", a["failed"]),
    ]
    for name, count in a["failed_by_error"].items():
        rows.append((f"  {name}", count))
    if a["send_raised"]:
        rows.append(("  (raised by send)", a["send_raised"]))
    rows += [
        ("unresolved futures", a["unresolved"]),
        ("read back", f"{a['read_back']} ({a['distinct_read_back']} distinct)"),
        ("duplicated", f"{a['duplicated']} ({a['duplicated_values']} values)"),
        ("lost (acked, not read)", a["lost"]),
        ("out of order", a["out_of_order"]),
        ("ack offsets not increasing", a["ack_offsets_not_increasing"]),
        ("offset mismatch", a["offset_mismatch"]),
        ("failed but written", a["failed_but_written"]),
        ("longest gap between acks", f"{report['longest_ack_gap_s']:.1f} s"),
        ("producer stop", f"{report['stop_s']:.1f} s"),
        ("throughput (acked/s)", f"{a['acknowledged'] / max(cfg['seconds'], 1e-9):.0f}"),
    ]
    m = report["metrics"]
    if m:
        rows.append(
            (
                "producer metrics",
                f"requests={m.get('request-total', 0):.0f} "
                f"retried records={m.get('record-retry-total', 0):.0f} "
                f"failed records={m.get('record-error-total', 0):.0f}",
            )
        )
    rows.append(("verdict", report["verdict"]))
    width = max(len(k) for k, _ in rows)
    line = "-" * (width + 3 + max(len(str(v)) for _, v in rows))
    print(line)
    for k, v in rows:
        print(f"{k:<{width}} | {v}")
    print(line)
    for kind, samples in a["samples"].items():
        if samples:
            print(f"{kind} samples: {samples[:5]}")


async def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    proxy = await FaultProxy("127.0.0.1", 0).start()
    broker = EmbeddedBroker(advertised_port=proxy.port, log_path=args.broker_log)
    await broker.astart()
    proxy.target = ("127.0.0.1", broker.port)
    bootstrap = f"127.0.0.1:{proxy.port}"
    topic = f"soak-{uuid.uuid4().hex[:12]}"
    ledger = Ledger()
    chaos_stats = ChaosStats()
    config = {
        "bootstrap_servers": bootstrap,
        "request_timeout_ms": 1500,
        "delivery_timeout_ms": 30000,
        "batch_size": 2048,
        "linger_ms": 2,
        "enable_idempotence": not args.no_idempotence,
    }
    try:
        await create_topics(bootstrap, [NewTopic(topic, PARTITIONS)])
        producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(**config)
        await producer.start()
        stop = asyncio.Event()
        t0 = time.monotonic()
        ledger.last_ack = t0
        tasks = [
            asyncio.create_task(
                produce(producer, topic, ledger, stop, args.rate, args.keys, args.max_pending)
            ),
            asyncio.create_task(chaos(proxy, stop, rng, chaos_stats)),
        ]
        progress_every = 10.0 if args.seconds > 30 else 5.0
        while (elapsed := time.monotonic() - t0) < args.seconds:
            await asyncio.sleep(min(progress_every, args.seconds - elapsed))
            if tasks[0].done() or tasks[1].done():
                break
            print(
                f"[{time.monotonic() - t0:6.1f}s] sent={len(ledger.partition)} "
                f"unresolved={ledger.unresolved} failed={len(ledger.errors)} "
                f"chaos={dict(chaos_stats.events)}",
                flush=True,
            )
        stop.set()
        produced_s = time.monotonic() - t0
        for task in tasks:
            try:
                await asyncio.wait_for(task, 10)
            except TimeoutError:
                print(f"task {task.get_name()} did not stop within 10 s", flush=True)
        proxy.refusing = proxy.drop_responses = False
        # stop() delivers what is buffered within delivery_timeout_ms; bound it anyway.
        t_stop = time.monotonic()
        stop_timeout = config["delivery_timeout_ms"] / 1000 + 15
        try:
            async with asyncio.timeout(stop_timeout):
                await producer.stop()
        except TimeoutError:
            print(f"producer.stop() did not return within {stop_timeout:.0f} s", flush=True)
        stop_s = time.monotonic() - t_stop
        await asyncio.sleep(0)  # run the futures' done callbacks
        metrics = producer.metrics()
        # Read back with an independent client, through the (healed) proxy; from a thread
        # so this loop keeps pumping the proxy.
        expected = len(ledger.partition)
        read_timeout = 30 + expected / 20000
        print(f"reading back {expected} records (timeout {read_timeout:.0f} s)...", flush=True)
        records = await asyncio.to_thread(
            read_all_confluent, bootstrap, topic, expected, read_timeout
        )
        if len(records) >= expected:
            # Duplicates may have filled the count before everything was read: read on.
            records = await asyncio.to_thread(
                read_all_confluent, bootstrap, topic, 2 * expected + 1, 10 + expected / 20000
            )
    finally:
        await proxy.stop()
        await broker.astop()

    result, problems = audit(ledger, records, not args.no_idempotence)
    verdict = "OK" if not problems else "FAILED: " + ", ".join(problems)
    if args.no_idempotence and result["duplicated"] and not problems:
        verdict = f"OK (no idempotence: {result['duplicated']} duplicate(s), allowed)"
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config": {
            **{k: v for k, v in config.items() if k != "bootstrap_servers"},
            "seconds": produced_s,
            "partitions": PARTITIONS,
            "rate": args.rate,
            "keys": args.keys,
            "max_pending": args.max_pending,
            "seed": args.seed,
        },
        "chaos": {**asdict(chaos_stats), "events": dict(chaos_stats.events)},
        "proxy_connections": proxy.connections,
        "longest_ack_gap_s": ledger.longest_ack_gap,
        "stop_s": stop_s,
        "metrics": metrics,
        "audit": result,
        "verdict": verdict,
    }
    print_table(report)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = Path(args.output) if args.output else RESULTS_DIR / "soak.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=180.0, help="how long to produce")
    parser.add_argument("--quick", action="store_true", help="20 s instead")
    parser.add_argument("--no-idempotence", action="store_true", help="enable_idempotence=False")
    parser.add_argument("--rate", type=float, default=5000, help="records/s cap (0: none)")
    parser.add_argument("--keys", type=int, default=1000, help="distinct keys")
    parser.add_argument("--max-pending", type=int, default=50000, help="unresolved futures cap")
    parser.add_argument("--seed", type=int, default=None, help="seed of the chaos schedule")
    parser.add_argument("--log", help="write the aiokafka_lite DEBUG log to this file")
    parser.add_argument("--broker-log", help="write the broker's log to this file")
    parser.add_argument("--output", help="JSON report path (default benchmarks/results/soak.json)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds = 20.0
    if args.seed is None:
        args.seed = random.randrange(1 << 32)
    print(f"soak: seed {args.seed}", flush=True)
    if args.log:
        handler = logging.FileHandler(args.log, mode="w")
        handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d %(name)s %(message)s"))
        lib = logging.getLogger("aiokafka_lite")
        lib.setLevel(logging.DEBUG)
        lib.addHandler(handler)
        lib.propagate = False
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
