"""Transactions against the session brokers (Apache Kafka 4.1 and the embedded Tansu) and
librdkafka's mock cluster.

What a transaction wrote is checked two ways, both with other clients' code:

* a confluent-kafka consumer with ``isolation.level=read_committed`` must see every
  committed record exactly once;
* the raw log (read with aiokafka's client and record parser, see ``txnlog.py``) must
  hold each transaction's records as transactional batches followed by the
  right COMMIT or ABORT marker, so that Kafka's read_committed rule shows
  committed records once and aborted ones never.

The second check is needed because Tansu and the mock cluster do not filter aborted records
for read_committed consumers: both write the markers but send no ``aborted_transactions``
in Fetch responses (confluent-kafka's own transactional producer shows the same), so
a read_committed consumer there also sees aborted records once their transaction has
ended. (Tansu does keep it from reading an open transaction: see
``test_read_committed_waits_for_the_commit``.) Where a check relies on this, it says so.
Apache Kafka does filter them: there read_committed shows exactly the committed records.
Apache Kafka 4.1 runs KIP-890's transactions v2, Tansu v1: ``test_transaction_version``.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import subprocess
import sys
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTopicPartition
from conftest import TopicFactory
from mockcluster import API_INIT_PRODUCER_ID, API_PRODUCE, MockCluster
from txnlog import ABORT, COMMIT, committed_view, read_confluent, read_log_async

from aiokafka_lite import AIOKafkaProducer, OffsetAndMetadata, TopicPartition
from aiokafka_lite._internal.connection import BrokerConnection
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.errors import (
    ConfigError,
    GroupAuthorizationFailedError,
    IllegalStateError,
    InvalidProducerEpochError,
    KafkaTimeoutError,
    ProducerFencedError,
    TopicAuthorizationFailedError,
    TransactionAbortedError,
    TransactionAbortRequiredError,
    TransactionalIdAuthorizationFailedError,
)

REPO_ROOT = Path(__file__).parent.parent
FENCED = (ProducerFencedError, InvalidProducerEpochError)
API_FIND_COORDINATOR = 10
API_ADD_PARTITIONS_TO_TXN = 24
API_ADD_OFFSETS_TO_TXN = 25
API_END_TXN = 26
API_TXN_OFFSET_COMMIT = 28
ERR_COORDINATOR_LOAD_IN_PROGRESS = 14
ERR_COORDINATOR_NOT_AVAILABLE = 15
ERR_NOT_COORDINATOR = 16
ERR_TOPIC_AUTHORIZATION_FAILED = 29
ERR_GROUP_AUTHORIZATION_FAILED = 30
ERR_CONCURRENT_TRANSACTIONS = 51
ERR_PRODUCER_FENCED = 90
ERR_INVALID_PRODUCER_EPOCH = 47
ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def txn_id() -> str:
    return f"txn-{uuid.uuid4().hex}"


@pytest.fixture
def mock_cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as cluster:
        yield cluster


@pytest.fixture(params=["session", "mock"])
def target(
    request: pytest.FixtureRequest, bootstrap: str, topic_factory: TopicFactory
) -> Iterator[tuple[str, str]]:
    """(bootstrap, 3-partition topic) on the session broker (Tansu or Apache Kafka) or on a
    3-broker mock cluster (run once: the conftest drops its copy under [kafka])."""
    if request.param == "session":
        yield bootstrap, topic_factory(3)
        return
    with MockCluster(brokers=3) as cluster:
        topic = f"t-{uuid.uuid4().hex}"
        cluster.create_topic(topic, partitions=3, replication_factor=3)
        yield cluster.bootstrap_servers, topic


@pytest.fixture
async def producer_factory() -> AsyncIterator[list[AIOKafkaProducer[bytes, bytes]]]:
    made: list[AIOKafkaProducer[bytes, bytes]] = []
    yield made
    for p in made:
        await p.stop(timeout=10)


async def started(
    made: list[AIOKafkaProducer[bytes, bytes]], bootstrap: str, tid: str, **config: Any
) -> AIOKafkaProducer[bytes, bytes]:
    p: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=tid, linger_ms=1, **config
    )
    made.append(p)
    await p.start()
    return p


def on_apache_kafka(request: pytest.FixtureRequest) -> bool:
    """This test's broker is Apache Kafka (not Tansu, not the mock cluster)."""
    params = request.node.callspec.params
    return bool(params.get("broker") == "kafka" and params.get("target", "session") == "session")


