"""``producer.client`` and ``producer._partition``: the aiokafka internals frameworks reach for.

aiokafka's producer exposes its network client as ``producer.client``. Faust declares its
topics through it: it reads ``client.cluster`` (which brokers, which topics), sends
aiokafka's own ``MetadataRequest`` and ``CreateTopicsRequest`` objects with
``await client.send(node_id, request)``, then ``await client.force_metadata_update()``.

:class:`AiokafkaClientView` answers the cluster questions from the producer's own metadata
and refreshes that metadata on ``force_metadata_update()``; ``add_topic(topic)`` has it
track one more topic. Only aiokafka can encode its own
request classes, so ``send()`` hands them to a real ``aiokafka.AIOKafkaClient``, opened on
the first ``send()`` with the producer's connection settings (servers, TLS, SASL) and
closed by the producer's ``stop()``. A producer whose ``client`` nobody touches opens
nothing more.

Faust also asks which partition a key goes to with aiokafka's private
``producer._partition(...)``, and kstreams' ``send_many`` places records itself with
``producer._key_serializer`` and ``producer._partitioner(key, all, available)``:
:class:`AiokafkaInternals` answers as aiokafka's producer would.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..config import ProducerConfig
from ..errors import KafkaConnectionError, ProducerClosedError, UnknownTopicOrPartitionError
from ..security import build_ssl_context
from .partitioner import default_partition

if TYPE_CHECKING:
    from .metadata import Metadata
    from .placement import RecordPlacement

__all__ = ["AiokafkaClientView", "AiokafkaInternals", "ClusterView", "default_partitioner"]


def default_partitioner(key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
    """aiokafka's ``DefaultPartitioner`` contract with Java's (and ``send()``'s) choice for
    a key; for no key, a random available partition (a single call has no batch to stick to)."""
    if key is not None:
        return sorted(all_partitions)[default_partition(bytes(key), len(all_partitions))]
    return random.choice(available or all_partitions)


class ClusterView:
    """aiokafka's ``ClusterMetadata`` read API over the producer's metadata.

    It knows what the producer knows: the brokers, and the topics it has sent to or
    asked about (aiokafka's producer client knows the same set).
    """

    def __init__(self, metadata: Callable[[], Metadata | None]) -> None:
        self._metadata = metadata

    def _cluster(self) -> Any:
        md = self._metadata()
        return None if md is None else md.cluster

    def brokers(self) -> set[Any]:
        """The brokers, as aiokafka's ``BrokerMetadata(nodeId, host, port, rack)``."""
        # Imported by name: aiokafka is optional and untyped (see compat.py).
        broker_metadata = importlib.import_module("aiokafka.structs").BrokerMetadata

        cluster = self._cluster()
        if cluster is None:
            return set()
        return {
            broker_metadata(n.node_id, n.host, n.port, n.rack)
            for n in cluster.nodes.values()
            if n.node_id >= 0  # not the bootstrap placeholders
        }

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        cluster = self._cluster()
        if cluster is None:
            return set()
        names = set(cluster.partitions_by_topic)
        if exclude_internal_topics:
            names.difference_update(("__consumer_offsets", "__transaction_state"))
        return names

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        cluster = self._cluster()
        parts = None if cluster is None else cluster.partitions_by_topic.get(topic)
        return None if parts is None else {p.partition for p in parts}

    def available_partitions_for_topic(self, topic: str) -> set[int] | None:
        cluster = self._cluster()
        parts = None if cluster is None else cluster.available_partitions_by_topic.get(topic)
        return None if parts is None else set(parts)

    def controller_id(self) -> int | None:
        cluster = self._cluster()
        return None if cluster is None or cluster.controller < 0 else cluster.controller


class AiokafkaClientView:
    """``producer.client`` as frameworks use aiokafka's (see the module's docstring)."""

    def __init__(
        self,
        config: ProducerConfig,
        metadata: Callable[[], Metadata | None],
        wakeup: Callable[[], None],
        check_running: Callable[[], None],
    ) -> None:
        self._config = config
        self._metadata = metadata
        self._wakeup = wakeup
        self._check_running = check_running  # raises unless the producer is running
        self.cluster = ClusterView(metadata)
        self._aiokafka: Any = None  # the aiokafka client, from the first send()
        self._opening: asyncio.Lock | None = None
        self._closed = False
        self._busy = 0  # send() calls under way; close() waits for them
        self._idle: asyncio.Event | None = None
        self._refreshes: set[asyncio.Task[bool]] = set()  # add_topic()'s, until done

    async def force_metadata_update(self) -> bool:
        """Refresh the producer's metadata now; ``True`` once a new answer arrived."""
        md = self._metadata()
        if md is None:
            return False
        version = md.request_update()
        self._wakeup()
        timeout = self._config.request_timeout_ms / 1000
        try:
            await md.wait_for_update(version, timeout)
        except TimeoutError:
            return False
        return md.version > version

    def add_topic(self, topic: str) -> asyncio.Future[bool]:
        """aiokafka's ``client.add_topic``: the producer's metadata tracks ``topic`` from now
        on (each refresh asks for it, which creates it where the broker auto-creates).

        Returns a future, as aiokafka's: ``True`` at once if the topic is known already,
        else the answer of the refresh this starts (``False`` if none came in time or
        the producer stopped first). Only while the producer runs.
        """
        self._check_running()
        md = self._metadata()
        if md is None:  # not started: _check_running raised already
            raise ProducerClosedError("producer.client.add_topic: the producer is not running")
        known = topic in md.partitions_by_topic
        md.add_topic(topic)
        if known:
            done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            done.set_result(True)
            return done
        task = asyncio.ensure_future(self._refresh_quietly())
        self._refreshes.add(task)
        task.add_done_callback(self._refreshes.discard)
        return task

    async def _refresh_quietly(self) -> bool:
        # Nobody need await add_topic()'s future (aiokafka's tests and Faust do not):
        # a stop() meanwhile is an answer (False), not an exception nobody retrieves.
        try:
            return await self.force_metadata_update()
        except ProducerClosedError:
            return False

    async def send(self, node_id: int, request: Any, **kwargs: Any) -> Any:
        """Send one of aiokafka's request objects to ``node_id``; aiokafka's response.
        Only while the producer runs (its ``stop()`` closes what this opens)."""
        self._check_running()
        if self._idle is None:
            self._idle = asyncio.Event()
        self._busy += 1
        self._idle.clear()
        try:
            client = await self._open()
            return await client.send(node_id, request, **kwargs)
        finally:
            self._busy -= 1
            if not self._busy:
                self._idle.set()

    async def _open(self) -> Any:
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._aiokafka is None:
                cfg = self._config
                client = importlib.import_module("aiokafka").AIOKafkaClient(
                    bootstrap_servers=cfg.bootstrap_servers,
                    client_id=cfg.client_id or "aiokafka-lite",
                    metadata_max_age_ms=cfg.metadata_max_age_ms,
                    request_timeout_ms=cfg.request_timeout_ms,
                    retry_backoff_ms=cfg.retry_backoff_ms,
                    connections_max_idle_ms=cfg.connections_max_idle_ms,
                    security_protocol=cfg.security_protocol,
                    ssl_context=build_ssl_context(cfg),
                    sasl_mechanism=cfg.sasl_mechanism,
                    sasl_plain_username=cfg.sasl_plain_username,
                    sasl_plain_password=cfg.sasl_plain_password,
                    sasl_oauth_token_provider=cfg.sasl_oauth_token_provider,
                )
                started = time.monotonic()
                try:
                    await client.bootstrap()
                except BaseException as e:
                    await client.close()
                    if isinstance(e, Exception):
                        raise KafkaConnectionError(
                            f"producer.client: aiokafka's client could not bootstrap "
                            f"(after {time.monotonic() - started:.1f}s): {e}"
                        ) from e
                    raise
                if self._closed:  # the producer stopped meanwhile: keep nothing open
                    await client.close()
                    raise ProducerClosedError(
                        "producer.client: the producer stopped while aiokafka's client connected"
                    )
                self._aiokafka = client
            return self._aiokafka

    async def close(self) -> None:
        """Close the aiokafka client, if ``send()`` opened one; ``send()`` opens no other."""
        self._closed = True
        for task in list(self._refreshes):  # add_topic()'s refreshes end with the producer
            task.cancel()
        if self._refreshes:
            await asyncio.gather(*self._refreshes, return_exceptions=True)
        # A send under way may be opening a connection that close() would not see (it
        # is not among the client's yet): let it end first (aiokafka's request timeout
        # bounds it), then close what is there.
        if self._busy and self._idle is not None:
            await self._idle.wait()
        client, self._aiokafka = self._aiokafka, None
        if client is not None:
            await client.close()


class AiokafkaInternals:
    """The aiokafka internals :class:`~aiokafka_lite.AIOKafkaProducer` keeps for frameworks."""

    if TYPE_CHECKING:  # the producer's, which these use
        _config: ProducerConfig
        _metadata: Metadata
        _placement: RecordPlacement
        _custom_partitioner: Callable[..., int] | None

        def _wakeup(self) -> None: ...
        def _check_running(self) -> None: ...
        def _known_partitions(self, topic: str) -> tuple[Any, ...] | None: ...

        _place: Callable[[str, bytes | None, Sequence[Any], int, int | None], int]

    # Not a property: an instance (a subclass's __init__) may set its own ``client``.
    @functools.cached_property
    def client(self) -> AiokafkaClientView:
        """aiokafka's ``producer.client``, as far as frameworks use it (Faust declares its
        topics through it): ``cluster``, ``send(node_id, request)``,
        ``force_metadata_update()``, ``add_topic(topic)``."""
        return AiokafkaClientView(
            self._config,
            lambda: getattr(self, "_metadata", None),
            self._wakeup,
            self._check_running,
        )

    @functools.cached_property
    def _key_serializer(self) -> Callable[[Any], bytes | None] | None:
        """aiokafka's attribute: the key serializer (a name given is resolved), or None."""
        return self._placement.key_serializer

    @functools.cached_property
    def _value_serializer(self) -> Callable[[Any], bytes | None] | None:
        """aiokafka's attribute: the value serializer, or None."""
        return self._placement.value_serializer

    @functools.cached_property
    def _partitioner(self) -> Callable[[bytes | None, list[int], list[int]], int]:
        """aiokafka's attribute: ``(key_bytes, all_partitions, available) -> partition``.

        The partitioner given, else aiokafka's default: murmur2 of the key (the
        partition ``send()`` picks), a random available partition for no key.
        """
        custom = self._custom_partitioner
        return custom if custom is not None else default_partitioner

    def _partition(
        self,
        topic: str,
        partition: int | None,
        key: Any,
        value: Any,
        serialized_key: bytes | None,
        serialized_value: bytes | None,
    ) -> int:
        """aiokafka's private ``_partition`` (Faust's ``key_partition`` calls it): the
        partition ``send()`` would pick for ``serialized_key``, or ``partition`` checked.
        The topic's partitions must be known (the producer sent to it, or asked)."""
        self._check_running()
        parts = self._known_partitions(topic)
        if parts is None:
            raise UnknownTopicOrPartitionError(
                f"topic {topic!r} is not in the producer's metadata yet "
                "(await producer.partitions_for(topic) first)"
            )
        return self._place(topic, serialized_key, parts, 0, partition)
