"""W1 on kafka-python's ``KafkaProducer`` (threads, blocking calls)."""

from __future__ import annotations

import importlib

from .measure import (
    RunResult,
    Timer,
    current_rss_mb,
    finish,
    new_result,
    note_error,
    offsets_unique,
)
from .workloads import WORKER_OVERHEAD_S, WorkerSpec, make_value, workload_keys


def w1_kafka_python(spec: WorkerSpec) -> RunResult:
    """W1 with kafka-python: send() per record, flush(), then check every future."""
    kafka = importlib.import_module("kafka")  # untyped package

    result = new_result(spec)
    batching = {} if spec.wl.batch_size is None else {"batch_size": spec.wl.batch_size}
    producer = kafka.KafkaProducer(
        bootstrap_servers=spec.bootstrap,
        linger_ms=spec.wl.linger_ms,
        acks="all",
        enable_idempotence=spec.wl.idempotence,
        **batching,
    )
    try:
        producer.partitions_for(spec.topic)
        keys = workload_keys(spec.wl, spec.records)
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