async def test_committed_once_aborted_never(
    request: pytest.FixtureRequest,
    target: tuple[str, str],
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
) -> None:
    bootstrap, topic = target
    p = await started(producer_factory, bootstrap, txn_id())
    committed = [f"c{i}".encode() for i in range(30)]
    aborted = [f"a{i}".encode() for i in range(30)]

    p.begin_transaction()
    futs = [await p.send(topic, v, partition=i % 3) for i, v in enumerate(committed[:15])]
    await p.commit_transaction()
    assert all(f.done() and not f.exception() for f in futs)  # commit delivered them all

    p.begin_transaction()
    for i, v in enumerate(aborted[:15]):
        await p.send(topic, v, partition=i % 3)
    await p.flush()  # written to the log, then aborted
    await p.abort_transaction()

    p.begin_transaction()
    unsent = [await p.send(topic, v, partition=i % 3) for i, v in enumerate(aborted[15:])]
    await p.abort_transaction()  # before the sender got to them: never sent
    for f in unsent:
        assert isinstance(f.exception(), TransactionAbortedError)

    async with p.transaction():
        for i, v in enumerate(committed[15:]):
            await p.send(topic, v, partition=i % 3)

    view = committed_view(await read_log_async(bootstrap, topic, 3))
    assert sorted(view.committed) == sorted(committed)  # each exactly once
    assert set(view.aborted) <= set(aborted[:15]) and len(view.aborted) == 15
    assert view.open == []
    assert {t for _, t in view.markers} == {COMMIT, ABORT}

    seen = await asyncio.to_thread(read_confluent, bootstrap, topic, "read_committed", 30)
    for v in committed:
        assert seen.count(v) == 1, v
    if on_apache_kafka(request):
        # Apache Kafka filters aborted batches: exactly the committed records.
        assert sorted(seen) == sorted(committed)
    # Tansu and the mock do not filter aborted batches (see the module docstring), so
    # the flushed-then-aborted records show there too; the never-sent ones cannot.
    assert not set(seen) & set(aborted[15:])
    everything = await asyncio.to_thread(read_confluent, bootstrap, topic, "read_uncommitted", 45)
    assert sorted(everything) == sorted(committed + aborted[:15])


async def test_transaction_context_aborts_on_exception(
    target: tuple[str, str], producer_factory: list[AIOKafkaProducer[bytes, bytes]]
) -> None:
    bootstrap, topic = target
    p = await started(producer_factory, bootstrap, txn_id())
    with pytest.raises(RuntimeError, match="boom"):
        async with p.transaction():
            await p.send_and_wait(topic, b"lost", partition=0)
            raise RuntimeError("boom")
    async with p.transaction():
        await p.send(topic, b"kept", partition=0)
    view = committed_view(await read_log_async(bootstrap, topic, 3))
    assert view.committed == [b"kept"]
    assert view.aborted == [b"lost"]


async def test_send_needs_an_open_transaction(
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
) -> None:
    topic = topic_factory(1)
    p = await started(producer_factory, bootstrap, txn_id())
    with pytest.raises(IllegalStateError, match="begin_transaction"):
        await p.send(topic, b"x")
    with pytest.raises(IllegalStateError, match="begin_transaction"):
        p.try_send(topic, b"x")
    batch = p.create_batch()
    batch.append(value=b"x")
    with pytest.raises(IllegalStateError, match="begin_transaction"):
        await p.send_batch(batch, topic, partition=0)
    with pytest.raises(IllegalStateError, match="begin_transaction"):
        await p.send_many(topic, [(None, b"x")])
    with pytest.raises(IllegalStateError, match="no transaction to commit"):
        await p.commit_transaction()
    p.begin_transaction()
    with pytest.raises(IllegalStateError, match="already in transaction"):
        p.begin_transaction()
    await p.send(topic, b"ok", partition=0)
    many = await p.send_many(topic, [(None, b"m1"), (None, b"m2")], partition=0)
    commit = asyncio.create_task(p.commit_transaction())
    await asyncio.sleep(0)
    with pytest.raises(IllegalStateError, match="is committing"):
        await p.send(topic, b"late", partition=0)  # the transaction is committing
    with pytest.raises(IllegalStateError, match="no transaction to abort"):
        await p.abort_transaction()  # an abort while the commit runs
    await p.commit_transaction()  # a second, concurrent commit joins the first
    assert commit.done() and commit.exception() is None
    assert len(await many) == 2
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == [b"ok", b"m1", b"m2"]


