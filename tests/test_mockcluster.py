"""Our producer against a 3-broker cluster: librdkafka's mock cluster (see ``mockcluster.py``).

The cluster is a real Kafka-protocol implementation (librdkafka's), driven from here to
move leaders, inject broker errors and take brokers down. What the producer wrote is
read back with an independent client (confluent-kafka's Consumer, partitions assigned
from the beginning and read up to their high watermarks, so duplicates would show).

Mock-cluster facts that shape these tests (librdkafka 2.16):

* injected Produce errors are answered without appending, so a retry cannot duplicate;
* the mock checks producer id / sequence numbers only for TRANSACTIONAL Produce
  requests, so against it the idempotent producer gets no broker-side protection from
  duplicates or reordering: exactly-once and per-partition order below are the
  producer's own doing;
* for the same reason, if one request of a partition failed while a later one of the
  same partition (pipelined, idempotent producer) succeeded, the mock would write them
  out of order where Kafka answers the later one OUT_OF_ORDER_SEQUENCE_NUMBER; the
  error tests inject errors while each partition has a single batch, so order is fair
  to check;
* a Produce response carries ``log_append_time_ms = 1234`` (a placeholder), so
  RecordMetadata timestamps are not checked here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from mockcluster import (
    API_PRODUCE,
    ERR_MESSAGE_TOO_LARGE,
    ERR_NETWORK_EXCEPTION,
    ERR_NOT_ENOUGH_REPLICAS,
    ERR_NOT_LEADER_OR_FOLLOWER,
    ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
    ERR_REQUEST_TIMED_OUT,
    ERR_TOPIC_AUTHORIZATION_FAILED,
    ERR_TRANSPORT,
    ERR_UNKNOWN_PRODUCER_ID,
    MockCluster,
)
from test_faults_checks import Outcome, check_fault_outcome, check_log, settle, stop_in_time, value
from txnlog import read_log_async

from aiokafka_lite import AIOKafkaProducer, RecordMetadata
from aiokafka_lite.errors import (
    DeliveryFailedError,
    DeliveryOutcomeUnknownError,
    MessageTooLargeError,
    TopicAuthorizationFailedError,
)

BROKERS = 3
PARTITIONS = 6
STOP_WITHIN = 10.0  # seconds producer.stop() may take in every test


@dataclass
class Env:
    cluster: MockCluster
    topic: str

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    def leaders(self) -> dict[int, int]:
        """Partition -> leader broker id, as Metadata reports it (read by librdkafka)."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 3})
        md = admin.list_topics(self.topic, timeout=10).topics[self.topic]
        return {p: pm.leader for p, pm in md.partitions.items()}


@pytest.fixture
def env(caplog: pytest.LogCaptureFixture) -> Iterator[Env]:
    # On failure pytest shows the producer's DEBUG log.
    caplog.set_level(logging.DEBUG, logger="aiokafka_lite")
    with MockCluster(brokers=BROKERS) as cluster:
        topic = f"mc-{uuid.uuid4().hex[:12]}"
        cluster.create_topic(topic, PARTITIONS, replication_factor=BROKERS)
        # Deterministic leaders (the mock picks random ones among the replicas).
        for p in range(PARTITIONS):
            cluster.set_leader(topic, p, p % BROKERS + 1)
        yield Env(cluster, topic)


