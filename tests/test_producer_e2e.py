"""The producer against the real embedded broker, checked by other clients' consumers."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
import uuid

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic as CkNewTopic
from conftest import TopicFactory
from faultproxy import FaultProxy
from partition_checks import java_partition
from readers import ReadRecord, read_all_aiokafka, read_all_confluent

from aiokafka_lite import AIOKafkaProducer, NewTopic, RecordMetadata, TopicPartition, create_topics
from aiokafka_lite._internal.accumulator import BATCH_MEMORY, SEND_BOUND, SEND_RECORD_MEMORY
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.errors import (
    BufferFullError,
    IllegalStateError,
    KafkaTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
    SerializationError,
)


async def test_round_trip_read_back_by_two_independent_consumers(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(3)
    rng = random.Random(7)
    sent: list[
        tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int | None, int | None]
    ] = []
    for i in range(20_000):
        kind = i % 4
        key = f"key-{rng.randrange(500)}".encode() if kind in (0, 1) else None
        value = None if i % 997 == 0 else rng.randbytes(rng.randrange(0, 200))
        headers = [("h", b"%d" % i), ("h", None), ("trace", b"x")] if kind == 1 else []
        ts = 1_600_000_000_000 + i * 3 if kind == 2 else None
        partition = i % 3 if kind == 3 else None
        sent.append((key, value, headers, ts, partition))

    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=2) as producer:
        futures = [
            await producer.send(topic, v, key=k, headers=h, timestamp_ms=ts, partition=p)
            for k, v, h, ts, p in sent
        ]
        results: list[RecordMetadata] = await asyncio.gather(*futures)

    by_position = {(md.partition, md.offset): i for i, md in enumerate(results)}
    assert len(by_position) == len(sent), "two records reported the same partition/offset"

    confluent = read_all_confluent(bootstrap, topic, expected=len(sent))
    aiokafka = await read_all_aiokafka(bootstrap, topic, expected=len(sent))
    assert len(confluent) == len(sent)
    assert confluent == aiokafka

    for record in confluent:
        i = by_position[(record.partition, record.offset)]
        key, value, headers, ts, partition = sent[i]
        md = results[i]
        assert (record.key, record.value) == (key, value)
        assert record.headers == headers
        assert record.timestamp == md.timestamp
        assert record.timestamp_type == md.timestamp_type == 0
        if ts is not None:
            assert record.timestamp == ts
        if partition is not None:
            assert record.partition == partition
        elif key is not None:
            assert record.partition == java_partition(key, 3)

    # Per partition, offsets follow send order.
    for p in range(3):
        indices = [by_position[(r.partition, r.offset)] for r in confluent if r.partition == p]
        assert indices == sorted(indices)


async def test_keyed_records_follow_javas_murmur2(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(7)
    keys = [f"user-{i}".encode() for i in range(300)]
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        results = [await producer.send_and_wait(topic, b"v", key=k) for k in keys]
    assert [md.partition for md in results] == [java_partition(k, 7) for k in keys]


async def test_keyless_records_stick_then_spread(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(4)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, batch_size=1024) as producer:
        futures = [await producer.send(topic, b"x" * 100) for _ in range(2000)]
        partitions = [md.partition for md in await asyncio.gather(*futures)]
    # Sticky: long runs on one partition, switching about every batch_size bytes.
    switches = sum(1 for a, b in itertools.pairwise(partitions) if a != b)
    assert switches < len(partitions) / 5
    assert set(partitions) == {0, 1, 2, 3}


async def test_linger_holds_records_until_flush(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=60_000, delivery_timeout_ms=200_000
    ) as producer:
        futures = [await producer.send(topic, b"%d" % i) for i in range(50)]
        await asyncio.sleep(0.3)
        assert not any(f.done() for f in futures), "linger_ms=60000 must hold the batch"
        await producer.flush()
        assert all(f.done() for f in futures)
        offsets = [f.result().offset for f in futures]
        assert offsets == list(range(50))
        m = producer.metrics()
        assert m["batch-total"] == 1 and m["request-total"] == 1


async def test_batch_size_splits_batches(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=60_000, batch_size=2048, delivery_timeout_ms=200_000
    ) as producer:
        futures = [await producer.send(topic, b"x" * 100) for _ in range(200)]
        await producer.flush()
        await asyncio.gather(*futures)
        m = producer.metrics()
    # 200 records of ~110 bytes in batches of at most 2048 bytes: at least 11 batches,
    # and not one per record either.
    assert 11 <= m["batch-total"] <= 20
    assert m["record-send-total"] == 200


async def test_full_batches_are_sent_without_waiting_for_linger(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=60_000, batch_size=1024, delivery_timeout_ms=200_000
    ) as producer:
        futures = [await producer.send(topic, b"x" * 100) for _ in range(40)]
        # The first batches filled up; they go out although linger has not passed.
        await asyncio.wait_for(futures[0], timeout=10)
        assert not futures[-1].done()


async def test_backpressure_bounds_memory(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(2)
    limit = 64 * 1024
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, buffer_memory=limit, batch_size=8192
    ) as producer:
        acc = producer._acc
        peak = 0
        futures = []
        for i in range(3000):  # ~3 MiB through a 64 KiB buffer
            futures.append(await producer.send(topic, b"y" * 1000, key=b"%d" % i))
            peak = max(peak, acc.used)
        results = await asyncio.gather(*futures)
    assert peak <= limit
    assert len({(r.partition, r.offset) for r in results}) == 3000
    assert len(read_all_confluent(bootstrap, topic, expected=3000)) == 3000


async def test_try_send_fails_fast_when_buffer_is_full(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        buffer_memory=16 * 1024,
        linger_ms=60_000,
        batch_size=1 << 20,
        max_request_size=1 << 20,
        delivery_timeout_ms=200_000,
    ) as producer:
        await producer.partitions_for(topic)
        accepted = []
        with pytest.raises(BufferFullError, match="buffer_memory"):
            for _ in range(1000):
                accepted.append(producer.try_send(topic, b"z" * 500))
        assert 10 < len(accepted) < 40
        await producer.flush()
        assert all(f.result().offset >= 0 for f in accepted)


@pytest.mark.tansu_only("kills its broker (fresh_broker) so that memory never frees")
async def test_send_waits_at_most_max_block_ms_for_memory(
    fresh_broker: EmbeddedBroker, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1, bootstrap=fresh_broker.bootstrap_servers)
    producer = AIOKafkaProducer(
        bootstrap_servers=fresh_broker.bootstrap_servers,
        # Six records of 1,000 bytes fit (each with what it holds), a seventh does not.
        buffer_memory=BATCH_MEMORY + SEND_BOUND + 5 * SEND_RECORD_MEMORY + 6600,
        max_block_ms=300,
        request_timeout_ms=2000,
    )
    await producer.start()
    try:
        with pytest.raises(RecordTooLargeError, match="buffer_memory"):
            await producer.send(topic, b"q" * 12000)  # can never fit, so fails at once
        await producer.send_and_wait(topic, b"ok")
        fresh_broker.kill()  # from now on nothing is delivered, so nothing frees memory
        # Six fill the buffer: each counts its ~1 KB and what its future holds.
        futures = [await producer.send(topic, b"r" * 1000) for _ in range(6)]
        start = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match=r"buffer_memory .* max_block_ms"):
            await producer.send(topic, b"r" * 1000)
        assert 0.25 < time.monotonic() - start < 3
    finally:
        await producer.stop(timeout=1)
    assert all(f.done() for f in futures)


async def test_max_block_ms_on_a_topic_that_never_appears(bootstrap: str) -> None:
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, allow_auto_create_topics=False, max_block_ms=800
    ) as producer:
        start = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match=r"no-such-topic-.*max_block_ms"):
            await producer.send(f"no-such-topic-{random.randrange(1 << 30)}", b"v")
        assert time.monotonic() - start < 5


async def test_unknown_topic_is_auto_created_when_allowed(bootstrap: str) -> None:
    topic = f"auto-{random.randrange(1 << 30)}"
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        md = await producer.send_and_wait(topic, b"v", key=b"k")
        assert md.topic == topic and md.offset == 0
        assert await producer.partitions_for(topic) == set(
            range(len(await producer.partitions_for(topic)))
        )


async def test_bad_record_fails_only_its_own_call(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, max_request_size=10_000, value_serializer=_strict_serializer
    ) as producer:
        good1 = await producer.send(topic, b"a")
        with pytest.raises(RecordTooLargeError, match="max_request_size"):
            await producer.send(topic, b"x" * 20_000)
        with pytest.raises(ValueError, match="partition 5 is out of range"):
            await producer.send(topic, b"b", partition=5)
        with pytest.raises(SerializationError, match=topic):
            await producer.send(topic, "not bytes")
        with pytest.raises(TypeError, match="header"):
            await producer.send(topic, b"c", headers=[("k", "str-value")])  # type: ignore[list-item]
        good2 = await producer.send(topic, b"d")
        assert (await good1).offset >= 0 and (await good2).offset >= 0


def _strict_serializer(value: object) -> bytes:
    if not isinstance(value, bytes):
        raise TypeError("only bytes")
    return value


@pytest.mark.parametrize("acks", [0, 1, -1, "all"])
async def test_acks(bootstrap: str, topic_factory: TopicFactory, acks: int | str) -> None:
    topic = topic_factory(1)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, acks=acks) as producer:
        results = await asyncio.gather(*[await producer.send(topic, b"%d" % i) for i in range(100)])
    if acks == 0:
        assert results == [None] * 100  # no answer, nothing to report (as aiokafka)
    else:
        assert [md.offset for md in results] == list(range(100))
    records = read_all_confluent(bootstrap, topic, expected=100)
    assert [r.value for r in records] == [b"%d" % i for i in range(100)]


async def test_record_metadata_topic_partition_and_log_start_offset(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(3)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=1) as producer:
        sent = [await producer.send(topic, b"v%d" % i, key=b"k%d" % i) for i in range(60)]
        results: list[RecordMetadata] = list(await asyncio.gather(*sent))
        pairs = [(b"m%d" % i, b"w%d" % i) for i in range(60)]
        report = await (await producer.send_many(topic, pairs))
        results += list(report)
        batch = producer.create_batch()
        batch.append(key=None, value=b"batched", timestamp=None)
        results.append(await (await producer.send_batch(batch, topic, partition=2)))

    for md in results:
        assert md.topic_partition == TopicPartition(topic, md.partition)
        assert type(md.topic_partition) is TopicPartition
        assert md.topic_partition.topic == md.topic

    # The log start offset, as the broker reports it independently of our Produce
    # answers: ListOffsets(EARLIEST), asked by confluent-kafka.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lso", "log_level": 3})
    try:
        earliest = {
            p: consumer.get_watermark_offsets(CkTopicPartition(topic, p), timeout=10)[0]
            for p in range(3)
        }
    finally:
        consumer.close()
    assert {md.partition for md in results} == {0, 1, 2}
    for md in results:
        # Nothing was deleted: every answer names the partition's current start.
        assert md.log_start_offset == earliest[md.partition] >= -1
        assert md.log_start_offset <= md.offset


async def test_create_batch_and_send_batch(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(2)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        first = await producer.send_and_wait(topic, b"before", partition=1)
        batch = producer.create_batch()
        for i in range(10):
            assert batch.append(key=b"k%d" % i, value=b"v%d" % i, timestamp=None) is not None
        assert batch.record_count() == 10 and batch.size() > 0
        md = await (await producer.send_batch(batch, topic, partition=1))
    assert md.partition == 1 and md.offset == first.offset + 1
    records = read_all_confluent(bootstrap, topic, expected=11)
    assert [r.value for r in records] == [b"before"] + [b"v%d" % i for i in range(10)]


async def test_send_batch_larger_than_max_request_size_is_refused_at_the_call(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=10_000) as producer:
        batch = producer.create_batch()
        assert batch.append(value=b"x" * 20_000) is not None  # a first record always fits
        with pytest.raises(RecordTooLargeError, match=f"{topic}.*max_request_size"):
            await producer.send_batch(batch, topic, partition=0)
        # The batch is still the caller's; a normal record afterwards goes through.
        assert batch.record_count() == 1
        md = await producer.send_and_wait(topic, b"fine")
    assert md.offset == 0


async def test_stop_delivers_pending_records(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=60_000, delivery_timeout_ms=200_000
    )
    await producer.start()
    futures = [await producer.send(topic, b"%d" % i) for i in range(100)]
    await producer.stop()
    assert [f.result().offset for f in futures] == list(range(100))


async def test_lifecycle_errors(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    with pytest.raises(IllegalStateError, match="not started"):
        await producer.send(topic, b"v")
    await producer.start()
    await producer.send_and_wait(topic, b"v")
    await producer.stop()
    await producer.stop()  # idempotent
    with pytest.raises(ProducerClosedError):
        await producer.send(topic, b"v")


async def test_start_fails_clearly_without_a_broker() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    producer = AIOKafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=2000)
    with pytest.raises(Exception, match=f"unable to bootstrap from 127.0.0.1:{port}"):
        await producer.start()
    await producer.stop()


def _our_tasks() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


@pytest.mark.tansu_only("kills its broker (fresh_broker)")
async def test_stop_with_broker_killed_returns_in_time(
    fresh_broker: EmbeddedBroker, topic_factory: TopicFactory
) -> None:
    import psutil

    topic = topic_factory(1, bootstrap=fresh_broker.bootstrap_servers)
    before = _our_tasks()
    producer = AIOKafkaProducer(
        bootstrap_servers=fresh_broker.bootstrap_servers,
        linger_ms=60_000,
        request_timeout_ms=2000,
        delivery_timeout_ms=200_000,
    )
    await producer.start()
    first = await producer.send(topic, b"first")
    await producer.flush()  # linger_ms=60000 would hold it otherwise
    assert first.result().offset == 0
    futures = [await producer.send(topic, b"%d" % i) for i in range(50)]
    fresh_broker.kill()
    start = time.monotonic()
    await producer.stop(timeout=2.0)
    elapsed = time.monotonic() - start
    assert elapsed < 4.0
    assert all(f.done() for f in futures)
    errors = [f.exception() for f in futures]
    assert all(isinstance(e, KafkaTimeoutError) for e in errors), errors[:3]
    assert "stopped before this record was delivered" in str(errors[0])
    assert _our_tasks() <= before, "stop() left tasks behind"
    port = fresh_broker.port
    leftover = [c for c in psutil.Process().net_connections() if c.raddr and c.raddr.port == port]
    assert not leftover, f"stop() left sockets open: {leftover}"


async def test_records_are_retried_across_an_outage() -> None:
    """The connection is cut and the broker unreachable for a while: the batch is retried."""
    proxy = await FaultProxy("127.0.0.1", 0).start()  # target set once the broker has a port
    broker = EmbeddedBroker(advertised_port=proxy.port)
    await broker.astart()
    proxy.target = ("127.0.0.1", broker.port)
    try:
        bootstrap = f"127.0.0.1:{proxy.port}"
        topic = f"outage-{random.randrange(1 << 30)}"
        await create_topics(bootstrap, [NewTopic(topic, 1)])
        async with AIOKafkaProducer(
            bootstrap_servers=bootstrap, request_timeout_ms=3000, retry_backoff_ms=50
        ) as producer:
            await producer.send_and_wait(topic, b"before")
            proxy.refusing = True
            proxy.cut()
            fut = await producer.send(topic, b"during")
            await asyncio.sleep(0.5)
            assert not fut.done()
            proxy.refusing = False
            md = await asyncio.wait_for(fut, timeout=20)
            assert md.offset == 1
            assert producer.metrics()["record-error-total"] == 0
        # The proxy runs on this loop: read from a thread so it keeps pumping.
        records: list[ReadRecord] = await asyncio.to_thread(
            read_all_confluent, bootstrap, topic, expected=2
        )
        assert [r.value for r in records] == [b"before", b"during"]
    finally:
        await proxy.stop()
        await broker.astop()


async def test_idle_connections_are_closed_and_reopened(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, connections_max_idle_ms=300
    ) as producer:
        await producer.send_and_wait(topic, b"a")
        assert producer._client._conns, "a connection is open while in use"
        await asyncio.sleep(1.0)
        assert not producer._client._conns, "idle connections must be closed"
        md = await producer.send_and_wait(topic, b"b")  # reopened lazily
        assert md.offset == 1


def test_works_on_uvloop(bootstrap: str, topic_factory: TopicFactory) -> None:
    """uvloop's transports are not asyncio.Transport subclasses: nothing may assume so."""
    uvloop = pytest.importorskip("uvloop")  # installed by the dev extra (not on Windows)
    topic = topic_factory(2)

    async def produce() -> list[RecordMetadata]:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
            futures = [await producer.send(topic, b"%d" % i, key=b"k%d" % i) for i in range(500)]
            return await asyncio.gather(*futures)

    results = uvloop.run(produce())
    assert len({(md.partition, md.offset) for md in results}) == 500
    assert len(read_all_confluent(bootstrap, topic, expected=500)) == 500