async def test_non_transactional_producer_has_no_transactions(bootstrap: str) -> None:
    p: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(bootstrap_servers=bootstrap)
    async with p:
        with pytest.raises(IllegalStateError, match="transactional_id"):
            p.begin_transaction()


def test_transactional_id_needs_idempotence() -> None:
    # As aiokafka: a transactional producer is idempotent whatever was asked.
    assert AIOKafkaProducer(
        transactional_id="x", enable_idempotence=False
    ).config.enable_idempotence
    with pytest.raises(ConfigError, match="acks"):
        AIOKafkaProducer(transactional_id="x", acks=1)  # not silently non-idempotent


async def test_second_instance_fences_the_first(
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
) -> None:
    """Tansu only: the mock cluster hands a second instance a new producer id and
    fences nobody (confluent-kafka's own producers are not fenced there either)."""
    topic = topic_factory(3)
    tid = txn_id()
    first = await started(producer_factory, bootstrap, tid)
    first.begin_transaction()
    await first.send_and_wait(topic, b"from-first", partition=0)

    second = await started(producer_factory, bootstrap, tid)  # fences `first`
    async with second.transaction():
        await second.send(topic, b"from-second", partition=1)

    # Tansu answers a fenced EndTxn by closing the connection (it logs
    # PRODUCER_FENCED but sends no answer), so the fenced producer learns it
    # from a Produce, which Tansu does answer with PRODUCER_FENCED.
    late = await first.send(topic, b"late", partition=0)
    with pytest.raises(FENCED) as fenced:
        await late
    # Fatal: every later call raises the same error.
    with pytest.raises(type(fenced.value)):
        await first.commit_transaction()
    with pytest.raises(type(fenced.value)):
        first.begin_transaction()
    with pytest.raises(type(fenced.value)):
        await first.send(topic, b"x")
    with pytest.raises(type(fenced.value)):
        await first.abort_transaction()

    view = committed_view(await read_log_async(bootstrap, topic, 3))
    assert view.committed == [b"from-second"]
    assert view.aborted == [b"from-first"]  # the coordinator aborted it when fencing


async def test_fenced_at_commit(
    mock_cluster: MockCluster, producer_factory: list[AIOKafkaProducer[bytes, bytes]]
) -> None:
    """EndTxn answered PRODUCER_FENCED (injected: the mock cluster fences nobody itself)."""
    bootstrap, topic = mock_cluster.bootstrap_servers, "fence"
    mock_cluster.create_topic(topic, partitions=1)
    p = await started(producer_factory, bootstrap, txn_id())
    p.begin_transaction()
    await p.send_and_wait(topic, b"from-first", partition=0)
    mock_cluster.push_errors(API_END_TXN, [ERR_PRODUCER_FENCED])
    with pytest.raises(ProducerFencedError):
        await p.commit_transaction()
    with pytest.raises(ProducerFencedError):
        p.begin_transaction()
    with pytest.raises(ProducerFencedError):
        await p.send(topic, b"x")
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == []


async def test_send_offsets_commit_with_the_transaction(
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
) -> None:
    """Tansu only: the mock cluster answers TxnOffsetCommit but stores nothing
    (confluent-kafka's own send_offsets_to_transaction leaves no offset there either)."""
    topic = topic_factory(3)
    group = f"g-{uuid.uuid4().hex}"
    p = await started(producer_factory, bootstrap, txn_id())
    async with p.transaction():
        await p.send(topic, b"out", partition=0)
        await p.send_offsets_to_transaction(
            {
                TopicPartition(topic, 0): 42,
                TopicPartition(topic, 1): OffsetAndMetadata(7, "meta"),
            },
            group,
        )
    committed = await asyncio.to_thread(committed_offsets, bootstrap, group, topic)
    assert committed == {0: 42, 1: 7, 2: -1001}  # -1001: nothing committed


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
    try:
        tps = [CkTopicPartition(topic, p) for p in range(3)]
        return {tp.partition: tp.offset for tp in consumer.committed(tps, timeout=15)}
    finally:
        consumer.close()


