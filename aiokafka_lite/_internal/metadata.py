"""The producer's view of the cluster and the policy for refreshing it.

Like Java's ``Metadata``: it holds the current :class:`Cluster` snapshot, a
version that goes up with every update, a need-update flag, the topics in use
(dropped after ``metadata_max_idle_ms`` without a send), and the timing rules
(``retry_backoff_ms`` between attempts, doubling up to ``retry_backoff_max_ms``
while they keep failing; ``metadata_max_age_ms`` between refreshes). It performs
no I/O: the client fetches, this class decides when and what, and ``send()``
awaits the version bump.

Waiting is Java's ``awaitUpdate`` with an :class:`asyncio.Condition` in place of
``wait()``/``notifyAll()``. Some updates arrive in synchronous code (a Produce
answer's leader hint, ``stop()``'s teardown, a test calling :meth:`Metadata.update`),
and ``notify_all()`` wants the condition's lock held; :func:`_held` takes it there
without awaiting, which is safe because no holder ever awaits while holding it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator

from ..errors import AuthenticationFailedError, UnknownTopicTimeoutError, error_from_response
from .backoff import backoff_delay
from .cluster import Cluster, Node, PartitionInfo

log = logging.getLogger("aiokafka_lite.metadata")

__all__ = ["Metadata", "wait_on_metadata"]

INVALID_TOPIC_EXCEPTION = 17
# Errors that mean "this topic will not appear by waiting".
_FATAL_TOPIC_ERRORS = {INVALID_TOPIC_EXCEPTION, 29}  # 29: TOPIC_AUTHORIZATION_FAILED


class Metadata:
    def __init__(
        self,
        bootstrap: Cluster,
        *,
        retry_backoff_ms: float,
        retry_backoff_max_ms: float,
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
        self._backoff_ms = (retry_backoff_ms, retry_backoff_max_ms)
        self._retry_backoff = retry_backoff_ms / 1000  # the wait before the next attempt
        self._failures = 0  # refreshes failed in a row
        self._max_age = max_age_ms / 1000
        self._topic_idle = topic_idle_ms / 1000
        self._topics: dict[str, float] = {}  # topic -> last used (monotonic)
        # Bound to the loop on the first wait; replaced by an unbound one on close.
        self._updated = asyncio.Condition()
        self._closed: BaseException | None = None  # set once the producer is closing
        self.last_error: BaseException | None = None
        # The last topic id seen for each topic in use, kept across answers that leave
        # the topic out (deleted, not created again yet), so that a topic deleted and
        # created again is noticed; ``on_topic_recreated`` is told its name.
        self._topic_ids: dict[str, bytes] = {}
        self.on_topic_recreated: Callable[[str], None] | None = None

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
            self._topic_ids.pop(t, None)
        return list(self._topics)

    # -- aiokafka's read API (frameworks call producer._metadata's) ------------

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """aiokafka's ``ClusterMetadata.partitions_for_topic``: ``None`` if unknown."""
        parts = self.partitions_by_topic.get(topic)
        return None if parts is None else {p.partition for p in parts}

    def available_partitions_for_topic(self, topic: str) -> set[int] | None:
        """The partitions with a leader (aiokafka's method of the same name)."""
        available = self.cluster.available_partitions_by_topic.get(topic)
        return None if available is None else set(available)

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
        cluster = self._keep_newer_leaders(cluster)
        self.cluster = cluster
        self.partitions_by_topic = cluster.partitions_by_topic
        self.version += 1
        log.debug("metadata version %s: %r", self.version, cluster)
        self.last_success = now
        self.last_error = None
        self._failures = 0
        self._retry_backoff = self._backoff_ms[0] / 1000
        self._note_topic_ids(cluster)
        for topic, code in cluster.topic_errors.items():
            if code == INVALID_TOPIC_EXCEPTION and self._topics.pop(topic, None) is not None:
                # The name itself is refused: no later answer will differ, so stop
                # asking (the send that wanted it fails on this answer's error).
                log.info("topic %r is not a valid topic name: no longer asked about", topic)
        # Topics we asked for that came back without partitions (not created
        # yet, leader election in progress) need another look soon.
        self.need_update = any(t not in cluster.partitions_by_topic for t in self._topics)
        self._notify()

    def _note_topic_ids(self, cluster: Cluster) -> None:
        """Tell ``on_topic_recreated`` of each topic whose id changed (deleted and
        created again: its partitions are new logs, which know no producer)."""
        for topic, topic_id in cluster.topic_ids.items():
            seen = self._topic_ids.get(topic)
            if seen == topic_id or (seen is None and topic not in self._topics):
                continue
            self._topic_ids[topic] = topic_id
            if seen is not None and self.on_topic_recreated is not None:
                log.info("topic %r was deleted and created again (new topic id)", topic)
                self.on_topic_recreated(topic)

    def _keep_newer_leaders(self, new: Cluster) -> Cluster:
        """``new``, except that no partition goes back to an older leader epoch.

        Metadata answers can lag: a broker that has not heard of a leader change
        yet describes the partition with the old leader and its older epoch, and
        would undo what a newer answer (or a KIP-951 hint from a Produce
        response, :meth:`move_leader`) told us. As Java's ``Metadata`` does, a
        partition whose new leader epoch is lower than the one we hold keeps our
        leader (and that leader's address, if the answer leaves it out). An
        unknown epoch (-1: Metadata before v7) replaces what we hold, and so does
        anything about a topic whose id changed (deleted and created again: its
        epochs start over) or from another cluster (another cluster id).
        """
        old = self.cluster
        if old.cluster_id != new.cluster_id:
            return new  # another cluster (or the first answer): nothing to compare with
        kept: dict[tuple[str, int], PartitionInfo] = {}
        nodes: dict[int, Node] = {}
        for topic, new_parts in new.partitions_by_topic.items():
            old_parts = old.partitions_by_topic.get(topic)
            if old_parts is None:
                continue
            old_id, new_id = old.topic_ids.get(topic), new.topic_ids.get(topic)
            if old_id is not None and new_id is not None and old_id != new_id:
                continue
            for p in new_parts:
                if p.partition >= len(old_parts):
                    continue  # a partition added since: nothing to compare with
                held = old_parts[p.partition]
                if p.leader_epoch < 0 or held.leader_epoch <= p.leader_epoch:
                    continue
                log.debug(
                    "%s[%s]: metadata names leader %s at epoch %s, older than our leader %s "
                    "at epoch %s: keeping ours",
                    topic,
                    p.partition,
                    p.leader,
                    p.leader_epoch,
                    held.leader,
                    held.leader_epoch,
                )
                kept[topic, p.partition] = p._replace(
                    leader=held.leader, leader_epoch=held.leader_epoch
                )
                if held.leader not in new.nodes and held.leader in old.nodes:
                    nodes[held.leader] = old.nodes[held.leader]
        if not kept:
            return new
        return Cluster(
            [*new.nodes.values(), *nodes.values()],
            [
                kept.get((q.topic, q.partition), q)
                for qs in new.partitions_by_topic.values()
                for q in qs
            ],
            cluster_id=new.cluster_id,
            controller=new.controller,
            topic_errors=dict(new.topic_errors),
            topic_ids=dict(new.topic_ids),
        )

    def failed_update(self, error: BaseException) -> None:
        self.last_error = error
        # Back off further on each failure in a row (as Java's Metadata): a broker
        # whose answers we cannot use is not asked again every retry_backoff_ms.
        self._failures += 1
        self._retry_backoff = backoff_delay(*self._backoff_ms, self._failures + 1)
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

    def _notify(self) -> None:
        with _held(self._updated):
            self._updated.notify_all()

    def close_waiters(self, error: BaseException) -> None:
        """Make every current and later :meth:`wait_for_update` raise (a copy of) ``error``."""
        self._closed = error
        self._notify()
        # The woken waiters hold the old condition until they leave it; this object keeps
        # no reference to the loop.
        self._updated = asyncio.Condition()

    async def wait_for_update(self, version: int, timeout: float) -> None:
        """Wait until the version passes ``version`` or an update fails (or timeout)."""
        error = self.last_error
        updated = self._updated
        async with asyncio.timeout(timeout), updated:
            while self.version <= version and self.last_error is error:
                if self._closed is not None:
                    raise _fresh(self._closed)
                await updated.wait()


