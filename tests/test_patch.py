"""What frameworks built on aiokafka's producer need from ours, beyond its public API.

* Subclasses keep their own attributes on the instance (kstreams' ``Producer`` sets
  ``self.config = kwargs`` before calling ``__init__``): no name that aiokafka's
  producer lacks may be a read-only property on ours.
* Code that kept aiokafka's class from before ``patch_aiokafka()`` is named.
* ``producer.client``: aiokafka's request objects sent through it, as Faust does.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import sys
import types
import uuid
import warnings
from typing import Any

import aiokafka  # type: ignore[import-untyped]
import pytest
from aiokafka.protocol.admin import CreateTopicsRequest  # type: ignore[import-untyped]
from aiokafka.protocol.metadata import MetadataRequest  # type: ignore[import-untyped]
from aiokafka.structs import BrokerMetadata  # type: ignore[import-untyped]
from confluent_kafka.admin import AdminClient
from conftest import TopicFactory
from kafka_cluster import KafkaCluster

import aiokafka_lite
from aiokafka_lite import AiokafkaPatchWarning


def _descriptors(cls: type) -> dict[str, object]:
    """Every descriptor our producer class defines (its own and inherited, not object's)."""
    found: dict[str, object] = {}
    for klass in cls.__mro__[:-1]:
        for name, value in vars(klass).items():
            if hasattr(value, "__get__") and not inspect.isfunction(value):
                found.setdefault(name, value)
    return found


async def test_names_aiokafka_lacks_can_be_set_by_subclasses() -> None:
    theirs = aiokafka.AIOKafkaProducer(bootstrap_servers="localhost:1")
    their_names = set(dir(theirs))
    ours = {
        name: d
        for name, d in _descriptors(aiokafka_lite.AIOKafkaProducer).items()
        if name not in their_names and not isinstance(d, (staticmethod, classmethod))
    }
    assert "config" in ours  # kstreams sets it (client is aiokafka's name too: not listed)

    class Framework(aiokafka_lite.AIOKafkaProducer):  # type: ignore[type-arg]
        def __init__(self, **kwargs: Any) -> None:
            for name in ours:  # before our __init__, as kstreams does with config
                setattr(self, name, f"own {name}")
            super().__init__(**kwargs)

    producer = Framework(bootstrap_servers="localhost:1")
    for name in ours:
        assert getattr(producer, name) == f"own {name}", name
        setattr(producer, name, f"later {name}")
        assert getattr(producer, name) == f"later {name}", name
    # Our own producer's view of them is unchanged, and our code does not read them.
    plain = aiokafka_lite.AIOKafkaProducer(bootstrap_servers="localhost:1")
    assert isinstance(plain.config, aiokafka_lite.ProducerConfig)
    assert producer._config.bootstrap_servers == "localhost:1"


def test_kstreams_style_subclass_keeps_its_config() -> None:
    class Producer(aiokafka_lite.AIOKafkaProducer):  # type: ignore[type-arg]
        def __init__(self, **kwargs: Any) -> None:
            self.config = kwargs  # type: ignore[assignment]
            super().__init__(**self.config)  # type: ignore[arg-type]

    producer = Producer(bootstrap_servers="localhost:1", linger_ms=7)
    assert producer.config == {"bootstrap_servers": "localhost:1", "linger_ms": 7}
    assert producer._config.linger_ms == 7


async def test_patch_names_code_that_kept_aiokafkas_class() -> None:
    """A module that imported aiokafka's class, and a subclass of it, both made before the
    patch: named by patch_aiokafka(); building them while patched warns; undo() ends it."""
    name = f"user_app_{uuid.uuid4().hex}"
    module = types.ModuleType(name)
    exec(  # a real module, defined as a user's would be
        "from aiokafka import AIOKafkaProducer\nclass AppProducer(AIOKafkaProducer):\n    pass\n",
        module.__dict__,
    )
    sys.modules[name] = module
    try:
        with pytest.warns(AiokafkaPatchWarning) as caught:
            patch = aiokafka_lite.patch_aiokafka()
        message = str(caught[0].message)
        assert f"{name}.AIOKafkaProducer" in message
        assert f"{name}.AppProducer (a subclass)" in message
        assert "before importing that code" in message
        with patch:
            assert aiokafka.AIOKafkaProducer is aiokafka_lite.AIOKafkaProducer
            with pytest.warns(AiokafkaPatchWarning, match=f"{name}.AppProducer is built on"):
                stale = module.AppProducer(bootstrap_servers="localhost:1")
            assert isinstance(stale, module.AIOKafkaProducer)  # aiokafka's, and it works
            assert stale.client._client_id.startswith("aiokafka-producer-")
        with warnings.catch_warnings():
            warnings.simplefilter("error", AiokafkaPatchWarning)
            again = module.AppProducer(bootstrap_servers="localhost:1")  # undone: no warning
        assert aiokafka.AIOKafkaProducer is module.AIOKafkaProducer
        del stale, again
    finally:
        del sys.modules[name]
        module.__dict__.clear()
        del module
        gc.collect()  # the subclass leaves aiokafka's __subclasses__() (other tests patch)
    assert all(c.__module__ != name for c in aiokafka.AIOKafkaProducer.__subclasses__())


async def test_client_sends_aiokafka_requests(bootstrap: str, topic_factory: TopicFactory) -> None:
    """Faust's use of producer.client: cluster, aiokafka's MetadataRequest and
    CreateTopicsRequest through send(), force_metadata_update(); closed by stop()."""
    topic = topic_factory(2)
    created = f"created-{uuid.uuid4().hex}"
    producer = aiokafka_lite.AIOKafkaProducer(bootstrap_servers=bootstrap)
    async with producer:
        client = producer.client
        assert client is producer.client  # one view per producer
        host, port = bootstrap.rsplit(":", 1)
        brokers = client.cluster.brokers()
        assert [(b.host, b.port) for b in brokers] == [(host, int(port))]
        assert all(isinstance(b, BrokerMetadata) for b in brokers)
        node_id = next(iter(brokers)).nodeId

        await producer.send_and_wait(topic, b"v")
        assert topic in client.cluster.topics()
        assert client.cluster.partitions_for_topic(topic) == {0, 1}

        metadata = await client.send(node_id, MetadataRequest([]))
        assert metadata.controller_id == node_id
        response = await client.send(
            node_id, CreateTopicsRequest([(created, 3, 1, [], [])], 10_000, False)
        )
        assert [(t[0], t[1]) for t in response.topic_errors] == [(created, 0)]
        assert await client.force_metadata_update()
        opened = client._aiokafka
        assert opened is not None
    assert client._aiokafka is None  # closed by stop(): its connections too
    assert opened._conns and not any(c.connected() for c in opened._conns.values())
    with pytest.raises(aiokafka_lite.errors.ProducerClosedError):
        await client.send(node_id, MetadataRequest([]))  # would open what nothing closes
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(created, timeout=10)
    assert len(md.topics[created].partitions) == 3
    await asyncio.sleep(0)


async def test_client_add_topic_tracks_a_topic(
    broker: object, bootstrap: str, topic_factory: TopicFactory
) -> None:
    """aiokafka's client.add_topic (aiokafka's own test helper wait_topic calls it, not
    awaited, then force_metadata_update): the topic joins the producer's metadata; its
    future says whether a refresh came, at once True for a known topic."""
    topic = topic_factory(2)
    async with aiokafka_lite.AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        client = producer.client
        if isinstance(broker, KafkaCluster):  # Tansu answers every topic to an empty list
            assert topic not in client.cluster.topics()
        added = client.add_topic(topic)
        assert isinstance(added, asyncio.Future)
        assert await added is True
        assert topic in client.cluster.topics()
        assert client.cluster.partitions_for_topic(topic) == {0, 1}
        again = client.add_topic(topic)
        assert again.done() and again.result() is True
        # Still tracked by later refreshes (as aiokafka's client keeps its topic set).
        assert await client.force_metadata_update()
        assert client.cluster.partitions_for_topic(topic) == {0, 1}
        # Not awaited, then stop(): nothing left running, no exception nobody retrieves.
        pending = client.add_topic(f"later-{uuid.uuid4().hex}")
    assert pending.done()
    assert pending.cancelled() or pending.exception() is None
    assert asyncio.all_tasks() == {asyncio.current_task()}
    with pytest.raises(aiokafka_lite.errors.ProducerClosedError):
        client.add_topic(topic)


async def test_client_before_start_knows_nothing() -> None:
    producer = aiokafka_lite.AIOKafkaProducer(bootstrap_servers="localhost:1")
    assert producer.client.cluster.brokers() == set()
    assert producer.client.cluster.topics() == set()
    assert await producer.client.force_metadata_update() is False
    with pytest.raises(aiokafka_lite.errors.ProducerNotStartedError):
        await producer.client.send(0, MetadataRequest([]))
    with pytest.raises(aiokafka_lite.errors.ProducerNotStartedError):
        producer.client.add_topic("t")


async def test_partition_is_where_send_puts_the_key(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """aiokafka's private _partition, as Faust's Producer.key_partition calls it; and
    _partitioner, _key_serializer, _metadata.partitions_for_topic, as kstreams uses them."""
    topic = topic_factory(3)
    async with aiokafka_lite.AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        unknown = f"never-{uuid.uuid4().hex}"  # never sent to nor asked about
        with pytest.raises(aiokafka_lite.errors.UnknownTopicOrPartitionError, match=unknown):
            producer._partition(unknown, None, None, None, b"k", None)
        assert await producer.partitions_for(topic) == {0, 1, 2}
        for key in (b"a", b"b", b"customer-7", b""):
            md = await producer.send_and_wait(topic, b"v", key=key)
            assert producer._partition(topic, None, None, None, key, None) == md.partition
            # kstreams' send_many places records itself, with aiokafka's attributes:
            assert producer._partitioner(key, [0, 1, 2], [0, 1, 2]) == md.partition
        assert producer._metadata.partitions_for_topic(topic) == {0, 1, 2}
        assert producer._metadata.available_partitions_for_topic(topic) == {0, 1, 2}
        assert producer._metadata.partitions_for_topic(unknown) is None
        assert producer._partitioner(None, [0, 1, 2], [1]) == 1  # keyless: an available one
        assert producer._key_serializer is None
        assert producer._partition(topic, 2, None, None, b"a", None) == 2
        with pytest.raises(ValueError, match="partition"):
            producer._partition(topic, 3, None, None, b"a", None)
    with pytest.raises(aiokafka_lite.errors.ProducerClosedError):
        producer._partition(topic, None, None, None, b"a", None)


async def test_client_send_racing_stop_leaves_nothing_open(bootstrap: str) -> None:
    """stop() while producer.client's first send() is still connecting aiokafka's client:
    the send fails or completes, and no task or connection of that client outlives stop()."""
    for delay in (0, 1, 3, 10):  # stop at different points of the send's bootstrap
        producer = aiokafka_lite.AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        node_id = next(iter(producer.client.cluster.brokers())).nodeId
        sending = asyncio.create_task(producer.client.send(node_id, MetadataRequest([])))
        for _ in range(delay):
            await asyncio.sleep(0)
        await producer.stop()
        with contextlib.suppress(aiokafka_lite.errors.ProducerClosedError):
            await sending  # refused, or answered before stop() closed the client
        assert producer.client._aiokafka is None
        await asyncio.sleep(0.05)  # aiokafka's closed connections finish closing
        assert asyncio.all_tasks() == {asyncio.current_task()}, delay