async def test_stop_aborts_an_open_transaction(
    target: tuple[str, str], producer_factory: list[AIOKafkaProducer[bytes, bytes]]
) -> None:
    bootstrap, topic = target
    before = asyncio.all_tasks()
    p = await started(producer_factory, bootstrap, txn_id())
    p.begin_transaction()
    await p.send_and_wait(topic, b"never-committed", partition=2)
    await p.stop()
    assert asyncio.all_tasks() == before  # no task left behind
    view = committed_view(await read_log_async(bootstrap, topic, 3))
    assert view.aborted == [b"never-committed"]
    assert view.committed == []


async def test_coordinator_errors_are_retried(
    mock_cluster: MockCluster,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Coordinator moves and busy coordinators (injected by the mock) delay, never fail.

    (The mock answers an injected FindCoordinator error with a null host, which the
    schema does not allow: that answer is dropped as unparseable and retried too.)
    """
    caplog.set_level(logging.INFO, logger="aiokafka_lite")
    bootstrap, topic = mock_cluster.bootstrap_servers, "retry"
    mock_cluster.create_topic(topic, partitions=2)
    group = f"g-{uuid.uuid4().hex}"
    mock_cluster.push_errors(API_FIND_COORDINATOR, [ERR_COORDINATOR_NOT_AVAILABLE])
    p = await started(producer_factory, bootstrap, txn_id())
    retriable = [
        ERR_NOT_COORDINATOR,
        ERR_COORDINATOR_NOT_AVAILABLE,
        ERR_COORDINATOR_LOAD_IN_PROGRESS,
        ERR_CONCURRENT_TRANSACTIONS,
    ]
    for api in (API_ADD_PARTITIONS_TO_TXN, API_ADD_OFFSETS_TO_TXN, API_END_TXN):
        mock_cluster.push_errors(api, retriable)
    mock_cluster.push_errors(API_TXN_OFFSET_COMMIT, retriable[:3])
    async with p.transaction():
        await p.send(topic, b"v0", partition=0)
        await p.send(topic, b"v1", partition=1)
        await p.send_offsets_to_transaction({TopicPartition(topic, 0): 5}, group)
    view = committed_view(await read_log_async(bootstrap, topic, 2))
    assert sorted(view.committed) == [b"v0", b"v1"]
    # (The mock stores no transactional offsets, so they cannot be read back here.)
    retried = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    for what in ("FindCoordinator", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn"):
        assert any(what in m for m in retried), what
    assert any("TxnOffsetCommit" in m for m in retried)
    for name in ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "CONCURRENT_TRANSACTIONS"):
        assert any(name in m for m in retried), name


async def test_abortable_error_then_abort_then_next_transaction(
    mock_cluster: MockCluster, producer_factory: list[AIOKafkaProducer[bytes, bytes]]
) -> None:
    bootstrap, topic = mock_cluster.bootstrap_servers, "abortable"
    mock_cluster.create_topic(topic, partitions=1)
    p = await started(producer_factory, bootstrap, txn_id())
    p.begin_transaction()
    mock_cluster.push_errors(API_ADD_PARTITIONS_TO_TXN, [ERR_TOPIC_AUTHORIZATION_FAILED])
    fut = await p.send(topic, b"refused", partition=0)
    with pytest.raises(TransactionAbortedError, match="TOPIC_AUTHORIZATION_FAILED"):
        await fut
    with pytest.raises(TransactionAbortRequiredError, match="abort_transaction") as info:
        await p.commit_transaction()
    assert isinstance(info.value.__cause__, TopicAuthorizationFailedError)
    with pytest.raises(TransactionAbortRequiredError):
        await p.send(topic, b"x")
    await p.abort_transaction()
    async with p.transaction():
        await p.send(topic, b"next", partition=0)
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == [b"next"]


async def test_failed_record_spoils_the_transaction(
    mock_cluster: MockCluster, producer_factory: list[AIOKafkaProducer[bytes, bytes]]
) -> None:
    """A Produce error that is not retriable: abort, start a new epoch, carry on."""
    bootstrap, topic = mock_cluster.bootstrap_servers, "spoiled"
    mock_cluster.create_topic(topic, partitions=1)
    p = await started(producer_factory, bootstrap, txn_id())
    async with p.transaction():
        await p.send(topic, b"first", partition=0)
    p.begin_transaction()
    mock_cluster.push_errors(API_PRODUCE, [ERR_TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(TopicAuthorizationFailedError):
        await p.send_and_wait(topic, b"refused", partition=0)
    with pytest.raises(TransactionAbortRequiredError):
        await p.commit_transaction()
    txn = p._sender.transactions
    assert txn is not None
    epoch = txn.idem.epoch
    await p.abort_transaction()
    assert txn.idem.epoch == epoch + 1  # the failed record left a sequence gap
    async with p.transaction():
        await p.send(topic, b"after", partition=0)
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == [b"first", b"after"]


async def test_abort_starts_a_new_epoch_after_a_sequence_gap(
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
) -> None:
    """Tansu has no error injection, so the gap a failed record leaves is simulated by
    raising the flag the sender raises then. Tansu refuses KIP-360's bump (InitProducerId
    naming the current id and epoch) with UNKNOWN_SERVER_ERROR; the plain InitProducerId
    after a confirmed EndTxn(abort) gets the next epoch instead."""
    topic = topic_factory(1)
    p = await started(producer_factory, bootstrap, txn_id())
    async with p.transaction():
        await p.send(topic, b"before", partition=0)
    p.begin_transaction()
    await p.send_and_wait(topic, b"aborted", partition=0)
    txn = p._sender.transactions
    assert txn is not None
    txn.idem.bump_needed = True
    producer_id, epoch = txn.idem.producer_id, txn.idem.epoch
    await p.abort_transaction()
    assert (txn.idem.producer_id, txn.idem.epoch) == (producer_id, epoch + 1)
    async with p.transaction():
        await p.send(topic, b"after", partition=0)
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == [b"before", b"after"]
    assert view.aborted == [b"aborted"]


async def test_start_fails_when_the_transactional_id_is_refused(
    mock_cluster: MockCluster,
) -> None:
    mock_cluster.push_errors(API_INIT_PRODUCER_ID, [ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED])
    p: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(
        bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id=txn_id()
    )
    with pytest.raises(TransactionalIdAuthorizationFailedError):
        await p.start()
    await p.stop()


async def test_read_committed_waits_for_the_commit(
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
) -> None:
    """Tansu keeps a read_committed consumer below an open transaction (its last stable
    offset); the mock cluster does not, so this runs on Tansu only."""
    topic = topic_factory(1)
    p = await started(producer_factory, bootstrap, txn_id())
    p.begin_transaction()
    await p.send_and_wait(topic, b"pending", partition=0)
    early = await asyncio.to_thread(read_confluent, bootstrap, topic, "read_committed", 1, 2.0)
    assert early == []
    uncommitted = await asyncio.to_thread(read_confluent, bootstrap, topic, "read_uncommitted", 1)
    assert uncommitted == [b"pending"]
    await p.commit_transaction()
    late = await asyncio.to_thread(read_confluent, bootstrap, topic, "read_committed", 1)
    assert late == [b"pending"]


async def test_offsets_refused_spoil_the_transaction(
    mock_cluster: MockCluster, producer_factory: list[AIOKafkaProducer[bytes, bytes]]
) -> None:
    bootstrap, topic = mock_cluster.bootstrap_servers, "offsets-refused"
    mock_cluster.create_topic(topic, partitions=1)
    p = await started(producer_factory, bootstrap, txn_id())
    p.begin_transaction()
    await p.send_and_wait(topic, b"lost", partition=0)
    mock_cluster.push_errors(API_TXN_OFFSET_COMMIT, [ERR_GROUP_AUTHORIZATION_FAILED])
    with pytest.raises(GroupAuthorizationFailedError):
        await p.send_offsets_to_transaction({TopicPartition(topic, 0): 1}, "g")
    with pytest.raises(TransactionAbortRequiredError, match="GROUP_AUTHORIZATION_FAILED"):
        await p.commit_transaction()
    await p.abort_transaction()
    with pytest.raises(TypeError, match=r"an int or an \(offset, metadata\) pair"):
        p.begin_transaction()
        await p.send_offsets_to_transaction({TopicPartition(topic, 0): "1"}, "g")  # type: ignore[dict-item]
    await p.commit_transaction()  # the bad call changed nothing
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == [] and view.aborted == [b"lost"]


async def test_commit_that_timed_out_can_be_called_again(
    mock_cluster: MockCluster, producer_factory: list[AIOKafkaProducer[bytes, bytes]]
) -> None:
    bootstrap, topic = mock_cluster.bootstrap_servers, "commit-again"
    mock_cluster.create_topic(topic, partitions=1)
    p = await started(producer_factory, bootstrap, txn_id(), max_block_ms=500)
    p.begin_transaction()
    await p.send(topic, b"v", partition=0)
    mock_cluster.push_errors(API_END_TXN, [ERR_COORDINATOR_LOAD_IN_PROGRESS] * 100)
    with pytest.raises(KafkaTimeoutError, match="EndTxn"):
        await p.commit_transaction()
    with pytest.raises(IllegalStateError, match="committing"):
        await p.send(topic, b"x", partition=0)
    mock_cluster.clear_errors(API_END_TXN)
    await p.commit_transaction()
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == [b"v"]


async def test_commit_waiting_for_its_records_times_out_at_max_block_ms(
    mock_cluster: MockCluster, producer_factory: list[AIOKafkaProducer[bytes, bytes]]
) -> None:
    # The record is retried for ~3 s (injected retriable Produce errors): commit
    # must give up at max_block_ms, as its docstring says, and may be called again.
    bootstrap, topic = mock_cluster.bootstrap_servers, "commit-flush"
    mock_cluster.create_topic(topic, partitions=1)
    p = await started(
        producer_factory,
        bootstrap,
        txn_id(),
        max_block_ms=500,
        retry_backoff_ms=50,
        retry_backoff_max_ms=100,
    )
    p.begin_transaction()
    mock_cluster.push_errors(API_PRODUCE, [ERR_COORDINATOR_LOAD_IN_PROGRESS] * 40)
    fut = await p.send(topic, b"v", partition=0)
    with pytest.raises(KafkaTimeoutError, match="max_block_ms"):
        await p.commit_transaction()
    assert not fut.done()  # still being retried
    mock_cluster.clear_errors(API_PRODUCE)
    await p.commit_transaction()
    assert (await fut).offset == 0
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == [b"v"]


async def test_interceptors_and_transactions(
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
) -> None:
    topic = topic_factory(1)
    seen: list[object] = []

    class Spy:
        def on_send(self, record: Any) -> Any:
            return record

        def on_acknowledgement(self, metadata: Any, exception: BaseException | None) -> None:
            seen.append(exception or metadata.offset)

    p = await started(producer_factory, bootstrap, txn_id(), interceptors=[Spy()])
    with pytest.raises(IllegalStateError, match="begin_transaction"):
        await p.send(topic, b"outside")
    async with p.transaction():
        await p.send(topic, b"inside", partition=0)
    assert seen == [0]


@pytest.mark.tansu_only(
    "the example's fixed topic and group names need an empty broker (fresh_broker)"
)
def test_example_consume_transform_produce(fresh_broker: EmbeddedBroker) -> None:
    bootstrap = fresh_broker.bootstrap_servers
    example = str(REPO_ROOT / "examples" / "transactions.py")
    subprocess.run(
        [sys.executable, example, "--bootstrap-server", bootstrap, "--count", "50"],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=True,
        timeout=60,
        capture_output=True,
    )
    out = read_confluent(bootstrap, "shouted", "read_committed", 50)
    assert sorted(out) == sorted(b"WORD %d" % i for i in range(50))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "shouter", "log_level": 3})
    try:
        [committed] = consumer.committed([CkTopicPartition("words", 0)], timeout=15)
    finally:
        consumer.close()
    assert committed.offset == 50


async def test_stale_epoch_on_produce_is_fatal(
    mock_cluster: MockCluster, producer_factory: list[AIOKafkaProducer[bytes, bytes]]
) -> None:
    """INVALID_PRODUCER_EPOCH on a Produce (injected: the mock checks no epochs there)."""
    bootstrap, topic = mock_cluster.bootstrap_servers, "stale"
    mock_cluster.create_topic(topic, partitions=1)
    p = await started(producer_factory, bootstrap, txn_id())
    p.begin_transaction()
    mock_cluster.push_errors(API_PRODUCE, [ERR_INVALID_PRODUCER_EPOCH])
    # The record's error says what the code means: fenced (a newer producer, or a timeout).
    with pytest.raises(InvalidProducerEpochError, match=r"is fenced: .*another producer"):
        await p.send_and_wait(topic, b"x", partition=0)
    for call in (p.commit_transaction, p.abort_transaction):
        with pytest.raises(InvalidProducerEpochError):
            await call()
    with pytest.raises(InvalidProducerEpochError):
        await p.send(topic, b"y", partition=0)


async def test_begin_transaction_is_awaitable_and_callable(
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
) -> None:
    """aiokafka's ``await producer.begin_transaction()`` and the plain call both begin."""
    topic = topic_factory(1)
    p = await started(producer_factory, bootstrap, txn_id())
    await p.begin_transaction()  # aiokafka's form
    await p.send(topic, b"awaited", partition=0)
    await p.commit_transaction()
    p.begin_transaction()  # not awaited: takes effect at the call
    await p.send(topic, b"called", partition=0)
    await p.commit_transaction()
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == [b"awaited", b"called"]


