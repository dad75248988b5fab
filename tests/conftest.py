"""Shared fixtures: an embedded Tansu broker and a topic factory; how the suite runs.

Tansu (memory storage) starts in ~10 ms, so a per-test broker is cheap; restarts begin EMPTY.
Topics are created with an independent client (confluent-kafka's AdminClient), never ours.

The suite runs in parallel workers (pytest-xdist, ``-n auto`` in pyproject.toml). Each
worker is a session of its own, with its own session ``broker`` on a port the kernel picks,
its own temporary directory (broker log included), and topics named with uuids, so nothing
is shared between workers. ``-n 0`` runs everything in one process.
"""

from __future__ import annotations

import os
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


#: Workers for ``-n auto``: per CPU, and at least, this many. The tests mostly wait (for
#: brokers, backoffs, timeouts; run alone they keep a CPU ~20 % busy), so two workers per
#: CPU keep the CPUs busy without starving the tests that race a timer; fewer than four
#: leaves most of the waiting in line.
WORKERS_PER_CPU = 2
MIN_WORKERS = 4


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown without it
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return max(MIN_WORKERS, WORKERS_PER_CPU * (os.cpu_count() or 1))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The Spark tests share one standalone cluster, started by a session fixture: in
    # parallel workers, each worker running some would start a cluster of its own. One
    # xdist group sends them all to one worker (with --dist loadgroup, the default here).
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.xdist_group("spark"))


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
