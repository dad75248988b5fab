"""Java's KafkaProducer in the benchmark: kafka-tools' ``ProducerPerformance``, measured
from outside its JVM.

The parent runs ``org.apache.kafka.tools.ProducerPerformance`` (Apache Kafka's own
producer benchmark, resolved by Maven as ``tests/kafka_cluster.py`` does) with the
workload's N, acks=all, linger, batch size and idempotence, at unthrottled speed
(``--throughput -1``). Its value is one ``value_size``-byte line read from a payload file,
the same value for every record as the Python clients send (``--record-size`` would make
it fill every record with fresh random letters, work the other clients do not do). It
sends no keys: ProducerPerformance cannot, so its records take Java's keyless path (the
built-in sticky partitioner, one partition per batch).

Figures, all for the whole JVM process (every thread: sender, JIT compilers, GC):

* records/s: ProducerPerformance's own total; its clock starts after the producer is
  built, just before the first send, and stops after ``close()``, so it includes the
  first Metadata request and JIT warm-up (the Python clients fetch metadata before their
  clock starts).
* CPU µs/record: the process's user + system CPU over that same window (sampled every
  10 ms from outside and interpolated at its start and end), as the Python workers count
  their own CPU over their timed part. The JIT's work during the run is in it; the JVM's
  start-up before it is not.
* ``whole_process_cpu_us``: the process's CPU from exec to exit (``RUSAGE_CHILDREN``),
  JVM start-up, class loading and shut-down included.
* ``warm_records_per_s`` / ``warm_cpu_us``: from its first 5-second report to the end,
  once the JIT has compiled the hot paths; absent when the run is shorter than 5 s.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import resource
import string
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from .measure import RunResult, new_result
from .workloads import WORKER_OVERHEAD_S, WorkerSpec

TESTS = Path(__file__).resolve().parents[2] / "tests"  # tests/kafka_cluster.py lives there
MAIN = "org.apache.kafka.tools.ProducerPerformance"
JAVA_HEAP = "512m"  # ProducerPerformance's JVM (its buffer.memory is 32 MiB)
JAVA_BATCH_SIZE = 16_384  # Java's default batch.size, as aiokafka_lite's and aiokafka's
SAMPLE_S = 0.01
REPORT_S = 5.0  # ProducerPerformance's reporting interval (fixed in the tool)

# "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency" and, on
# the final line only, ", P ms 50th, P ms 95th, P ms 99th, P ms 99.9th".
_LINE = re.compile(
    r"^(?P<count>\d+) records sent, (?P<rate>[\d.]+) records/sec \([\d.]+ MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency"
    r"(?:, (?P<p50>\d+) ms 50th, \d+ ms 95th, (?P<p99>\d+) ms 99th, \d+ ms 99\.9th)?\.$"
)


def kafka_cluster_module() -> ModuleType:
    """``tests/kafka_cluster.py`` (the pinned Apache Kafka, Java, its classpath)."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    return importlib.import_module("kafka_cluster")


def java_missing() -> str | None:
    """Why Java's producer cannot run here (no Java, no Maven), or None."""
    reason: str | None = kafka_cluster_module().missing_reason()
    return reason


def producer_props(spec: WorkerSpec) -> list[str]:
    """The workload's producer settings, as ProducerPerformance's ``--producer-props``."""
    wl = spec.wl
    props = {
        "bootstrap.servers": spec.bootstrap,
        "acks": "all",
        "linger.ms": f"{wl.linger_ms:g}",
        "batch.size": str(wl.batch_size or JAVA_BATCH_SIZE),
        "enable.idempotence": str(wl.idempotence).lower(),
    }
    if wl.buffer_memory is not None:
        props["buffer.memory"] = str(wl.buffer_memory)
    return [f"{k}={v}" for k, v in props.items()]


def command(spec: WorkerSpec, payload_file: Path) -> list[str]:
    kc = kafka_cluster_module()
    return [
        kc.java(),
        f"-Xms{JAVA_HEAP}",
        f"-Xmx{JAVA_HEAP}",
        "-cp",
        kc.kafka_classpath(),
        MAIN,
        *("--topic", spec.topic),
        *("--num-records", str(spec.records)),
        *("--payload-file", str(payload_file)),
        *("--throughput", "-1"),
        "--producer-props",
        *producer_props(spec),
    ]


def payload_line(size: int) -> str:
    """One random ASCII line of ``size`` bytes (the payload file is read as UTF-8 lines)."""
    letters = string.ascii_letters + string.digits
    return "".join(letters[b % len(letters)] for b in os.urandom(size))