@contextlib.contextmanager
def _held(condition: asyncio.Condition) -> Iterator[None]:
    """Hold ``condition``'s lock in synchronous code on the loop's thread (for ``notify_all()``).

    Every holder of the metadata condition's lock leaves it without awaiting in
    between (``Condition.wait()`` releases it before it suspends and takes it back in
    the step it resumes in), so whenever other code runs the lock is free with no
    task queued for it, and ``acquire()`` takes it without suspending: its coroutine
    finishes on the first step. If it ever did not, the invariant broke: that is an
    error, not a wait.
    """
    acquiring = condition.acquire()
    try:
        acquiring.send(None)
    except StopIteration:
        pass
    else:
        acquiring.close()
        raise RuntimeError("the metadata condition's lock is held across an await")
    try:
        yield
    finally:
        condition.release()


async def wait_on_metadata(
    metadata: Metadata,
    topic: str,
    deadline: float,
    max_block_ms: float,
    wakeup: Callable[[], None],
    check_running: Callable[[], None],
) -> tuple[PartitionInfo, ...]:
    """Java's ``KafkaProducer.waitOnMetadata``: ask for ``topic``, await version bumps
    until its partitions are known (or ``deadline``, monotonic: UnknownTopicTimeoutError
    naming why). ``wakeup`` wakes the sender to fetch; ``check_running`` raises once the
    producer may no longer send."""
    metadata.add_topic(topic)
    while True:
        parts = metadata.partitions_by_topic.get(topic)
        if parts is not None:
            return parts
        if isinstance(metadata.last_error, AuthenticationFailedError):
            # A new instance per send: re-raising one would grow its traceback.
            raise AuthenticationFailedError(str(metadata.last_error)) from None
        code = metadata.cluster.topic_errors.get(topic)
        if code in _FATAL_TOPIC_ERRORS:
            raise error_from_response(code, topic=topic)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            # Say why: the topic's error, else why the last refresh failed.
            cause = metadata.last_error
            detail = f" (last error: {error_from_response(code).name})" if code else ""
            if not detail and cause is not None:
                detail = f" (last metadata error: {cause})"
            raise UnknownTopicTimeoutError(
                f"topic {topic!r} not present in metadata after "
                f"{max_block_ms} ms (max_block_ms){detail}",
                topic=topic,
            ) from cause
        version = metadata.request_update()
        wakeup()
        try:
            await metadata.wait_for_update(version, remaining)
        except TimeoutError:
            continue
        check_running()


def _fresh(error: BaseException) -> BaseException:
    """A new instance of ``error`` for each waiter (one raised twice grows its traceback)."""
    return type(error)(*error.args)
