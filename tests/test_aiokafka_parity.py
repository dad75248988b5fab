"""aiokafka_lite's producer side by side with aiokafka's, on the same broker.

Each test runs one scenario against ``aiokafka.AIOKafkaProducer`` and against
``aiokafka_lite.AIOKafkaProducer`` (the ``impl`` fixture) and asserts the same
observable outcome, so a change in either that breaks code written for aiokafka
shows up here. Records are read back with confluent-kafka, not with either
producer's code.
"""

from __future__ import annotations

import asyncio
import gc
import os
import ssl
import subprocess
import sys
import textwrap
import warnings
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiokafka  # type: ignore[import-untyped]
import aiokafka.errors as ak_errors  # type: ignore[import-untyped]
import pytest
from aiokafka.producer.producer import _missing  # type: ignore[import-untyped]
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTopicPartition
from conftest import TopicFactory
from readers import read_all_confluent
from scripted_cluster import LogCluster

import aiokafka_lite
from aiokafka_lite.errors import ConfigError

IMPLS = {"aiokafka": aiokafka.AIOKafkaProducer, "aiokafka_lite": aiokafka_lite.AIOKafkaProducer}
Factory = Callable[..., Any]


@pytest.fixture(params=list(IMPLS))
def impl(request: pytest.FixtureRequest) -> Factory:
    cls: Factory = IMPLS[request.param]
    return cls


@pytest.fixture
async def make(impl: Factory, bootstrap: str) -> AsyncIterator[Factory]:
    """Build producers of the implementation under test; every one is stopped afterwards."""
    made: list[Any] = []

    def build(**config: Any) -> Any:
        producer = impl(bootstrap_servers=bootstrap, **config)
        made.append(producer)
        return producer

    yield build
    for producer in made:
        await producer.stop()


async def test_frameworks_constructor_arguments_are_accepted(make: Factory) -> None:
    """FastStream's KafkaBroker passes these to ``aiokafka.AIOKafkaProducer`` on every start."""
    producer = make(
        client_id="faststream",
        acks=_missing,  # aiokafka's private "not given" sentinel
        sasl_kerberos_service_name="kafka",
        sasl_kerberos_domain_name=None,
        max_batch_size=16384,
        partitioner=aiokafka.partitioner.DefaultPartitioner(),
    )
    await producer.start()
    assert producer._closed is False  # FastStream reads it
    md = await producer.send_and_wait("parity-ctor", b"v", key=b"k")
    assert md.topic == "parity-ctor" and md.offset >= 0
    await producer.stop()
    assert producer._closed is True


@pytest.mark.parametrize(
    ("argument", "warning"),
    [("api_version", "api_version"), ("loop", "loop")],
)
async def test_deprecated_arguments_warn(impl: Factory, argument: str, warning: str) -> None:
    value = "auto" if argument == "api_version" else asyncio.get_running_loop()
    with pytest.warns(DeprecationWarning, match=warning):
        impl(**{argument: value})