class CpuSampler:
    """(seconds, CPU seconds, RSS MB) of one process every ``SAMPLE_S``, in a thread."""

    def __init__(self, pid: int) -> None:
        self.process: Any = importlib.import_module("psutil").Process(pid)
        self.samples: list[tuple[float, float]] = []
        self.peak_rss_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="java-cpu", daemon=True)

    def start(self) -> CpuSampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self.process.oneshot():
                    times = self.process.cpu_times()
                    rss = self.process.memory_info().rss / (1024 * 1024)
            except Exception:  # the process is gone
                return
            self.samples.append((time.perf_counter(), times.user + times.system))
            self.peak_rss_mb = max(self.peak_rss_mb, rss)
            self._stop.wait(SAMPLE_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def cpu_at(self, when: float) -> float | None:
        """The process's CPU seconds at ``when``, interpolated between samples."""
        s = self.samples
        if not s or when < s[0][0] - SAMPLE_S * 5:
            return None
        before = [p for p in s if p[0] <= when]
        after = [p for p in s if p[0] >= when]
        if not before:
            return s[0][1]
        if not after:
            return s[-1][1]
        (t0, c0), (t1, c1) = before[-1], after[0]
        return c0 if t1 == t0 else c0 + (c1 - c0) * (when - t0) / (t1 - t0)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_java(spec: WorkerSpec) -> RunResult:
    """Run ProducerPerformance for ``spec`` and turn its report and CPU into a result."""
    result = new_result(spec)
    result.extra["keyless"] = True
    with tempfile.TemporaryDirectory(prefix="bench-java-") as tmp:
        payload = Path(tmp, "payload.txt")
        payload.write_text(payload_line(spec.wl.value_size))
        stderr_path = Path(tmp, "stderr.txt")
        with stderr_path.open("w") as stderr:
            lines, whole_cpu, returncode, sampler = _run_process(spec, payload, stderr)
        stderr_text = stderr_path.read_text(errors="replace")
    _fill(result, spec, lines, sampler)
    result.extra["whole_process_cpu_us"] = whole_cpu / spec.records * 1e6
    result.peak_rss_mb = sampler.peak_rss_mb
    problems = [
        line
        for line in stderr_text.splitlines()
        if "Exception" in line or "ERROR" in line or line.startswith("Caused by")
    ]
    if returncode != 0 or problems or result.delivered != spec.records:
        result.status = "FAILED"
        result.errors.append(
            f"ProducerPerformance exited {returncode}, {result.delivered:,} of "
            f"{spec.records:,} records acknowledged"
        )
        result.errors.extend(problems[:3] or [stderr_text.strip()[-600:]])
    return result


def _run_process(
    spec: WorkerSpec, payload: Path, stderr: Any
) -> tuple[list[tuple[float, str]], float, int, CpuSampler]:
    """Start the JVM, time-stamp its stdout lines, sample its CPU; kill it at the deadline."""
    cpu_before = children_cpu_s()
    proc = subprocess.Popen(
        command(spec, payload), stdout=subprocess.PIPE, stderr=stderr, text=True
    )
    sampler = CpuSampler(proc.pid).start()
    killer = threading.Timer(spec.deadline_s + WORKER_OVERHEAD_S, proc.kill)
    killer.start()
    lines: list[tuple[float, str]] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.perf_counter(), line.strip()))
        returncode = proc.wait()
    finally:
        killer.cancel()
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        sampler.stop()
    return lines, children_cpu_s() - cpu_before, returncode, sampler


def _fill(
    result: RunResult, spec: WorkerSpec, lines: list[tuple[float, str]], sampler: CpuSampler
) -> None:
    """records/s, CPU over ProducerPerformance's own window, the warm figures, latency."""
    reports = [(t, m) for t, text in lines if (m := _LINE.match(text))]
    totals = [(t, m) for t, m in reports if m["p50"] is not None]
    if not totals:
        return
    t_end, total = totals[-1]
    count, rate = int(total["count"]), float(total["rate"])
    result.delivered = count
    result.elapsed_s = count / rate if rate > 0 else 0.0
    cpu_end, cpu_start = sampler.cpu_at(t_end), sampler.cpu_at(t_end - result.elapsed_s)
    if cpu_end is not None and cpu_start is not None:
        result.cpu_s = cpu_end - cpu_start
    result.extra["latency_avg_ms"] = float(total["avg"])
    result.extra["latency_p50_ms"] = float(total["p50"])
    result.extra["latency_p99_ms"] = float(total["p99"])
    windows = [(t, m) for t, m in reports if m["p50"] is None]
    if windows:
        t_first, first = windows[0]
        cpu_first = sampler.cpu_at(t_first)
        rest, span = count - int(first["count"]), t_end - t_first
        if rest > 0 and span > 0 and cpu_end is not None and cpu_first is not None:
            result.extra["warm_records_per_s"] = rest / span
            result.extra["warm_cpu_us"] = (cpu_end - cpu_first) / rest * 1e6
