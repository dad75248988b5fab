"""The parent's runs: the replay worker and W3's client workers, each on a topic of its
own, every topic read back with confluent-kafka's consumer afterwards."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import uuid
from dataclasses import asdict

from aiokafka_lite._internal.partitioner import default_partition

from ..bench.brokers import Broker, open_broker
from ..bench.measure import RunResult
from ..bench.processes import create_own_topic, run_one, run_process, worker_env
from ..bench.workloads import PARTITIONS, WorkerSpec
from .prebuild import Shape
from .report import Summary
from .settings import JAVA, LIBRDKAFKA, MODULE

READ_BACK_TIMEOUT_S = 300.0
READ_BACK_QUIET_S = 0.5  # after the count is reached: nothing more may arrive in this long


def run_ceiling(spec: WorkerSpec, shape: Shape, broker_pid: int | None) -> RunResult:
    """The replay worker on a topic of its own, with the broker's CPU time over it."""
    failed = create_own_topic(spec, PARTITIONS)
    if failed is not None:
        return failed
    payload = json.dumps({"spec": asdict(spec), "shape": list(shape)})
    command = [sys.executable, "-m", MODULE, "--replay-worker", payload]
    return run_process(spec, command, worker_env(), broker_pid, "replay worker")


class ReadBack:
    """What a topic holds, record by record: counts per partition, and what is wrong
    (an offset gap, a key on another partition than before or than murmur2 says)."""

    def __init__(self, murmur2: bool, keyless: bool = False) -> None:
        self.murmur2 = murmur2  # the keys must be on murmur2's partitions (else: any one)
        self.keyless = keyless  # the records have no key (Java's ProducerPerformance)
        self.counts = [0] * PARTITIONS
        self.problems: list[str] = []
        self._placed: dict[bytes, int] = {}

    def see(self, partition: int, offset: int, key: bytes | None) -> None:
        count = self.counts[partition]
        if offset != count:
            self.note(f"partition {partition}: offset {offset} where {count} was expected")
        self.counts[partition] = count + 1
        if key is None:
            if not self.keyless:
                self.note(f"partition {partition}: a record without a key at offset {offset}")
            return
        where = self._placed.get(key)
        if where is None:
            where = default_partition(key, PARTITIONS) if self.murmur2 else partition
            self._placed[key] = where
        if where != partition:
            self.note(f"key {key!r} at partition {partition}, expected at {where}")

    def note(self, problem: str) -> None:
        if len(self.problems) < 5:
            self.problems.append(problem)


def read_back(
    bootstrap: str, topic: str, expected: int, murmur2: bool, keyless: bool = False
) -> ReadBack:
    """Read ``topic`` from offset 0 with confluent-kafka's consumer (CRCs checked) until
    ``expected`` records came and then nothing more for ``READ_BACK_QUIET_S``."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"broker-ceiling-{uuid.uuid4().hex}",  # required, unused (assign)
            "enable.auto.commit": False,
            "check.crcs": True,
            "log_level": 3,
        }
    )
    seen = ReadBack(murmur2, keyless)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        deadline = time.monotonic() + READ_BACK_TIMEOUT_S
        count = 0
        while time.monotonic() < deadline:
            msgs = consumer.consume(num_messages=10_000, timeout=READ_BACK_QUIET_S)
            if not msgs and count >= expected:
                break  # every record is there and nothing follows
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    raise RuntimeError(f"consumer error: {err}")
                p, offset, key = msg.partition(), msg.offset(), msg.key()
                if p is None or offset is None or not isinstance(key, bytes | None):
                    raise RuntimeError(f"record without partition or offset: {msg!r}")
                seen.see(p, offset, key)
            count += len(msgs)
    finally:
        consumer.close()
    if sum(seen.counts) != expected:
        seen.problems.insert(0, f"read back {sum(seen.counts):,} records, {expected:,} sent")
    return seen


def verified(result: RunResult, spec: WorkerSpec) -> RunResult:
    """Fail the run unless its topic holds exactly the records it sent. librdkafka's
    default partitioner is not murmur2 (it hashes keys with CRC32): its keys need only
    stay on one partition each. Java's ProducerPerformance sends keyless records: only
    their count and offsets are checked."""
    if not result.ok:
        return result
    keyless = spec.client == JAVA  # ProducerPerformance cannot send keys
    murmur2 = spec.client not in (LIBRDKAFKA, JAVA)
    seen = read_back(spec.bootstrap, spec.topic, spec.records, murmur2, keyless)
    result.extra["read_back"] = sum(seen.counts)
    result.extra["partition_counts"] = seen.counts
    if seen.problems:
        result.status = "FAILED"
        result.errors.extend(seen.problems)
    return result


def run_round(
    round_no: int, entries: list[Summary], args: argparse.Namespace, shared: Broker | None
) -> str:
    """One repeat: every entry once, in the given order, each on a fresh topic of the
    shared broker or (by default) of a broker of its own; returns the broker's description."""
    description = shared.description if shared is not None else ""
    for entry in entries:
        if shared is not None:
            result = run_entry(entry, round_no, args, shared)
        else:
            with open_broker(args.broker, log) as broker:
                result = run_entry(entry, round_no, args, broker)
                description = broker.description
        entry.runs.append(result)
        log(describe(round_no, args.repeat, entry.label, result))
    return description


def run_entry(entry: Summary, round_no: int, args: argparse.Namespace, broker: Broker) -> RunResult:
    """One run, read back afterwards."""
    client = entry.client or "ceiling"
    name = re.sub(r"[^A-Za-z0-9._-]", "-", client)  # Kafka's topic names: no brackets
    idem = "-idem" if entry.idempotent else ""
    topic = f"ceiling-W3{idem}-{name}-{round_no}-{uuid.uuid4().hex[:8]}"
    spec = WorkerSpec(
        entry.workload, client, broker.bootstrap_servers, topic, args.records, args.deadline
    )
    if entry.shape is None:
        result = run_one(spec, PARTITIONS, broker.pid)  # benchmarks/bench's W3 worker
    else:
        result = run_ceiling(spec, entry.shape, broker.pid)
    return verified(result, spec)


def describe(round_no: int, repeat: int, label: str, r: RunResult) -> str:
    text = (
        f"[{round_no}/{repeat}] {label:<38} {r.status:<6} {r.records_per_s:>12,.0f} rec/s  "
        f"client CPU {r.cpu_us_per_record:.3f} µs/rec  {r.elapsed_s:.2f} s timed, "
        f"{r.wall_s:.1f} s with start-up; read back {r.extra.get('read_back', 0):,} "
        f"{r.extra.get('partition_counts', '')}"
    )
    if "requests" in r.extra:
        text += (
            f"\n      {r.extra['requests']:,} Produce v{r.extra['produce_version']} requests, "
            f"{r.extra['request_mb']:.1f} MB, built in {r.extra['prebuild_s']:.2f} s"
        )
    requests, batches = r.client_metrics.get("request-total"), r.client_metrics.get("batch-total")
    if requests and batches:  # aiokafka_lite's own counts: the requests' shape
        text += f"\n      {requests:,.0f} Produce requests, {batches / requests:.2f} batches each"
    if r.errors:
        text += "\n      " + "\n      ".join(r.errors)
    return text


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
