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
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from mockcluster import (
    API_PRODUCE,
    ERR_NOT_ENOUGH_REPLICAS,
    ERR_NOT_LEADER_OR_FOLLOWER,
    ERR_REQUEST_TIMED_OUT,
    ERR_TOPIC_AUTHORIZATION_FAILED,
    MockCluster,
)

from aiokafka_lite import AIOKafkaProducer, RecordMetadata
from aiokafka_lite.errors import DeliveryFailedError

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


def check_exactly_once_in_order(log: list[Read], acked: dict[int, RecordMetadata]) -> None:
    """Every acknowledged record is in the log exactly once, where its metadata says.

    Nothing else is in the log, and per partition the log holds records in send order.
    """
    seen: dict[int, list[Read]] = {}
    for r in log:
        assert r.value is not None
        seen.setdefault(int(r.value), []).append(r)
    duplicates = {i: rs for i, rs in seen.items() if len(rs) > 1}
    assert not duplicates, f"{len(duplicates)} records written more than once, e.g. " + str(
        list(duplicates.items())[:3]
    )
    missing = sorted(set(acked) - set(seen))
    assert not missing, f"{len(missing)} acknowledged records not in the log: {missing[:10]}"
    unexpected = sorted(set(seen) - set(acked))
    assert not unexpected, f"records in the log that were never acknowledged: {unexpected[:10]}"
    for i, md in acked.items():
        (r,) = seen[i]
        assert (r.partition, r.offset) == (md.partition, md.offset), (
            f"record {i}: metadata says {md.partition}/{md.offset}, log has it at "
            f"{r.partition}/{r.offset}"
        )
        assert r.key == record(i)[0]
    for p in range(PARTITIONS):
        order = [int(r.value) for r in log if r.partition == p and r.value is not None]
        assert order == sorted(order), f"partition {p}: log is not in send order"


async def results(
    futures: list[asyncio.Future[RecordMetadata]], within: float = 15.0
) -> tuple[dict[int, RecordMetadata], dict[int, BaseException]]:
    """Wait for every future (at most ``within`` s): (index -> metadata, index -> error)."""
    await asyncio.wait(futures, timeout=within)
    pending = [i for i, f in enumerate(futures) if not f.done()]
    assert not pending, f"{len(pending)} futures still pending, e.g. records {pending[:10]}"
    ok: dict[int, RecordMetadata] = {}
    failed: dict[int, BaseException] = {}
    for i, f in enumerate(futures):
        exc = f.exception()
        if exc is None:
            ok[i] = f.result()
        else:
            failed[i] = exc
    return ok, failed


async def stop(producer: AIOKafkaProducer[bytes, bytes]) -> float | None:
    """``await producer.stop()``, bounded: seconds it took, or None if it did not return.

    Never raises, so a failure inside the test is what gets reported; each test
    asserts on the result afterwards.
    """
    t0 = time.monotonic()
    try:
        async with asyncio.timeout(STOP_WITHIN):
            await producer.stop()
    except TimeoutError:
        return None
    return time.monotonic() - t0


def assert_stopped(took: float | None) -> None:
    assert took is not None, f"producer.stop() did not return within {STOP_WITHIN:.0f} s"


def make_producer(env: Env, **overrides: Any) -> AIOKafkaProducer[bytes, bytes]:
    config: dict[str, Any] = {
        "bootstrap_servers": env.bootstrap,
        "linger_ms": 5,
        "request_timeout_ms": 5000,
        "retry_backoff_ms": 20,
    }
    config.update(overrides)
    return AIOKafkaProducer(**config)


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
    producer = make_producer(env)
    await producer.start()
    try:
        futures = [await producer.send(env.topic, v, key=k) for k, v in map(record, range(3000))]
        ok, failed = await results(futures)
    finally:
        took = await stop(producer)
    assert_stopped(took)
    assert not failed, f"{len(failed)} failed, e.g. {next(iter(failed.values()))!r}"
    check_exactly_once_in_order(await read_back(env), ok)
    assert {md.partition for md in ok.values()} == set(range(PARTITIONS))


@IDEMPOTENCE
async def test_leaders_move_mid_stream(env: Env, idempotent: bool) -> None:
    n = 3000
    before = env.leaders()
    after = {p: leader % BROKERS + 1 for p, leader in before.items()}
    producer = make_producer(env, enable_idempotence=idempotent)
    await producer.start()
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
        for i in range(n):
            key, value = record(i)
            fut = await producer.send(env.topic, value, key=key)
            fut.add_done_callback(count)
            futures.append(fut)
            sent_after_move += mover.done()
            if i % 50 == 49:
                await asyncio.sleep(0.002)  # a stream, not one burst: acks come meanwhile
        ok, failed = await results(futures)
        retried = producer.metrics()["record-retry-total"]
    finally:
        mover.cancel()
        took = await stop(producer)
    assert_stopped(took)
    assert sent_after_move > 0, "the leaders moved only after everything was sent"
    assert env.leaders() == after
    # The first request to each old leader after the move is answered
    # NOT_LEADER_OR_FOLLOWER (with the new leader as a KIP-951 hint): retried.
    assert retried > 0, "no record was retried: the producer never met a moved leader"
    assert not failed, f"{len(failed)} failed, e.g. {next(iter(failed.values()))!r}"
    check_exactly_once_in_order(await read_back(env), ok)


