"""The workloads on confluent-kafka's sync ``Producer`` (librdkafka).

produce() with an on_delivery callback, poll() to serve the callbacks, flush() at the
end; a BufferError (librdkafka's queue is full) is answered by polling and trying again.
"""

from __future__ import annotations

import time
from typing import Any

from .clients import confluent_config
from .measure import (
    Counters,
    RssSampler,
    RunResult,
    Timer,
    current_rss_mb,
    finish,
    memory_report,
    new_result,
    note_error,
    set_latencies,
)
from .processes import unthrottle
from .workloads import (
    DISTINCT_KEYS,
    W4_RATE,
    WorkerSpec,
    key_sequence,
    make_value,
    topic_names,
    w5_keys,
    w6_keys,
    workload_keys,
)


def confluent_producer(spec: WorkerSpec) -> Any:
    from confluent_kafka import Producer

    producer = Producer(confluent_config(spec.bootstrap, spec.wl))
    producer.list_topics(spec.topic if spec.wl.topics == 1 else None, timeout=10)
    return producer


def w1_confluent(spec: WorkerSpec) -> RunResult:
    """W1 with confluent's sync Producer: produce + on_delivery, poll(0) as needed, flush."""

    result = new_result(spec)
    producer = confluent_producer(spec)
    keys, value = workload_keys(spec.wl, spec.records), make_value(spec.wl.value_size)
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
    undelivered_after_flush(result, remaining)
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
    undelivered_after_flush(result, remaining)
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
    undelivered_after_flush(result, remaining)
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


def undelivered_after_flush(result: RunResult, remaining: int) -> None:
    """flush() returned with ``remaining`` records still queued: the run failed."""
    if remaining:
        result.status = "FAILED"
        result.errors.append(f"flush timed out with {remaining} records undelivered")
