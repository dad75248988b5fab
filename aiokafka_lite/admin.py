"""Small admin helpers (CreateTopics, Metadata) for tests, tools, setup scripts and the CLI."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, NamedTuple

from .client import NetworkClient
from .cluster import Cluster, Node, PartitionInfo
from .config import ProducerConfig
from .errors import KafkaTimeoutError, error_from_response
from .protocol.messages import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest

__all__ = ["NewTopic", "TopicDescription", "create_topics", "describe_topics", "list_topics"]

TOPIC_ALREADY_EXISTS = 36

log = logging.getLogger("aiokafka_lite.admin")


class NewTopic(NamedTuple):
    name: str
    num_partitions: int = 1
    replication_factor: int = 1
    configs: dict[str, str] | None = None


async def create_topics(
    bootstrap_servers: str | list[str],
    topics: list[NewTopic],
    *,
    timeout_ms: int = 30000,
    exist_ok: bool = True,
    client_id: str | None = "aiokafka-lite-admin",
    **security: Any,
) -> None:
    """Create ``topics`` (on the controller) and wait until their leaders are known.

    ``security``: the producer's security options (``security_protocol``,
    ``ssl_cafile``, ``sasl_mechanism``, ...), for a cluster that requires them.

    Raises the broker's error for the first topic that failed; a topic that
    already exists is fine when ``exist_ok``.
    """
    config = ProducerConfig.from_kwargs(
        bootstrap_servers=bootstrap_servers, client_id=client_id, **security
    )
    client = NetworkClient(config, wakeup=lambda: None)
    try:
        await client.bootstrap(timeout_ms / 1000)
        cluster = client.metadata.cluster
        node = (
            cluster.controller if cluster.controller in cluster.nodes else next(iter(cluster.nodes))
        )
        request = CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name=t.name,
                    num_partitions=t.num_partitions,
                    replication_factor=t.replication_factor,
                    configs=[CreatableTopicConfig(k, v) for k, v in (t.configs or {}).items()],
                )
                for t in topics
            ],
            timeout_ms=timeout_ms,
        )
        response = await client.request(node, request)
        for result in response.topics:
            if result.error_code == 0 or (exist_ok and result.error_code == TOPIC_ALREADY_EXISTS):
                continue
            raise error_from_response(
                result.error_code, topic=result.name, message=result.error_message
            )
        await _await_leaders(client, node, [t.name for t in topics], timeout_ms / 1000)
        log.info("topics ready: %s", ", ".join(t.name for t in topics))
    finally:
        await client.close()


async def _await_leaders(
    client: NetworkClient, node: int, names: list[str], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        response = await client.fetch_metadata(node, names)
        ready = {
            t.name
            for t in response.topics
            if t.error_code == 0 and t.partitions and all(p.leader_id >= 0 for p in t.partitions)
        }
        if ready.issuperset(names):
            return
        if time.monotonic() > deadline:
            raise KafkaTimeoutError(
                f"topics {sorted(set(names) - ready)} have no leader "
                f"after {timeout * 1000:.0f} ms (timeout_ms)"
            )
        await asyncio.sleep(0.05)


class TopicDescription(NamedTuple):
    """A topic as the cluster's metadata describes it."""

    name: str
    partitions: tuple[PartitionInfo, ...]
    error: str | None = None  # the broker's error for this topic (e.g. UNKNOWN_TOPIC_OR_PARTITION)


async def list_topics(
    bootstrap_servers: str | list[str],
    *,
    timeout_ms: int = 30000,
    client_id: str | None = "aiokafka-lite-admin",
) -> tuple[dict[int, Node], list[TopicDescription]]:
    """The brokers and every topic of the cluster (one Metadata request for all topics)."""
    return await _describe(bootstrap_servers, None, timeout_ms, client_id)


async def describe_topics(
    bootstrap_servers: str | list[str],
    names: list[str],
    *,
    timeout_ms: int = 30000,
    client_id: str | None = "aiokafka-lite-admin",
) -> tuple[dict[int, Node], list[TopicDescription]]:
    """The brokers and the named topics; a missing topic has ``error`` set (never created)."""
    return await _describe(bootstrap_servers, names, timeout_ms, client_id)


async def _describe(
    bootstrap_servers: str | list[str],
    names: list[str] | None,
    timeout_ms: int,
    client_id: str | None,
) -> tuple[dict[int, Node], list[TopicDescription]]:
    # Describing must not create: auto-creation is asked for explicitly off.
    config = ProducerConfig(
        bootstrap_servers=bootstrap_servers, client_id=client_id, allow_auto_create_topics=False
    )
    client = NetworkClient(config, wakeup=lambda: None)
    try:
        async with asyncio.timeout(timeout_ms / 1000):
            await client.bootstrap(timeout_ms / 1000)
            node = next(iter(client.metadata.cluster.nodes))
            response = await client.fetch_metadata(node, names)
    except TimeoutError:
        raise KafkaTimeoutError(f"no metadata within {timeout_ms} ms (timeout_ms)") from None
    finally:
        await client.close()
    cluster = Cluster.from_metadata(response)
    topics = []
    for t in response.topics:
        if t.name is None:
            continue
        error = None
        if t.error_code:
            error = error_from_response(t.error_code, topic=t.name).name
        topics.append(TopicDescription(t.name, cluster.partitions_by_topic.get(t.name, ()), error))
    topics.sort(key=lambda t: t.name)
    return cluster.nodes, topics
