"""The network client: a connection per broker node, opened lazily, and metadata refresh.

Java's ``NetworkClient`` plus ``DefaultMetadataUpdater``, on one event loop.
Nothing here blocks the sender: :meth:`NetworkClient.ready` either returns an
open connection that can take another request or starts connecting in the
background (respecting the node's reconnect backoff) and returns ``None``; the
sender is woken when the connection is up.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from ..config import ProducerConfig, parse_bootstrap
from ..errors import (
    AuthenticationFailedError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    ProtocolError,
    error_from_response,
)
from ..security import Security
from .backoff import backoff_delay
from .cluster import Cluster, Node
from .connection import BrokerConnection
from .metadata import Metadata
from .protocol.codec import Request
from .protocol.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from .tasks import BackgroundTasks, Handle

__all__ = ["NetworkClient"]

log = logging.getLogger("aiokafka_lite.client")

# Repeated connection failures to one node are logged at WARNING at most this often (s).
WARN_INTERVAL = 30.0

# FindCoordinator key types: a consumer group, or a transactional id.
GROUP = 0
TRANSACTION = 1


class NetworkClient:
    def __init__(
        self,
        config: ProducerConfig,
        wakeup: Callable[[], None],
        tasks: BackgroundTasks | None = None,
    ) -> None:
        self._config = config
        self._wakeup = wakeup
        # Connects, metadata refreshes and re-authentications run in the owner's
        # task group, or (no owner given) in one of the client's own.
        self._own_tasks = tasks is None
        self._tasks = BackgroundTasks("aiokafka_lite.client") if tasks is None else tasks
        self._bootstrap = Cluster.bootstrap(parse_bootstrap(config.bootstrap_servers))
        self.metadata = Metadata(
            self._bootstrap,
            retry_backoff_ms=config.retry_backoff_ms,
            retry_backoff_max_ms=config.retry_backoff_max_ms,
            max_age_ms=config.metadata_max_age_ms,
            topic_idle_ms=config.metadata_max_idle_ms,
        )
        self._conns: dict[int, BrokerConnection] = {}
        self._connecting: dict[int, Handle[BrokerConnection]] = {}
        self._failures: dict[int, int] = {}
        self._retry_at: dict[int, float] = {}
        self._last_errors: dict[int, KafkaError] = {}  # node -> why its last connect failed
        self._warned_at: dict[int, float] = {}  # node -> when its failures were last warned of
        self._metadata_warned_at = -WARN_INTERVAL
        self._metadata_task: Handle[None] | None = None
        self._closed = False
        self._security = Security(config)
        # The latest authentication failure, until the sender fails the waiting records with it.
        self.auth_error: AuthenticationFailedError | None = None

    # -- connections ------------------------------------------------------------

    def _node(self, node_id: int) -> Node | None:
        return self.metadata.cluster.nodes.get(node_id) or self._bootstrap.nodes.get(node_id)

    def ready(self, node_id: int, now: float) -> BrokerConnection | None:
        """An open connection to ``node_id`` that can take another request, or None.

        Starts connecting in the background if there is no connection yet.
        """
        conn = self._conns.get(node_id)
        if conn is not None and not conn.closed:
            if conn.in_flight < self._config.max_in_flight_requests_per_connection:
                return conn
            return None
        self._start_connect(node_id, now)
        return None

    def saturated(self) -> bool:
        """Every known broker has an open connection with all its in-flight slots taken:
        no request can be sent before an answer (or a lost connection) frees one, and
        both wake the sender (``_on_answered``, ``_on_lost``), whatever the request."""
        nodes = self._known_nodes()
        if not nodes:
            return False
        limit = self._config.max_in_flight_requests_per_connection
        conns = self._conns
        for node_id in nodes:
            conn = conns.get(node_id)
            if conn is None or conn.closed or conn.in_flight < limit:
                return False
        return True

    def connection(self, node_id: int) -> BrokerConnection | None:
        conn = self._conns.get(node_id)
        return conn if conn is not None and not conn.closed else None

    def connection_delay(self, node_id: int, now: float) -> float:
        """Seconds until it is worth asking :meth:`ready` about ``node_id`` again.

        While connecting, the sender is woken when the attempt ends; with all
        in-flight slots taken, by a response; while backing off, when the
        backoff ends.
        """
        if (
            node_id in self._connecting
            or self.connection(node_id) is not None
            or self._node(node_id) is None  # unknown: a metadata update will wake us
        ):
            return 3600.0  # woken when the attempt ends, or by a response
        return max(0.0, self._retry_at.get(node_id, 0.0) - now)

    def backing_off(self, node_id: int, now: float) -> bool:
        return self._retry_at.get(node_id, 0.0) > now

    @property
    def _stopped(self) -> bool:
        # A socket opened (or a task spawned) from now on would outlive close().
        return self._closed or self._tasks.closed

    def _start_connect(self, node_id: int, now: float) -> None:
        if self._stopped or node_id in self._connecting or self.backing_off(node_id, now):
            return
        node = self._node(node_id)
        if node is None:
            return
        self._spawn_connect(node)

    def _spawn_connect(self, node: Node) -> Handle[BrokerConnection]:
        handle = self._tasks.spawn(
            self._connect, node, name=f"aiokafka_lite.connect.{node.node_id}"
        )
        if not handle.done():
            self._connecting[node.node_id] = handle
        return handle

    async def _connect(self, node: Node) -> BrokerConnection:
        try:
            conn = BrokerConnection(
                node.node_id,
                node.host,
                node.port,
                client_id=self._config.client_id,
                request_timeout_ms=self._config.request_timeout_ms,
                on_lost=self._on_lost,
                on_answered=self._on_answered,
                security=self._security,
                spawn=self._tasks.spawn,
            )
            await conn.open(self._config.socket_connection_setup_timeout_ms / 1000)
        except Exception as e:
            # Whatever went wrong, it is a failed attempt: counted, backed off
            # and remembered (records that expire meanwhile say why).
            error = (
                e
                if isinstance(e, KafkaError)
                else KafkaConnectionError(
                    f"cannot connect to node {node.node_id} at {node.host}:{node.port}: "
                    f"{type(e).__name__}: {e}"
                )
            )
            self._connect_failed(node, error)
            if error is e:
                raise
            raise error from e
        finally:
            self._connecting.pop(node.node_id, None)
            self._wakeup()
        failures = self._failures.pop(node.node_id, None)
        self._retry_at.pop(node.node_id, None)
        self._last_errors.pop(node.node_id, None)
        self._warned_at.pop(node.node_id, None)
        self._conns[node.node_id] = conn
        if failures:
            log.info(
                "connected to node %s at %s:%s after %d failed attempt(s)",
                node.node_id,
                node.host,
                node.port,
                failures,
            )
        else:
            log.debug("connected to node %s at %s:%s", node.node_id, node.host, node.port)
        return conn

    def _connect_failed(self, node: Node, error: KafkaError) -> None:
        node_id = node.node_id
        failures = self._failures.get(node_id, 0) + 1
        self._failures[node_id] = failures
        delay = backoff_delay(
            self._config.reconnect_backoff_ms, self._config.reconnect_backoff_max_ms, failures
        )
        now = time.monotonic()
        self._retry_at[node_id] = now + delay
        self._last_errors[node_id] = error
        if isinstance(error, AuthenticationFailedError):
            log.error("node %s: %s; retrying in %.0f ms", node_id, error, delay * 1000)
            self.auth_error = error
            return
        warned = self._warned_at.get(node_id)
        if failures > 1 and (warned is None or now - warned >= WARN_INTERVAL):
            # A node that stays unreachable is worth a WARNING, but not one per
            # attempt: at most one per WARN_INTERVAL per node.
            self._warned_at[node_id] = now
            log.warning(
                "node %s (%s:%s): %d connection attempts failed in a row; last: %s; "
                "retrying in %.0f ms",
                node_id,
                node.host,
                node.port,
                failures,
                error,
                delay * 1000,
            )
        else:
            log.info("node %s: %s; retrying in %.0f ms", node_id, error, delay * 1000)

    def connection_error(self, node_id: int) -> KafkaError | None:
        """Why the last attempt to connect to ``node_id`` failed (None once connected)."""
        return self._last_errors.get(node_id)

    def _on_answered(self, conn: BrokerConnection) -> None:
        # An answer freed one of the connection's in-flight slots. If they were all taken,
        # the sender may have been told nothing could go (it skips wake-ups then, see
        # saturated()) whatever the request was: Produce, metadata, a transaction's.
        if conn.in_flight + 1 >= self._config.max_in_flight_requests_per_connection:
            self._wakeup()

    def _on_lost(self, conn: BrokerConnection) -> None:
        if self._conns.get(conn.node_id) is conn:
            del self._conns[conn.node_id]
            if not self._closed:
                # The broker may be gone or its partitions moved: learn which.
                self.metadata.request_update()
        self._wakeup()

    async def connect(self, node_id: int) -> BrokerConnection:
        """Await an open connection to ``node_id`` (for one-off requests).

        The attempt is shared with the sender's and never cancelled by a caller
        that gives up waiting for it.
        """
        if self._stopped:
            raise KafkaConnectionError(f"cannot connect to node {node_id}: the client is closed")
        conn = self.connection(node_id)
        if conn is not None:
            return conn
        handle = self._connecting.get(node_id)
        if handle is None:
            node = self._node(node_id)
            if node is None:
                raise KafkaConnectionError(f"unknown broker node {node_id}")
            handle = self._spawn_connect(node)
        return await handle

    def least_loaded_node(self, now: float) -> int | None:
        """A connected node with the fewest in-flight requests, else one to connect to.

        Known nodes whose last connection attempt failed come last: once every
        known node has failed, the configured bootstrap servers are asked
        (KIP-899), so a cluster whose addresses all changed can still be found
        again. (Waiting for every known node to be in its reconnect backoff at
        once is not enough: with a metadata retry backoff longer than the
        reconnect backoff, a refresh never finds them all backing off.)
        """
        best: int | None = None
        best_load = 1 << 30
        for node_id, conn in self._conns.items():
            if not conn.closed and conn.in_flight < best_load and node_id in self._known_nodes():
                best, best_load = node_id, conn.in_flight
        if best is not None:
            return best
        known, bootstrap = self.metadata.cluster.nodes, self._bootstrap.nodes
        for candidates in (known, bootstrap):
            fresh = [
                n for n in candidates if n not in self._failures and not self.backing_off(n, now)
            ]
            if fresh:
                return random.choice(fresh)
        # Every node failed its last attempt: any one that is done backing off.
        for candidates in (known, bootstrap):
            usable = [n for n in candidates if not self.backing_off(n, now)]
            if usable:
                return random.choice(usable)
        return None

    def _known_nodes(self) -> dict[int, Node]:
        nodes = self.metadata.cluster.nodes
        return nodes if nodes else self._bootstrap.nodes

    def close_idle(self, now: float) -> float:
        """Close connections idle past ``connections_max_idle_ms``; return s to the next check."""
        if self._config.connections_max_idle_ms is None:
            return 3600.0  # never closed for idleness
        limit = self._config.connections_max_idle_ms / 1000
        next_check = limit
        for conn in list(self._conns.values()):
            if conn.in_flight:
                continue  # busy; its answer or its request timeout comes first
            idle = now - conn.last_activity
            if idle >= limit:
                log.debug("closing connection to node %s, idle for %.0f s", conn.node_id, idle)
                # Forget it first: a deliberate close is no sign that the
                # cluster changed, so _on_lost must not ask for metadata.
                del self._conns[conn.node_id]
                conn.close()
            else:
                next_check = min(next_check, limit - idle)
        return next_check

    # -- metadata ------------------------------------------------------------------

    def maybe_update_metadata(self, now: float) -> float:
        """Start a metadata refresh if one is due; return seconds until the next is."""
        if self._metadata_task is not None or self._stopped:
            return self._config.request_timeout_ms / 1000
        wait = self.metadata.time_to_next_update(now)
        if wait > 0:
            return wait
        node_id = self.least_loaded_node(now)
        if node_id is None:
            return self._config.reconnect_backoff_ms / 1000
        self.metadata.attempt_started(now)
        handle = self._tasks.spawn(
            self._refresh_metadata, node_id, now, name="aiokafka_lite.metadata_refresh"
        )
        if not handle.done():
            self._metadata_task = handle
        return self._config.request_timeout_ms / 1000

    async def _refresh_metadata(self, node_id: int, now: float) -> None:
        try:
            topics = self.metadata.topics_for_request(now)
            response = await self.fetch_metadata(node_id, topics)
            self.metadata.update(Cluster.from_metadata(response), time.monotonic())
        except KafkaError as e:
            log.info("metadata refresh from node %s failed: %s", node_id, e)
            self.metadata.failed_update(e)
        except Exception as e:  # an answer we could not make sense of: retried after backoff
            now = time.monotonic()
            if now - self._metadata_warned_at >= WARN_INTERVAL:  # not on every retry
                self._metadata_warned_at = now
                log.warning("metadata refresh from node %s failed", node_id, exc_info=True)
            else:
                log.info("metadata refresh from node %s failed: %r", node_id, e)
            error = ProtocolError(f"metadata refresh from node {node_id} failed: {e!r}")
            error.__cause__ = e
            self.metadata.failed_update(error)
        finally:
            self._metadata_task = None
            self._wakeup()

    async def fetch_metadata(self, node_id: int, topics: list[str] | None) -> MetadataResponse:
        conn = await self.connect(node_id)
        request = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=self._config.allow_auto_create_topics,
        )
        response: MetadataResponse = await conn.send(request)
        return response

    async def find_coordinator(self, key_type: int, key: str) -> Node:
        """Ask the least-loaded broker for the coordinator of ``key`` (key type ``GROUP`` or
        ``TRANSACTION``); raises the broker's error, naming ``key``."""
        node_id = self.least_loaded_node(time.monotonic())
        if node_id is None:
            raise KafkaConnectionError(f"no broker is reachable to find the coordinator of {key!r}")
        conn = await self.connect(node_id)
        version = conn.version_for(FindCoordinatorRequest)
        if version >= 4:  # KIP-699: keys in a batch, answers per key
            request = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key])
        else:
            request = FindCoordinatorRequest(key=key, key_type=key_type)
        response: FindCoordinatorResponse = await conn.send(request, version)
        if version >= 4:
            found = next((c for c in response.coordinators if c.key == key), None)
            if found is None:
                raise CoordinatorNotAvailableError(f"FindCoordinator did not answer for {key!r}")
            code, message = found.error_code, found.error_message
            coordinator = Node(found.node_id, found.host, found.port, None)
        else:
            code, message = response.error_code, response.error_message
            coordinator = Node(response.node_id, response.host, response.port, None)
        if code:
            kind = "group" if key_type == GROUP else "transactional id"
            raise error_from_response(
                code, message=f"FindCoordinator for {kind} {key!r}: {message}"
            )
        return coordinator

    async def bootstrap(self, timeout: float) -> None:
        """Fetch the first metadata from any configured server, or raise."""
        errors: list[str] = []
        deadline = time.monotonic() + timeout
        for node_id in list(self._bootstrap.nodes):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):
                    response = await self.fetch_metadata(node_id, [])
            except AuthenticationFailedError:
                raise  # retrying another server with the same credentials will not help
            except (KafkaError, TimeoutError) as e:
                errors.append(
                    f"{self._bootstrap.nodes[node_id].host}:"
                    f"{self._bootstrap.nodes[node_id].port}: {str(e) or 'no answer in time'}"
                )
                continue
            self.metadata.update(Cluster.from_metadata(response), time.monotonic())
            return
        raise KafkaConnectionError(
            "unable to bootstrap from " + ", ".join(errors or ["(no servers tried)"])
        )

    # -- one-off requests -------------------------------------------------------------

    async def request(self, node_id: int, request: Request) -> Any:
        conn = await self.connect(node_id)
        return await conn.send(request)

    # -- shutdown ----------------------------------------------------------------------

    async def close(self) -> None:
        """Close every connection, and the client's own task group if it has one
        (a group given by an owner is the owner's to close)."""
        self._closed = True
        for handle in [*self._connecting.values(), self._metadata_task]:
            if handle is not None:
                handle.cancel()
        if self._own_tasks:
            await self._tasks.close()
        conns = list(self._conns.values())
        self._conns.clear()
        for conn in conns:
            conn.close()
        for conn in conns:
            try:
                async with asyncio.timeout(1.0):
                    await conn.wait_closed()
            except TimeoutError:
                log.warning("connection to node %s did not close in time", conn.node_id)

    def abandon(self) -> None:
        """Close every connection now, without waiting (a dropped producer)."""
        self._closed = True
        conns = list(self._conns.values())
        self._conns.clear()
        for conn in conns:
            conn.close()
