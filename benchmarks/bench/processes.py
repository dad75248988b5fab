"""Process isolation: each run in a fresh interpreter, against brokers started here.

Every (workload, client) run is a fresh ``python -m benchmarks.bench --worker SPEC``
subprocess with a fresh topic, so no client's imports, threads, memory or garbage affect
another's figures. The parent reads the worker's result line, and the broker's CPU time
over the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from .measure import RESULT_PREFIX, RunResult, new_result
from .workloads import (
    JAVA,
    PURE_SUFFIX,
    W6_CREATE_CHUNK,
    WORKER_OVERHEAD_S,
    WorkerSpec,
    base_client,
)

BENCHMARKS = Path(__file__).resolve().parent.parent  # benchmarks/


def unthrottle(proxy_pid: int | None) -> None:
    """Tell W5's proxy that the window is over: let the remaining bytes through at once."""
    if proxy_pid is not None and hasattr(signal, "SIGUSR1"):
        with contextlib.suppress(OSError):
            os.kill(proxy_pid, signal.SIGUSR1)


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


def worker_env(pure: bool = False) -> dict[str, str]:
    """The environment of a worker process (``pure``: the pure-Python twins forced)."""
    env = dict(os.environ)
    # The worker imports this package as the parent did (same working directory and
    # PYTHONPATH); the repository root comes last, so that it is found from anywhere.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (env.get("PYTHONPATH", ""), str(BENCHMARKS.parent)) if p
    )
    if pure:
        env["AIOKAFKA_LITE_NO_EXTENSIONS"] = "1"
    return env


def run_process(
    spec: WorkerSpec,
    command: list[str],
    env: dict[str, str],
    broker_pid: int | None,
    name: str = "worker",
) -> RunResult:
    """Run ``command`` (a worker for ``spec``) and collect its result line, with the
    wall time and the broker's CPU time over it; a hung worker fails only this run."""
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
        result.errors.append(f"{name} killed after {exc.timeout:g} s (hung?)")
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


def run_worker(spec: WorkerSpec, broker_pid: int | None) -> RunResult:
    """Run one (workload, client) in a fresh interpreter and collect its result line."""
    package = __name__.rpartition(".")[0]  # benchmarks.bench, as -m runs it
    command = [sys.executable, "-m", package, "--worker", json.dumps(asdict(spec))]
    env = worker_env(pure=spec.client.endswith(PURE_SUFFIX))
    return run_process(spec, command, env, broker_pid)


def create_own_topic(spec: WorkerSpec, partitions: int) -> RunResult | None:
    """Create the run's own topic; None, or the run's FAILED result if that failed."""
    try:
        create_topic(spec.bootstrap, spec.topic, partitions)
    except Exception as exc:
        result = new_result(spec, status="FAILED")
        result.errors.append(f"create_topics failed: {type(exc).__name__}: {exc}")
        return result
    return None


def run_java_client(spec: WorkerSpec, broker_pid: int | None) -> RunResult:
    """Run Java's producer (ProducerPerformance, a JVM of its own) for ``spec``."""
    from .run_java import run_java

    cpu_before = broker_cpu_s(broker_pid)
    started = time.perf_counter()
    result = run_java(spec)
    result.wall_s = time.perf_counter() - started
    cpu_after = broker_cpu_s(broker_pid)
    if cpu_before is not None and cpu_after is not None:
        result.broker_cpu_s = cpu_after - cpu_before
    return result


def run_one(spec: WorkerSpec, partitions: int, broker_pid: int | None) -> RunResult:
    """Create the run's own topic, then run the worker; a failed create fails only this run."""
    if spec.wl.topics == 1:
        failed = create_own_topic(spec, partitions)
        if failed is not None:
            return failed
    if base_client(spec.client) == JAVA:
        return run_java_client(spec, broker_pid)
    return run_worker(spec, broker_pid)