async def test_acks_zero_resolves_to_none(make: Factory, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    producer = make(acks=0)
    await producer.start()
    results = await asyncio.gather(*[await producer.send(topic, b"%d" % i) for i in range(20)])
    assert results == [None] * 20


async def test_create_batch_serializes_and_closes(
    make: Factory, topic_factory: TopicFactory, bootstrap: str
) -> None:
    topic = topic_factory(2)
    producer = make(key_serializer=str.encode, value_serializer=str.encode)
    await producer.start()
    batch = producer.create_batch()
    first = batch.append(key="k0", value="v0", timestamp=None, headers=[("h", b"1")])
    second = batch.append(key="k1", value="v1", timestamp=1_700_000_000_000)
    assert (first.offset, second.offset) == (0, 1)
    assert first.size > 0 and second.timestamp == 1_700_000_000_000
    assert first.crc is None
    assert batch.record_count() == 2
    batch.close()
    assert batch.append(key="k2", value="v2", timestamp=None) is None  # closed
    md = await (await producer.send_batch(batch, topic, partition=None))
    assert md.partition in (0, 1)
    records = read_all_confluent(bootstrap, topic, expected=2)
    assert [(r.key, r.value) for r in records] == [(b"k0", b"v0"), (b"k1", b"v1")]
    assert records[0].headers == [("h", b"1")]


async def test_small_max_request_size(make: Factory, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    producer = make(max_request_size=1000)
    await producer.start()
    assert (await producer.send_and_wait(topic, b"x" * 100)).offset == 0
    with pytest.raises(ak_errors.MessageSizeTooLargeError):
        await producer.send(topic, b"x" * 2000)


def test_unclosed_producer_warns(impl: Factory) -> None:
    """A producer dropped while running gives aiokafka's ResourceWarning."""
    module = "aiokafka" if impl is aiokafka.AIOKafkaProducer else "aiokafka_lite"
    script = textwrap.dedent(
        f"""
        import asyncio, gc, warnings
        from aiokafka_lite.embedded import EmbeddedBroker
        from {module} import AIOKafkaProducer
        warnings.simplefilter("always")

        async def main():
            producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
            await producer.start()  # and never stopped

        with EmbeddedBroker() as broker:
            asyncio.run(main())
            gc.collect()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "always"},
    )
    assert "ResourceWarning: Unclosed AIOKafkaProducer" in done.stderr, done.stderr[-2000:]


def test_gssapi_is_refused_with_a_reason() -> None:
    with pytest.raises(ConfigError, match=r"GSSAPI.*Kerberos is not supported"):
        aiokafka_lite.AIOKafkaProducer(security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI")


def test_no_warning_for_a_producer_never_started() -> None:
    """aiokafka warns for any producer it drops, started or not; one never started holds
    nothing, so aiokafka_lite stays quiet (a deliberate difference)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        producer = aiokafka_lite.AIOKafkaProducer()
        del producer


async def test_a_subclass_overriding_send_is_called(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """Wrapping send() in a subclass (tracing, metrics) works for every kind of producer,
    interceptors and transactions included, and the base class's checks still apply."""
    topic = topic_factory(1)
    seen: list[bytes] = []
    acknowledged: list[int] = []

    class Counting:
        def on_send(self, record: Any) -> Any:
            return record

        def on_acknowledgement(self, metadata: Any, exception: BaseException | None) -> None:
            acknowledged.append(metadata.offset)

    class Traced(aiokafka_lite.AIOKafkaProducer[bytes, bytes]):
        async def send(self, topic: str, value: Any = None, *args: Any, **kw: Any) -> Any:
            seen.append(value)
            return await super().send(topic, value, *args, **kw)

    async with Traced(
        bootstrap_servers=bootstrap, transactional_id=f"t-{topic}", interceptors=[Counting()]
    ) as p:
        with pytest.raises(aiokafka_lite.errors.IllegalStateError, match="begin_transaction"):
            await p.send(topic, b"outside")
        async with p.transaction():
            await (await p.send(topic, b"inside"))
    assert seen == [b"outside", b"inside"]
    assert acknowledged == [0]


async def test_empty_batch_resolves_to_none(make: Factory, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    producer = make()
    await producer.start()
    assert await (await producer.send_batch(producer.create_batch(), topic, partition=0)) is None


async def test_flush_and_start_outside_the_running_state(make: Factory) -> None:
    producer = make()
    await producer.flush()  # before start: nothing to flush
    await producer.start()
    await producer.start()  # a second start does nothing
    assert (await producer.send_and_wait("parity-start", b"v")).offset >= 0
    await producer.stop()
    await producer.flush()  # after stop: nothing to flush
    with pytest.raises(ak_errors.ProducerClosed):
        await producer.send("parity-start", b"late")


async def test_send_offsets_takes_aiokafka_shapes(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """Offsets as ints, ``(offset, metadata)`` tuples or aiokafka's own OffsetAndMetadata,
    and a bad group id refused at the call, as aiokafka's send_offsets_to_transaction."""
    topic = topic_factory(2)
    tp0, tp1 = aiokafka.structs.TopicPartition(topic, 0), aiokafka.structs.TopicPartition(topic, 1)
    async with aiokafka_lite.AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=f"offsets-{topic}"
    ) as p:
        await p.begin_transaction()
        with pytest.raises(ValueError, match="group_id"):
            await p.send_offsets_to_transaction({tp0: 1}, "")
        with pytest.raises(TypeError, match="offset for"):
            await p.send_offsets_to_transaction({tp0: "1"}, "group")
        await p.send_offsets_to_transaction(
            {tp0: (5, "meta"), tp1: aiokafka.structs.OffsetAndMetadata(7, "m")}, "group"
        )
        await p.commit_transaction()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "group", "log_level": 3})
    try:
        committed = await asyncio.to_thread(
            consumer.committed, [CkTopicPartition(topic, 0), CkTopicPartition(topic, 1)], 15
        )
    finally:
        consumer.close()
    # (Offsets only: Tansu keeps no commit metadata; confluent-kafka's consumer reads the
    # metadata of its own commits back empty there too.)
    assert {tp.partition: tp.offset for tp in committed} == {0: 5, 1: 7}


@pytest.mark.parametrize(
    "options",
    [
        {"connections_max_idle_ms": None},  # aiokafka: never close idle connections
        {"request_timeout_ms": 130_000},  # longer than our default delivery_timeout_ms
        {"ssl_context": ssl.create_default_context()},  # ignored with PLAINTEXT
    ],
    ids=["idle-none", "long-request-timeout", "ssl-context-plaintext"],
)
async def test_options_aiokafka_accepts(
    make: Factory, topic_factory: TopicFactory, options: dict[str, Any]
) -> None:
    topic = topic_factory(1)
    producer = make(**options)
    await producer.start()
    assert (await producer.send_and_wait(topic, b"v")).offset == 0


async def test_transactional_producer_is_idempotent_whatever_was_asked(impl: Factory) -> None:
    """FastStream passes enable_idempotence=False along with a transactional_id."""
    producer = impl(transactional_id="t", enable_idempotence=False)
    if impl is aiokafka_lite.AIOKafkaProducer:
        assert producer.config.enable_idempotence
    else:
        assert producer._txn_manager is not None  # aiokafka's, observed


async def test_a_dropped_running_producer_is_collected_and_warns(
    impl: Factory, bootstrap: str, topic_factory: TopicFactory
) -> None:
    """As aiokafka: ``del producer; gc.collect()`` in the running loop collects it with a
    ResourceWarning. aiokafka_lite also tears its runtime down: its pending records fail
    and no task of it is left."""
    topic = topic_factory(1)
    before = asyncio.all_tasks()
    producer = impl(bootstrap_servers=bootstrap, linger_ms=60_000)
    await producer.start()
    pending = await producer.send(topic, b"never sent")  # lingers: not yet sent
    ref = weakref.ref(producer)
    loop = asyncio.get_running_loop()
    handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda loop, context: None)  # aiokafka also reports it there
    try:
        with pytest.warns(ResourceWarning, match="Unclosed AIOKafkaProducer"):  # noqa: PT031
            del producer
            gc.collect()
    finally:
        loop.set_exception_handler(handler)
    assert ref() is None
    if impl is aiokafka_lite.AIOKafkaProducer:
        async with asyncio.timeout(5):
            with pytest.raises(aiokafka_lite.errors.ProducerClosedError, match="dropped"):
                await pending
            while asyncio.all_tasks() - before - {asyncio.current_task()}:  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # (the runtime's tasks end a few iterations later)


async def test_a_topic_that_never_appears_is_unknown_topic_or_partition() -> None:
    """aiokafka raises UnknownTopicOrPartitionError when a topic stays out of metadata;
    ours (a KafkaTimeoutError after max_block_ms, as Java's) is caught by that name too.
    (A scripted broker that refuses to create topics: Tansu creates any topic asked for.)"""
    async with (
        LogCluster().running() as broker,
        aiokafka_lite.AIOKafkaProducer(
            bootstrap_servers=broker.address, max_block_ms=300
        ) as producer,
    ):
        with pytest.raises(ak_errors.UnknownTopicOrPartitionError, match="max_block_ms"):
            await producer.send("never-created", b"x")
        with pytest.raises(aiokafka_lite.errors.KafkaTimeoutError):
            await producer.partitions_for("never-created")
