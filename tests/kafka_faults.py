"""What the fault tests on a 3-node Apache Kafka cluster share (tests/test_kafka_faults*.py).

* :func:`fault_cluster`: three KRaft nodes (replication factor 3, ``min.insync.replicas=2``,
  the defaults of :class:`kafka_cluster.KafkaCluster` for three nodes), with shorter broker
  session and replica lag timeouts so that a dead node is noticed in seconds, and topic
  auto-creation off (a deleted topic must stay deleted).
* :class:`Stream`: a task that keeps sending records (value = the record's index, a
  sequence number across the whole stream; keys from a function of it) and keeps every
  future, so a fault can hit while records stream.
* :func:`heal`: every node up, every partition fully replicated again (the state each
  test starts from and leaves behind).
* :func:`read_java`: Java's console consumer (``read_committed``), parsed into records
  that :func:`test_faults_checks.check_log` checks like confluent-kafka's.

Every wait here is on a condition (with a bound), never a fixed sleep: the machine is
shared and its timings vary.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka_cluster import KafkaCluster, missing_reason
from readers import read_all_confluent
from test_faults_checks import Outcome, check_log, value

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import KafkaError

#: Broker settings of the fault cluster (besides KafkaCluster's own 3-node defaults).
SETTINGS = {
    "auto.create.topics.enable": "false",
    # A dead node is fenced by the controller (and its leaderships move) after this.
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
    "replica.lag.time.max.ms": "10000",
    # The coordinator looks for transactions open past their timeout every second (not
    # every 10 s): the timeout case aborts within a second of the timeout.
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}


def fault_cluster(work_dir: Path) -> KafkaCluster:
    return KafkaCluster(work_dir, nodes=3, settings=SETTINGS)


def admin(cluster: KafkaCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap(), "log_level": 0})


def create_topic(
    cluster: KafkaCluster, topic: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    """Create ``topic`` (replication factor 3, topic ``config``) and wait until every
    partition has a leader."""
    client = admin(cluster)  # kept alive until the answer: its futures die with it
    (fut,) = client.create_topics([NewTopic(topic, partitions, 3, config=config or {})]).values()
    fut.result(30)
    wait_for(
        lambda: len(leaders(cluster, topic)) == partitions,
        60,
        f"topic {topic} with {partitions} led partitions",
    )


def add_partitions(cluster: KafkaCluster, topic: str, total: int) -> None:
    """CreatePartitions: grow ``topic`` to ``total`` partitions (confluent-kafka's admin)."""
    client = admin(cluster)
    (fut,) = client.create_partitions([NewPartitions(topic, total)]).values()
    fut.result(30)


def delete_topic(cluster: KafkaCluster, topic: str) -> None:
    client = admin(cluster)
    (fut,) = client.delete_topics([topic]).values()
    fut.result(30)


def leaders(cluster: KafkaCluster, topic: str) -> dict[int, int]:
    """Partition -> leader node of ``topic`` (partitions without a leader left out)."""
    md = admin(cluster).list_topics(topic, timeout=10).topics.get(topic)
    if md is None or md.error is not None:
        return {}
    return {p: pm.leader for p, pm in md.partitions.items() if pm.leader >= 0}


def busiest_leader(cluster: KafkaCluster, topic: str) -> int:
    """The node leading most partitions of ``topic``."""
    counts: dict[int, int] = {}
    for node in leaders(cluster, topic).values():
        counts[node] = counts.get(node, 0) + 1
    return max(counts, key=lambda n: counts[n])


def fully_replicated(cluster: KafkaCluster) -> bool:
    """Every node registered and every partition of every topic led, with 3 in-sync replicas."""
    try:
        md = admin(cluster).list_topics(timeout=5)
    except Exception:  # a node not up yet
        return False
    if len(md.brokers) < len(cluster.nodes):
        return False
    return all(
        pm.leader >= 0 and len(pm.isrs) == len(cluster.nodes)
        for t in md.topics.values()
        for pm in t.partitions.values()
    )


def heal(cluster: KafkaCluster, timeout: float = 90.0) -> None:
    """Start every node that is down; wait until all partitions are fully replicated."""
    for node in cluster.nodes:
        if not node.alive:
            cluster.start_node(node.node_id, wait=False)
    cluster.wait_ready(timeout)
    wait_for(lambda: fully_replicated(cluster), timeout, "every partition back in full ISR")


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting ({timeout} s) for: {what}")
        time.sleep(0.2)


def transaction_coordinator(cluster: KafkaCluster, transactional_id: str) -> int:
    """The node leading the ``__transaction_state`` partition of ``transactional_id``.

    Kafka places a transactional id at ``abs(javaHashCode(id)) % partitions`` of that
    topic; its leader is the coordinator (computed here apart from our producer).
    """
    h = 0
    for ch in transactional_id:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    h = 0 if h == -(1 << 31) else abs(h)
    state = leaders(cluster, "__transaction_state")
    return state[h % len(state)]


def transaction_state(cluster: KafkaCluster, transactional_id: str) -> str | None:
    """The coordinator's state of ``transactional_id`` (``Ongoing``, ``CompleteAbort``, ...),
    as Java's ``kafka-transactions.sh describe`` prints it; None if it has none."""
    proc = cluster.java_tool(
        "org.apache.kafka.tools.TransactionsCommand",
        "--bootstrap-server",
        cluster.bootstrap(),
        "describe",
        "--transactional-id",
        transactional_id,
        timeout=60,
    )
    lines = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    if len(lines) < 2 or "TransactionState" not in lines[0]:
        return None
    return lines[1][lines[0].index("TransactionState")]


def named_cause(exc: BaseException) -> str:
    """The error's message and the chain of its causes, as a user would read them."""
    parts = []
    seen: BaseException | None = exc
    while seen is not None and len(parts) < 5:
        parts.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    return " <- ".join(parts)


@dataclass
class Stream:
    """Keeps sending ``value(i)`` (key ``key_of(i)``) to ``topic`` until :meth:`stop`.

    A ``send()`` that raises (e.g. no metadata for a deleted topic within
    ``max_block_ms``) gets a future failed with that error, so that every record
    index has one future. ``burst`` records are sent between two short pauses.
    """

    producer: AIOKafkaProducer
    topic: str
    key_of: Callable[[int], bytes | None]
    burst: int = 5
    pause: float = 0.01
    futures: list[asyncio.Future[Any]] = field(default_factory=list)
    call_errors: dict[int, BaseException] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None
    _stopping: bool = False

    def start(self) -> Stream:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopping:
            for _ in range(self.burst):
                i = len(self.futures)
                try:
                    fut = await self.producer.send(self.topic, value(i), key=self.key_of(i))
                except KafkaError as exc:
                    fut = loop.create_future()
                    fut.set_exception(exc)
                    fut.exception()  # retrieved: the check reads it from the list
                    self.call_errors[i] = exc
                self.futures.append(fut)
            await asyncio.sleep(self.pause)

    async def stop(self) -> None:
        """Stop sending (the send under way finishes first)."""
        self._stopping = True
        if self._task is not None:
            await asyncio.wait_for(self._task, 60)

    def acked_partitions(self, since: int, which: Callable[[int], bool] | None = None) -> set[int]:
        """Partitions on which a record sent at or after index ``since`` (and, if given,
        ``which(index)``) was acknowledged."""
        return {
            f.result().partition
            for i, f in enumerate(self.futures[since:], since)
            if (which is None or which(i))
            and f.done()
            and not f.cancelled()
            and f.exception() is None
        }

    async def progress(
        self,
        since: int,
        partitions: set[int],
        timeout: float = 60.0,
        which: Callable[[int], bool] | None = None,
    ) -> None:
        """Wait until records sent from ``since`` on (those ``which`` picks, if given) are
        acknowledged on every partition of ``partitions``."""
        deadline = time.monotonic() + timeout
        while not partitions <= self.acked_partitions(since, which):
            if time.monotonic() > deadline:
                missing = sorted(partitions - self.acked_partitions(since, which))
                raise AssertionError(
                    f"no progress on partitions {missing}"
                    f" of {self.topic} within {timeout} s of record {since}"
                )
            await asyncio.sleep(0.1)


@dataclass(frozen=True)
class JavaRecord:
    """One record as Java's console consumer printed it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def read_java(cluster: KafkaCluster, topic: str, idle_ms: int = 20000) -> list[JavaRecord]:
    """Read all of ``topic`` with Java's console consumer, ``read_committed``.

    It subscribes with a fresh group, reads from the beginning, and exits once no record
    came for ``idle_ms`` (that first wait also covers joining the group, whose
    coordinator may have been on a node a fault just killed: 20 s covers its move).
    """
    proc = cluster.java_tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server",
        cluster.bootstrap(),
        "--topic",
        topic,
        "--from-beginning",
        "--timeout-ms",
        str(idle_ms),
        "--isolation-level",
        "read_committed",
        "--property",
        "print.key=true",
        "--property",
        "print.partition=true",
        "--property",
        "print.offset=true",
        timeout=180,
    )
    records = list(parse_console(proc.stdout))
    assert records or "Processed a total of 0 messages" in proc.stderr, proc.stderr[-3000:]
    return sorted(records, key=lambda r: (r.partition, r.offset))


def parse_console(out: str) -> Iterator[JavaRecord]:
    """``Partition:P<TAB>Offset:O<TAB>key<TAB>value`` lines (``null`` for a null key)."""
    for line in out.splitlines():
        if not line.startswith("Partition:"):
            continue
        part, off, key, val = line.split("\t", 3)
        yield JavaRecord(
            partition=int(part.removeprefix("Partition:")),
            offset=int(off.removeprefix("Offset:")),
            key=None if key == "null" else key.encode(),
            value=val.encode(),
        )


# -- fixtures and steps the fault tests share ------------------------------------------

#: the fault test modules' ``pytestmark``. A case's time includes healing what the previous
#: one broke (restarting a killed node and its replicas catching up: over a minute on a
#: busy 2-core machine).
FAULT_MARKS = [
    pytest.mark.slow,
    pytest.mark.xdist_group("apache_kafka_faults"),
    pytest.mark.timeout(240),
]


def module_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """A test module's 3-node cluster (skips without Java or Maven), the body of conftest's
    ``fault_cluster`` fixture; logs stay in its work dir (pytest keeps the last runs'
    temporary directories)."""
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    with fault_cluster(tmp_path_factory.mktemp("kafka-faults")) as c:
        yield c


def keyed(i: int) -> bytes:
    return f"k{i % 24}".encode()


def new_topic(
    cluster: KafkaCluster, partitions: int = 6, config: dict[str, str] | None = None
) -> str:
    topic = f"faults-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, partitions, config)
    return topic


def producer_for(cluster: KafkaCluster, **config: Any) -> AIOKafkaProducer:
    """acks=all and idempotence (the default), a short linger, plus ``config``."""
    options: dict[str, Any] = {"acks": "all", "linger_ms": 5}
    options.update(config)
    return AIOKafkaProducer(bootstrap_servers=cluster.bootstrap(), **options)


async def streaming(
    producer: AIOKafkaProducer, topic: str, key_of: Callable[[int], bytes | None]
) -> Stream:
    """Start a stream on a started ``producer``; return once its first 200 records are acked."""
    stream = Stream(producer, topic, key_of).start()
    while len(stream.futures) < 200:  # noqa: ASYNC110 (the stream task appends)
        await asyncio.sleep(0.05)
    first = stream.futures[:200]
    await asyncio.wait(first, timeout=60)
    pending = sum(not f.done() for f in first)
    assert not pending, (
        f"{pending} of the first 200 records to {topic} not acknowledged within 60 s;"
        f" producer: {producer.metrics() if hasattr(producer, 'metrics') else producer!r}"
    )
    await asyncio.gather(*first)  # a failure among them raises here
    return stream


async def read_back_both(
    cluster: KafkaCluster,
    topic: str,
    outcome: Outcome,
    *,
    key: Callable[[int], bytes | None] | None = None,
) -> list[int]:
    """Read ``topic`` with confluent-kafka and Java's console consumer (both
    ``read_committed``, at once) and check each log against ``outcome``: acknowledged
    records exactly once where acknowledged, failed ones written anyway at most once
    and only if their error allows it, all of them in send order per partition.
    Returns the failed records found written."""
    confluent, java = await asyncio.gather(
        asyncio.to_thread(
            read_all_confluent,
            cluster.bootstrap(),
            topic,
            len(outcome.acked) + len(outcome.failed) + 1,
            60.0,
            {"isolation.level": "read_committed"},
            idle=3.0,
            at_least=len(outcome.acked),
        ),
        asyncio.to_thread(read_java, cluster, topic),
    )
    for log in (confluent, java):
        check_log(log, outcome, key=key)
    values = {int(r.value) for r in confluent if r.value is not None}
    written = sorted(set(outcome.failed) & values)
    print(f"{topic}: {len(confluent)} read; {len(written)} failed records in the log")
    assert [(r.partition, r.offset, r.value) for r in java] == [
        (r.partition, r.offset, r.value) for r in confluent
    ], "Java's console consumer and confluent-kafka read different logs"
    return written
