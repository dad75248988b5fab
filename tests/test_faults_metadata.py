"""Lagging metadata: an older Metadata answer must not undo a newer leader (leader epochs).

Unit tests of ``Metadata.update`` (pure: snapshots in, snapshot out). A lagging
Metadata answer cannot be had from the mock cluster or Tansu (both answer from
one up-to-date state), so the answers are built here; the leader move itself is
what a KIP-951 hint in a Produce response does (``Metadata.move_leader``), which
test_mockcluster.py shows against the mock cluster.
"""

from __future__ import annotations

import asyncio

from aiokafka_lite._internal.cluster import NO_LEADER, Cluster, Node, PartitionInfo
from aiokafka_lite._internal.metadata import Metadata

N1, N2, N3 = Node(1, "h1", 9091), Node(2, "h2", 9092), Node(3, "h3", 9093)
ID_A, ID_B = b"\x01" * 16, b"\x02" * 16


def part(p: int, leader: int, epoch: int, topic: str = "t") -> PartitionInfo:
    return PartitionInfo(topic, p, leader, epoch, (1, 2, 3), (1, 2, 3), ())


def snapshot(
    *parts: PartitionInfo, nodes: tuple[Node, ...] = (N1, N2, N3), topic_id: bytes | None = ID_A
) -> Cluster:
    ids = {p.topic: topic_id for p in parts} if topic_id is not None else {}
    return Cluster(nodes, parts, cluster_id="c", controller=1, topic_ids=ids)


def metadata(cluster: Cluster) -> Metadata:
    md = Metadata(
        Cluster.bootstrap([("h1", 9091)]),
        retry_backoff_ms=100,
        retry_backoff_max_ms=1000,
        max_age_ms=1000,
        topic_idle_ms=1e6,
    )
    md.update(cluster, 0.0)
    return md


def leaders(md: Metadata, topic: str = "t") -> list[tuple[int, int]]:
    return [(p.leader, p.leader_epoch) for p in md.partitions_by_topic[topic]]


async def test_a_lagging_answer_does_not_undo_a_kip951_hint() -> None:
    md = metadata(snapshot(part(0, 1, 5), part(1, 2, 7)))
    assert md.move_leader("t", 0, 3, 6, None)  # a Produce answer: partition 0 moved to 3
    # A broker that has not heard of the move yet still says leader 1 at epoch 5.
    md.update(snapshot(part(0, 1, 5), part(1, 2, 7)), 1.0)
    assert leaders(md) == [(3, 6), (2, 7)]
    assert md.cluster.leader_for("t", 0) == 3
    await asyncio.sleep(0)  # let the version-bump notification run


async def test_a_newer_answer_replaces_the_leader() -> None:
    md = metadata(snapshot(part(0, 1, 5), part(1, 2, 7)))
    md.update(snapshot(part(0, 2, 6), part(1, 2, 7)), 1.0)  # equal epochs: the answer wins
    assert leaders(md) == [(2, 6), (2, 7)]
    version = md.version
    md.update(snapshot(part(0, 1, 5), part(1, 3, 8)), 2.0)  # partition 0 lags, 1 moved on
    assert leaders(md) == [(2, 6), (3, 8)]
    assert md.version == version + 1


async def test_the_kept_leaders_address_survives_an_answer_that_leaves_it_out() -> None:
    # The hint named a broker the older snapshot did not list (KIP-951 NodeEndpoints).
    n4 = Node(4, "h4", 9094)
    md = metadata(snapshot(part(0, 1, 5)))
    assert md.move_leader("t", 0, 4, 6, n4)
    md.update(snapshot(part(0, 1, 5)), 1.0)  # lagging: neither the move nor broker 4
    assert leaders(md) == [(4, 6)]
    assert md.cluster.nodes[4] == n4


async def test_unknown_epochs_and_recreated_topics_take_the_answer() -> None:
    md = metadata(snapshot(part(0, 1, 5)))
    md.update(snapshot(part(0, 2, -1)), 1.0)  # Metadata before v7: no epoch to compare
    assert leaders(md) == [(2, -1)]
    md = metadata(snapshot(part(0, 1, 5)))
    md.update(snapshot(part(0, 2, 0), topic_id=ID_B), 1.0)  # deleted and created again
    assert leaders(md) == [(2, 0)]
    # Another cluster (say, one rebuilt under the same addresses): epochs start over.
    md = metadata(snapshot(part(0, 1, 5)))
    other = snapshot(part(0, 2, 0))
    other.cluster_id = "another"
    md.update(other, 1.0)
    assert leaders(md) == [(2, 0)]
    # Without topic ids (Metadata before v10) epochs are still compared.
    md = metadata(snapshot(part(0, 1, 5), topic_id=None))
    md.update(snapshot(part(0, 2, 4), topic_id=None), 1.0)
    assert leaders(md) == [(1, 5)]


async def test_added_partitions_and_other_topics_are_taken_as_they_come() -> None:
    md = metadata(snapshot(part(0, 1, 5), part(0, 1, 0, topic="u")))
    md.update(
        snapshot(part(0, 1, 4), part(1, 2, 0), part(0, 3, 9, topic="u")),
        1.0,
    )
    assert leaders(md) == [(1, 5), (2, 0)]
    assert leaders(md, "u") == [(3, 9)]
    assert md.cluster.cluster_id == "c" and md.cluster.controller == 1


async def test_a_kept_leader_that_is_gone_stays_unknown() -> None:
    # Our leader (epoch 6) is not in the new answer's broker list, nor was it known
    # with an address: it cannot be reached, so it is unknown (and metadata refreshed).
    md = metadata(snapshot(part(0, 3, 6), nodes=(N1, N2)))
    assert leaders(md) == [(NO_LEADER, 6)]
    md.update(snapshot(part(0, 1, 5), nodes=(N1, N2)), 1.0)
    assert leaders(md) == [(NO_LEADER, 6)]
    assert md.cluster.available_partitions_by_topic["t"] == ()
