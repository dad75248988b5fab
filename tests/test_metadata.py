"""``Cluster`` snapshots, ``Metadata``'s refresh policy, and the client's metadata refresh.

The unit tests drive the real objects with an explicit clock (the ``now`` arguments);
the client tests run the real ``NetworkClient`` against librdkafka's 3-broker mock
cluster (``mockcluster.py``), whose response delay (RTT) keeps requests in flight.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from mockcluster import MockCluster

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite._internal.client import NetworkClient
from aiokafka_lite._internal.cluster import NO_LEADER, Cluster, Node, PartitionInfo
from aiokafka_lite._internal.metadata import Metadata
from aiokafka_lite._internal.protocol.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from aiokafka_lite.config import ProducerConfig, parse_bootstrap
from aiokafka_lite.errors import KafkaConnectionError, KafkaTimeoutError

# -- Cluster -------------------------------------------------------------------------------


def _response() -> MetadataResponse:
    """Three brokers (two with a rack); 'a' has 3 partitions, 'b' 2, 'gone' an error."""

    def part(i: int, leader: int, epoch: int = 4) -> MetadataResponsePartition:
        return MetadataResponsePartition(
            partition_index=i,
            leader_id=leader,
            leader_epoch=epoch,
            replica_nodes=[1, 2, 3],
            isr_nodes=[1, 2],
            offline_replicas=[3],
        )

    return MetadataResponse(
        brokers=[
            MetadataResponseBroker(node_id=1, host="h1", port=9091, rack="rack-a"),
            MetadataResponseBroker(node_id=2, host="h2", port=9092, rack="rack-b"),
            MetadataResponseBroker(node_id=3, host="h3", port=9093, rack=None),
        ],
        cluster_id="cluster-xyz",
        controller_id=2,
        topics=[
            # listed out of order: the snapshot sorts partitions by number
            MetadataResponseTopic(name="a", partitions=[part(2, 1), part(0, 1), part(1, 2)]),
            # partition 1's leader (node 9) is not among the brokers: unknown, as in Java
            MetadataResponseTopic(name="b", partitions=[part(0, NO_LEADER), part(1, 9)]),
            MetadataResponseTopic(name="gone", error_code=3),
        ],
    )


def test_from_metadata_nodes_racks_controller_and_cluster_id() -> None:
    cluster = Cluster.from_metadata(_response())
    assert cluster.nodes == {
        1: Node(1, "h1", 9091, "rack-a"),
        2: Node(2, "h2", 9092, "rack-b"),
        3: Node(3, "h3", 9093, None),
    }
    assert cluster.nodes[1].rack == "rack-a" and cluster.nodes[3].rack is None
    assert cluster.controller == 2
    assert cluster.cluster_id == "cluster-xyz"
    assert cluster.topic_errors == {"gone": 3}


def test_partitions_and_available_partitions_by_topic() -> None:
    cluster = Cluster.from_metadata(_response())
    assert [p.partition for p in cluster.partitions_by_topic["a"]] == [0, 1, 2]
    assert cluster.partitions_by_topic["a"][1] == PartitionInfo(
        "a", 1, 2, 4, (1, 2, 3), (1, 2), (3,)
    )
    assert cluster.available_partitions_by_topic == {"a": (0, 1, 2), "b": ()}
    assert [p.leader for p in cluster.partitions_by_topic["b"]] == [NO_LEADER, NO_LEADER]
    assert "gone" not in cluster.partitions_by_topic
    assert cluster.leader_for("a", 1) == 2 and cluster.leader_for("b", 1) == NO_LEADER


def test_partitions_by_node() -> None:
    cluster = Cluster.from_metadata(_response())
    a = cluster.partitions_by_topic["a"]
    # Node 1 leads a-0 and a-2, node 2 a-1; node 3 leads nothing; b has no leaders.
    assert dict(cluster.partitions_by_node) == {1: (a[0], a[2]), 2: (a[1],)}
    assert cluster.partitions_for_node(1) == (a[0], a[2])
    assert cluster.partitions_for_node(3) == ()
    assert cluster.partitions_for_node(9) == ()  # the leader left out of the brokers
    # Every partition with a leader is under exactly that leader.
    for node_id, parts in cluster.partitions_by_node.items():
        assert all(p.leader == node_id for p in parts)
    led = [p for ps in cluster.partitions_by_topic.values() for p in ps if p.leader != NO_LEADER]
    assert sorted(p for ps in cluster.partitions_by_node.values() for p in ps) == sorted(led)


def test_partitions_by_node_is_built_on_first_use_only_and_read_only() -> None:
    cluster = Cluster.from_metadata(_response())
    # Not built by the constructor (a metadata update pays nothing for it) ...
    assert cluster._partitions_by_node is None
    by_node = cluster.partitions_by_node
    # ... and built once: the same mapping on every later call.
    assert cluster.partitions_by_node is by_node
    with pytest.raises(TypeError):
        by_node[3] = ()  # type: ignore[index]
    assert cluster.partitions_for_node(3) == ()


def test_partitions_by_node_of_a_moved_leader_copy() -> None:
    cluster = Cluster.from_metadata(_response())
    before = dict(cluster.partitions_by_node)
    moved = cluster.with_leader("a", 0, 3, 5, None)
    assert [(p.topic, p.partition) for p in moved.partitions_for_node(3)] == [("a", 0)]
    assert [(p.topic, p.partition) for p in moved.partitions_for_node(1)] == [("a", 2)]
    assert dict(cluster.partitions_by_node) == before  # the old snapshot is unchanged


# -- Metadata: need-update flag, versions, timing, topic expiry -------------------------------

BACKOFF_MS = 100.0
MAX_AGE_MS = 5_000.0
IDLE_MS = 2_000.0


def _metadata() -> Metadata:
    return Metadata(
        Cluster.bootstrap([("h1", 9091)]),
        retry_backoff_ms=BACKOFF_MS,
        retry_backoff_max_ms=BACKOFF_MS * 8,
        max_age_ms=MAX_AGE_MS,
        topic_idle_ms=IDLE_MS,
    )


def _cluster_with(*topics: str) -> Cluster:
    node = Node(1, "h1", 9091)
    return Cluster([node], [PartitionInfo(t, 0, 1, 0, (1,), (1,), ()) for t in topics])


def test_need_update_flag_set_and_cleared() -> None:
    md = _metadata()
    assert md.need_update  # nothing known yet
    md.update(_cluster_with(), now=10.0)
    assert not md.need_update  # no topics in use, and an answer arrived

    assert md.request_update() == md.version
    assert md.need_update
    md.update(_cluster_with(), now=11.0)
    assert not md.need_update

    md.add_topic("t")  # a new topic needs a fetch
    assert md.need_update
    md.update(_cluster_with(), now=12.0)
    assert md.need_update  # the answer did not have it: look again soon
    md.update(_cluster_with("t"), now=13.0)
    assert not md.need_update
    md.add_topic("t")  # a topic already in use asks for nothing
    assert not md.need_update

    md.request_update()
    md.failed_update(KafkaConnectionError("down"))
    assert md.need_update  # a failed attempt clears nothing
    assert isinstance(md.last_error, KafkaConnectionError)
    md.update(_cluster_with("t"), now=14.0)
    assert md.last_error is None and not md.need_update


def test_version_goes_up_with_every_update_and_leader_move() -> None:
    md = _metadata()
    assert md.version == 0
    md.update(_cluster_with("t"), now=1.0)
    assert md.version == 1
    assert md.partitions_by_topic is md.cluster.partitions_by_topic
    md.failed_update(KafkaConnectionError("down"))
    assert md.version == 1  # a failure is no new version
    assert md.move_leader("t", 0, 2, 1, Node(2, "h2", 9092))
    assert md.version == 2 and md.cluster.leader_for("t", 0) == 2
    # A hint with an older epoch than the one we hold changes nothing.
    assert not md.move_leader("t", 0, 1, 0, None)
    assert md.version == 2 and md.cluster.leader_for("t", 0) == 2
    md.update(_cluster_with("t"), now=2.0)
    assert md.version == 3


def test_max_age_makes_a_refresh_due() -> None:
    md = _metadata()
    md.update(_cluster_with(), now=100.0)
    max_age = MAX_AGE_MS / 1000
    assert md.time_to_next_update(100.0) == pytest.approx(max_age)
    assert md.time_to_next_update(100.0 + max_age / 2) == pytest.approx(max_age / 2)
    assert md.time_to_next_update(100.0 + max_age) == 0
    assert md.time_to_next_update(100.0 + 10 * max_age) == 0


def test_retry_backoff_between_refreshes() -> None:
    md = _metadata()
    backoff = BACKOFF_MS / 1000
    md.update(_cluster_with(), now=100.0)
    md.request_update()
    # Wanted, and no attempt for longer than the backoff: due at once.
    assert md.time_to_next_update(100.0) == 0
    md.attempt_started(200.0)
    assert md.time_to_next_update(200.0) == pytest.approx(backoff)
    assert md.time_to_next_update(200.0 + backoff / 2) == pytest.approx(backoff / 2)
    assert md.time_to_next_update(200.0 + backoff) == 0
    # Once an answer clears the flag, the max age rules again, not the backoff.
    md.update(_cluster_with(), now=200.05)
    assert md.time_to_next_update(200.0 + backoff) == pytest.approx(
        200.05 + MAX_AGE_MS / 1000 - (200.0 + backoff)
    )


def test_failed_refreshes_back_off_exponentially_up_to_the_max() -> None:
    """Each failure in a row doubles the wait (+-20% jitter) up to retry_backoff_max_ms;
    an answer puts it back to retry_backoff_ms. (A broker whose metadata answers
    cannot be parsed was otherwise asked again every retry_backoff_ms.)"""
    md = _metadata()
    md.request_update()
    waits = []
    for _ in range(6):
        md.attempt_started(0.0)
        md.failed_update(KafkaConnectionError("down"))
        waits.append(md.time_to_next_update(0.0) * 1000)
    for failures, wait in enumerate(waits, start=1):
        expected = min(BACKOFF_MS * 2**failures, BACKOFF_MS * 8)
        assert 0.8 * expected <= wait <= 1.2 * expected, (failures, waits)
    md.update(_cluster_with(), now=10.0)
    md.request_update()
    md.attempt_started(10.0)
    assert md.time_to_next_update(10.0) == pytest.approx(BACKOFF_MS / 1000)


def test_topics_idle_past_max_idle_are_dropped_from_requests() -> None:
    md = _metadata()
    idle = IDLE_MS / 1000
    md.add_topic("busy")
    md.add_topic("quiet")
    t0 = time.monotonic()
    md.touch("busy", t0)
    md.touch("quiet", t0)
    assert sorted(md.topics_for_request(t0 + idle)) == ["busy", "quiet"]  # not past it yet
    md.touch("busy", t0 + idle)
    assert md.topics_for_request(t0 + idle + 0.5) == ["busy"]
    # Dropped for good: a later request does not bring it back ...
    assert md.topics_for_request(t0 + idle + 0.6) == ["busy"]
    # ... and its next use asks for it again.
    md.update(_cluster_with("busy"), now=t0 + idle + 0.7)
    assert not md.need_update
    md.add_topic("quiet")
    assert md.need_update
    # (add_topic stamps it with the real clock: ask at the real time.)
    assert "quiet" in md.topics_for_request(time.monotonic())


# -- Metadata: the asyncio.Condition waiters ---------------------------------------------------


async def test_waiters_wake_on_a_version_bump() -> None:
    md = _metadata()
    version = md.request_update()
    waiters = [asyncio.create_task(md.wait_for_update(version, 10)) for _ in range(3)]
    await asyncio.sleep(0.01)
    assert not any(w.done() for w in waiters)
    md.update(_cluster_with("t"), now=1.0)
    await asyncio.wait_for(asyncio.gather(*waiters), 10)
    assert md.version == version + 1


async def test_waiter_wakes_on_a_failed_update() -> None:
    md = _metadata()
    version = md.request_update()
    waiter = asyncio.create_task(md.wait_for_update(version, 10))
    await asyncio.sleep(0.01)
    assert not waiter.done()
    md.failed_update(KafkaConnectionError("down"))
    await asyncio.wait_for(waiter, 10)
    assert md.version == version  # woken by the failure, not by a new version


async def test_waiter_returns_at_once_when_the_version_already_passed() -> None:
    md = _metadata()
    version = md.request_update()
    md.update(_cluster_with(), now=1.0)
    await asyncio.wait_for(md.wait_for_update(version, 10), 10)


async def test_waiter_times_out_without_an_update() -> None:
    md = _metadata()
    version = md.request_update()
    with pytest.raises(TimeoutError):
        await md.wait_for_update(version, 0.05)
    assert md.version == version


async def test_a_cancelled_waiter_leaves_the_others_and_later_updates_unharmed() -> None:
    md = _metadata()
    version = md.request_update()
    waiters = [asyncio.create_task(md.wait_for_update(version, 10)) for _ in range(3)]
    await asyncio.sleep(0.01)
    waiters[1].cancel()
    await asyncio.sleep(0.01)
    assert waiters[1].cancelled() and not waiters[0].done() and not waiters[2].done()
    md.update(_cluster_with("t"), now=1.0)  # a cancelled waiter left the lock free
    await asyncio.wait_for(asyncio.gather(waiters[0], waiters[2]), 10)
    # A timed-out waiter leaves nothing behind either: the next one is woken as usual.
    with pytest.raises(TimeoutError):
        await md.wait_for_update(md.version, 0.01)
    waiter = asyncio.create_task(md.wait_for_update(md.version, 10))
    await asyncio.sleep(0.01)
    md.failed_update(KafkaConnectionError("down"))
    await asyncio.wait_for(waiter, 10)


async def test_a_leader_hint_in_a_callback_wakes_the_waiters() -> None:
    # A Produce answer is handled in synchronous code: it notifies all the same.
    md = _metadata()
    md.update(_cluster_with("t"), now=1.0)
    version = md.request_update()
    waiter = asyncio.create_task(md.wait_for_update(version, 10))
    await asyncio.sleep(0.01)
    moved: list[bool] = []
    asyncio.get_running_loop().call_soon(
        lambda: moved.append(md.move_leader("t", 0, 1, 9, Node(1, "h1", 9091)))
    )
    await asyncio.wait_for(waiter, 10)
    assert moved == [True] and md.version == version + 1


async def test_close_wakes_every_waiter_with_its_own_error_and_lets_go_of_the_loop() -> None:
    md = _metadata()
    version = md.request_update()
    waiters = [asyncio.create_task(md.wait_for_update(version, 10)) for _ in range(2)]
    await asyncio.sleep(0.01)
    error = KafkaTimeoutError("closing")
    # stop()'s teardown, or a dropped producer's, closes the waiters in synchronous code.
    asyncio.get_running_loop().call_soon(md.close_waiters, error)
    raised = await asyncio.wait_for(asyncio.gather(*waiters, return_exceptions=True), 10)
    assert all(type(e) is KafkaTimeoutError and e.args == ("closing",) for e in raised)
    assert raised[0] is not raised[1] and error not in raised  # one instance each
    with pytest.raises(KafkaTimeoutError, match="closing"):
        await md.wait_for_update(version, 10)  # later waits fail at once
    assert not _reaches(md, asyncio.get_running_loop())


async def test_a_notifier_inside_a_held_lock_fails_loudly_and_leaves_no_waiter() -> None:
    """The synchronous notify relies on no holder awaiting while it holds the lock; code
    that broke that rule gets an error instead of a hang, and the lock stays usable."""
    md = _metadata()
    condition = md._updated
    async with condition:
        await asyncio.sleep(0)  # holding the lock across an await: the rule broken
        with pytest.raises(RuntimeError, match="held across an await"):
            md.failed_update(KafkaConnectionError("down"))
    version = md.request_update()
    waiter = asyncio.create_task(md.wait_for_update(version, 10))
    await asyncio.sleep(0.01)
    md.update(_cluster_with(), now=1.0)
    await asyncio.wait_for(waiter, 10)


def _reaches(root: object, target: object) -> bool:
    """Whether ``target`` is reachable from ``root`` through instance data (not classes,
    modules or functions, which reach everything)."""
    import gc
    import types

    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    seen, todo = {id(root)}, [root]
    while todo:
        for ref in gc.get_referents(todo.pop()):
            if ref is target:
                return True
            if id(ref) not in seen and not isinstance(ref, skip):
                seen.add(id(ref))
                todo.append(ref)
    return False


# -- NetworkClient: refresh timing and the least-loaded node -----------------------------------


@pytest.fixture
def mock3() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as cluster:
        yield cluster


async def _client(mock: MockCluster, **options: Any) -> NetworkClient:
    config = ProducerConfig(
        bootstrap_servers=mock.bootstrap_servers,
        # Long reconnect backoffs, so that a node that failed stays "backing off"
        # for the whole test however slow the machine.
        reconnect_backoff_ms=60_000,
        reconnect_backoff_max_ms=60_000,
        **options,
    )
    client = NetworkClient(config, lambda: None)
    await client.bootstrap(10)
    return client


async def _until(condition: Any, what: str) -> None:
    """Yield to the loop until ``condition()`` holds (at most 10 s)."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.005)


