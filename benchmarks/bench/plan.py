"""What one invocation runs, and the interleaved repeats that run it.

The machine is shared and noisy: single runs can be off by 10-20 %. Every row is the
median of ``--repeat`` runs (default 3; --quick 1), interleaved across clients: each
round runs every (workload, client) once, against one broker (``--broker``: the embedded
Tansu broker, or a 1-node Apache Kafka; W5: a fresh throttled broker of that kind per run).
``--pure`` adds ``aiokafka_lite+pure`` rows: the same client with
``AIOKAFKA_LITE_NO_EXTENSIONS=1`` (pure-Python twins, see ``aiokafka_lite.speedups``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

from .measure import RunResult
from .processes import create_many_topics, run_one
from .workloads import ASYNC_CLIENTS, PURE_SUFFIX, W4_RATE, WorkerSpec, Workload, base_client


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
    broker: str = "tansu"  # --broker: "tansu" (embedded) or "kafka" (1-node Apache Kafka)

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
    (``plan.broker``; W5: a fresh throttled broker of that kind per run)."""
    from .brokers import open_broker, throttled_broker

    runs: dict[tuple[str, str], list[RunResult]] = {}
    w6_prefix = f"bench-W6-{uuid.uuid4().hex[:8]}"
    w6_created = False
    with open_broker(plan.broker, log) as broker:
        log(f"{broker.description} at {broker.bootstrap_servers}")
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
                    with throttled_broker(plan.broker, workload.throttle, log) as throttled:
                        bootstrap, broker_pid, proxy_pid = throttled
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