@pytest.mark.parametrize("ending", ["commit", "abort"])
async def test_cancelled_commit_or_abort_finishes_and_the_producer_stays_usable(
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
    ending: str,
) -> None:
    """A caller's timeout or cancellation does not stop commit/abort half-way (as aiokafka,
    which shields them): the transaction ends as asked, and the next one can begin."""
    topic = topic_factory(1)
    p = await started(producer_factory, bootstrap, txn_id())
    await p.begin_transaction()
    futs = [await p.send(topic, b"first-%d" % i, partition=0) for i in range(20)]
    if ending == "abort":
        await p.flush()  # in the log: the abort needs the coordinator's EndTxn
    end = p.commit_transaction if ending == "commit" else p.abort_transaction
    caller = asyncio.create_task(end())
    await asyncio.sleep(0)
    caller.cancel()  # the caller gives up at once (as a timeout would)
    with pytest.raises(asyncio.CancelledError):
        await caller
    await p.begin_transaction()  # waits for the cancelled one to finish, then begins
    await p.send(topic, b"second", partition=0)
    await p.commit_transaction()
    first = [f.exception() is None for f in futs]
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    if ending == "commit":
        assert all(first)
        assert view.committed == [b"first-%d" % i for i in range(20)] + [b"second"]
    else:
        assert view.committed == [b"second"]
        assert view.aborted == [b"first-%d" % i for i in range(20)]
    assert view.open == []