async def test_least_loaded_node_is_the_connected_one_with_fewest_in_flight(
    mock3: MockCluster,
) -> None:
    client = await _client(mock3)
    pending: list[asyncio.Future[Any]] = []
    try:
        assert sorted(client.metadata.cluster.nodes) == [1, 2, 3]
        # No connection to a cluster node yet: any node not backing off will do.
        assert client.least_loaded_node(time.monotonic()) in {1, 2, 3}
        conns = {n: await client.connect(n) for n in (1, 2, 3)}
        mock3.set_rtt(-1, 20_000)  # every answer from now on is held back 20 s

        def load(node_id: int, requests: int) -> None:
            for _ in range(requests):
                pending.append(conns[node_id].send(MetadataRequest(topics=[])))

        load(1, 2)
        load(2, 1)
        load(3, 3)
        assert {n: c.in_flight for n, c in conns.items()} == {1: 2, 2: 1, 3: 3}
        assert client.least_loaded_node(time.monotonic()) == 2
        load(2, 2)
        assert client.least_loaded_node(time.monotonic()) == 1

        # A due refresh goes to that node.
        version = client.metadata.request_update()
        client.maybe_update_metadata(time.monotonic() + 3600)
        await _until(lambda: conns[1].in_flight == 3, "the refresh request on node 1")
        assert {n: c.in_flight for n, c in conns.items()} == {1: 3, 2: 3, 3: 3}
        assert client.metadata.version == version  # its answer is still held back

        # A closed connection does not count, however idle it looks.
        conns[1].close()
        assert client.least_loaded_node(time.monotonic()) in {2, 3}
    finally:
        mock3.set_rtt(-1, 0)
        await client.close()
        await asyncio.gather(*pending, return_exceptions=True)


