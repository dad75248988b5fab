"""Small admin helpers (CreateTopics, Metadata, OffsetFetch) for tests, tools, setup
scripts, the CLI and the Spark sink."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any, NamedTuple

from ._internal.backoff import backoff_delay
from ._internal.client import GROUP, NetworkClient
from ._internal.cluster import Cluster, Node, PartitionInfo
from ._internal.protocol.admin import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from .config import ProducerConfig
from .errors import (
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    error_from_response,
)
from .structs import OffsetAndMetadata, TopicPartition

__all__ = [
    "NewTopic",
    "TopicDescription",
    "create_topics",
    "describe_topics",
    "fetch_committed_offsets",
    "list_topics",
]

TOPIC_ALREADY_EXISTS = 36
GROUP_ID_NOT_FOUND = 69

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
    async with _admin_client(config) as client:
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
    # Describing must not create: auto-creation is asked for explicitly off. A connection
    # gives up before the whole call does, so that its own diagnosis (refused, not Kafka,
    # no answer to ApiVersions) is what the caller reads, not a bare timeout.
    setup_ms = ProducerConfig().socket_connection_setup_timeout_ms
    config = ProducerConfig(
        bootstrap_servers=bootstrap_servers,
        client_id=client_id,
        allow_auto_create_topics=False,
        socket_connection_setup_timeout_ms=max(1, min(setup_ms, int(timeout_ms * 4 // 5))),
    )
    async with _admin_client(config) as client:
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await client.bootstrap(timeout_ms / 1000)
                node = next(iter(client.metadata.cluster.nodes))
                response = await client.fetch_metadata(node, names)
        except TimeoutError:
            raise KafkaTimeoutError(f"no metadata within {timeout_ms} ms (timeout_ms)") from None
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


# -- committed offsets of a consumer group ------------------------------------------------


async def fetch_committed_offsets(
    bootstrap_servers: str | list[str],
    group_id: str,
    partitions: Iterable[TopicPartition],
    *,
    timeout_ms: int = 30000,
    require_stable: bool = True,
    client_id: str | None = "aiokafka-lite-admin",
    **config: Any,
) -> dict[TopicPartition, OffsetAndMetadata]:
    """``group_id``'s committed offsets of ``partitions`` (what a consumer would resume from).

    Finds the group's coordinator (FindCoordinator) and asks it (OffsetFetch v1-v7).
    A partition with no committed offset, or a group the coordinator does not know,
    gives ``OffsetAndMetadata(-1, "")``. With ``require_stable`` (v7+, the default)
    an offset still pending in an open transaction is waited for rather than
    skipped, as a ``read_committed`` consumer would.

    ``config``: producer options, of which the connection ones matter
    (``security_protocol``, ``ssl_cafile``, ``sasl_mechanism``, ...). Coordinator
    moves and loads (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
    COORDINATOR_LOAD_IN_PROGRESS), UNSTABLE_OFFSET_COMMIT and connections lost after
    the first metadata answer are retried with backoff; the whole call takes at most
    ``timeout_ms``, then raises :class:`~aiokafka_lite.KafkaTimeoutError` naming the
    last error. If no bootstrap server answers at all, it raises
    :class:`~aiokafka_lite.KafkaConnectionError` naming them.
    """
    wanted = list(dict.fromkeys(TopicPartition(t, p) for t, p in partitions))
    if not wanted:
        return {}
    cfg = ProducerConfig.from_kwargs(
        bootstrap_servers=bootstrap_servers, client_id=client_id, **config
    )
    async with _admin_client(cfg) as client:
        last: KafkaError | None = None
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await client.bootstrap(timeout_ms / 1000)
                failures = 0
                while True:
                    try:
                        return await _fetch_offsets(client, group_id, wanted, require_stable)
                    except KafkaError as e:
                        if not e.retriable:
                            raise
                        last = e
                    failures += 1
                    delay = backoff_delay(cfg.retry_backoff_ms, cfg.retry_backoff_max_ms, failures)
                    log.info(
                        "offsets of group %r: %s; retrying in %.0f ms", group_id, last, delay * 1000
                    )
                    await asyncio.sleep(delay)
        except TimeoutError:
            detail = f"; last error: {last}" if last is not None else ""
            raise KafkaTimeoutError(
                f"committed offsets of group {group_id!r} not fetched within {timeout_ms} ms "
                f"(timeout_ms){detail}"
            ) from last


async def _fetch_offsets(
    client: NetworkClient, group_id: str, wanted: list[TopicPartition], require_stable: bool
) -> dict[TopicPartition, OffsetAndMetadata]:
    """One attempt: find the coordinator, ask it; raises what went wrong."""
    node_id = await _group_coordinator(client, group_id)
    conn = await client.connect(node_id)
    topics: dict[str, list[int]] = {}
    for tp in wanted:
        topics.setdefault(tp.topic, []).append(tp.partition)
    request = OffsetFetchRequest(
        group_id=group_id,
        topics=[OffsetFetchRequestTopic(t, sorted(ps)) for t, ps in topics.items()],
        require_stable=require_stable,
    )
    response: OffsetFetchResponse = await conn.send(request)
    none = OffsetAndMetadata(-1, "")
    if response.error_code == GROUP_ID_NOT_FOUND:
        return dict.fromkeys(wanted, none)
    if response.error_code:
        raise error_from_response(
            response.error_code, message=f"OffsetFetch for group {group_id!r}"
        )
    found: dict[TopicPartition, OffsetAndMetadata] = {}
    for topic in response.topics:
        for p in topic.partitions:
            if p.error_code:
                raise error_from_response(
                    p.error_code,
                    topic=topic.name,
                    partition=p.partition_index,
                    message=f"OffsetFetch for group {group_id!r}",
                )
            offset = p.committed_offset if p.committed_offset >= 0 else -1
            found[TopicPartition(topic.name, p.partition_index)] = OffsetAndMetadata(
                offset, p.metadata or ""
            )
    return {tp: found.get(tp, none) for tp in wanted}


async def _group_coordinator(client: NetworkClient, group_id: str) -> int:
    """The node id of ``group_id``'s coordinator (FindCoordinator, key type group)."""
    coordinator = (await client.find_coordinator(GROUP, group_id)).node_id
    if coordinator not in client.metadata.cluster.nodes:
        node_id = client.least_loaded_node(time.monotonic())
        if node_id is None:
            raise KafkaConnectionError("no broker is reachable to look up the coordinator")
        metadata = await client.fetch_metadata(node_id, [])
        client.metadata.update(Cluster.from_metadata(metadata), time.monotonic())
        if coordinator not in client.metadata.cluster.nodes:
            raise CoordinatorNotAvailableError(
                f"the coordinator of group {group_id!r} is node {coordinator}, which is not "
                "in the metadata"
            )
    return coordinator


@contextlib.asynccontextmanager
async def _admin_client(config: ProducerConfig) -> AsyncIterator[NetworkClient]:
    """A short-lived client: its connections and background tasks end with the block."""
    client = NetworkClient(config, lambda: None)
    try:
        yield client
    finally:
        await client.close()
