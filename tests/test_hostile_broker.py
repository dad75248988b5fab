"""A hostile broker, seen by the whole producer: every future resolves, nothing is lost.

A scripted one-broker cluster (tests/scripted_cluster.py: its log is parsed by
kafka-python's reader and it de-duplicates idempotent batches as a broker does)
answers Produce requests with something hostile: a frame too large to be real, a
truncated one, garbage, the wrong correlation id, results for partitions never
sent, no answer at all, a closed socket, a second answer nobody asked for, bytes
trickling in one at a time. The broker has written the records each time (the
answer is what goes wrong), so a retry that is not recognised would show as a
duplicate.

``once``: the first two answers are hostile, then the broker behaves: every record
is delivered exactly once, in order (the shared log checks, tests/test_faults_checks.py).
``always``: every answer is hostile: every record fails with a named error within
delivery_timeout_ms, and the producer does not hammer the broker.
Both end with the shared invariants (tests/invariants.py).
"""

from __future__ import annotations

import asyncio
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest
from invariants import Watch, assert_bounded_attempts
from scripted_broker import CLOSE, HANG, ReceivedRequest, Trickle, answer
from scripted_cluster import PRODUCE, LogCluster
from test_faults_checks import MAYBE_WRITTEN, Outcome, check_errors, check_log, settle, value

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite._internal.protocol.produce import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from aiokafka_lite.errors import (
    DeliveryOutcomeUnknownError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotLeaderOrFollowerError,
    ProtocolError,
    UnsupportedVersionError,
)

RECORDS = 24
PARTITIONS = 4


def _unasked(req: ReceivedRequest) -> bytes:
    produce = req.decode()
    topics = [
        TopicProduceResponse(
            name=t.name,
            partition_responses=[
                PartitionProduceResponse(pd.index + 100, 0, 0) for pd in t.partition_data
            ],
        )
        for t in produce.topic_data
    ]
    return answer(req, ProduceResponse(responses=topics))


def _wrong_correlation(frame: bytes) -> bytes:
    (correlation,) = struct.unpack_from(">i", frame, 4)
    return frame[:4] + struct.pack(">i", correlation + 1) + frame[8:]


