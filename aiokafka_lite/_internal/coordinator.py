"""Requests to group and transaction coordinators, as the transaction manager makes them.

The coordinator of a key (a transactional id, or a consumer group) is found with
FindCoordinator and cached until it errs (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
a lost connection: it may have moved, so it is looked up again). Each operation is
retried on retriable errors with backoff, within ``max_block_ms``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..config import ProducerConfig
from ..errors import (
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotCoordinatorError,
    error_from_response,
)
from .backoff import backoff_delay
from .client import TRANSACTION, NetworkClient
from .connection import BrokerConnection

__all__ = ["Coordinators"]

log = logging.getLogger("aiokafka_lite.coordinator")

T = TypeVar("T")


class Coordinators:
    def __init__(
        self, config: ProducerConfig, client: NetworkClient, wakeup: Callable[[], None]
    ) -> None:
        self._config = config
        self._client = client
        self._wakeup = wakeup
        self._max_block = config.max_block_ms / 1000
        self._coordinators: dict[tuple[int, str], int] = {}

    async def retrying(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run ``attempt`` until it succeeds, fails for good, or max_block_ms runs out."""
        deadline = time.monotonic() + self._max_block
        failures = 0
        while True:
            remaining = deadline - time.monotonic()
            try:
                async with asyncio.timeout(max(remaining, 0.001)):
                    return await attempt()
            except TimeoutError:
                raise KafkaTimeoutError(
                    f"{what} did not complete within max_block_ms ({self._config.max_block_ms} ms)"
                ) from None
            except KafkaError as e:
                if not e.retriable:
                    raise
                failures += 1
                delay = self.backoff(failures)
                if time.monotonic() + delay >= deadline:
                    raise KafkaTimeoutError(
                        f"{what} did not complete within max_block_ms "
                        f"({self._config.max_block_ms} ms); last error: {e}"
                    ) from e
                log.info("%s: %s; retrying in %.0f ms", what, e, delay * 1000)
                await asyncio.sleep(delay)

    def backoff(self, failures: int) -> float:
        cfg = self._config
        return backoff_delay(cfg.retry_backoff_ms, cfg.retry_backoff_max_ms, failures)

    async def request(
        self, key_type: int, key: str, request: Any, max_version: int | None = None
    ) -> Any:
        """Send ``request`` to the coordinator of ``key`` (in the newest version both
        speak, at most ``max_version``); its answer."""
        conn = await self.connection(key_type, key)
        version = None
        if max_version is not None:
            version = min(conn.version_for(type(request)), max_version)
        return await self.send(conn, request, version, key_type, key)

    async def connection(self, key_type: int, key: str) -> BrokerConnection:
        """A connection to the coordinator of ``key``."""
        return await self._connect(await self._coordinator(key_type, key), key_type, key)

    async def _connect(self, node_id: int, key_type: int, key: str) -> BrokerConnection:
        try:
            return await self._client.connect(node_id)
        except KafkaError:
            self._coordinators.pop((key_type, key), None)
            raise

    async def send(
        self, conn: BrokerConnection, request: Any, version: int | None, key_type: int, key: str
    ) -> Any:
        try:
            return await conn.send(request, version)
        except (KafkaConnectionError, KafkaTimeoutError):
            self._coordinators.pop((key_type, key), None)  # it may have moved: look again
            raise

    def check(self, code: int, key_type: int, key: str, what: str) -> None:
        if code:
            error = error_from_response(code, message=what)
            self.forget_on(error, key_type, key)
            raise error

    def forget_on(self, error: KafkaError, key_type: int, key: str) -> None:
        if isinstance(error, NotCoordinatorError | CoordinatorNotAvailableError):
            self._coordinators.pop((key_type, key), None)

    async def _coordinator(self, key_type: int, key: str) -> int:
        """The node id of the coordinator for ``key`` (cached until it errs)."""
        cached = self._coordinators.get((key_type, key))
        if cached is not None:
            return cached
        found = await self._client.find_coordinator(key_type, key)
        coordinator = found.node_id
        kind = "transactional id" if key_type == TRANSACTION else "group"
        if coordinator not in self._client.metadata.cluster.nodes:
            self._client.metadata.request_update()
            self._wakeup()
            raise CoordinatorNotAvailableError(
                f"the coordinator of {kind} {key!r} is node {coordinator} "
                f"({found.host}:{found.port}), which is not in the metadata yet"
            )
        log.debug("coordinator of %s %r: node %s", kind, key, coordinator)
        self._coordinators[(key_type, key)] = coordinator
        return coordinator
