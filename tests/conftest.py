"""Shared fixtures: the session broker (Tansu and Apache Kafka), a topic factory; how the
suite runs.

Every test that uses ``broker``, ``bootstrap`` or ``topic_factory`` runs against each
broker of :data:`BROKERS`: its id gains ``[tansu]`` or ``[kafka]`` (``-k kafka`` runs the
Apache Kafka half). Tansu (embedded, memory storage) starts in ~10 ms, so a per-test Tansu
broker (``fresh_broker``) is cheap; its restarts begin EMPTY. Apache Kafka is one KRaft node
per worker (``tests/kafka_cluster.py``), started the first time a ``[kafka]`` test needs it
and stopped when the session ends; a failed ``[kafka]`` test's report quotes the tail of its
log, kept whole in the session's temporary directory. Without Java or Maven the ``[kafka]``
tests skip with the reason. A test that needs Tansu itself (it kills or restarts its broker
through ``fresh_broker``, or checks a Tansu-only behaviour) says so with
``@pytest.mark.tansu_only("why")`` and runs on Tansu alone; one that needs what only
Apache Kafka does, ``@pytest.mark.kafka_only("why")``. What Tansu does differently,
found by trying it, is in ``tests/tansu.md``: read it before writing a test against Tansu.
Topics are created with an independent client (confluent-kafka's AdminClient), never ours.

The suite runs in parallel workers (pytest-xdist, ``-n auto`` in pyproject.toml). Each
worker is a session of its own, with its own session brokers on ports the kernel picks,
its own temporary directory (broker logs included), and topics named with uuids, so nothing
is shared between workers. ``-n 0`` runs everything in one process.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from confluent_kafka.cimpl import NewTopic  # = confluent_kafka.admin.NewTopic, typed here
from kafka_cluster import KafkaCluster, missing_reason

from aiokafka_lite.embedded import EmbeddedBroker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from aiokafka_lite.spark import StandaloneCluster

#: The brokers the integration tests run against (the ``broker`` fixture's params).
BROKERS = ("tansu", "kafka")


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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--brokers",
        default=",".join(BROKERS),
        help=f"the session brokers the integration tests run on (default: {','.join(BROKERS)})",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "tansu_only(reason): runs against Tansu alone (the reason says why not Apache Kafka)",
    )
    config.addinivalue_line(
        "markers",
        "kafka_only(reason): runs against Apache Kafka alone (the reason says why not Tansu)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # The session broker is parametrized here rather than in its decorator, so that a
    # tansu_only test gets the Tansu param alone (not a skipped Kafka one).
    only = metafunc.definition.get_closest_marker("tansu_only")
    kafka_only = metafunc.definition.get_closest_marker("kafka_only")
    for mark in (only, kafka_only):
        if mark is not None and not (mark.args and isinstance(mark.args[0], str) and mark.args[0]):
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: {mark.name} needs a reason")
    if "fresh_broker" in metafunc.fixturenames and only is None:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} uses fresh_broker (a Tansu broker of its own): "
            'mark it @pytest.mark.tansu_only("why it cannot run on Apache Kafka")'
        )
    if "broker" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("--brokers").split(",")
        unknown = set(chosen) - set(BROKERS)
        if unknown:
            raise pytest.UsageError(f"--brokers: unknown {sorted(unknown)} (known: {BROKERS})")
        params = [
            b
            for b in BROKERS
            if b in chosen
            and (only is None or b == "tansu")
            and (kafka_only is None or b == "kafka")
        ]
        metafunc.parametrize("broker", params, indirect=True, scope="session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The Spark tests share one standalone cluster, started by a session fixture: in
    # parallel workers, each worker running some would start a cluster of its own. One
    # xdist group sends them all to one worker (with --dist loadgroup, the default here).
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.xdist_group("spark"))
    # A test whose own param picks librdkafka's mock cluster ("mock") does not use the
    # session broker: its [kafka] copy would repeat the [tansu] one.
    repeats = [
        item
        for item in items
        if _params(item).get("broker") == "kafka" and "mock" in _params(item).values()
    ]
    if repeats:
        config.hook.pytest_deselected(items=repeats)
        items[:] = [item for item in items if item not in repeats]


def _params(item: pytest.Item) -> dict[str, object]:
    callspec = getattr(item, "callspec", None)
    return dict(callspec.params) if callspec is not None else {}


# -- Apache Kafka: one node per worker, started on first use, stopped at session end -----

_kafka: KafkaCluster | None = None
_kafka_error: str | None = None


def _kafka_node(tmp_path_factory: pytest.TempPathFactory) -> KafkaCluster:
    """This worker's Apache Kafka node, started the first time a test asks for it.

    It outlives the ``broker`` fixture's param switches (pytest may interleave the params),
    so it starts once per session.
    """
    global _kafka, _kafka_error
    reason = missing_reason()
    if reason is not None:
        pytest.skip(f"Apache Kafka cannot run here: {reason}")
    if _kafka_error is not None:
        pytest.fail(f"Apache Kafka did not start in this session:\n{_kafka_error}")
    if _kafka is None:
        cluster = KafkaCluster(tmp_path_factory.mktemp("kafka"), nodes=1)
        try:
            cluster.start()
        except Exception as e:
            cluster.stop()
            _kafka_error = str(e)
            raise
        _kafka = cluster
    return _kafka


def pytest_sessionfinish(session: pytest.Session) -> None:
    global _kafka
    if _kafka is not None:
        _kafka.stop()  # its directory (server.log, data) stays in the session's tmp dir
        _kafka = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    # A failed [kafka] test's report quotes the tail of the node's log.
    callspec = getattr(item, "callspec", None)
    if (
        report.failed
        and _kafka is not None
        and callspec is not None
        and callspec.params.get("broker") == "kafka"
    ):
        report.sections.append(
            (f"Apache Kafka log (tail; whole: {_kafka.node(1).log})", _kafka.log_tail(1, 60))
        )
    return report


@pytest.fixture(scope="session")
def broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedBroker | KafkaCluster]:
    """The session broker, Tansu or Apache Kafka (do not kill/restart it: ``fresh_broker``).

    Both have ``bootstrap_servers``; anything else is one broker's own, and a test that
    uses it is ``tansu_only``.
    """
    if getattr(request, "param", "tansu") == "kafka":
        yield _kafka_node(tmp_path_factory)  # stopped at session end
        return
    log = tmp_path_factory.mktemp("broker") / "tansu.log"
    with EmbeddedBroker(log_path=str(log)) as b:
        yield b


@pytest.fixture
def broker_name(broker: EmbeddedBroker | KafkaCluster) -> str:
    """``"tansu"`` or ``"kafka"``: which broker this test runs against."""
    return "kafka" if isinstance(broker, KafkaCluster) else "tansu"


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A private Tansu broker for tests that kill/restart it; stopped after the test."""
    with EmbeddedBroker(log_path=str(tmp_path / "tansu.log")) as b:
        yield b


