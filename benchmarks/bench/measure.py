"""What a worker measures, and how: the result of one run and the instruments behind it.

Metrics: records/s and MB/s of values (10^6 bytes) from the first send to the last
delivery; client CPU µs/record (``time.process_time()``, so librdkafka's threads are
counted too); p50/p99/max latency where measured; peak RSS of the worker process; and the
count of successful deliveries, which must equal N or the run is FAILED. The broker runs
on the same machine and competes for the same cores.

:class:`RunResult` is what a worker reports (one ``BENCH-RESULT {json}`` line on its
stdout); :class:`Timer` takes wall and CPU time over the measured part, :class:`RssSampler`
W5's RSS over time, and :func:`memory_report` turns those samples into W5's figures.
"""

from __future__ import annotations

import contextlib
import importlib
import resource
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .workloads import VALUE_SIZE, W5_HEADROOM_MB, W5_SAMPLE_S, WorkerSpec, base_client

RESULT_PREFIX = "BENCH-RESULT "


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


def peak_rss_mb() -> float:
    """This process's peak RSS. On Linux, ``VmHWM`` of /proc/self/status: the peak of its
    own address space. (``ru_maxrss`` is no use there: it keeps the high-water mark across
    exec, so a worker would report at least its parent's RSS at the fork.)"""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
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


def offsets_unique(metadata: Sequence[Any]) -> bool:
    """No two delivered records share a (partition, offset); any client's metadata shape."""
    seen: set[tuple[Any, ...]] = set()
    for md in metadata:
        if hasattr(md, "offset") and callable(md.offset):  # confluent Message
            seen.add((md.partition(), md.offset()))
        else:
            seen.add((md.topic, md.partition, md.offset))
    return len(seen) == len(metadata)