async def test_least_loaded_node_falls_back_to_bootstrap_servers(mock3: MockCluster) -> None:
    # KIP-899: with every known node backing off, try the configured addresses again.
    client = await _client(mock3)
    try:
        mock3.broker_down(-1)
        for node_id in (1, 2, 3):
            with pytest.raises(KafkaConnectionError):
                await client.connect(node_id)
        now = time.monotonic()
        assert all(client.backing_off(n, now) for n in (1, 2, 3))
        chosen = client.least_loaded_node(now)
        assert chosen is not None and chosen < 0  # a bootstrap placeholder id
        assert chosen in Cluster.bootstrap([("x", 1)] * 3).nodes
    finally:
        mock3.broker_up(-1)
        await client.close()


async def test_least_loaded_node_prefers_bootstrap_servers_once_known_nodes_failed(
    mock3: MockCluster,
) -> None:
    # KIP-899 when the backoffs are over: every known node failed its last attempt, but
    # may be retried now. Fresh bootstrap servers come before retrying a failed node.
    client = await _client(mock3)
    bootstrap_ids = set(Cluster.bootstrap(parse_bootstrap(mock3.bootstrap_servers)).nodes)
    try:
        mock3.broker_down(-1)
        for node_id in (1, 2, 3):
            with pytest.raises(KafkaConnectionError):
                await client.connect(node_id)
        assert sorted(client.metadata.cluster.nodes) == [1, 2, 3]
        later = time.monotonic() + 3600  # past every 60 s reconnect backoff
        assert not any(client.backing_off(n, later) for n in (1, 2, 3))
        assert all(n in client._failures for n in (1, 2, 3))  # failed: not fresh
        assert not any(n in client._failures for n in bootstrap_ids)
        # random.choice among the fresh ones: ask often, it must never pick a known node.
        chosen = {client.least_loaded_node(later) for _ in range(50)}
        assert chosen <= bootstrap_ids, chosen

        # Once the bootstrap servers failed too, and every backoff is over again, the
        # known nodes are retried first.
        for node_id in sorted(bootstrap_ids):
            with pytest.raises(KafkaConnectionError):
                await client.connect(node_id)
        later = time.monotonic() + 3600
        assert not any(client.backing_off(n, later) for n in {1, 2, 3} | bootstrap_ids)
        chosen = {client.least_loaded_node(later) for _ in range(50)}
        assert chosen <= {1, 2, 3}, chosen
        # While every node is still backing off, there is none to try.
        assert client.least_loaded_node(time.monotonic()) is None
    finally:
        mock3.broker_up(-1)
        await client.close()


