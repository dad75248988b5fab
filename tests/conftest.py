"""Shared fixtures: an embedded Tansu broker and a topic factory.

Tansu (memory storage) starts in ~10 ms, so a per-test broker is cheap; restarts begin EMPTY.
Topics are created with an independent client (confluent-kafka's AdminClient), never ours.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic  # = confluent_kafka.admin.NewTopic, typed here

from aiokafka_lite.embedded import EmbeddedBroker


class TopicFactory(Protocol):
    def __call__(self, partitions: int = 1, *, bootstrap: str | None = None) -> str: ...


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """One broker for the whole session (do not kill/restart it: use ``fresh_broker``)."""
    log = tmp_path_factory.mktemp("broker") / "tansu.log"
    b = EmbeddedBroker(log_path=str(log))
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A private broker for tests that kill/restart it; stopped after the test."""
    b = EmbeddedBroker(log_path=str(tmp_path / "tansu.log"))
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="session")
def bootstrap(broker: EmbeddedBroker) -> str:
    """``"127.0.0.1:PORT"`` of the session broker."""
    return broker.bootstrap_servers


def create_topic(bootstrap: str, partitions: int = 1, *, prefix: str = "t") -> str:
    """Create a uniquely named topic with ``partitions`` partitions; return its name."""
    name = f"{prefix}-{uuid.uuid4().hex}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1)],
        operation_timeout=10,
        request_timeout=10,
    )
    futures[name].result(timeout=15)  # raises KafkaException on failure
    # Tansu can produce to a topic right after CreateTopics returns; still verify the shape.
    topic_md = admin.list_topics(name, timeout=10).topics[name]
    got = len(topic_md.partitions)
    if topic_md.error is not None or got != partitions:
        raise RuntimeError(
            f"created topic {name!r} but metadata says {got} partitions ({topic_md.error})"
        )
    return name


@pytest.fixture
def topic_factory(bootstrap: str) -> TopicFactory:
    """``make(partitions=1, *, bootstrap=None) -> name``: create a fresh uuid-named topic.

    Topics go to the session broker unless ``bootstrap`` is given (e.g.
    ``make(3, bootstrap=fresh_broker.bootstrap_servers)``).
    """
    default_bootstrap = bootstrap

    def make(partitions: int = 1, *, bootstrap: str | None = None) -> str:
        return create_topic(bootstrap or default_bootstrap, partitions)

    return make