# kind -> (request, healthy answer: the records are written) -> hostile reply
HOSTILE: dict[str, Callable[[ReceivedRequest, bytes], Any]] = {
    "oversized-frame": lambda req, ok: struct.pack(">i", 2**31 - 1) + ok[4:],
    "huge-frame-never-sent": lambda req, ok: struct.pack(">i", 90 * 2**20) + ok[4:],
    "truncated-then-close": lambda req, ok: [ok[: len(ok) // 2], CLOSE],
    "truncated-then-silence": lambda req, ok: ok[: len(ok) // 2],
    "garbage": lambda req, ok: random.Random(len(ok)).randbytes(64),
    "wrong-correlation-id": lambda req, ok: _wrong_correlation(ok),
    "unasked-partitions": lambda req, ok: _unasked(req),
    "no-answer": lambda req, ok: HANG,
    "closed": lambda req, ok: CLOSE,
    "answered-twice": lambda req, ok: ok + ok,
    "trickled": lambda req, ok: Trickle(ok, chunk=1, pause=0.0005),
}
# Kinds whose answers still count even when always done: slow bytes, and a good
# answer followed by one nobody asked for (that only costs the connection).
HARMLESS_ALWAYS = {"trickled", "answered-twice"}


def hostile_produce(kind: str, times: int) -> Any:
    seen = 0

    def hook(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        nonlocal seen
        ok = healthy()
        assert ok is not None
        seen += 1
        return HOSTILE[kind](req, ok) if seen <= times else ok

    return hook


async def run(kind: str, times: int, **config: Any) -> tuple[LogCluster, Outcome, int]:
    cluster = LogCluster(topics={"t": PARTITIONS}, hooks={PRODUCE: hostile_produce(kind, times)})
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(bootstrap_servers=broker.address, linger_ms=2, **config)
        await producer.start()
        futures = []
        for i in range(RECORDS):
            futures.append(await producer.send("t", value(i), partition=i % PARTITIONS))
            if i % 6 == 5:
                await asyncio.sleep(0.01)  # several requests, not one
        outcome = await settle(futures, 15.0)
        await watch.stop_and_check(producer, futures, stop_timeout=2)
        connections = broker.connections
    return cluster, outcome, connections


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_hostile_answers_then_a_healthy_broker_deliver_everything_once(kind: str) -> None:
    cluster, outcome, connections = await run(
        kind, times=2, request_timeout_ms=700, delivery_timeout_ms=10_000
    )
    assert not outcome.pending
    check_errors(outcome, ())  # nothing may fail: the broker recovered in time
    check_log(cluster.records(), outcome)
    assert len(outcome.acked) == RECORDS
    assert_bounded_attempts(connections, 10)


@pytest.mark.parametrize("kind", sorted(set(HOSTILE) - HARMLESS_ALWAYS))
async def test_always_hostile_answers_fail_every_record_with_a_named_error(kind: str) -> None:
    cluster, outcome, connections = await run(
        kind, times=10**9, request_timeout_ms=400, delivery_timeout_ms=1500
    )
    assert not outcome.pending
    assert not outcome.acked
    check_errors(
        outcome,
        (KafkaTimeoutError, KafkaConnectionError, ProtocolError, DeliveryOutcomeUnknownError),
    )
    # What the broker wrote may be in its log, at most once, and only for records
    # whose error says their outcome is unknown (or that they timed out).
    for i in {int(r.value or b"-1") for r in cluster.records()}:
        assert isinstance(outcome.failed[i], MAYBE_WRITTEN), outcome.failed[i]
    check_log(cluster.records(), outcome)
    # Reconnects are paced by the retry backoff: ~1.5 s is a handful, not hundreds.
    assert_bounded_attempts(connections, 40)


OLD_BROKERS: dict[str, dict[int, tuple[int, int]]] = {
    # Kafka 0.11's ranges: the oldest broker with record batch v2 and idempotence.
    "kafka-0.11": {18: (0, 1), 3: (0, 4), 0: (0, 3), 22: (0, 0)},
    # A broker without InitProducerId: idempotence cannot work there.
    "no-init-producer-id": {18: (0, 1), 3: (0, 4), 0: (0, 3)},
}


@pytest.mark.parametrize("broker_kind", sorted(OLD_BROKERS))
async def test_an_old_broker_works_or_fails_every_record_by_name(broker_kind: str) -> None:
    cluster = LogCluster(topics={"t": PARTITIONS})
    watch = Watch.begin()
    async with cluster.running(api_versions=OLD_BROKERS[broker_kind]) as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address, request_timeout_ms=1000, delivery_timeout_ms=3000
        )
        await producer.start()
        futures, refused = [], []
        for i in range(8):
            try:
                futures.append(await producer.send("t", value(i), partition=i % 2))
            except KafkaError as e:  # the producer failed for good: later sends say why
                refused.append(e)
            await asyncio.sleep(0.01)
        outcome = await settle(futures, 10.0)
        await watch.stop_and_check(producer, futures, stop_timeout=2)
    assert not outcome.pending
    if broker_kind == "kafka-0.11":
        assert not refused
        check_errors(outcome, ())
        check_log(cluster.records(), outcome)
        assert {r.api_version for r in broker.requests_for(PRODUCE)} == {3}
    else:
        assert len(outcome.failed) + len(refused) == 8
        for error in [*outcome.failed.values(), *refused]:
            assert isinstance(error, UnsupportedVersionError), repr(error)
            assert "InitProducerId" in str(error), repr(error)
        assert not cluster.records()


async def test_a_record_written_without_a_usable_answer_says_its_outcome_is_unknown() -> None:
    """The broker writes the batch and answers garbage; with no retries left the
    record must not fail with an error that reads as "not written"."""
    cluster = LogCluster(topics={"t": 1}, hooks={PRODUCE: hostile_produce("garbage", 10**9)})
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address, enable_idempotence=False, retries=0
        )
        await producer.start()
        futures = [await producer.send("t", value(0))]
        outcome = await settle(futures, 10.0)
        await watch.stop_and_check(producer, futures, stop_timeout=2)
    assert [r.value for r in cluster.records()] == [value(0)]  # it was written
    (error,) = outcome.failed.values()
    assert isinstance(error, DeliveryOutcomeUnknownError), repr(error)
    assert "retries" in str(error) and isinstance(error.__cause__, ProtocolError)
    check_log(cluster.records(), outcome)


# NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND, and
# KAFKA_STORAGE_ERROR (Kafka's DelayedProduce answers it when the partition's log
# directory went offline while the appended batch waited for its replicas)
@pytest.mark.parametrize("code", [6, 7, 20, 56])
async def test_a_batch_appended_before_an_error_is_not_re_sent_under_a_new_epoch(
    code: int,
) -> None:
    """With acks=all a leader appends a batch, then waits for its in-sync replicas, and
    may answer an error after all: it lost the leadership, or the replicas fell below
    min.insync.replicas or did not catch up in time. Here partition 0's batch is
    appended and answered ``code``, and partition 1's is refused (not written) with
    OUT_OF_ORDER_SEQUENCE_NUMBER, which makes the producer start a new epoch while
    partition 0's batch waits for its retry. Re-sent under the new epoch it would be
    written twice (the broker cannot recognise it), so it fails as outcome unknown;
    partition 1's record is renumbered and delivered. A scripted broker: a real one
    cannot be made to give these two answers in one request."""
    first = True

    def produce(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        nonlocal first
        if not first:
            return healthy()
        first = False
        topics = []
        for t in req.decode().topic_data:
            results = []
            for pd in t.partition_data:
                if pd.index == 0:
                    cluster.append(t.name, pd)  # written, then the error
                    results.append(PartitionProduceResponse(pd.index, error_code=code))
                else:
                    results.append(PartitionProduceResponse(pd.index, error_code=45))
            topics.append(TopicProduceResponse(name=t.name, partition_responses=results))
        return answer(req, ProduceResponse(responses=topics))

    cluster = LogCluster(topics={"t": 2}, hooks={PRODUCE: produce})
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address, linger_ms=50, retry_backoff_ms=500
        )
        await producer.start()
        futures = [await producer.send("t", value(i), partition=i) for i in (0, 1)]
        outcome = await settle(futures, 10.0)
        await watch.stop_and_check(producer, futures, stop_timeout=2)
    assert sorted(r.value for r in cluster.records()) == [value(0), value(1)]  # each once
    assert sorted(outcome.acked) == [1]
    (error,) = outcome.failed.values()
    assert isinstance(error, DeliveryOutcomeUnknownError), repr(error)
    assert "new epoch" in str(error) and "t[0]" in str(error), str(error)
    check_log(cluster.records(), outcome)


async def test_not_leader_with_acks_1_is_not_an_unknown_outcome() -> None:
    """With acks=1 a leader answers at once: NOT_LEADER_OR_FOLLOWER then comes only from
    its check before the append (Kafka's Partition.appendRecordsToLeader), so the record
    was not written and, its retries used up, fails with that error, not as an outcome
    unknown. A scripted broker: a real one cannot be made to keep answering it."""

    def produce(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        topics = [
            TopicProduceResponse(
                name=t.name,
                partition_responses=[
                    PartitionProduceResponse(pd.index, error_code=6) for pd in t.partition_data
                ],
            )
            for t in req.decode().topic_data
        ]
        return answer(req, ProduceResponse(responses=topics))

    cluster = LogCluster(topics={"t": 1}, hooks={PRODUCE: produce})
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address,
            acks=1,
            enable_idempotence=False,
            retries=1,
            retry_backoff_ms=10,
        )
        await producer.start()
        futures = [await producer.send("t", value(0), partition=0)]
        outcome = await settle(futures, 10.0)
        await watch.stop_and_check(producer, futures, stop_timeout=2)
    assert not cluster.records()
    (error,) = outcome.failed.values()
    assert isinstance(error, NotLeaderOrFollowerError), repr(error)
