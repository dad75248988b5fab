"""An immutable snapshot of the cluster, as one Metadata response described it.

Like Java's ``Cluster``: lookups the producer needs per record or batch (a
topic's partitions and their leaders, the partitions with a known leader) are
precomputed once per snapshot so that none of them costs more than a dict get.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from .protocol.metadata import MetadataResponse

__all__ = ["Cluster", "Node", "PartitionInfo"]

NO_LEADER = -1


class Node(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None = None


class PartitionInfo(NamedTuple):
    topic: str
    partition: int
    leader: int  # NO_LEADER (-1) while unknown
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]


class Cluster:
    """Nodes and partitions by topic (and, built on first use, by node); never changed
    after construction but for that one cache."""

    __slots__ = (
        "_partitions_by_node",
        "available_partitions_by_topic",
        "cluster_id",
        "controller",
        "nodes",
        "partitions_by_topic",
        "topic_errors",
        "topic_ids",
    )

    def __init__(
        self,
        nodes: Iterable[Node],
        partitions: Iterable[PartitionInfo] = (),
        *,
        cluster_id: str | None = None,
        controller: int = -1,
        topic_errors: dict[str, int] | None = None,
        topic_ids: dict[str, bytes] | None = None,
    ) -> None:
        self.nodes: dict[int, Node] = {n.node_id: n for n in nodes}
        self._partitions_by_node: Mapping[int, tuple[PartitionInfo, ...]] | None = None
        self.cluster_id = cluster_id
        self.controller = controller
        self.topic_errors: dict[str, int] = topic_errors or {}
        # Topic ids (Metadata v10+; absent before): a topic deleted and created
        # again gets a new id, and its leader epochs start over.
        self.topic_ids: dict[str, bytes] = topic_ids or {}
        by_topic: dict[str, list[PartitionInfo]] = {}
        for p in partitions:
            if p.leader != NO_LEADER and p.leader not in self.nodes:
                # A leader the broker list leaves out (it is down) cannot be
                # reached: treat it as unknown, as Java does, so that the
                # producer refreshes metadata instead of trying to connect.
                p = p._replace(leader=NO_LEADER)
            by_topic.setdefault(p.topic, []).append(p)
        self.partitions_by_topic: dict[str, tuple[PartitionInfo, ...]] = {}
        self.available_partitions_by_topic: dict[str, tuple[int, ...]] = {}
        for topic, parts in by_topic.items():
            parts.sort(key=lambda p: p.partition)
            if [p.partition for p in parts] != list(range(len(parts))):
                # A snapshot with holes cannot be indexed by partition number;
                # treat the topic as unknown until a complete answer arrives.
                self.topic_errors.setdefault(topic, 5)  # LEADER_NOT_AVAILABLE
                continue
            self.partitions_by_topic[topic] = tuple(parts)
            self.available_partitions_by_topic[topic] = tuple(
                p.partition for p in parts if p.leader != NO_LEADER
            )

    @classmethod
    def bootstrap(cls, addresses: Iterable[tuple[str, int]]) -> Cluster:
        """A cluster of the configured servers only, with negative placeholder ids."""
        return cls(Node(-1 - i, host, port) for i, (host, port) in enumerate(addresses))

    @classmethod
    def from_metadata(cls, response: MetadataResponse) -> Cluster:
        nodes = [Node(b.node_id, b.host, b.port, b.rack) for b in response.brokers]
        partitions: list[PartitionInfo] = []
        errors: dict[str, int] = {}
        topic_ids: dict[str, bytes] = {}
        for t in response.topics:
            if t.name is None:
                continue
            if any(t.topic_id):
                topic_ids[t.name] = t.topic_id
            if t.error_code:
                errors[t.name] = t.error_code
                continue
            partitions.extend(
                PartitionInfo(
                    t.name,
                    p.partition_index,
                    p.leader_id,
                    p.leader_epoch,
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                    tuple(p.offline_replicas),
                )
                for p in t.partitions
            )
        return cls(
            nodes,
            partitions,
            cluster_id=response.cluster_id,
            controller=response.controller_id,
            topic_errors=errors,
            topic_ids=topic_ids,
        )

    def leader_for(self, topic: str, partition: int) -> int:
        parts = self.partitions_by_topic.get(topic)
        if parts is None or partition >= len(parts):
            return NO_LEADER
        return parts[partition].leader

    @property
    def partitions_by_node(self) -> Mapping[int, tuple[PartitionInfo, ...]]:
        """Node id -> the partitions it leads (Java's ``partitionsForNode``), read-only.

        Nothing on the send path needs it, so it is built on first use and kept,
        not per metadata update; partitions without a leader are in no entry.
        """
        by_node = self._partitions_by_node
        if by_node is None:
            grouped: dict[int, list[PartitionInfo]] = {}
            for parts in self.partitions_by_topic.values():
                for p in parts:
                    if p.leader != NO_LEADER:
                        grouped.setdefault(p.leader, []).append(p)
            by_node = MappingProxyType({n: tuple(ps) for n, ps in grouped.items()})
            self._partitions_by_node = by_node
        return by_node

    def partitions_for_node(self, node_id: int) -> tuple[PartitionInfo, ...]:
        """The partitions ``node_id`` leads (none: an empty tuple)."""
        return self.partitions_by_node.get(node_id, ())

    def partition_count(self, topic: str) -> int | None:
        parts = self.partitions_by_topic.get(topic)
        return None if parts is None else len(parts)

    def with_leader(
        self, topic: str, partition: int, leader: int, epoch: int, node: Node | None
    ) -> Cluster:
        """A copy where one partition has moved (a KIP-951 hint from a Produce response)."""
        nodes = dict(self.nodes)
        if node is not None:
            nodes[node.node_id] = node
        parts = [
            p._replace(leader=leader, leader_epoch=epoch)
            if p.topic == topic and p.partition == partition
            else p
            for ps in self.partitions_by_topic.values()
            for p in ps
        ]
        return Cluster(
            nodes.values(),
            parts,
            cluster_id=self.cluster_id,
            controller=self.controller,
            topic_errors=dict(self.topic_errors),
            topic_ids=dict(self.topic_ids),
        )

    def __repr__(self) -> str:
        return (
            f"Cluster(id={self.cluster_id!r}, nodes={sorted(self.nodes)}, "
            f"topics={sorted(self.partitions_by_topic)})"
        )