@pytest.mark.kafka_only(
    "Tansu ignores message.timestamp.type: its produce answers carry no log append time"
)
async def test_log_append_time_topic_reports_the_brokers_timestamp(bootstrap: str) -> None:
    """A topic with message.timestamp.type=LogAppendTime: each record's metadata carries
    the broker's append time and timestamp_type 1, whatever timestamp_ms was given, and
    equals what an independent consumer reads (aiokafka's own test of this mocks the
    broker's answer; here Apache Kafka gives it)."""
    topic = f"t-{uuid.uuid4().hex}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    config = {"message.timestamp.type": "LogAppendTime"}
    admin.create_topics([CkNewTopic(topic, 2, 1, config=config)])[topic].result(15)
    given = [None, 123_123_123, None, 1_600_000_000_000]
    before = int(time.time() * 1000)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        futures = [
            await producer.send(topic, b"v%d" % i, partition=i % 2, timestamp_ms=ts)
            for i, ts in enumerate(given)
        ]
        results: list[RecordMetadata] = await asyncio.gather(*futures)
        one = await producer.send_and_wait(topic, b"alone", timestamp_ms=5)
    after = int(time.time() * 1000)
    for md in [*results, one]:
        assert md.timestamp_type == 1, md
        assert before - 1000 <= md.timestamp <= after + 1000, md  # the broker's clock
    read = read_all_confluent(bootstrap, topic, expected=len(given) + 1)
    by_position = {(r.partition, r.offset): r for r in read}
    assert len(by_position) == len(given) + 1
    for md in [*results, one]:
        record = by_position[(md.partition, md.offset)]
        assert (record.timestamp_type, record.timestamp) == (1, md.timestamp)
