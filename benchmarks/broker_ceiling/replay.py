"""The replay: one plain asyncio connection writes the pre-built requests and checks
every answer; run in a worker process of its own, timed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Sequence

from aiokafka_lite._internal import protocol as kp
from aiokafka_lite._internal.protocol.frames import response_body_offset as body_offset

from ..bench.measure import RESULT_PREFIX, RunResult, Timer, finish, new_result
from ..bench.workloads import PARTITIONS, WorkerSpec, key_sequence, make_value
from .prebuild import (
    INIT_PRODUCER_ID,
    NO_PRODUCER,
    Prebuilt,
    Producer,
    Shape,
    build_batches,
    build_requests,
    frame_of,
    partition_order,
)
from .settings import W3

API_VERSIONS_VERSION = 0  # every broker answers v0; all we need is the Produce range
INIT_ATTEMPTS = 20
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: a broker that
# has just started answers InitProducerId with these until its producer ids are ready.
RETRIABLE_INIT_ERRORS = frozenset({14, 15, 16})


# ---------------------------------------------------------------------------
# The wire: one plain asyncio connection


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    size = int.from_bytes(await reader.readexactly(4), "big", signed=True)
    if size < 4:
        raise RuntimeError(f"response frame size {size} is out of range")
    return await reader.readexactly(size)


async def call(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    request: kp.Request,
    version: int,
    correlation_id: int,
) -> kp.Response:
    """Send one request and decode its answer (the exchanges before the clock)."""
    writer.write(frame_of(request, version, correlation_id))
    await writer.drain()
    answer = await read_frame(reader)
    cls = type(request)
    got, body_at = body_offset(cls, version, answer)
    if got != correlation_id:
        raise RuntimeError(f"correlation id {got} answers request {correlation_id}")
    response, _ = kp.decode(cls.RESPONSE, version, answer, body_at)
    return response


def newest(ranges: dict[int, tuple[int, int]], cls: type[kp.Request]) -> int:
    """The newest version of ``cls`` both aiokafka_lite and the broker speak, as the
    producer's connection negotiates it."""
    lo, hi = ranges.get(cls.API_KEY, (0, -1))
    version = min(hi, cls.MAX_VERSION)
    if version < max(lo, cls.MIN_VERSION):
        raise RuntimeError(f"the broker speaks {cls.__name__} v{lo}-v{hi} only")
    return version


async def negotiate(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, topic: str, idempotent: bool
) -> tuple[int, Producer]:
    """The Produce version to use, the topic's leader checked and, for an idempotent
    replay, a producer id and epoch from InitProducerId (as an idempotent producer
    without a transactional id gets them)."""
    answer = await call(reader, writer, kp.ApiVersionsRequest(), API_VERSIONS_VERSION, 0)
    assert isinstance(answer, kp.ApiVersionsResponse)
    if answer.error_code:
        raise RuntimeError(f"ApiVersions failed with error code {answer.error_code}")
    ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    version = newest(ranges, kp.ProduceRequest)
    await check_leader(reader, writer, newest(ranges, kp.MetadataRequest), topic)
    if not idempotent:
        return version, NO_PRODUCER
    request = kp.InitProducerIdRequest()
    init_version = newest(ranges, kp.InitProducerIdRequest)
    for attempt in range(INIT_ATTEMPTS):  # a broker just up may still be loading
        got = await call(reader, writer, request, init_version, INIT_PRODUCER_ID)
        assert isinstance(got, kp.InitProducerIdResponse)
        if got.error_code not in RETRIABLE_INIT_ERRORS or attempt == INIT_ATTEMPTS - 1:
            break
        await asyncio.sleep(0.1 * (attempt + 1))
    if got.error_code or got.producer_id < 0:
        raise RuntimeError(f"InitProducerId failed with error code {got.error_code}")
    return version, Producer(got.producer_id, got.producer_epoch)


