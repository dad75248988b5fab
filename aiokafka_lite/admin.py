"""A small ``create_topics`` helper (CreateTopics), for tests, tools and setup scripts."""

from __future__ import annotations

import asyncio
import time
from typing import Any, NamedTuple

from .client import NetworkClient
from .config import ProducerConfig
from .errors import KafkaConnectionError, error_from_response
from .protocol.messages import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest

__all__ = ["NewTopic", "create_topics"]

TOPIC_ALREADY_EXISTS = 36


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
            raise KafkaConnectionError(f"topics {sorted(set(names) - ready)} have no leader yet")
        await asyncio.sleep(0.05)
