"""The worker side: one (workload, client) run in a process of its own.

:data:`RUNNERS` names the function that runs each workload (by its ``kind``) on each
client; :func:`worker_main` runs the one its spec names and prints its result line.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable

from .measure import RESULT_PREFIX, RunResult, new_result, note_error
from .run_async import (
    async_runner,
    w1_async,
    w2_async,
    w3_batches,
    w3_send_many,
    w4_async,
    w5_async,
    w6_async,
)
from .run_confluent import w1_confluent, w4_confluent, w5_confluent, w6_confluent
from .run_kafka_python import w1_kafka_python
from .workloads import ASYNC_CLIENTS, WorkerSpec, base_client, runner_label

AIOKAFKA_IDEMPOTENCE_HINT = (
    "aiokafka's idempotent producer sends InitProducerId v0; Tansu answers UnknownError"
)


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


def known_cause(spec: WorkerSpec, exc: BaseException) -> str | None:
    """Why a run failed, when it is a known limitation of a client against Tansu."""
    if spec.client == "aiokafka" and spec.wl.idempotence and "UnknownError" in repr(exc):
        return AIOKAFKA_IDEMPOTENCE_HINT
    return None


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