@pytest.fixture(scope="session")
def bootstrap(broker: EmbeddedBroker | KafkaCluster) -> str:
    """``"127.0.0.1:PORT"`` of the session broker (Tansu or Apache Kafka)."""
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
    # Tansu serves a topic as soon as CreateTopics returns. Apache Kafka answers before the
    # topic's metadata reaches its brokers (no leaders yet), and its metadata names a leader
    # a moment before that leader serves the partition (NOT_LEADER_OR_FOLLOWER): wait for
    # every leader, then until every partition answers ListOffsets.
    deadline = time.monotonic() + 15
    while True:
        topic_md = admin.list_topics(name, timeout=10).topics[name]
        got = len(topic_md.partitions)
        leaders = [p.leader for p in topic_md.partitions.values()]
        if topic_md.error is None and got == partitions and all(x >= 0 for x in leaders):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"created topic {name!r} but metadata says {got} partitions, leaders "
                f"{leaders} ({topic_md.error})"
            )
        time.sleep(0.05)
    while True:
        asked = {TopicPartition(name, p): OffsetSpec.latest() for p in range(partitions)}
        try:
            for fut in admin.list_offsets(asked, request_timeout=10).values():
                fut.result(timeout=15)
            return name
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


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


@pytest.fixture(scope="module")
def fault_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """The fault tests' 3-node Apache Kafka cluster (tests/kafka_faults.py), one per module."""
    from kafka_faults import module_cluster

    yield from module_cluster(tmp_path_factory)


@pytest.fixture
def healthy(fault_cluster: KafkaCluster) -> KafkaCluster:
    """:func:`fault_cluster` with every node up and every partition fully in sync."""
    from kafka_faults import heal

    heal(fault_cluster)
    return fault_cluster


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """The Spark tests' standalone cluster (tests/spark_cluster.py; skips without pyspark
    or Java)."""
    from spark_cluster import shared_cluster

    yield from shared_cluster(tmp_path_factory)


@pytest.fixture(scope="session")
def spark(spark_cluster: StandaloneCluster) -> SparkSession:
    """The driver session on :func:`spark_cluster`."""
    from spark_cluster import shared_session

    return shared_session()
