"""A one-broker cluster on the scripted broker, for producer-level hostile tests.

:class:`LogCluster` is a script for :class:`~scripted_broker.ScriptedBroker` that
answers like a small, healthy Kafka cluster: Metadata (its topics, every partition
led by node 1, at the scripted broker's own address unless told otherwise),
InitProducerId, and Produce (each batch is parsed with kafka-python's record-batch
reader, not our code, and appended to an in-memory log that hands out offsets).

Each test then makes it hostile in one way: a leader address that cannot be
connected to, a topic error, or a hook that replaces (or mangles) the answer to
one API.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from kafka.record.memory_records import MemoryRecords  # type: ignore[import-untyped]
from scripted_broker import ReceivedRequest, ScriptedBroker, answer

from aiokafka_lite._internal.protocol.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from aiokafka_lite._internal.protocol.produce import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from aiokafka_lite._internal.protocol.transactions import InitProducerIdResponse

__all__ = [
    "API_VERSIONS",
    "INIT_PRODUCER_ID",
    "METADATA",
    "NODE",
    "PRODUCE",
    "LogCluster",
    "Stored",
    "valid_topic_name",
]

PRODUCE, METADATA, API_VERSIONS, INIT_PRODUCER_ID = 0, 3, 18, 22
NODE = 1


_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def valid_topic_name(name: object) -> bool:
    """Kafka's rule: 1-249 of [a-zA-Z0-9._-], and not "." or ".."."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= 249
        and name not in (".", "..")
        and set(name) <= _LEGAL
    )


@dataclass(frozen=True)
class Stored:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


# hook(request, healthy) -> reply; healthy() makes (and logs) the healthy answer.
Hook = Callable[[ReceivedRequest, Callable[[], bytes | None]], Any]


@dataclass
class LogCluster:
    """The script: a healthy one-broker cluster, unless told otherwise.

    ``topics`` maps topic name to partition count, ``topic_ids`` a name to the id
    Metadata answers (none by default). ``topic_errors`` maps a topic
    name to the error code Metadata answers for it. ``leader`` overrides the
    (host, port) node 1 is advertised at. ``hooks`` maps an API key to
    ``hook(request, healthy) -> reply`` (any scripted-broker reply), so a test can
    drop, mangle or replace one kind of answer; ``healthy()`` makes the healthy
    answer (for Produce: appends the records to the log), only if the hook calls it.
    """

    topics: dict[str, int] = field(default_factory=lambda: {"t": 4})
    topic_ids: dict[str, bytes] = field(default_factory=dict)  # Metadata v10+ topic ids
    topic_errors: dict[str, int] = field(default_factory=dict)
    leader: tuple[str, int] | None = None
    # Create a topic with a valid name on first request (one partition), answer
    # INVALID_TOPIC_EXCEPTION for a name Kafka's rules refuse.
    auto_create: bool = False
    hooks: dict[int, Hook] = field(default_factory=dict)
    broker: ScriptedBroker | None = None
    log: dict[tuple[str, int], list[Stored]] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)  # api key -> requests seen
    resent: int = 0  # batches sent again (same producer, epoch and sequence), not written
    _written: dict[tuple[str, int, int, int], dict[int, int]] = field(default_factory=dict)

    @contextlib.asynccontextmanager
    async def running(self, **broker_kwargs: Any) -> AsyncIterator[ScriptedBroker]:
        """The scripted broker serving this cluster, stopped on exit."""
        async with ScriptedBroker(self, **broker_kwargs) as broker:
            self.broker = broker
            yield broker

    def __call__(self, req: ReceivedRequest) -> Any:
        self.counts[req.api_key] = self.counts.get(req.api_key, 0) + 1
        hook = self.hooks.get(req.api_key)
        if hook is None:
            return self.healthy_answer(req)
        return hook(req, lambda: self.healthy_answer(req))

    def healthy_answer(self, req: ReceivedRequest) -> bytes | None:
        if req.api_key == API_VERSIONS:  # reaches the script with answer_api_versions=False
            assert self.broker is not None
            return self.broker._api_versions_reply(req)
        if req.api_key == METADATA:
            return answer(req, self.metadata(req))
        if req.api_key == INIT_PRODUCER_ID:
            return answer(req, InitProducerIdResponse(producer_id=4711, producer_epoch=0))
        if req.api_key == PRODUCE:
            produce = req.decode()
            topics = []
            for t in produce.topic_data:
                results = [
                    PartitionProduceResponse(pd.index, 0, self.append(t.name, pd))
                    for pd in t.partition_data
                ]
                topics.append(TopicProduceResponse(name=t.name, partition_responses=results))
            if produce.acks == 0:
                return None
            return answer(req, ProduceResponse(responses=topics))
        return None

    def metadata(self, req: ReceivedRequest) -> MetadataResponse:
        assert self.broker is not None
        host, port = self.leader or (self.broker.host, self.broker.port)
        asked = req.decode().topics
        names = list(self.topics) if asked is None else [t.name for t in asked]
        topics = []
        for name in names:
            if self.auto_create and name not in self.topics and name not in self.topic_errors:
                if valid_topic_name(name):
                    self.topics[name] = 1
                else:
                    self.topic_errors[name] = 17  # INVALID_TOPIC_EXCEPTION
            if name in self.topic_errors:
                topics.append(MetadataResponseTopic(error_code=self.topic_errors[name], name=name))
            elif name in self.topics:
                topics.append(
                    MetadataResponseTopic(
                        name=name,
                        topic_id=self.topic_ids.get(name, bytes(16)),
                        partitions=[
                            MetadataResponsePartition(
                                partition_index=p,
                                leader_id=NODE,
                                leader_epoch=0,
                                replica_nodes=[NODE],
                                isr_nodes=[NODE],
                            )
                            for p in range(self.topics[name])
                        ],
                    )
                )
            else:
                topics.append(MetadataResponseTopic(error_code=3, name=name))  # UNKNOWN_TOPIC
        return MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=NODE, host=host, port=port)],
            cluster_id="scripted",
            controller_id=NODE,
            topics=topics,
        )

    def append(self, topic: str, pd: Any) -> int:
        """Write one partition's data of a Produce request to the log, as a healthy
        answer does (a hook may write it and answer otherwise); its first offset."""
        log = self.log.setdefault((topic, pd.index), [])
        base = len(log)
        records = MemoryRecords(bytes(pd.records))
        while (batch := records.next_batch()) is not None:
            if batch.producer_id >= 0:
                # As a broker does for an idempotent producer: a batch already
                # written (same producer, epoch and sequence) is not written
                # again; its first offset is answered.
                key = (topic, pd.index, batch.producer_id, batch.producer_epoch)
                seen = self._written.setdefault(key, {})
                if batch.base_sequence in seen:
                    self.resent += 1
                    return seen[batch.base_sequence]
                seen[batch.base_sequence] = len(log)
            for r in batch:
                log.append(Stored(pd.index, len(log), r.key, r.value))
        return base

    def records(self, topic: str = "t") -> list[Stored]:
        return [r for (t, _), rs in sorted(self.log.items()) if t == topic for r in rs]