async def test_cancelled_commit_can_be_awaited_again(
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
) -> None:
    """Calling commit_transaction() again after a cancelled call waits for the same commit."""
    topic = topic_factory(1)
    p = await started(producer_factory, bootstrap, txn_id())
    await p.begin_transaction()
    fut = await p.send(topic, b"x", partition=0)
    task = asyncio.create_task(p.commit_transaction())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await p.commit_transaction()  # joins the running commit instead of failing
    assert (await fut).offset >= 0
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == [b"x"]


async def test_begin_transaction_as_a_task(
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
) -> None:
    """``create_task(producer.begin_transaction())`` works as with aiokafka: run, it begins;
    cancelled before it ran, no transaction is open afterwards."""
    topic = topic_factory(1)
    p = await started(producer_factory, bootstrap, txn_id())
    task = asyncio.create_task(p.begin_transaction())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(IllegalStateError, match="begin_transaction"):
        await p.send(topic, b"outside", partition=0)  # nothing was begun
    await asyncio.create_task(p.begin_transaction())
    await p.send(topic, b"inside", partition=0)
    await asyncio.ensure_future(p.commit_transaction())
    view = committed_view(await read_log_async(bootstrap, topic, 1))
    assert view.committed == [b"inside"]


async def test_begin_transaction_not_awaited_warns_nothing(
    bootstrap: str, producer_factory: list[AIOKafkaProducer[bytes, bytes]]
) -> None:
    p = await started(producer_factory, bootstrap, txn_id())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        p.begin_transaction()
        gc.collect()
    await p.abort_transaction()


