"""The producer's view of the cluster and the policy for refreshing it.

Like Java's ``Metadata``: it holds the current :class:`Cluster` snapshot, a
version that goes up with every update, a need-update flag, the topics in use
(dropped after ``metadata_max_idle_ms`` without a send), and the timing rules
(``retry_backoff_ms`` between attempts, ``metadata_max_age_ms`` between
refreshes). It performs no I/O: the client fetches, this class decides when and
what, and ``send()`` awaits the version bump on an ``asyncio.Condition``.
"""

from __future__ import annotations

import asyncio
import logging
import time

from .cluster import Cluster, Node, PartitionInfo

log = logging.getLogger("aiokafka_lite.metadata")

__all__ = ["Metadata"]


class Metadata:
    def __init__(
        self,
        bootstrap: Cluster,
        *,
        retry_backoff_ms: float,
        max_age_ms: float,
        topic_idle_ms: float,
    ) -> None:
        self.cluster = bootstrap
        self.bootstrap = bootstrap
        # The hot path reads this dict directly: topic -> partitions.
        self.partitions_by_topic: dict[str, tuple[PartitionInfo, ...]] = {}
        self.version = 0
        self.need_update = True
        self.last_attempt = 0.0
        self.last_success = 0.0
        self._retry_backoff = retry_backoff_ms / 1000
        self._max_age = max_age_ms / 1000
        self._topic_idle = topic_idle_ms / 1000
        self._topics: dict[str, float] = {}  # topic -> last used (monotonic)
        self._cond: asyncio.Condition | None = None
        self.last_error: BaseException | None = None

    # -- topics in use -------------------------------------------------------

    def add_topic(self, topic: str) -> None:
        """A send wants ``topic``: keep it in every request; fetch it soon if new."""
        if topic not in self._topics:
            self._topics[topic] = time.monotonic()
            self.need_update = True

    def touch(self, topic: str, now: float) -> None:
        self._topics[topic] = now

    def topics_for_request(self, now: float) -> list[str]:
        """The topics to ask about, dropping those idle past ``metadata_max_idle_ms``."""
        idle = [t for t, used in self._topics.items() if now - used > self._topic_idle]
        for t in idle:
            del self._topics[t]
        return list(self._topics)

    # -- refresh timing -------------------------------------------------------

    def request_update(self) -> int:
        self.need_update = True
        return self.version

    def time_to_next_update(self, now: float) -> float:
        """Seconds until a refresh is due: backoff after an attempt, else max age."""
        if self.need_update:
            return max(0.0, self.last_attempt + self._retry_backoff - now)
        return max(0.0, self.last_success + self._max_age - now)

    def attempt_started(self, now: float) -> None:
        self.last_attempt = now

    # -- updates --------------------------------------------------------------

    def update(self, cluster: Cluster, now: float) -> None:
        self.cluster = cluster
        self.partitions_by_topic = cluster.partitions_by_topic
        self.version += 1
        log.debug("metadata version %s: %r", self.version, cluster)
        self.last_success = now
        self.last_error = None
        # Topics we asked for that came back without partitions (not created
        # yet, leader election in progress) need another look soon.
        self.need_update = any(t not in cluster.partitions_by_topic for t in self._topics)
        self._notify()

    def failed_update(self, error: BaseException) -> None:
        self.last_error = error
        self._notify()

    def move_leader(
        self, topic: str, partition: int, leader: int, epoch: int, node: Node | None
    ) -> bool:
        """Apply a KIP-951 leader hint; ignore one older than what we know."""
        parts = self.partitions_by_topic.get(topic)
        if parts is None or partition >= len(parts) or epoch < parts[partition].leader_epoch:
            return False
        if node is None and leader not in self.cluster.nodes:
            return False
        log.debug("%s[%s]: leader is now node %s (epoch %s)", topic, partition, leader, epoch)
        self.cluster = self.cluster.with_leader(topic, partition, leader, epoch, node)
        self.partitions_by_topic = self.cluster.partitions_by_topic
        self.version += 1
        self._notify()
        return True

    # -- waiting ----------------------------------------------------------------

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    def _notify(self) -> None:
        cond = self._cond
        if cond is None:
            return

        async def notify() -> None:
            async with cond:
                cond.notify_all()

        # Updates arrive from callbacks; the notification needs the lock, so it
        # runs as a short task rather than inline.
        task = asyncio.get_running_loop().create_task(notify())
        _background.add(task)
        task.add_done_callback(_background.discard)

    async def wait_for_update(self, version: int, timeout: float) -> None:
        """Wait until the version passes ``version`` or an update fails (or timeout)."""
        cond = self._condition()
        error = self.last_error

        def changed() -> bool:
            return self.version > version or self.last_error is not error

        async with asyncio.timeout(timeout), cond:
            await cond.wait_for(changed)


_background: set[asyncio.Task[None]] = set()
