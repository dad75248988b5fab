"""Every config value is bounded by what carries it: a protocol field or Java's type.

Where a value goes on the wire: ``request_timeout_ms`` is Produce's int32
``timeout_ms``; ``transaction_timeout_ms`` is InitProducerId's int32;
``max_request_size`` bounds a request frame, whose size prefix is an int32;
``client_id`` (every request header) and ``transactional_id`` (Produce,
InitProducerId, the transaction requests) are int16-length strings of UTF-8.
The rest never reach the wire and are bounded as Java declares them: ``int``
(``delivery_timeout_ms``, ``retries``, ``max_in_flight_requests_per_connection``)
or ``long`` (the other durations, ``buffer_memory``).

A value past its bound is a ConfigError naming the field, at construction; the
largest value accepted still works end to end (a record sent through a scripted
broker whose log is parsed by kafka-python's reader).
"""

from __future__ import annotations

from typing import Any

import pytest
from invariants import Watch
from scripted_cluster import LogCluster

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.config import ProducerConfig
from aiokafka_lite.errors import ConfigError

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Enough room for any duration the others must fit under.
ROOMY = {"delivery_timeout_ms": INT32_MAX, "linger_ms": 0}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({**ROOMY, "request_timeout_ms": INT32_MAX + 1}, "request_timeout_ms"),
        ({"delivery_timeout_ms": INT32_MAX + 1}, "delivery_timeout_ms"),
        ({"transaction_timeout_ms": INT32_MAX + 1}, "transaction_timeout_ms"),
        ({"retries": INT32_MAX + 1}, "retries"),
        (
            {"enable_idempotence": False, "max_in_flight_requests_per_connection": INT32_MAX + 1},
            "max_in_flight_requests_per_connection",
        ),
        ({"max_request_size": INT32_MAX + 1}, "max_request_size"),
        ({"batch_size": 2**30 + 1}, "batch_size"),
        ({"buffer_memory": INT64_MAX + 1}, "buffer_memory"),
        ({"max_block_ms": INT64_MAX + 1}, "max_block_ms"),
        ({"linger_ms": float(INT64_MAX) * 2}, "linger_ms"),
        ({"retry_backoff_ms": INT64_MAX + 1, "retry_backoff_max_ms": INT64_MAX + 1}, "retry_"),
        ({"reconnect_backoff_max_ms": INT64_MAX + 1}, "reconnect_backoff_max_ms"),
        ({"metadata_max_age_ms": INT64_MAX + 1}, "metadata_max_age_ms"),
        ({"metadata_max_idle_ms": INT64_MAX + 1}, "metadata_max_idle_ms"),
        ({"connections_max_idle_ms": INT64_MAX + 1}, "connections_max_idle_ms"),
        (
            {"socket_connection_setup_timeout_ms": INT64_MAX + 1},
            "socket_connection_setup_timeout_ms",
        ),
        ({"client_id": "\ud800"}, "client_id"),
        ({"client_id": "x" * 32768}, "client_id"),
        ({"client_id": "é" * 16384}, "client_id"),  # 32768 bytes of UTF-8
        ({"transactional_id": "\ud800"}, "transactional_id"),
        ({"transactional_id": "x" * 32768}, "transactional_id"),
    ],
    ids=lambda v: next(iter(v)) if isinstance(v, dict) else None,
)
def test_a_value_past_its_bound_is_refused_naming_the_field(
    kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError) as info:
        ProducerConfig.from_kwargs(**kwargs)
    assert field in str(info.value), str(info.value)


def test_java_long_max_is_accepted_where_java_takes_a_long() -> None:
    """``max.block.ms=9223372036854775807`` ("block for ever") from a Java config works."""
    cfg = ProducerConfig.from_kwargs(**{"max.block.ms": str(INT64_MAX)})
    assert cfg.max_block_ms == INT64_MAX


async def test_the_largest_accepted_values_work_on_the_wire() -> None:
    """Each wire-bound field at its largest accepted value: the record is delivered."""
    cluster = LogCluster()
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address,
            request_timeout_ms=INT32_MAX,
            delivery_timeout_ms=INT32_MAX,
            linger_ms=0,
            max_request_size=INT32_MAX,
            retries=INT32_MAX,
            max_block_ms=INT64_MAX,
            buffer_memory=INT64_MAX,
            client_id="é" * 16383 + "x",  # 32767 bytes
        )
        await producer.start()
        fut = await producer.send("t", b"v", partition=1)
        md = await fut
        await watch.stop_and_check(producer, [fut], stop_timeout=2)
    assert md.partition == 1 and md.offset == 0
    assert [r.value for r in cluster.records()] == [b"v"]
    (produce,) = broker.requests_for(0)
    assert produce.decode().timeout_ms == INT32_MAX
    assert produce.client_id == "é" * 16383 + "x"


async def test_the_smallest_buffer_memory_still_sends(bootstrap: str, topic_factory: Any) -> None:
    """At the smallest buffer_memory the config accepts, small records go through both
    send() and send_many() (each counts its bookkeeping too, whichever build is in use);
    below it, the config says so."""
    with pytest.raises(ConfigError, match="buffer_memory"):
        AIOKafkaProducer(bootstrap_servers=bootstrap, buffer_memory=4095)
    topic = topic_factory(1)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, buffer_memory=4096) as producer:
        assert (await producer.send_and_wait(topic, b"x", key=b"k")).offset == 0
        report = await (await producer.send_many(topic, [(b"k", b"y"), (None, b"z")]))
        assert [md.offset for md in report] == [1, 2]