async def commit_abort_commit(
    p: AIOKafkaProducer[Any, Any], topic: str, group: str, per_round: int
) -> tuple[list[bytes], list[int]]:
    """Three transactions of ``per_round`` records over partitions 0-2, each also
    committing ``group``'s offset of partition 0 (to its round + 1); the second is aborted
    after a flush (its records are written). Returns the committed values and the producer
    epoch before the first and after each transaction."""
    txn = p._sender.transactions
    assert txn is not None
    epochs = [txn.idem.epoch]
    committed: list[bytes] = []
    for round_ in range(3):
        p.begin_transaction()
        values = [b"r%d-%d" % (round_, i) for i in range(per_round)]
        for i, v in enumerate(values):
            await p.send(topic, v, partition=i % 3)
        await p.send_offsets_to_transaction({TopicPartition(topic, 0): round_ + 1}, group)
        if round_ == 1:
            await p.flush()
            await p.abort_transaction()
        else:
            await p.commit_transaction()
            committed += values
        epochs.append(txn.idem.epoch)
    return committed, epochs


async def test_transaction_version(
    broker_name: str,
    bootstrap: str,
    topic_factory: TopicFactory,
    producer_factory: list[AIOKafkaProducer[bytes, bytes]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Apache Kafka 4.1 finalizes transaction.version 2 (KIP-890): the producer runs
    transactions v2, every EndTxn (v5) gives the next transaction a new epoch, and offsets
    and partitions join a transaction with no AddPartitionsToTxn/AddOffsetsToTxn. Tansu
    runs v1, with one epoch throughout. Either way read_committed readers see exactly the
    committed records where the broker filters aborted ones (Apache Kafka)."""
    topic = topic_factory(3)
    group = f"g-{uuid.uuid4().hex}"
    sent: dict[str, set[int]] = {}  # request class -> the versions written
    original = BrokerConnection.send

    def recording(
        self: BrokerConnection, request: Any, version: int | None = None, **kw: Any
    ) -> Any:
        fut = original(self, request, version, **kw)
        v = version if version is not None else self.version_for(type(request))
        sent.setdefault(type(request).__name__, set()).add(v)
        return fut

    monkeypatch.setattr(BrokerConnection, "send", recording)
    p = await started(producer_factory, bootstrap, txn_id())
    txn = p._sender.transactions
    assert txn is not None
    v2 = broker_name == "kafka"
    assert txn.v2 is v2
    committed, epochs = await commit_abort_commit(p, topic, group, 9)
    if v2:
        assert epochs == [epochs[0] + i for i in range(4)]  # one more per EndTxn
        assert sent["ProduceRequest"] == {12} and sent["EndTxnRequest"] == {5}
        assert sent["TxnOffsetCommitRequest"] == {5}
        assert "AddPartitionsToTxnRequest" not in sent and "AddOffsetsToTxnRequest" not in sent
    else:
        assert epochs == [epochs[0]] * 4
        assert max(sent["ProduceRequest"]) <= 11 and sent["EndTxnRequest"] == {4}
        assert "AddPartitionsToTxnRequest" in sent and "AddOffsetsToTxnRequest" in sent
    seen = await asyncio.to_thread(read_confluent, bootstrap, topic, "read_committed", 18)
    for v in committed:
        assert seen.count(v) == 1, v
    if v2:
        assert sorted(seen) == sorted(committed)
    assert await asyncio.to_thread(committed_offsets, bootstrap, group, topic) == {
        0: 3,  # the aborted transaction's offset (2) never counted
        1: -1001,
        2: -1001,
    }
