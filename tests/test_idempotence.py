"""The idempotent producer (the default) against the real broker.

Faults come from tests/faultproxy.py between the producer and a Tansu broker
that advertises the proxy's address, so every request passes through it. Each
fault test ends with the shared checks of tests/test_faults_checks.py.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError as CkError
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic as CkNewTopic
from conftest import TopicFactory
from faultproxy import FaultProxy
from kafka.record.default_records import (  # type: ignore[import-untyped]
    DefaultRecordBatchBuilder,
)
from kafka.record.memory_records import MemoryRecords  # type: ignore[import-untyped]
from readers import read_all_confluent
from scripted_broker import ReceivedRequest, ScriptedBroker, answer
from scripted_cluster import INIT_PRODUCER_ID, METADATA, PRODUCE, LogCluster
from test_faults_checks import check_fault_outcome, confluent_reader, value
from txnlog import read_log_async

from aiokafka_lite import AIOKafkaProducer, NewTopic, create_topics
from aiokafka_lite._internal.client import NetworkClient
from aiokafka_lite._internal.idempotence import IdempotenceState
from aiokafka_lite._internal.protocol.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from aiokafka_lite._internal.protocol.transactions import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from aiokafka_lite.config import ProducerConfig
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.errors import (
    DeliveryOutcomeUnknownError,
    KafkaError,
    KafkaTimeoutError,
    PartitionAbortedError,
)
from aiokafka_lite.structs import TopicPartition


@pytest.fixture
async def proxied() -> AsyncIterator[tuple[FaultProxy, str]]:
    """A fresh broker behind a fault proxy; yields (proxy, bootstrap through the proxy)."""
    proxy = await FaultProxy("127.0.0.1", 0).start()
    broker = EmbeddedBroker(advertised_port=proxy.port)
    await broker.astart()
    proxy.target = ("127.0.0.1", broker.port)
    try:
        yield proxy, f"127.0.0.1:{proxy.port}"
    finally:
        await proxy.stop()
        await broker.astop()


async def until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` every 10 ms until it holds; fail after ``timeout`` s."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.01)


async def new_topic(bootstrap: str, partitions: int = 1) -> str:
    topic = f"idem-{random.randrange(1 << 30)}"
    await create_topics(bootstrap, [NewTopic(topic, partitions)])
    return topic


async def test_idempotence_is_on_by_default_and_gets_a_producer_id(bootstrap: str) -> None:
    topic = await new_topic(bootstrap)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        assert producer.config.enable_idempotence
        await producer.send_and_wait(topic, b"v")
        idem = producer._sender._idem
        assert idem is not None and idem.producer_id >= 0 and idem.epoch >= 0
        # What the broker stored (read by aiokafka's parser) carries that id and epoch.
        (batch,) = await read_log_async(bootstrap, topic, 1)
        assert (batch.producer_id, batch.producer_epoch) == (idem.producer_id, idem.epoch)
        assert not batch.transactional and batch.values == (b"v",)
        # Tansu answers InitProducerId v0-v2 with UNKNOWN_SERVER_ERROR (aiokafka
        # hard-codes v0); we negotiate the newest version both sides speak.
        conn = next(iter(producer._client._conns.values()))
        assert conn.version_for(InitProducerIdRequest) >= 3


async def test_lost_response_is_retried_without_a_duplicate(
    proxied: tuple[FaultProxy, str],
) -> None:
    proxy, bootstrap = proxied
    topic = await new_topic(bootstrap)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, request_timeout_ms=1000, retry_backoff_ms=20
    )
    await producer.start()
    futures = [await producer.send(topic, value(0))]
    await asyncio.wait_for(futures[0], 10)
    proxy.drop_responses = True  # the broker writes the batch; we never hear so
    futures.append(await producer.send(topic, value(1)))
    await asyncio.sleep(0.5)
    assert not futures[1].done()
    proxy.drop_responses = False  # the timed-out request is retried, same sequence
    await asyncio.wait_for(futures[1], timeout=15)
    assert producer.metrics()["record-retry-total"] >= 1
    futures.append(await producer.send(topic, value(2)))
    outcome = await check_fault_outcome(producer, futures, confluent_reader(bootstrap, topic))
    # The broker answered the retry DUPLICATE_SEQUENCE_NUMBER (success); Kafka only
    # reports the original offset if it still has it cached, else -1 (Tansu: -1).
    assert outcome.acked[1].offset in (1, -1)
    assert outcome.acked[2].offset == 2


async def test_many_in_flight_per_partition_keep_order_across_cuts(
    proxied: tuple[FaultProxy, str],
) -> None:
    proxy, bootstrap = proxied
    topic = await new_topic(bootstrap, partitions=2)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        request_timeout_ms=1000,
        retry_backoff_ms=20,
        batch_size=512,
        linger_ms=1,
    )
    await producer.start()
    futures = []
    for i in range(3000):
        futures.append(await producer.send(topic, value(i), partition=i % 2))
        if i % 500 == 250:
            proxy.cut()  # whatever is in flight now is retried
            await asyncio.sleep(0.05)
    await check_fault_outcome(producer, futures, confluent_reader(bootstrap, topic))


@pytest.mark.parametrize("fail_partition", [False, True])
async def test_what_happens_behind_a_failed_record(
    proxied: tuple[FaultProxy, str], fail_partition: bool
) -> None:
    """A record expires while the broker is unreachable; a later one waits behind it.

    By default (as Java) the later record is still delivered; with
    fail_partition_on_error it fails too, so the partition has no gap.
    """
    proxy, bootstrap = proxied
    topic = await new_topic(bootstrap)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        request_timeout_ms=400,
        delivery_timeout_ms=1000,
        retry_backoff_ms=20,
        batch_size=64,  # one record per batch
        reconnect_backoff_max_ms=50,  # reconnect well within the second record's time
        fail_partition_on_error=fail_partition,
    )
    await producer.start()
    futures = [await producer.send(topic, value(0))]  # before
    await asyncio.wait_for(futures[0], 10)
    proxy.refusing = True
    proxy.cut()
    futures.append(await producer.send(topic, value(1)))  # expires
    await asyncio.sleep(0.6)
    futures.append(await producer.send(topic, value(2)))  # behind
    with pytest.raises(KafkaTimeoutError, match="delivery_timeout_ms"):
        await asyncio.wait_for(futures[1], timeout=10)
    if fail_partition:
        with pytest.raises(PartitionAbortedError, match="earlier record of the partition"):
            await asyncio.wait_for(futures[2], timeout=5)
    proxy.refusing = False
    if not fail_partition:
        await asyncio.wait_for(futures[2], timeout=10)
    futures.append(await producer.send(topic, value(3)))  # after: the partition resumes
    outcome = await check_fault_outcome(
        producer,
        futures,
        confluent_reader(bootstrap, topic),
        allowed_errors=(KafkaTimeoutError, PartitionAbortedError),
    )
    assert sorted(outcome.acked) == ([0, 3] if fail_partition else [0, 2, 3])


async def test_delayed_responses_deliver_everything_exactly_once(
    proxied: tuple[FaultProxy, str],
) -> None:
    """Every answer 150 ms late (well within request_timeout_ms): nothing is retried,
    lost or doubled, and order holds with several requests in flight."""
    proxy, bootstrap = proxied
    topic = await new_topic(bootstrap, partitions=2)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, request_timeout_ms=3000, batch_size=1024, linger_ms=2
    )
    await producer.start()
    await producer.partitions_for(topic)
    proxy.delay = 0.15
    futures = [await producer.send(topic, value(i), partition=i % 2) for i in range(2000)]
    outcome = await check_fault_outcome(producer, futures, confluent_reader(bootstrap, topic))
    assert len(outcome.acked) == 2000
    assert producer.metrics()["record-retry-total"] == 0


async def test_stall_past_request_timeout_drops_the_connection_and_retries_once(
    proxied: tuple[FaultProxy, str],
) -> None:
    """The broker stops answering (it still writes what it gets) for longer than
    request_timeout_ms: the producer drops the connection, reconnects and sends the
    unanswered batches again; the broker recognises them (same producer id and
    sequence), so nothing is written twice."""
    proxy, bootstrap = proxied
    topic = await new_topic(bootstrap, partitions=2)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        request_timeout_ms=800,
        retry_backoff_ms=20,
        batch_size=1024,
        linger_ms=2,
    )
    await producer.start()
    futures = [await producer.send(topic, value(i), partition=i % 2) for i in range(200)]
    await asyncio.wait_for(asyncio.gather(*futures), 10)
    connections = proxy.connections
    proxy.stall()
    futures += [await producer.send(topic, value(i), partition=i % 2) for i in range(200, 600)]
    # Past request_timeout_ms the stalled connection is given up and a new one opened
    # (it is stalled too, so nothing is answered yet).
    await until(lambda: proxy.connections > connections, 10.0, "a new connection")
    assert not any(f.done() for f in futures[200:])
    proxy.resume()
    futures += [await producer.send(topic, value(i), partition=i % 2) for i in range(600, 800)]
    outcome = await check_fault_outcome(producer, futures, confluent_reader(bootstrap, topic))
    assert len(outcome.acked) == 800
    assert proxy.connections > connections, "the stalled connection was not replaced"
    assert producer.metrics()["record-retry-total"] > 0


async def test_epoch_after_failed_records_on_a_broker_refusing_local_bumps(
    proxied: tuple[FaultProxy, str],
) -> None:
    """Records fail after they were sent (the broker wrote them, its answers never came):
    the producer bumps its epoch as Java's does, the same id and the next epoch. Tansu
    refuses such an epoch (PRODUCER_FENCED, where Kafka accepts it), so the producer
    takes a new producer id instead; the refused batch goes again under it. Nothing is
    lost, doubled or reordered, and later bumps go straight to a new id."""
    proxy, bootstrap = proxied
    topic = await new_topic(bootstrap)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        request_timeout_ms=300,
        delivery_timeout_ms=1000,
        retry_backoff_ms=20,
        linger_ms=2,
    )
    await producer.start()
    idem = producer._sender._idem
    assert idem is not None
    futures = [await producer.send(topic, value(i)) for i in range(100)]
    await asyncio.wait_for(asyncio.gather(*futures), 10)
    first = (idem.producer_id, idem.epoch)
    proxy.stall()  # written by the broker, never answered: they fail, maybe written
    futures += [await producer.send(topic, value(i)) for i in range(100, 200)]
    await asyncio.wait(futures[100:], timeout=10)
    assert all(f.done() and f.exception() is not None for f in futures[100:])
    proxy.resume()
    futures += [await producer.send(topic, value(i)) for i in range(200, 300)]
    await asyncio.wait_for(asyncio.gather(*futures[200:]), 10)
    assert idem.producer_id != first[0], "Tansu took a locally bumped epoch after all?"
    assert not idem.local_bumps, "the refusal was not remembered"
    outcome = await check_fault_outcome(
        producer,
        futures,
        confluent_reader(bootstrap, topic),
        allowed_errors=(KafkaTimeoutError, DeliveryOutcomeUnknownError),
    )
    assert sorted(outcome.acked) == [*range(100), *range(200, 300)]


async def test_producer_id_retries_back_off_exponentially() -> None:
    """A broker that keeps refusing InitProducerId (a retriable error, so the producer
    keeps asking) is asked with waits that double from ``retry_backoff_ms`` up to
    ``retry_backoff_max_ms`` (KIP-580, as Java's), not every ``retry_backoff_ms``: 20 ms,
    40, 80, ... 1 s is about 7 requests in 2.5 s, where a fixed 20 ms wait makes over
    100. A scripted broker: no real one can be made to refuse producer ids on demand."""
    coordinator_not_available = 15  # retriable

    def refuse(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        return answer(req, InitProducerIdResponse(error_code=coordinator_not_available))

    cluster = LogCluster(topics={"t": 1}, hooks={INIT_PRODUCER_ID: refuse})
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address,
            enable_idempotence=True,
            retry_backoff_ms=20,
            retry_backoff_max_ms=1000,
            max_block_ms=2500,
            delivery_timeout_ms=2500,
            request_timeout_ms=2000,
        )
        await producer.start()
        try:
            fut = await producer.send("t", b"v")
            with pytest.raises(KafkaError):
                await fut  # no producer id ever came: the record expires, naming why
        finally:
            await producer.stop(1)
    asked = cluster.counts.get(INIT_PRODUCER_ID, 0)
    assert 3 <= asked <= 15, f"{asked} InitProducerId requests in about 2.5 s"


class KafkaSequenceCheck:
    """Apache Kafka's check of an idempotent batch (``ProducerAppendInfo.checkSequence``),
    per partition and producer id: with no state for the id any first sequence is
    written; a new epoch of an id it knows only from sequence 0; the same epoch only
    from the next sequence. The scripted broker's hooks below answer by it."""

    def __init__(self) -> None:
        self._state: dict[tuple[int, int], tuple[int, int]] = {}  # (partition, id) -> (epoch, last)

    def accepts(self, partition: int, batch: Any) -> bool:
        known = self._state.get((partition, batch.producer_id))
        if known is None:
            return True
        epoch, last = known
        if batch.producer_epoch != epoch:
            return bool(batch.base_sequence == 0)
        return bool(batch.base_sequence == last + 1)

    def answer(
        self, cluster: LogCluster, topic: str, pd: Any, batch: Any
    ) -> PartitionProduceResponse:
        """Write the partition's batch if Kafka would, else OUT_OF_ORDER_SEQUENCE_NUMBER."""
        if not self.accepts(pd.index, batch):
            return PartitionProduceResponse(pd.index, error_code=45)
        last = batch.base_sequence + batch.last_offset_delta
        self._state[pd.index, batch.producer_id] = (batch.producer_epoch, last)
        return PartitionProduceResponse(pd.index, 0, cluster.append(topic, pd))

    def lose(self, partition: int, producer_id: int) -> None:
        self._state.pop((partition, producer_id), None)


FIRST = [value(i) * 100 for i in range(10)]  # acknowledged before the event under test
BURST = [value(i) * 100 for i in range(10, 50)]  # 8 batches of burst_producer's size


def burst_producer(broker: ScriptedBroker, **settings: Any) -> AIOKafkaProducer:
    """A producer whose sends of ``BURST`` fill 1 KiB batches that leave at once
    (no linger), with quick retries and a short delivery timeout."""
    settings.setdefault("delivery_timeout_ms", 3000)
    return AIOKafkaProducer(
        bootstrap_servers=broker.address,
        max_batch_size=1024,
        linger_ms=0,
        retry_backoff_ms=20,
        request_timeout_ms=1000,
        **settings,
    )


async def send_and_settle(
    producer: AIOKafkaProducer, values: list[bytes], context: object, topic: str = "t"
) -> None:
    """Send ``values`` to partition 0 of ``topic`` and wait until every one is delivered
    (``context``, such as what the broker saw, explains a failure)."""
    futures = [await producer.send(topic, v, partition=0) for v in values]
    outcomes = await asyncio.gather(*futures, return_exceptions=True)
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert not failed, f"{len(failed)} of {len(values)} failed, e.g. {failed[0]!r}; {context}"


async def held_then_refused(partition: int) -> PartitionProduceResponse:
    """As a leader that still loads a new log: answered 0.3 s late, with
    NOT_LEADER_OR_FOLLOWER, so that the batches sent meanwhile are already on their way."""
    await asyncio.sleep(0.3)
    return PartitionProduceResponse(partition, error_code=6)


def produce_answer(req: ReceivedRequest, results: list[PartitionProduceResponse]) -> Any:
    (topic,) = req.decode().topic_data
    response = [TopicProduceResponse(name=topic.name, partition_responses=results)]
    return answer(req, ProduceResponse(responses=response))


async def test_a_partition_sends_one_batch_until_the_broker_knows_the_producer() -> None:
    """Kafka writes the first batch it sees from a producer it holds no state for on a
    partition whatever its first sequence number. A topic just created refuses the
    first batch while its leader loads the log (NOT_LEADER_OR_FOLLOWER): had a second
    batch left meanwhile, it would be written first, with sequence N, and the first
    could never follow (OUT_OF_ORDER_SEQUENCE_NUMBER until it expires), as Apache Kafka
    did to a Spark task writing to a topic that its write created. So a partition has
    one batch in flight until the broker acknowledged one of the producer's id. A
    scripted broker: Kafka refuses a new partition's first batch only in a window of
    milliseconds. Its hook answers as Kafka's sequence check does."""
    arrived: list[int] = []  # the base sequences of the batches, as they arrive
    check = KafkaSequenceCheck()
    refused = False

    async def produce(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        nonlocal refused
        results = []
        (topic,) = req.decode().topic_data
        for pd in topic.partition_data:
            batch = MemoryRecords(bytes(pd.records)).next_batch()
            arrived.append(batch.base_sequence)
            if not refused:  # the leader still loads the new partition's log
                refused = True
                results.append(await held_then_refused(pd.index))
            else:
                results.append(check.answer(cluster, topic.name, pd, batch))
        return produce_answer(req, results)

    cluster = LogCluster(topics={"t": 1}, hooks={PRODUCE: produce})
    async with cluster.running() as broker:
        producer = burst_producer(broker)
        await producer.start()
        try:
            await send_and_settle(producer, BURST, arrived)
        finally:
            await producer.stop()
    assert arrived[:2] == [0, 0], arrived  # the refused batch, then its retry
    assert [r.value for r in cluster.records()] == BURST


async def test_a_new_epoch_of_a_known_producer_id_keeps_the_partition_pipelined() -> None:
    """Kafka takes a new epoch of a producer id it knows on a partition only from
    sequence 0, so there a batch of the new epoch that overtakes a refused first one is
    refused too (OUT_OF_ORDER_SEQUENCE_NUMBER) and goes again after it: a new epoch need
    not fall back to one batch in flight. (With transactions v2 every commit or abort
    starts a new epoch.) A scripted broker answering as Kafka's sequence check does: a
    batch of another partition is refused for good (INVALID_RECORD), which makes the
    producer bump its epoch; partition 0's first batch of the new epoch is held 0.3 s,
    then refused (NOT_LEADER_OR_FOLLOWER)."""
    arrived: list[tuple[int, int]] = []  # partition 0's (epoch, base sequence), in order
    check = KafkaSequenceCheck()
    refused = False

    async def produce(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        nonlocal refused
        results = []
        (topic,) = req.decode().topic_data
        for pd in topic.partition_data:
            batch = MemoryRecords(bytes(pd.records)).next_batch()
            if pd.index == 1:
                results.append(PartitionProduceResponse(pd.index, error_code=87))
                continue
            arrived.append((batch.producer_epoch, batch.base_sequence))
            if batch.producer_epoch > 0 and not refused:
                refused = True
                results.append(await held_then_refused(pd.index))
            else:
                results.append(check.answer(cluster, topic.name, pd, batch))
        return produce_answer(req, results)

    cluster = LogCluster(topics={"t": 2}, hooks={PRODUCE: produce})
    async with cluster.running() as broker:
        producer = burst_producer(broker, delivery_timeout_ms=5000)
        await producer.start()
        try:
            await send_and_settle(producer, FIRST, arrived)
            assert arrived and all(epoch == 0 for epoch, _ in arrived), arrived
            with pytest.raises(KafkaError, match=r"INVALID_RECORD|InvalidRecord"):
                await (await producer.send("t", b"refused", partition=1))
            await send_and_settle(producer, BURST, arrived)
        finally:
            await producer.stop()
    new_epoch = [seq for epoch, seq in arrived if epoch > 0]
    assert {epoch for epoch, _ in arrived} == {0, 1}, arrived
    # The refused first batch of the new epoch, then one that left while it was held.
    assert new_epoch[0] == 0 and new_epoch[1] > 0, new_epoch
    assert [r.value for r in cluster.records()] == FIRST + BURST


async def test_a_partition_whose_broker_lost_the_producer_sends_one_batch_again() -> None:
    """A broker that answers UNKNOWN_PRODUCER_ID no longer holds the producer's state
    on that partition, so after the new epoch it writes whatever first sequence comes:
    the partition has one batch in flight again until one is acknowledged, or a batch
    that overtook a refused first one would be written first and the first never after
    it. A scripted broker: a real one loses a producer's state after
    ``producer.id.expiration.ms`` of silence, and Apache Kafka 4.x then writes the batch
    instead of answering UNKNOWN_PRODUCER_ID.
    With ``retries=1`` the record the broker answers so fails for good (a retried one
    would go alone anyway), so the new epoch's first batch is a fresh one."""
    arrived: list[tuple[int, int]] = []  # (epoch, base sequence), in order
    check = KafkaSequenceCheck()
    # 0: healthy; 1: refuse the next batch (NOT_LEADER_OR_FOLLOWER); 2: lose the
    # producer and say so at its retry; 3: hold, then refuse the new epoch's first batch
    stage = 0

    async def produce(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        nonlocal stage
        results = []
        (topic,) = req.decode().topic_data
        for pd in topic.partition_data:
            batch = MemoryRecords(bytes(pd.records)).next_batch()
            arrived.append((batch.producer_epoch, batch.base_sequence))
            if stage == 1:
                stage = 2
                results.append(PartitionProduceResponse(pd.index, error_code=6))
            elif stage == 2:
                stage = 3
                check.lose(pd.index, batch.producer_id)
                results.append(PartitionProduceResponse(pd.index, error_code=59))
            elif stage == 3 and batch.producer_epoch > 0:
                stage = 4
                results.append(await held_then_refused(pd.index))
            else:
                results.append(check.answer(cluster, topic.name, pd, batch))
        return produce_answer(req, results)

    cluster = LogCluster(topics={"t": 1}, hooks={PRODUCE: produce})
    async with cluster.running() as broker:
        producer = burst_producer(broker, retries=1)
        await producer.start()
        try:
            await send_and_settle(producer, FIRST, arrived)
            stage = 1
            with pytest.raises(KafkaError, match=r"UNKNOWN_PRODUCER_ID|UnknownProducerId"):
                await (await producer.send("t", b"lost", partition=0))
            await send_and_settle(producer, BURST, arrived)
        finally:
            await producer.stop()
    new_epoch = [seq for epoch, seq in arrived if epoch > 0]
    assert new_epoch[:2] == [0, 0], new_epoch  # the refused batch, then its retry
    assert [r.value for r in cluster.records()] == FIRST + BURST


async def test_a_topic_deleted_and_created_again_sends_one_batch_again() -> None:
    """A topic deleted and created again has new logs, which know no producer: Kafka
    writes whatever first sequence comes, so once the producer's metadata names the
    topic's new id, its partitions have one batch in flight again until one is
    acknowledged. A scripted broker: Apache Kafka refuses the new partition's first batch
    only in a window of milliseconds; here it is held 0.3 s, then refused."""
    arrived: list[tuple[bool, int]] = []  # (after the new id?, base sequence), in order
    producer_ids: set[int] = set()
    check = KafkaSequenceCheck()
    recreated = refused = False

    async def produce(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        nonlocal refused
        results = []
        (topic,) = req.decode().topic_data
        for pd in topic.partition_data:
            batch = MemoryRecords(bytes(pd.records)).next_batch()
            arrived.append((recreated, batch.base_sequence))
            producer_ids.add(batch.producer_id)
            if recreated and not refused:  # the new leader still loads the new log
                refused = True
                results.append(await held_then_refused(pd.index))
            else:
                results.append(check.answer(cluster, topic.name, pd, batch))
        return produce_answer(req, results)

    cluster = LogCluster(topics={"t": 1}, topic_ids={"t": b"A" * 16}, hooks={PRODUCE: produce})
    async with cluster.running() as broker:
        producer = burst_producer(broker, metadata_max_age_ms=100)
        await producer.start()
        try:
            await send_and_settle(producer, FIRST, arrived)
            # Deleted and created again: a new id, and a log that knows no producer.
            cluster.topic_ids["t"] = b"B" * 16
            (producer_id,) = producer_ids
            check.lose(0, producer_id)
            recreated = True
            asked = cluster.counts[METADATA]
            await until(lambda: cluster.counts[METADATA] >= asked + 2, 5, "a metadata refresh")
            await send_and_settle(producer, BURST, arrived)
        finally:
            await producer.stop()
    after = [seq for new_id, seq in arrived if new_id]
    assert after[:2] == [after[0], after[0]], arrived  # the refused batch, then its retry
    assert [r.value for r in cluster.records()] == FIRST + BURST


def test_the_partitions_a_producer_id_is_known_on_outlive_its_epochs() -> None:
    """``known_partitions`` (the accumulator's one-batch rule) keeps a partition across
    a new epoch of the same producer id, and empties on a new producer id or ``forget``."""
    idem = IdempotenceState()
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    idem.set_producer_id(7, 0)
    idem.acknowledged(tp0, idem.next_sequence(tp0, 3), 3)
    assert tp0 in idem.known_partitions and tp1 not in idem.known_partitions
    idem.set_producer_id(7, 1)
    assert tp0 in idem.known_partitions
    assert idem.next_sequence(tp0, 1) == 0  # the numbering starts again all the same
    idem.forget(tp0)
    assert tp0 not in idem.known_partitions
    idem.acknowledged(tp0, 0, 1)
    idem.acknowledged(tp1, idem.next_sequence(tp1, 1), 1)
    assert set(idem.known_partitions) == {tp0, tp1}
    idem.forget_topic("t")  # deleted and created again
    assert not idem.known_partitions
    idem.acknowledged(tp1, idem.next_sequence(tp1, 1), 1)  # an ack: known again
    assert set(idem.known_partitions) == {tp1}
    idem.set_producer_id(8, 0)
    assert not idem.known_partitions


@pytest.mark.kafka_only("the rule under test is Apache Kafka's own sequence check")
async def test_kafka_takes_a_new_epoch_of_a_known_producer_only_from_sequence_0(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """What the one-batch rule rests on, asked of Apache Kafka with hand-built batches
    (kafka-python's builder, so not ours): from a producer id it holds no state for on a
    partition it writes any first sequence, so there a batch must not overtake the first;
    from a new epoch of an id it knows there, only sequence 0, so a new epoch may keep
    several batches in flight."""
    topic = topic_factory(2)
    client = NetworkClient(ProducerConfig.from_kwargs(bootstrap_servers=bootstrap), lambda: None)
    try:
        await client.bootstrap(10)
        node = next(iter(client.metadata.cluster.nodes))
        ask = InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
        )
        for _ in range(100):  # a fresh node answers COORDINATOR_LOAD_IN_PROGRESS at first
            given = await client.request(node, ask)
            if given.error_code != 14:
                break
            await asyncio.sleep(0.1)
        assert given.error_code == 0, given
        pid, epoch = given.producer_id, given.producer_epoch

        async def produce(partition: int, epoch: int, sequence: int) -> int:
            builder = DefaultRecordBatchBuilder(2, 0, 0, pid, epoch, sequence, 1 << 20)
            builder.append(0, int(time.time() * 1000), None, b"%d/%d" % (epoch, sequence), [])
            data = PartitionProduceData(index=partition, records=bytes(builder.build()))
            request = ProduceRequest(
                acks=-1,
                timeout_ms=10_000,
                topic_data=[TopicProduceData(name=topic, partition_data=[data])],
            )
            response = await client.request(node, request)
            ((answer,),) = [t.partition_responses for t in response.responses]
            return int(answer.error_code)

        assert await produce(0, epoch, 0) == 0
        assert await produce(0, epoch + 1, 5) == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
        assert await produce(0, epoch + 1, 0) == 0
        assert await produce(1, epoch + 1, 5) == 0  # an unknown producer: any sequence
    finally:
        await client.close()
    read = read_all_confluent(bootstrap, topic, expected=3)
    assert sorted((r.partition, r.value) for r in read) == [
        (0, b"%d/0" % epoch),
        (0, b"%d/0" % (epoch + 1)),
        (1, b"%d/5" % (epoch + 1)),
    ]


async def test_a_topic_deleted_and_created_again_takes_the_producers_next_records(
    bootstrap: str, broker_name: str, topic_factory: TopicFactory
) -> None:
    """A topic deleted and created again under the same name while an idempotent
    producer writes to it: the new topic's logs know no producer (Apache Kafka takes its
    next sequence numbers as they come; Tansu refuses any but 0, so the producer starts a
    new epoch). Every record sent after the new topic is in the producer's metadata is
    delivered, exactly once and in order, read back by confluent-kafka."""
    topic = topic_factory(1)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    async with AIOKafkaProducer(
        bootstrap_servers=bootstrap, max_batch_size=1024, linger_ms=0, metadata_max_age_ms=200
    ) as producer:
        for round_ in range(3):
            if round_:
                await asyncio.to_thread(_delete_and_create_again, admin, topic)
                await asyncio.sleep(1)  # past two metadata refreshes
            values = [b"%d-%d" % (round_, i) + b"x" * 200 for i in range(200)]
            await send_and_settle(producer, values, f"{broker_name}, round {round_}", topic)
    read = await asyncio.to_thread(read_all_confluent, bootstrap, topic, 200)
    assert [r.value for r in read] == values  # the last round's records, once, in order


def _delete_and_create_again(admin: AdminClient, topic: str) -> None:
    admin.delete_topics([topic])[topic].result(15)
    deadline = time.monotonic() + 30
    while True:  # Apache Kafka refuses the name until the deletion is done
        try:
            admin.create_topics([CkNewTopic(topic, 1, 1)])[topic].result(15)
            return
        except KafkaException as e:
            if e.args[0].code() == CkError.TOPIC_ALREADY_EXISTS:
                return  # the producer's metadata request created it again (auto-create)
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