async def check_leader(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, version: int, name: str
) -> None:
    """Every partition of the topic must be led by the broker this connection reaches."""
    request = kp.MetadataRequest(
        topics=[kp.MetadataRequestTopic(name=name)], allow_auto_topic_creation=False
    )
    answer = await call(reader, writer, request, version, 1)
    assert isinstance(answer, kp.MetadataResponse)
    port = writer.get_extra_info("peername")[1]
    here = {b.node_id for b in answer.brokers if b.port == port}
    (topic,) = answer.topics
    leaders = {p.partition_index: p.leader_id for p in topic.partitions}
    if topic.error_code or sorted(leaders) != list(range(PARTITIONS)):
        raise RuntimeError(f"topic {name!r}: error {topic.error_code}, partitions {leaders}")
    if not set(leaders.values()) <= here:
        raise RuntimeError(f"partition leaders {leaders}; this connection reaches {here}")


# ---------------------------------------------------------------------------
# With the clock: the replay


def check_response(frame: bytes, sent: Prebuilt, version: int) -> None:
    """The answer to ``sent``: its correlation id, and error code 0 for each partition."""
    got, body_at = body_offset(kp.ProduceRequest, version, frame)
    if got != sent.correlation_id:
        raise RuntimeError(f"correlation id {got} answers request {sent.correlation_id}")
    response, _ = kp.decode(kp.ProduceResponse, version, frame, body_at)
    answered = set()
    for topic in response.responses:
        for part in topic.partition_responses:
            if part.error_code:
                raise RuntimeError(
                    f"{topic.name}[{part.index}]: error code {part.error_code} "
                    f"({part.error_message}) in the answer to request {got}"
                )
            answered.add(part.index)
    if answered != sent.partitions:
        raise RuntimeError(f"request {got} sent {sorted(sent.partitions)}, got {answered}")


async def replay(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    requests: Sequence[Prebuilt],
    in_flight: int,
    version: int,
) -> int:
    """Write the requests, at most ``in_flight`` unanswered; return the records acked."""
    sent = min(in_flight, len(requests))
    for request in requests[:sent]:
        writer.write(request.frame)
    await writer.drain()
    acked = 0
    for request in requests:
        frame = await read_frame(reader)
        if sent < len(requests):  # refill the window before looking at the answer
            writer.write(requests[sent].frame)
            sent += 1
            await writer.drain()  # returns at once unless the socket's buffer is full
        check_response(frame, request, version)
        acked += request.records
    return acked


async def run_replay(spec: WorkerSpec, shape: Shape) -> RunResult:
    result = new_result(spec)
    host, _, port = spec.bootstrap.rpartition(":")
    async with asyncio.timeout(spec.deadline_s):
        reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
    try:
        async with asyncio.timeout(spec.deadline_s):
            version, producer = await negotiate(reader, writer, spec.topic, shape.idempotent)
        started = time.perf_counter()
        keys = key_sequence(spec.records)
        values = [make_value(W3.value_size)] * spec.records  # one value, as W3's clients send
        timestamp = int(time.time() * 1000)
        batches = [
            build_batches(keys, values, order, timestamp, shape.batch_size, producer)
            for order in partition_order(keys, PARTITIONS)
        ]
        requests = build_requests(spec.topic, batches, version)
        del keys, values, batches
        result.extra.update(
            produce_version=version,
            batch_size=shape.batch_size,
            in_flight=shape.in_flight,
            idempotent=shape.idempotent,
            requests=len(requests),
            request_mb=sum(len(r.frame) for r in requests) / 1e6,
            prebuild_s=time.perf_counter() - started,
        )
        with Timer() as timer:
            async with asyncio.timeout(spec.deadline_s):
                result.delivered = await replay(reader, writer, requests, shape.in_flight, version)
    finally:
        writer.close()
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(5):
                await writer.wait_closed()
    return finish(result, elapsed=timer.elapsed, cpu=timer.cpu)


def replay_worker(spec_json: str) -> int:
    """The replay in a process of its own; prints one result line, as bench workers do."""
    data = json.loads(spec_json)
    spec = WorkerSpec(**data["spec"])
    try:
        result = asyncio.run(run_replay(spec, Shape(*data["shape"])))
    except Exception as exc:
        result = new_result(spec, status="FAILED")
        result.errors.append(f"{type(exc).__name__}: {exc}"[:500])
    print(RESULT_PREFIX + json.dumps(result.to_json()), flush=True)
    return 0
