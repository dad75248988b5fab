"""The sender: one task per producer that moves batches from the accumulator to brokers.

Java's ``Sender.runOnce`` as an event-loop task::

    ready    = partitions with a sendable batch, by leader (accumulator.ready)
    refresh metadata if a leader is unknown
    for each ready leader with a connection that can take a request:
        drain one batch per partition, up to max_request_size -> one ProduceRequest
    fail batches past delivery_timeout_ms
    sleep until the next linger deadline, a wake-up, or a response

Responses are handled in the connection's callback: each partition's result
completes its batch, or puts it back at the front of its queue to retry after
``retry_backoff_ms`` (exponential, with jitter), or fails it with an error that
names the topic, partition and the broker's error (:mod:`aiokafka_lite._internal.batch_outcomes`).
Then, in the same callback, a pass runs at once (:meth:`Sender.answered`), as Java's loop
drains right after ``poll()`` has handled the answers: the partitions an answer freed
send their next batches before the application's tasks run again, so that a task busy
appending does not stand between an answer and the next request. Answers read together
share a pass while the broker still holds a later request of ours, so that what they
free shares a request; once it holds none, the pass runs at once, so that it is not idle.

This module is the loop, the Produce requests it builds from drained batches, and the
idempotent producer's id and epoch (asked for with :mod:`aiokafka_lite._internal.producer_id`
when there is none, bumped locally after a failure, and renumbering what is queued
under a new epoch).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from ..config import ProducerConfig
from ..errors import (
    DeliveryOutcomeUnknownError,
    KafkaError,
    KafkaTimeoutError,
    LeaderNotAvailableError,
    UnsupportedCompressionTypeError,
    error_from_response,
)
from ..metrics import ProducerMetrics
from . import batch_errors
from .accumulator import RecordAccumulator
from .backoff import backoff_delay
from .batch_outcomes import BatchOutcomes
from .client import NetworkClient
from .connection import BrokerConnection
from .idempotence import IdempotenceState
from .producer_batch import ProducerBatch
from .producer_id import fetch_producer_id
from .protocol.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from .tasks import BackgroundTasks, Handle
from .transaction import TransactionManager

__all__ = ["Sender"]

# The sender loop's backoff after a failed iteration starts at least here, so that
# retry_backoff_ms=0 cannot turn a failure that repeats into a busy loop.
_MIN_LOOP_BACKOFF_MS = 10

log = logging.getLogger("aiokafka_lite.sender")


class Sender:
    """The loop of one producer: drains the accumulator into Produce requests, one per
    ready leader, and keeps the idempotent producer's id and epoch valid."""

    def __init__(
        self,
        config: ProducerConfig,
        client: NetworkClient,
        accumulator: RecordAccumulator,
        on_fatal: Callable[[KafkaError], None],
        tasks: BackgroundTasks,
    ) -> None:
        self._config = config
        self._on_fatal = on_fatal
        self._tasks = tasks
        self._idem = IdempotenceState() if config.enable_idempotence else None
        if self._idem is not None:
            accumulator.sequenced = self._idem.known_partitions
            client.metadata.on_topic_recreated = self._idem.forget_topic
        self.transactions: TransactionManager | None = None
        if config.transactional_id is not None and self._idem is not None:
            self.transactions = TransactionManager(
                config,
                client,
                accumulator,
                self._idem,
                on_fatal=self._fail_fatally,
                abort_queued=self._abort_queued,
                wakeup=self.wakeup,
                tasks=tasks,
            )
        self._txn = self.transactions
        self._pid_task: Handle[None] | None = None
        self._pid_error: BaseException | None = None  # why the last InitProducerId failed
        self._client = client
        self._acc = accumulator
        self._metadata = client.metadata
        self._acks = config.acks_value
        self._loop = asyncio.get_running_loop()
        self._wake: asyncio.Future[None] | None = None
        self._wake_timer: asyncio.TimerHandle | None = None  # ends the loop's sleep
        self._task: Handle[None] | None = None
        # Per node, its Produce requests whose answers are not handled yet, in the order
        # sent (the order a connection answers in): see answered().
        self._unhandled: dict[int, collections.deque[asyncio.Future[Any]]] = {}
        # Counted per request and per batch, never per record.
        self.requests_sent = 0
        self.batches_sent = 0
        self.records_sent = 0
        self.metrics = ProducerMetrics()
        # The batches in flight, and whether the sender is running / failed for good.
        self._out = BatchOutcomes(
            config,
            accumulator,
            self._metadata,
            self._idem,
            self._txn,
            self.metrics,
            self.answered,
        )

    @property
    def records_retried(self) -> int:
        return self._out.records_retried

    @property
    def records_failed(self) -> int:
        return self._out.records_failed

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        self._task = self._tasks.spawn(self._run, name="aiokafka_lite.sender")

    def wakeup(self) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    def answered(self, node_id: int, fut: asyncio.Future[Any]) -> None:
        """A Produce answer (``fut``, from ``node_id``) was handled (its batches finished,
        put back or failed): run a pass now, inside the answer's callback, so that what the
        answer freed leaves before any other task runs.

        When the node's next answer is already in too (read with this one: its callback
        comes right after this one) and the broker still works on a later request of
        ours, the pass waits for that answer, as Java drains once after ``poll()`` has
        handled them all: the partitions the answers free share one request instead of
        taking one each, at no cost, since the broker is busy. Once every request sent
        to the node is answered, the pass runs at once, so that the broker has the next
        request while the rest of the read is handled (without idempotence, where each
        partition has one batch in flight, waiting there too left one request in flight
        and cost Tansu a fifth of W3's throughput). The loop is woken only if it sleeps
        past the pass's next deadline; a pass that raises leaves the work to the loop,
        whose own pass meets the same failure, logs it and backs off."""
        waiting = self._unhandled.get(node_id)
        if waiting is not None and fut in waiting:
            waiting.remove(fut)  # (the first, unless a later request failed alone)
            if waiting and waiting[0].done() and not waiting[-1].done():
                return  # the next answer is in, and a later request still at the broker
            if not waiting:
                del self._unhandled[node_id]
        if not self._out.running or self._task is None or self._task.done():
            self.wakeup()
            return
        try:
            delay = self._run_once(time.monotonic())
        except Exception:
            log.debug("a pass after a Produce answer failed; the loop takes over", exc_info=True)
            self.wakeup()
            return
        timer = self._wake_timer
        if timer is not None and self._loop.time() + delay < timer.when():
            self.wakeup()

    def batch_queued(self) -> None:
        """The accumulator's wake-up: a batch was queued, filled or started (its linger
        begins). A pass for it would send nothing while every partition with a batch
        has its most batches in flight (only a Produce answer frees those, and it wakes
        the sender), or every broker connection its most requests (any answer on a full
        connection wakes it: the client's ``_on_answered``). Then it sleeps on (with
        16 KiB batches, most batches fill while five requests are in flight)."""
        if self._wake is not None and (self._acc.all_blocked() or self._client.saturated()):
            return
        self.wakeup()

    @property
    def idle(self) -> bool:
        """Nothing buffered and nothing in flight."""
        return not self._acc.has_incomplete() and not self._out.in_flight

    async def stop(self, timeout: float) -> None:
        """Deliver everything within ``timeout`` s, then fail what is left.

        The loop itself ends when the producer's task group closes (:meth:`halt`).
        """
        self._acc.closing = True
        self.wakeup()
        deadline = time.monotonic() + timeout
        while not self.idle and time.monotonic() < deadline:
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await self._acc.await_flush_completion()
            except TimeoutError:
                break
        self.fail_all(
            KafkaTimeoutError(
                "the producer was stopped before this record was delivered "
                f"(stop timeout {timeout:.1f}s)"
            )
        )

    def fail_all(self, error: KafkaError) -> None:
        """Fail every batch still queued or in flight with ``error``; no retry after it."""
        self._out.running = False
        for batch in self._acc.abort_undrained(error):
            log.debug("aborted %r on stop", batch)
        for batch in list(self._out.in_flight):
            self._out.finish(batch, error=error)
        self.wakeup()

    def halt(self) -> None:
        """No more passes: the loop (and InitProducerId) end at their next wake-up, and
        the task group's closing cancels them anyway."""
        self._out.running = False
        self.wakeup()

    # -- the loop ------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        while self._out.running:
            try:
                delay = self._run_once(time.monotonic())
                failures = 0
            except Exception:  # never let one bad iteration kill delivery
                failures += 1
                # Backed off (growing, never zero), so a failure that repeats
                # cannot make the loop spin; logged with its traceback on the
                # 1st, 2nd, 4th, 8th ... time in a row, not on every pass.
                if failures & (failures - 1) == 0:
                    log.exception("sender iteration failed (%d time(s) in a row)", failures)
                delay = backoff_delay(
                    max(self._config.retry_backoff_ms, _MIN_LOOP_BACKOFF_MS),
                    max(self._config.retry_backoff_max_ms, 1000),
                    failures,
                )
            if delay > 0:
                await self._sleep(delay)
            else:
                await asyncio.sleep(0)  # let appends and responses in between drains

    async def _sleep(self, delay: float) -> None:
        wake = self._wake = self._loop.create_future()
        timer = self._wake_timer = self._loop.call_later(delay, _resolve, wake)
        try:
            await wake
        finally:
            timer.cancel()
            self._wake = None
            self._wake_timer = None

    def _run_once(self, now: float) -> float:
        if self._client.auth_error is not None:
            self._fail_unauthenticated()
        ready, delay, unknown_leader, expired = self._acc.ready(
            self._metadata.partitions_by_topic, now
        )
        for batch in expired:
            self._expire(batch, now)
        for batch, error in self._acc.take_unsendable():
            self._fail_unsendable(batch, error, queued=True)
        if unknown_leader:
            self._metadata.request_update()
        if self._txn is not None:  # a partition is drained once it is in the transaction
            ready = self._txn.filter_ready(ready, self._acc.queued_partitions())
        if self._idem is not None and not self._producer_id_ready(now):
            # No batch may go out without a valid producer id and epoch.
            delay = min(delay, self._client.maybe_update_metadata(now))
            return min(delay, self._config.retry_backoff_ms / 1000)
        sent_any = False
        for node_id, queues in ready.items():
            conn = self._client.ready(node_id, now)
            if conn is None:
                delay = min(delay, self._client.connection_delay(node_id, now))
                continue
            batches = self._acc.drain(queues, self._config.max_request_size)
            if batches:
                self._send(conn, batches, now)
                sent_any = True
        delay = min(delay, self._client.maybe_update_metadata(now))
        delay = min(delay, self._client.close_idle(now))
        if self._acc.closing and self.idle:
            delay = min(delay, 0.05)
        return 0.0 if sent_any and self._acc.has_pending() else delay

    # -- produce requests -------------------------------------------------------------

    def _send(self, conn: BrokerConnection, batches: list[ProducerBatch], now: float) -> None:
        # From here on each batch is in flight until it is answered, put back in
        # its queue or failed: whatever raises below fails exactly the batches it
        # concerns, and nothing escapes to the loop.
        self._out.in_flight.update(batches)
        try:
            version = conn.version_for(ProduceRequest)
            if self._txn is not None and not self._txn.v2:
                # Produce v12+ asks the broker to add partitions (transactions v2).
                version = min(version, ProduceRequest.MAX_VERSION_TXN_V1)
        except Exception as e:  # a broker too old (or too odd) for any Produce we speak
            self._fail_request(conn.node_id, batches, e, now)
            return
        if version < 7 and self._config.compression_type == "zstd":
            self._refuse_zstd(conn.node_id, version, batches)
            return
        by_topic: dict[str, list[PartitionProduceData]] = {}
        by_tp: dict[tuple[str, int], ProducerBatch] = {}
        for batch in batches:
            topic, partition = batch.queue.tp
            self._metadata.touch(topic, now)
            try:
                records = self._close(batch, now)
            except Exception as e:  # this batch only: the others go out without it
                self._fail_unsendable(batch, e)
                continue
            by_topic.setdefault(topic, []).append(PartitionProduceData(partition, records))
            by_tp[batch.queue.tp] = batch
        if not by_tp:
            return
        sending = list(by_tp.values())
        try:
            request = ProduceRequest(
                transactional_id=self._config.transactional_id,
                acks=self._acks,
                timeout_ms=self._config.request_timeout_ms,
                topic_data=[
                    TopicProduceData(name=t, partition_data=parts) for t, parts in by_topic.items()
                ],
            )
            fut = conn.send(request, version, expect_response=self._acks != 0)
        except Exception as e:  # the connection closed meanwhile, or encoding failed
            self._fail_request(conn.node_id, sending, e, now)
            return
        record_count = sum(b.count for b in sending)
        self.requests_sent += 1
        self.batches_sent += len(sending)
        self.records_sent += record_count
        self.metrics.request_sent(record_count, now)
        self._unhandled.setdefault(conn.node_id, collections.deque()).append(fut)
        fut.add_done_callback(partial(self._out.on_response, by_tp, conn.node_id, now))

    def _fail_request(
        self, node_id: int, batches: list[ProducerBatch], cause: Exception, now: float
    ) -> None:
        """A request could not be sent: retry its batches if ``cause`` says that may
        help (the connection closed meanwhile), else fail them, naming the cause."""
        if isinstance(cause, KafkaError) and cause.retriable:
            for batch in batches:
                self._out.retry_or_fail(batch, cause, now)
            return
        parts = ", ".join(f"{b.queue.tp.topic}[{b.queue.tp.partition}]" for b in batches)
        log.error(
            "cannot send a Produce request to node %s (%s): %s: %s",
            node_id,
            parts,
            type(cause).__name__,
            cause,
        )
        for batch in batches:
            self._out.finish(batch, error=batch_errors.unsendable(batch, cause))

    def _fail_unsendable(
        self, batch: ProducerBatch, cause: Exception, queued: bool = False
    ) -> None:
        """Fail one batch that cannot be put on the wire (logged once, with the cause)."""
        topic, partition = batch.queue.tp
        log.error(
            "cannot send %d record(s) for %s[%s]: %s: %s",
            batch.count,
            topic,
            partition,
            type(cause).__name__,
            cause,
        )
        # Numbered for this send but never sent: give the numbers back, so the
        # partition's sequence has no gap (that would need a new epoch).
        if (
            self._idem is not None
            and batch.attempts == 0
            and batch.base_sequence >= 0
            and self._idem.release_sequence(batch.queue.tp, batch.base_sequence, batch.count)
        ):
            batch.base_sequence = -1
        error = batch_errors.unsendable(batch, cause)
        if queued:
            self._out.fail_queued(batch, error)
        else:
            self._out.finish(batch, error=error)

    def _close(self, batch: ProducerBatch, now: float) -> bytearray:
        """The batch's bytes for this attempt: its header stamped (with producer id,
        epoch and sequence when idempotent), compressed on the first attempt."""
        raw = len(batch.buf)
        idem = self._idem
        if idem is None:
            records = batch.close()
        else:
            if batch.base_sequence < 0:  # first send (or renumbered after a new epoch)
                batch.base_sequence = idem.next_sequence(batch.queue.tp, batch.count)
            records = batch.close(
                producer_id=idem.producer_id,
                producer_epoch=idem.epoch,
                base_sequence=batch.base_sequence,
                transactional=self._txn is not None,
            )
        if batch.attempts == 0:
            if self._config.compression_type not in (None, "none"):
                self._acc.observe_compression(batch.queue.tp.topic, raw, len(records))
            self.metrics.batch_sent(batch.count, raw, len(records), now - batch.created, now)
        return records

    def _refuse_zstd(self, node_id: int, version: int, batches: list[ProducerBatch]) -> None:
        # zstd batches need Produce v7 (Kafka 2.1); older brokers cannot take them.
        for batch in batches:
            self._out.finish(
                batch,
                error=UnsupportedCompressionTypeError(
                    f"broker node {node_id} speaks Produce v{version}; zstd needs v7+",
                    topic=batch.queue.tp.topic,
                    partition=batch.queue.tp.partition,
                ),
            )

    # -- producer id and epoch -------------------------------------------------------------

    def _producer_id_ready(self, now: float) -> bool:
        idem = self._idem
        assert idem is not None
        if self._out.fatal is not None:
            return False
        if idem.has_producer_id and not idem.bump_needed:
            return True
        if self._txn is not None:
            return False  # the transaction manager starts (and bumps) epochs
        if idem.bump_needed and self._out.in_flight:
            return False  # a new epoch only once every request of the old one is answered
        if idem.bump_needed and (bumped := idem.bumped()) is not None:
            # KIP-360 as Java's idempotent producer does it: the next epoch of the same
            # id, without a request (Kafka's InitProducerId would hand a producer
            # without a transactional id a new id, whose numbering nothing relates to
            # the old one's: a stale request of the old id could still be written after
            # the new epoch's records). The broker fences the old epoch from then on.
            self._new_epoch(*bumped)
            idem.local_epoch = True
            return True
        if self._pid_task is None:
            self._pid_task = self._tasks.spawn(
                self._init_producer_id, name="aiokafka_lite.init_producer_id"
            )
        return False

    async def _init_producer_id(self) -> None:
        """A new producer id (producer_id.py); a failure no retry fixes is fatal."""
        assert self._idem is not None
        # Never zero: a failure before any await (no broker reachable) would spin.
        backoff = (
            max(self._config.retry_backoff_ms, _MIN_LOOP_BACKOFF_MS),
            max(self._config.retry_backoff_max_ms, _MIN_LOOP_BACKOFF_MS),
        )
        try:
            found = await fetch_producer_id(
                self._client, backoff, lambda: self._out.running, self._note_pid_error
            )
            if found is not None:
                self._new_epoch(*found)
        except KafkaError as e:
            self._fail_fatally(e)
        finally:
            self._pid_task = None
            self.wakeup()

    def _note_pid_error(self, error: BaseException | None) -> None:
        self._pid_error = error

    def _new_epoch(self, producer_id: int, epoch: int) -> None:
        assert self._idem is not None
        renumbered = 0
        for batch in self._acc.queued_batches():
            if batch.base_sequence < 0:
                continue
            if batch.maybe_written:
                self._out.fail_queued(
                    batch,
                    DeliveryOutcomeUnknownError(
                        f"{batch.count} record(s) for {batch.queue.tp.topic}"
                        f"[{batch.queue.tp.partition}] may or may not have been written: a "
                        "request carrying them got no answer, or an error its leader may answer "
                        "after appending them, and the producer had to start a new epoch, under "
                        "which re-sending them could write them twice"
                    ),
                )
            else:
                batch.base_sequence = -1
                renumbered += 1
        self._idem.set_producer_id(producer_id, epoch)
        log.info(
            "producer id %s epoch %s (%d queued batch(es) renumbered)",
            producer_id,
            epoch,
            renumbered,
        )

    def _fail_fatally(self, error: KafkaError) -> None:
        """An error that no retry can fix: fail everything buffered, refuse new records."""
        log.error("fatal producer error: %s", error)
        self._out.fatal = error
        self._out.abort_undrained(error)
        self._on_fatal(error)

    def _abort_queued(self, error: KafkaError) -> None:
        """Fail every batch still waiting in a queue (its transaction is aborted)."""
        for batch in self._acc.queued_batches():
            self._out.fail_queued(batch, error)

    def _fail_unauthenticated(self) -> None:
        """Fail what is buffered at once: retrying with the same credentials cannot help.

        Not fatal: the next records try again (a token provider may have a new token).
        """
        error, self._client.auth_error = self._client.auth_error, None
        assert error is not None
        self._out.abort_undrained(error, for_good=False)

    # -- expiry --------------------------------------------------------------------------

    def _expire(self, batch: ProducerBatch, now: float) -> None:
        cause = self._why_not_sent(batch)
        self._out.fail_queued(
            batch, batch_errors.expired(batch, now, self._config.delivery_timeout_ms, cause)
        )

    def _why_not_sent(self, batch: ProducerBatch) -> BaseException | None:
        """What kept a batch from delivery: its leader cannot be connected to, its last
        attempt failed, or (leader unknown) the metadata refresh failed."""
        topic, partition = batch.queue.tp
        parts = self._metadata.partitions_by_topic.get(topic)
        leader = -1
        if parts is not None and type(partition) is int and 0 <= partition < len(parts):
            leader = parts[partition].leader
        if leader >= 0:
            cause = self._client.connection_error(leader)
            if cause is not None:
                return cause
        if batch.last_error is not None:
            return batch.last_error
        ahead = self._held_back_by(batch)
        if ahead is not None:
            return ahead
        if leader < 0:
            # The topic's error in the last answer (a deleted topic: UNKNOWN_TOPIC_OR_
            # PARTITION), else why the refresh failed, else: no leader was named.
            code = self._metadata.cluster.topic_errors.get(topic)
            if code:
                return error_from_response(code, topic=topic, partition=partition)
            if self._metadata.last_error is not None:
                return self._metadata.last_error
            return LeaderNotAvailableError(
                "no leader in the latest metadata", topic=topic, partition=partition
            )
        if self._pid_error is not None:
            return self._pid_error  # no producer id: nothing could be sent
        if leader >= 0:
            # Connected, nothing ahead of it failed: the batch waited its turn behind the
            # node's in-flight requests (answered too slowly) until its time ran out.
            return KafkaTimeoutError(
                f"not sent in time: node {leader}, the leader of {topic}[{partition}], took "
                f"its requests slower than delivery_timeout_ms allowed (acks="
                f"{self._config.acks}, max_in_flight_requests_per_connection="
                f"{self._config.max_in_flight_requests_per_connection})"
            )
        return None

    def _held_back_by(self, batch: ProducerBatch) -> BaseException | None:
        """The last error of another batch of the same partition, in flight or queued: a
        batch that never went out waited behind those (e.g. acks=all answered
        REQUEST_TIMED_OUT while too few replicas were in sync)."""
        q = batch.queue
        waiting = 0
        for other in self._out.in_flight:
            if other.queue is q:
                if other.last_error is not None:
                    return other.last_error
                waiting += 1
        for other in q.batches:
            if other is not batch and other.last_error is not None:
                return other.last_error
        if waiting:
            topic, partition = q.tp
            return KafkaTimeoutError(
                f"{waiting} earlier request(s) for {topic}[{partition}] still without an answer"
                f" (acks={self._config.acks}, request_timeout_ms="
                f"{self._config.request_timeout_ms})"
            )
        return None


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