async def test_refresh_becomes_due_after_metadata_max_age(mock3: MockCluster) -> None:
    client = await _client(mock3, metadata_max_age_ms=60_000)
    try:
        md = client.metadata
        assert not md.need_update
        version, last = md.version, md.last_success
        # Not due yet: the client says how long until it is, and sends nothing.
        wait = client.maybe_update_metadata(last + 20)
        assert wait == pytest.approx(40)
        await asyncio.sleep(0.05)
        assert md.version == version
        # Due at last_success + max age: the client refreshes by itself.
        client.maybe_update_metadata(last + 60)
        await md.wait_for_update(version, 10)
        assert md.version == version + 1 and md.last_error is None
    finally:
        await client.close()


async def test_retry_backoff_between_metadata_attempts(mock3: MockCluster) -> None:
    # A topic that does not exist (and is not created) keeps the update wanted.
    client = await _client(
        mock3, retry_backoff_ms=2_000, retry_backoff_max_ms=2_000, allow_auto_create_topics=False
    )
    try:
        md = client.metadata
        md.add_topic("not-there")
        t0 = time.monotonic()
        version = md.version
        client.maybe_update_metadata(t0)
        await md.wait_for_update(version, 10)
        assert md.version == version + 1
        assert md.need_update, "the answer lacks the topic: still wanted"
        assert "not-there" not in md.partitions_by_topic
        # The next attempt waits out retry_backoff_ms from the last one.
        assert client.maybe_update_metadata(t0 + 0.5) == pytest.approx(1.5)
        await asyncio.sleep(0.05)
        assert md.version == version + 1
        client.maybe_update_metadata(t0 + 2.0)
        await md.wait_for_update(version + 1, 10)
        assert md.version == version + 2
    finally:
        await client.close()


