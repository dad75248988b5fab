"""KIP-899: when every broker the producer knows is gone, it asks the configured address again.

The configured address is a forwarder (tests/faultproxy.py, no faults) in front of
a Tansu broker, as a DNS name or load balancer in front of a cluster would be. The
broker advertises its own address, so after bootstrapping the producer talks to it
directly and never to the forwarder. Then that broker dies and a new one (another
Tansu, on another port: a replaced cluster) takes its place behind the forwarder.
The only way the producer can find it is by going back to the configured address.

Tansu keeps nothing across processes (memory storage): the topic is created again
on the new broker, and each phase is read back from the broker that took it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from conftest import create_topic
from faultproxy import FaultProxy
from test_faults_checks import check_fault_outcome, check_log, confluent_reader, settle, value

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.embedded import EmbeddedBroker


@pytest.fixture
async def forwarder() -> AsyncIterator[FaultProxy]:
    proxy = await FaultProxy("127.0.0.1", 1).start()
    try:
        yield proxy
    finally:
        await proxy.stop()


@pytest.mark.parametrize(
    ("retry_backoff_ms", "reconnect_backoff_max_ms"),
    [(100, 1000), (400, 100)],
    ids=["defaults", "metadata-backoff-longer-than-reconnect-backoff"],
)
async def test_rebootstraps_when_every_known_broker_is_gone(
    forwarder: FaultProxy, retry_backoff_ms: int, reconnect_backoff_max_ms: int
) -> None:
    old = await EmbeddedBroker().astart()
    new = EmbeddedBroker()
    try:
        forwarder.target = ("127.0.0.1", old.port)
        topic = await asyncio.to_thread(create_topic, old.bootstrap_servers, 2)
        producer = AIOKafkaProducer(
            bootstrap_servers=f"127.0.0.1:{forwarder.port}",
            request_timeout_ms=3000,
            retry_backoff_ms=retry_backoff_ms,
            reconnect_backoff_ms=50,
            reconnect_backoff_max_ms=reconnect_backoff_max_ms,
            linger_ms=2,
        )
        await producer.start()
        try:
            first = [await producer.send(topic, value(i), partition=i % 2) for i in range(100)]
            outcome = await settle(first, 10.0)
            # The producer now knows the broker by its own address, not the forwarder's.
            nodes = producer._client.metadata.cluster.nodes
            assert [(n.host, n.port) for n in nodes.values()] == [("127.0.0.1", old.port)]
            assert not outcome.pending and not outcome.failed, outcome.failed
            check_log(await confluent_reader(old.bootstrap_servers, topic)(outcome), outcome)

            old.kill()  # every known broker is gone; a replacement appears elsewhere
            await new.astart()
            assert new.port != old.port
            await asyncio.to_thread(create_topic_named, new.bootstrap_servers, topic, 2)
            other = await asyncio.to_thread(create_topic, new.bootstrap_servers, 3)
            forwarder.target = ("127.0.0.1", new.port)

            # Only metadata is wanted (no batch waits for a broker, so nothing else
            # makes the producer reconnect): the new broker is still found.
            assert len(await asyncio.wait_for(producer.partitions_for(other), 10)) == 3

            second = [await producer.send(topic, value(i), partition=i % 2) for i in range(300)]
        except BaseException:
            await producer.stop(5)
            raise
        await check_fault_outcome(
            producer, second, confluent_reader(new.bootstrap_servers, topic), within=20.0
        )
        nodes = producer._client.metadata.cluster.nodes
        assert [(n.host, n.port) for n in nodes.values()] == [("127.0.0.1", new.port)]
    finally:
        old.kill()
        await new.astop()


def create_topic_named(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[
        name
    ].result(timeout=15)
