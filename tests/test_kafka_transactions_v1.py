"""Transactions v1 on Apache Kafka 4.1: a cluster formatted without KIP-890's
transactions v2 (``transaction.version=1``, as a cluster upgraded from 3.x may run).

The session's Apache Kafka node runs v2 (``test_transactions.test_transaction_version``);
this one, a node of its own, must get what a v1 broker expects from a v1 client: Produce
no newer than v11 (v12 would ask the broker to add partitions itself), AddPartitionsToTxn
and AddOffsetsToTxn before the records and offsets, EndTxn v4 keeping the epoch. The
versions are read from the requests the producer's connections write; what the
transactions wrote is read back with confluent-kafka's read_committed consumer.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import create_topic
from kafka_cluster import KafkaCluster, missing_reason
from test_transactions import commit_abort_commit
from txnlog import read_confluent

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite._internal.connection import BrokerConnection

pytestmark = [
    pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason())),
    pytest.mark.xdist_group("kafka-txn-v1"),  # one node for the module
]


@pytest.fixture(scope="module")
def kafka_v1(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(
        tmp_path_factory.mktemp("kafka-txn-v1"),
        format_args=["--feature", "transaction.version=1"],
    )
    with cluster:
        yield cluster


async def test_transactions_v1_on_apache_kafka_4(
    kafka_v1: KafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap = kafka_v1.bootstrap_servers
    topic = create_topic(bootstrap, 3)
    group = f"g-{uuid.uuid4().hex}"
    sent: Counter[tuple[str, int]] = Counter()  # (request class, version) written
    original = BrokerConnection.send

    def counting(
        self: BrokerConnection, request: Any, version: int | None = None, **kw: Any
    ) -> Any:
        fut = original(self, request, version, **kw)
        if version is None:
            version = self.version_for(type(request))
        sent[(type(request).__name__, version)] += 1
        return fut

    monkeypatch.setattr(BrokerConnection, "send", counting)
    p: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=f"txn-{uuid.uuid4().hex}", linger_ms=1
    )
    await p.start()
    try:
        txn = p._sender.transactions
        assert txn is not None and txn.v2 is False
        committed, epochs = await commit_abort_commit(p, topic, group, 6)
        assert epochs == [epochs[0]] * 4  # v1: one epoch for every transaction
    finally:
        await p.stop()
    versions = {name: {v for (n, v) in sent if n == name} for name, _ in sent}
    assert versions["ProduceRequest"] == {11}
    assert versions["EndTxnRequest"] == {4}
    assert versions["TxnOffsetCommitRequest"] == {4}
    # One per transaction at least: the coordinator answers CONCURRENT_TRANSACTIONS (retried)
    # while it completes the transaction before.
    assert versions["AddOffsetsToTxnRequest"] == {4}
    assert sent[("AddOffsetsToTxnRequest", 4)] >= 3
    assert sum(c for (n, _), c in sent.items() if n == "AddPartitionsToTxnRequest") >= 3
    seen = await asyncio.to_thread(read_confluent, bootstrap, topic, "read_committed", 12)
    assert sorted(seen) == sorted(committed)


def test_a_v1_cluster_finalizes_transaction_version_1(kafka_v1: KafkaCluster) -> None:
    async def features() -> dict[str, int]:
        host, port = kafka_v1.bootstrap_servers.rsplit(":", 1)
        conn = BrokerConnection(-1, host, int(port), client_id="t", request_timeout_ms=10_000)
        await conn.open(10)
        conn.close()
        await conn.wait_closed()
        return conn.finalized_features

    assert asyncio.run(features()).get("transaction.version") == 1