# -- the producer's send() awaiting a version bump ---------------------------------------------


def no_auto_create(cluster: MockCluster, max_block_ms: int) -> AIOKafkaProducer:
    """A producer whose send() to an unknown topic waits on metadata refreshes (every
    20 ms) for the topic to appear, at most ``max_block_ms``."""
    return AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        allow_auto_create_topics=False,
        retry_backoff_ms=20,
        max_block_ms=max_block_ms,
    )


async def test_send_waits_for_the_metadata_of_a_topic_created_meanwhile(
    mock3: MockCluster,
) -> None:
    async with no_auto_create(mock3, max_block_ms=30_000) as producer:
        metadata = producer._client.metadata
        version = metadata.version
        send = asyncio.create_task(producer.send_and_wait("later", b"v"))
        # The send waits while refreshes come back without the topic ...
        await _until(lambda: metadata.version >= version + 2, "two refreshes")
        assert not send.done()
        mock3.create_topic("later", partitions=2)
        # ... and goes on after the first version that has it.
        md = await asyncio.wait_for(send, 30)
        assert md.topic == "later" and md.partition in (0, 1) and md.offset == 0


async def test_send_for_a_topic_that_never_appears_fails_after_max_block_ms(
    mock3: MockCluster,
) -> None:
    async with no_auto_create(mock3, max_block_ms=300) as producer:
        mock3.create_topic("exists", partitions=1)
        assert await producer.partitions_for("exists") == {0}
        version = producer._client.metadata.version
        with pytest.raises(KafkaTimeoutError, match=r"'never-created'.*300 ms \(max_block_ms\)"):
            await producer.send("never-created", b"v")
        # It waited on refreshes, not on nothing.
        assert producer._client.metadata.version > version
        # The failure was that send's alone: the producer still sends to a known topic.
        assert (await producer.send_and_wait("exists", b"v")).offset == 0


def test_a_topic_deleted_and_created_again_is_reported_once() -> None:
    """``on_topic_recreated`` (the idempotent producer forgets which partitions know it)
    hears of a topic in use whose id changed, also across answers that left it out (the
    topic deleted, not created again yet); an unused topic's id is not kept."""
    md = _metadata()
    recreated: list[str] = []
    md.on_topic_recreated = recreated.append
    md.add_topic("t")
    node = Node(1, "h1", 9091)

    def answer(ids: dict[str, bytes]) -> Cluster:
        parts = [PartitionInfo(t, 0, 1, 0, (1,), (1,), ()) for t in ids]
        return Cluster([node], parts, topic_ids=ids)

    md.update(answer({"t": b"A" * 16, "other": b"O" * 16}), 1.0)
    md.update(answer({"t": b"A" * 16, "other": b"P" * 16}), 2.0)
    assert recreated == []  # same id for t; "other" is not in use
    md.update(answer({}), 3.0)  # deleted
    md.update(answer({"t": b"B" * 16}), 4.0)
    md.update(answer({"t": b"B" * 16}), 5.0)
    assert recreated == ["t"]
