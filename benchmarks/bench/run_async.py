"""The workloads on the async clients: aiokafka_lite, aiokafka and confluent-aio.

Each ``w*_async`` function runs one workload through :class:`~.clients.AsyncClient` and
returns the :class:`~.measure.Timer` of its measured part; :func:`async_runner` wraps
one in an event loop (asyncio's, or uvloop's with ``--uvloop``) inside the worker.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from typing import Any

from .clients import AsyncClient, open_async_client, uvloop_factory
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
    offsets_unique,
    set_latencies,
)
from .processes import unthrottle
from .workloads import (
    DISTINCT_KEYS,
    W2_CONCURRENCY,
    W4_RATE,
    WORKER_OVERHEAD_S,
    WorkerSpec,
    base_client,
    key_sequence,
    make_keys,
    make_value,
    topic_names,
    w5_keys,
    w6_keys,
    workload_keys,
)


def delivered_ok(futures: Sequence[asyncio.Future[Any]]) -> int:
    return sum(1 for f in futures if f.done() and not f.cancelled() and f.exception() is None)


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
    keys, topic, send = workload_keys(spec.wl, spec.records), spec.topic, client.send
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
    from aiokafka_lite._internal.partitioner import default_partition

    return {k: default_partition(k, n_partitions) for k in keys}


def batch_routes(client: str, keys: Sequence[bytes | None], n_partitions: int) -> list[int]:
    """W3's partition of every record: its key's, or -1 for keyless (sticky per batch)."""
    if all(k is None for k in keys):
        return [-1] * len(keys)
    partition_of = key_partitions(client, n_partitions)
    return [-1 if k is None else partition_of[k] for k in keys]


async def w3_batches(client: AsyncClient, spec: WorkerSpec, result: RunResult) -> Timer:
    """W3 with create_batch/append/send_batch: one open batch per partition.

    Each record goes into its key's partition's batch; when append() says the batch is
    full, that batch is sent and a new one started. Keyless records fill one partition's
    batch at a time and move to the next partition when it is full (sticky, per batch).
    The future of a batch resolves to the metadata of its first record; its records count
    as delivered with it.
    """
    producer, topic, n_parts = client.producer, spec.topic, spec.wl.partitions
    keys, value = workload_keys(spec.wl, spec.records), make_value(spec.wl.value_size)
    routes = batch_routes(base_client(spec.client), keys, n_parts)
    futures: list[asyncio.Future[Any]] = []
    counts: list[int] = []
    outcomes: list[Any] = []
    with Timer() as timer:
        try:
            async with asyncio.timeout(spec.deadline_s):
                create, send_batch = producer.create_batch, producer.send_batch
                batches = [create() for _ in range(n_parts)]
                sticky = 0  # keyless: the partition whose batch is being filled
                for key, part in zip(keys, routes, strict=True):
                    if part < 0:
                        part = sticky
                    batch = batches[part]
                    if batch.append(key=key, value=value, timestamp=None) is None:
                        counts.append(batch.record_count())
                        futures.append(await send_batch(batch, topic, partition=part))
                        batches[part] = create()  # (a sent batch must not be sent again)
                        if key is None:  # a full batch moves keyless records on
                            part = sticky = (sticky + 1) % n_parts
                        batch = batches[part]
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
    pairs = [(key, value) for key in workload_keys(spec.wl, spec.records)]
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
                        fut.add_done_callback(partial(on_done, start=start))
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