@IDEMPOTENCE
async def test_retriable_produce_errors_deliver_exactly_once(env: Env, idempotent: bool) -> None:
    # Answered without writing anything: a retry must not duplicate.
    injected = [ERR_NOT_LEADER_OR_FOLLOWER] * 3 + [ERR_REQUEST_TIMED_OUT, ERR_NOT_ENOUGH_REPLICAS]
    env.cluster.push_errors(API_PRODUCE, injected)
    producer = make_producer(env, enable_idempotence=idempotent)
    await producer.start()
    try:
        futures = [await producer.send(env.topic, v, key=k) for k, v in map(record, range(1000))]
        ok, failed = await results(futures)
        retried = producer.metrics()["record-retry-total"]
    finally:
        took = await stop(producer)
    assert_stopped(took)
    assert not failed, f"{len(failed)} failed, e.g. {next(iter(failed.values()))!r}"
    assert retried > 0, "no record was retried: the injected errors were not seen"
    check_exactly_once_in_order(await read_back(env), ok)


@IDEMPOTENCE
async def test_non_retriable_error_fails_only_the_affected_records(
    env: Env, idempotent: bool
) -> None:
    # Idempotent: a batch that fails for good makes the producer bump its epoch
    # (InitProducerId v3+ with its id and epoch, KIP-360). Kafka answers with a new
    # producer id; the mock answers INVALID_PRODUCER_ID_MAPPING.
    producer = make_producer(env, enable_idempotence=idempotent)
    await producer.start()
    try:
        # One batch for partition 0, answered TOPIC_AUTHORIZATION_FAILED.
        env.cluster.push_errors(API_PRODUCE, [ERR_TOPIC_AUTHORIZATION_FAILED])
        first = [await producer.send(env.topic, str(i).encode(), partition=0) for i in range(20)]
        _, first_failed = await results(first)
        # Later records, to every partition, go through.
        later: list[asyncio.Future[RecordMetadata]] = []
        for i in range(20, 320):
            later.append(await producer.send(env.topic, str(i).encode(), partition=i % PARTITIONS))
        later_ok, later_failed = await results(later)
    finally:
        took = await stop(producer)
    assert_stopped(took)
    assert sorted(first_failed) == list(range(20)), "every record of the refused batch fails"
    for exc in first_failed.values():
        assert "TOPIC_AUTHORIZATION_FAILED" in str(exc), repr(exc)
        assert env.topic in str(exc), repr(exc)
    assert not later_failed, f"{len(later_failed)} later records failed, e.g. " + repr(
        next(iter(later_failed.values()))
    )
    log = await read_back(env)
    assert sorted(int(r.value) for r in log if r.value is not None) == list(range(20, 320))
    for j, md in later_ok.items():
        i = j + 20
        (r,) = [r for r in log if r.value == str(i).encode()]
        assert r.partition == md.partition == i % PARTITIONS
        assert r.offset == md.offset


async def test_leader_down_for_a_second(env: Env) -> None:
    leaders = env.leaders()
    victim = leaders[0]
    producer = make_producer(env)
    await producer.start()
    futures: list[asyncio.Future[RecordMetadata]] = []
    try:
        # Connections to every broker are up before the outage.
        futures += [await producer.send(env.topic, v, key=k) for k, v in map(record, range(300))]
        await asyncio.gather(*futures)
        env.cluster.broker_down(victim)
        t_down, cpu_down = time.monotonic(), time.thread_time()
        for i in range(300, 1200):
            key, value = record(i)
            futures.append(await producer.send(env.topic, value, key=key))
            if i % 100 == 99:
                await asyncio.sleep(0.05)
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - t_down)))
        # CPU the event loop's thread used while the broker was down (the brokers run on
        # librdkafka's threads): waiting for a broker must not be a busy loop.
        cpu_while_down = time.thread_time() - cpu_down
        failed_while_down = [
            i for i in range(300, 1200) if futures[i].done() and futures[i].exception() is not None
        ]
        env.cluster.broker_up(victim)
        # Reconnecting takes a reconnect backoff (at most 1 s by default) and a metadata
        # refresh; 10 s is plenty.
        try:
            ok, failed = await results(futures, within=10)
        except AssertionError as e:
            raise AssertionError(
                f"{e}, 10 s after broker {victim} came back (the event loop used "
                f"{cpu_while_down:.2f} s of CPU in the 1 s it was down)"
            ) from None
    finally:
        env.cluster.broker_up(victim)
        took = await stop(producer)
    assert_stopped(took)
    assert not failed_while_down, f"records failed while the broker was down: {failed_while_down}"
    assert not failed, f"{len(failed)} failed, e.g. {next(iter(failed.values()))!r}"
    on_victim = [i for i, md in ok.items() if i >= 300 and leaders[md.partition] == victim]
    assert on_victim, "no record was sent to a partition of the broker that went down"
    check_exactly_once_in_order(await read_back(env), ok)
    assert cpu_while_down < 0.5, (
        f"the event loop used {cpu_while_down:.2f} s of CPU in the 1 s the broker was down"
    )


async def test_send_many_reports_a_refused_batch_and_delivers_the_rest(env: Env) -> None:
    producer = make_producer(env)
    await producer.start()
    try:
        await producer.partitions_for(env.topic)
        # The first Produce request (partition 0's batch) is refused for good.
        env.cluster.push_errors(API_PRODUCE, [ERR_TOPIC_AUTHORIZATION_FAILED])
        first = await producer.send_many(
            env.topic, [(None, b"%d" % i) for i in range(20)], partition=0
        )
        with pytest.raises(DeliveryFailedError) as info:
            await asyncio.wait_for(first, 15)
        pairs = [record(i) for i in range(20, 2020)]
        report = await asyncio.wait_for(await producer.send_many(env.topic, pairs), 15)
    finally:
        took = await stop(producer)
    assert_stopped(took)
    assert sorted(info.value.errors) == list(range(20))
    assert all("TOPIC_AUTHORIZATION_FAILED" in str(e) for e in info.value.errors.values())
    log = await read_back(env)
    check_exactly_once_in_order(log, {i + 20: md for i, md in enumerate(report)})