# -- reading back -----------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def read_everything(bootstrap: str, topic: str, timeout: float = 20.0) -> list[Read]:
    """Every record of every partition, up to the high watermarks (blocking)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex}",  # required, unused (manual assign)
            "enable.auto.commit": False,
            "check.crcs": True,
            "log_level": 3,
        }
    )
    try:
        md = consumer.list_topics(topic, timeout=10).topics[topic]
        ends = {}
        for p in md.partitions:
            _, high = consumer.get_watermark_offsets(
                CkTopicPartition(topic, p), timeout=10, cached=False
            )
            ends[p] = high
        todo = {p for p, high in ends.items() if high > 0}
        consumer.assign([CkTopicPartition(topic, p, 0) for p in sorted(todo)])
        records: list[Read] = []
        deadline = time.monotonic() + timeout
        while todo and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise RuntimeError(f"consumer error: {err}")
                p, off = msg.partition(), msg.offset()
                assert p is not None and off is not None
                records.append(Read(p, off, msg.key(), msg.value()))
                if off + 1 >= ends[p]:
                    todo.discard(p)
        if todo:
            raise RuntimeError(f"partitions {sorted(todo)} not read to their end in {timeout}s")
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


async def read_back(env: Env) -> list[Read]:
    return await asyncio.to_thread(read_everything, env.bootstrap, env.topic)


def record(i: int) -> tuple[bytes, bytes]:
    """The i-th record: a key (so it hashes to a fixed partition) and its index as value."""
    return f"key-{i % 97}".encode(), str(i).encode()


async def verify(
    env: Env,
    producer: AIOKafkaProducer[bytes, bytes],
    futures: list[asyncio.Future[RecordMetadata]],
    *,
    allowed_errors: tuple[type[BaseException], ...] = (),
    within: float = 15.0,
    keyed: bool = True,
) -> Outcome:
    """The checks every fault test makes (tests/test_faults_checks.py), read back here."""

    async def read(_: Outcome) -> list[Read]:
        return await read_back(env)

    return await check_fault_outcome(
        producer,
        futures,
        read,
        allowed_errors=allowed_errors,
        within=within,
        stop_timeout=STOP_WITHIN,
        key=(lambda i: record(i)[0]) if keyed else None,
    )


def make_producer(env: Env, **overrides: Any) -> AIOKafkaProducer[bytes, bytes]:
    config: dict[str, Any] = {
        "bootstrap_servers": env.bootstrap,
        "linger_ms": 5,
        "request_timeout_ms": 5000,
        "retry_backoff_ms": 20,
    }
    config.update(overrides)
    return AIOKafkaProducer(**config)


@contextlib.asynccontextmanager
async def started(env: Env, **overrides: Any) -> AsyncIterator[AIOKafkaProducer[bytes, bytes]]:
    """A started producer; stopped on the way out (a no-op once the checks stopped it)."""
    producer = make_producer(env, **overrides)
    await producer.start()
    try:
        yield producer
    finally:
        await producer.stop(STOP_WITHIN)


# -- the harness itself, with librdkafka's own producer --------------------------------


def test_mock_cluster_with_librdkafka_clients(env: Env) -> None:
    """The cluster works for an independent client: leaders move, errors are retried."""
    assert len(env.bootstrap.split(",")) == BROKERS
    assert env.leaders() == {p: p % BROKERS + 1 for p in range(PARTITIONS)}
    env.cluster.push_errors(API_PRODUCE, [ERR_NOT_LEADER_OR_FOLLOWER, ERR_REQUEST_TIMED_OUT])
    producer = Producer(
        {"bootstrap.servers": env.bootstrap, "linger.ms": 5, "log_level": 3, "retry.backoff.ms": 10}
    )
    for i in range(200):
        if i == 100:
            producer.flush(10)
            for p in range(PARTITIONS):
                env.cluster.set_leader(env.topic, p, (p + 1) % BROKERS + 1)
        key, value = record(i)
        producer.produce(env.topic, value, key)
    assert producer.flush(15) == 0
    assert env.leaders() == {p: (p + 1) % BROKERS + 1 for p in range(PARTITIONS)}
    log = read_everything(env.bootstrap, env.topic)
    assert sorted(int(r.value) for r in log if r.value is not None) == list(range(200))


# -- our producer -------------------------------------------------------------------------

IDEMPOTENCE = pytest.mark.parametrize(
    "idempotent", [True, False], ids=["idempotent", "not-idempotent"]
)


async def test_round_trip_3000_keyed_records(env: Env) -> None:
    async with started(env) as producer:
        futures = [await producer.send(env.topic, v, key=k) for k, v in map(record, range(3000))]
        outcome = await verify(env, producer, futures)
    assert {md.partition for md in outcome.acked.values()} == set(range(PARTITIONS))


@IDEMPOTENCE
async def test_leaders_move_mid_stream(env: Env, idempotent: bool) -> None:
    n = 3000
    before = env.leaders()
    after = {p: leader % BROKERS + 1 for p, leader in before.items()}
    acked = 0
    half_acked = asyncio.Event()

    def count(fut: asyncio.Future[RecordMetadata]) -> None:
        nonlocal acked
        if not fut.cancelled() and fut.exception() is None:
            acked += 1
            if acked >= n // 2:
                half_acked.set()

    async def move_leaders() -> None:
        await half_acked.wait()
        for p, leader in after.items():
            env.cluster.set_leader(env.topic, p, leader)

    mover = asyncio.create_task(move_leaders())
    futures: list[asyncio.Future[RecordMetadata]] = []
    sent_after_move = 0
    try:
        async with started(env, enable_idempotence=idempotent) as producer:
            for i in range(n):
                key, value_ = record(i)
                fut = await producer.send(env.topic, value_, key=key)
                fut.add_done_callback(count)
                futures.append(fut)
                sent_after_move += mover.done()
                if i % 50 == 49:
                    await asyncio.sleep(0.002)  # a stream, not one burst: acks come meanwhile
            await settle(futures, 15.0)
            retried = producer.metrics()["record-retry-total"]
            await verify(env, producer, futures)
    finally:
        mover.cancel()
    assert sent_after_move > 0, "the leaders moved only after everything was sent"
    assert env.leaders() == after
    # The first request to each old leader after the move is answered
    # NOT_LEADER_OR_FOLLOWER (with the new leader as a KIP-951 hint): retried.
    assert retried > 0, "no record was retried: the producer never met a moved leader"


@IDEMPOTENCE
async def test_retriable_produce_errors_deliver_exactly_once(env: Env, idempotent: bool) -> None:
    # Answered without writing anything: a retry must not duplicate.
    injected = [ERR_NOT_LEADER_OR_FOLLOWER] * 3 + [
        ERR_REQUEST_TIMED_OUT,
        ERR_NOT_ENOUGH_REPLICAS,
        ERR_NETWORK_EXCEPTION,
        ERR_NETWORK_EXCEPTION,
    ]
    env.cluster.push_errors(API_PRODUCE, injected)
    async with started(env, enable_idempotence=idempotent) as producer:
        futures = [await producer.send(env.topic, v, key=k) for k, v in map(record, range(1000))]
        await settle(futures, 15.0)
        retried = producer.metrics()["record-retry-total"]
        await verify(env, producer, futures)
    assert retried > 0, "no record was retried: the injected errors were not seen"


@IDEMPOTENCE
@pytest.mark.parametrize(
    ("code", "error"),
    [
        (ERR_TOPIC_AUTHORIZATION_FAILED, TopicAuthorizationFailedError),
        (ERR_MESSAGE_TOO_LARGE, MessageTooLargeError),
    ],
    ids=["TOPIC_AUTHORIZATION_FAILED", "MESSAGE_TOO_LARGE"],
)
async def test_non_retriable_error_fails_only_the_affected_records(
    env: Env, idempotent: bool, code: int, error: type[Exception]
) -> None:
    # Idempotent: a batch that fails for good makes the producer bump its epoch
    # (KIP-360: the same producer id, the next epoch, taken locally as Java does).
    async with started(env, enable_idempotence=idempotent) as producer:
        # One batch for partition 0, refused for good.
        env.cluster.push_errors(API_PRODUCE, [code])
        futures = [await producer.send(env.topic, value(i), partition=0) for i in range(20)]
        first = await settle(futures, 15.0)
        # Later records, to every partition, go through.
        for i in range(20, 320):
            futures.append(await producer.send(env.topic, value(i), partition=i % PARTITIONS))
        outcome = await verify(env, producer, futures, allowed_errors=(error,), keyed=False)
    assert sorted(first.failed) == list(range(20)), "every record of the refused batch fails"
    assert sorted(outcome.failed) == list(range(20)), "only the refused batch fails"
    for exc in outcome.failed.values():
        assert error.name in str(exc), repr(exc)  # type: ignore[attr-defined]
        assert env.topic in str(exc), repr(exc)
    for i in range(20, 320):
        assert outcome.acked[i].partition == i % PARTITIONS


async def test_leader_down_for_a_second(env: Env) -> None:
    leaders = env.leaders()
    victim = leaders[0]
    futures: list[asyncio.Future[RecordMetadata]] = []
    try:
        async with started(env) as producer:
            # Connections to every broker are up before the outage.
            futures += [
                await producer.send(env.topic, v, key=k) for k, v in map(record, range(300))
            ]
            await asyncio.gather(*futures)
            env.cluster.broker_down(victim)
            t_down, cpu_down = time.monotonic(), time.thread_time()
            for i in range(300, 1200):
                key, value_ = record(i)
                futures.append(await producer.send(env.topic, value_, key=key))
                if i % 100 == 99:
                    await asyncio.sleep(0.05)
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - t_down)))
            # CPU the event loop's thread used while the broker was down (the brokers run
            # on librdkafka's threads): waiting for a broker must not be a busy loop.
            cpu_while_down = time.thread_time() - cpu_down
            failed_while_down = [
                i
                for i in range(300, 1200)
                if futures[i].done() and futures[i].exception() is not None
            ]
            env.cluster.broker_up(victim)
            # Reconnecting takes a reconnect backoff (at most 1 s by default) and a
            # metadata refresh; 10 s is plenty.
            outcome = await verify(env, producer, futures, within=10)
    finally:
        env.cluster.broker_up(victim)
    assert not failed_while_down, f"records failed while the broker was down: {failed_while_down}"
    on_victim = [
        i for i, md in outcome.acked.items() if i >= 300 and leaders[md.partition] == victim
    ]
    assert on_victim, "no record was sent to a partition of the broker that went down"
    assert cpu_while_down < 0.5, (
        f"the event loop used {cpu_while_down:.2f} s of CPU in the 1 s the broker was down"
    )


async def test_send_many_reports_a_refused_batch_and_delivers_the_rest(env: Env) -> None:
    async with started(env) as producer:
        await producer.partitions_for(env.topic)
        # The first Produce request (partition 0's batch) is refused for good.
        env.cluster.push_errors(API_PRODUCE, [ERR_TOPIC_AUTHORIZATION_FAILED])
        first = await producer.send_many(
            env.topic, [(None, value(i)) for i in range(20)], partition=0
        )
        with pytest.raises(DeliveryFailedError) as info:
            await asyncio.wait_for(first, 15)
        pairs = [record(i) for i in range(20, 2020)]
        report = await asyncio.wait_for(await producer.send_many(env.topic, pairs), 15)
        await stop_in_time(producer, STOP_WITHIN)
    assert sorted(info.value.errors) == list(range(20))
    assert all("TOPIC_AUTHORIZATION_FAILED" in str(e) for e in info.value.errors.values())
    outcome = Outcome({i + 20: md for i, md in enumerate(report)}, {}, [])
    check_log(await read_back(env), outcome, key=lambda i: record(i)[0])


# -- producer epochs without transactions (KIP-360) -------------------------------------
#
# The mock checks sequence numbers only for transactional producers, so it never
# sends UNKNOWN_PRODUCER_ID or OUT_OF_ORDER_SEQUENCE_NUMBER to an idempotent one on
# its own: the errors are injected (answered without writing, as Kafka does). What
# the producer does about them is real: it bumps its epoch itself (the same producer
# id, the next epoch, as Java's producer does) and numbers from 0 again.


async def warm_up(producer: AIOKafkaProducer[bytes, bytes], env: Env) -> tuple[int, int]:
    """One acked record per partition (ids, connections, sequences); (producer id, epoch)."""
    await asyncio.gather(
        *[await producer.send(env.topic, b"-1", partition=p) for p in range(PARTITIONS)]
    )
    return id_and_epoch(producer)


def id_and_epoch(producer: AIOKafkaProducer[bytes, bytes]) -> tuple[int, int]:
    idem = producer._sender._idem
    assert idem is not None and idem.producer_id >= 0
    return idem.producer_id, idem.epoch


async def read_producer_ids(env: Env) -> dict[int, set[tuple[int, int]]]:
    """Partition -> (producer id, epoch) of the batches in its log (aiokafka's parser)."""
    batches = await read_log_async(env.bootstrap, env.topic, PARTITIONS)
    ids: dict[int, set[tuple[int, int]]] = {}
    for b in batches:
        ids.setdefault(b.partition, set()).add((b.producer_id, b.producer_epoch))
    return ids


def ignoring_warm_up(log: list[Read]) -> list[Read]:
    return [r for r in log if r.value != b"-1"]


async def verify_after_warm_up(
    env: Env,
    producer: AIOKafkaProducer[bytes, bytes],
    futures: list[asyncio.Future[RecordMetadata]],
    **kwargs: Any,
) -> Outcome:
    async def read(_: Outcome) -> list[Read]:
        return ignoring_warm_up(await read_back(env))

    return await check_fault_outcome(producer, futures, read, stop_timeout=STOP_WITHIN, **kwargs)


@pytest.mark.parametrize(
    "code",
    [ERR_UNKNOWN_PRODUCER_ID, ERR_OUT_OF_ORDER_SEQUENCE_NUMBER],
    ids=["UNKNOWN_PRODUCER_ID", "OUT_OF_ORDER_SEQUENCE_NUMBER"],
)
async def test_lost_producer_state_starts_a_new_epoch(env: Env, code: int) -> None:
    """UNKNOWN_PRODUCER_ID, or a sequence gap with nothing before it pending (the
    unexplained-gap branch): new epoch, queued batches renumbered, all delivered."""
    async with started(env) as producer:
        old = await warm_up(producer, env)
        env.cluster.push_errors(API_PRODUCE, [code, code])
        futures = [await producer.send(env.topic, v, key=k) for k, v in map(record, range(600))]
        await settle(futures, 15.0)
        new = id_and_epoch(producer)
        retried = producer.metrics()["record-retry-total"]
        await verify_after_warm_up(env, producer, futures, key=lambda i: record(i)[0])
    assert retried > 0, "the injected errors were not seen"
    # KIP-360 as Java's idempotent producer: the same id, a later epoch (one bump per
    # error seen with nothing in flight: one or two here).
    assert new[0] == old[0] and old[1] < new[1] <= old[1] + 2, (old, new)
    # The refused batches went again under the new epoch.
    ids = await read_producer_ids(env)
    assert any(new in s for s in ids.values()), ids
    assert {pid for pid, _ in set().union(*ids.values())} == {old[0]}, ids


async def test_out_of_order_behind_a_retried_batch_waits_for_it(env: Env) -> None:
    """OUT_OF_ORDER_SEQUENCE_NUMBER for a batch whose predecessor is being retried:
    no new epoch, it simply goes again after that batch; order is kept."""
    async with started(
        env, batch_size=256, linger_ms=2, max_in_flight_requests_per_connection=2
    ) as producer:
        old = await warm_up(producer, env)
        # Slow answers from partition 0's leader, so two requests are in flight at once:
        # the first is refused (retriable), the one behind it is out of order.
        env.cluster.set_rtt(1, 100)
        env.cluster.push_errors(
            API_PRODUCE, [ERR_NOT_ENOUGH_REPLICAS, ERR_OUT_OF_ORDER_SEQUENCE_NUMBER]
        )
        futures = [await producer.send(env.topic, value(i), partition=0) for i in range(200)]
        await settle(futures, 15.0)
        same = id_and_epoch(producer)
        retried = producer.metrics()["record-retry-total"]
        env.cluster.set_rtt(1, 0)
        await verify_after_warm_up(env, producer, futures)
    assert retried > 0, "the injected errors were not seen"
    assert same == old, "an explained out-of-order answer must not start a new epoch"


async def test_unanswered_batch_fails_as_outcome_unknown_under_a_new_epoch(env: Env) -> None:
    """A batch whose request got no answer (connection dropped) cannot be re-sent
    under a new epoch: it fails with DeliveryOutcomeUnknownError; the rest goes on."""
    # A long retry backoff: the dropped batch is still waiting when the epoch changes.
    async with started(env, retry_backoff_ms=1000) as producer:
        old = await warm_up(producer, env)
        leaders = env.leaders()
        p0, p1 = 0, next(p for p in range(PARTITIONS) if leaders[p] != leaders[0])
        # The next two Produce requests (to two brokers): one connection is dropped
        # without an answer, the other answered UNKNOWN_PRODUCER_ID.
        env.cluster.push_errors(API_PRODUCE, [ERR_TRANSPORT, ERR_UNKNOWN_PRODUCER_ID])
        futures = [
            await producer.send(env.topic, value(0), partition=p0),
            await producer.send(env.topic, value(1), partition=p1),
        ]
        await settle(futures, 15.0)
        for i in range(2, 200):
            futures.append(await producer.send(env.topic, value(i), partition=i % PARTITIONS))
        outcome = await verify_after_warm_up(
            env, producer, futures, allowed_errors=(DeliveryOutcomeUnknownError,)
        )
        new = id_and_epoch(producer)
    assert len(outcome.failed) == 1, outcome.failed
    ((i, exc),) = outcome.failed.items()
    assert i in (0, 1)
    assert env.topic in str(exc) and "may or may not have been written" in str(exc)
    assert new[0] == old[0] and new[1] > old[1], (old, new)  # the next epoch of the same id
    assert set(outcome.acked) == set(range(200)) - {i}


# -- KIP-951: the new leader from a Produce answer, without a Metadata round trip -----------


async def test_kip951_leader_hint_is_used_without_a_metadata_request(env: Env) -> None:
    """The mock answers a Produce v10 to a former leader NOT_LEADER_OR_FOLLOWER with
    CurrentLeader and NodeEndpoints (KIP-951): the producer moves the partition to
    that leader itself (Metadata.move_leader) and sends no Metadata request."""
    async with started(env) as producer:
        await warm_up(producer, env)
        client = producer._client
        metadata_requests = 0
        hints: list[tuple[str, int, int, bool]] = []
        fetch_metadata, move_leader = client.fetch_metadata, client.metadata.move_leader

        async def counting_fetch(node_id: int, topics: list[str] | None) -> Any:
            nonlocal metadata_requests
            metadata_requests += 1
            return await fetch_metadata(node_id, topics)

        def recording_move(topic: str, partition: int, leader: int, *args: Any) -> bool:
            applied = move_leader(topic, partition, leader, *args)
            hints.append((topic, partition, leader, applied))
            return applied

        client.fetch_metadata = counting_fetch  # type: ignore[method-assign]
        client.metadata.move_leader = recording_move  # type: ignore[method-assign]
        after = {p: (p + 1) % BROKERS + 1 for p in range(PARTITIONS)}
        for p, leader in after.items():
            env.cluster.set_leader(env.topic, p, leader)
        futures = [await producer.send(env.topic, v, key=k) for k, v in map(record, range(600))]
        await settle(futures, 15.0)
        ours = {p: client.metadata.cluster.leader_for(env.topic, p) for p in range(PARTITIONS)}
        await verify_after_warm_up(env, producer, futures, key=lambda i: record(i)[0])
    assert metadata_requests == 0, "a Metadata request was sent: the hint was not enough"
    assert {p for _, p, leader, applied in hints if applied and leader == after[p]} == set(
        range(PARTITIONS)
    ), hints
    assert ours == after
