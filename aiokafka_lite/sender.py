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
names the topic, partition and the broker's error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from functools import partial

from . import batch_errors
from .accumulator import ProducerBatch, RecordAccumulator
from .backoff import backoff_delay
from .client import NetworkClient
from .cluster import Node
from .config import ProducerConfig
from .connection import BrokerConnection
from .errors import (
    DeliveryOutcomeUnknownError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    OutOfOrderSequenceNumberError,
    ProtocolError,
    UnsupportedCompressionTypeError,
    error_from_response,
)
from .idempotence import IdempotenceState
from .metrics import ProducerMetrics
from .producer_id import fetch_producer_id
from .protocol.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from .tasks import BackgroundTasks, Handle
from .transaction import TransactionManager

__all__ = ["Sender"]

OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
UNKNOWN_PRODUCER_ID = 59

# The sender loop's backoff after a failed iteration starts at least here, so that
# retry_backoff_ms=0 cannot turn a failure that repeats into a busy loop.
_MIN_LOOP_BACKOFF_MS = 10

log = logging.getLogger("aiokafka_lite.sender")


class Sender:
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
        self._fatal: KafkaError | None = None
        self._client = client
        self._acc = accumulator
        self._metadata = client.metadata
        self._acks = config.acks_value
        self._loop = asyncio.get_running_loop()
        self._wake: asyncio.Future[None] | None = None
        self._in_flight: set[ProducerBatch] = set()
        self._running = True
        self._task: Handle[None] | None = None
        # Counted per request and per batch, never per record.
        self.requests_sent = 0
        self.batches_sent = 0
        self.records_sent = 0
        self.records_retried = 0
        self.records_failed = 0
        self.metrics = ProducerMetrics()

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        self._task = self._tasks.spawn(self._run, name="aiokafka_lite.sender")

    def wakeup(self) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    @property
    def idle(self) -> bool:
        """Nothing buffered and nothing in flight."""
        return not self._acc.has_incomplete() and not self._in_flight

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
        self._running = False
        for batch in self._acc.abort_undrained(error):
            log.debug("aborted %r on stop", batch)
        for batch in list(self._in_flight):
            self._finish(batch, error=error)
        self.wakeup()

    def halt(self) -> None:
        """No more passes: the loop (and InitProducerId) end at their next wake-up, and
        the task group's closing cancels them anyway."""
        self._running = False
        self.wakeup()

    # -- the loop ------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        while self._running:
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
        timer = self._loop.call_later(delay, _resolve, wake)
        try:
            await wake
        finally:
            timer.cancel()
            self._wake = None

    def _run_once(self, now: float) -> float:
        if self._client.auth_error is not None:
            self._fail_unauthenticated()
        ready, delay, unknown_leader, expired = self._acc.ready(
            self._metadata.partitions_by_topic, now
        )
        for batch in expired:
            self._expire(batch, now)
        for batch, error in self._acc.take_broken():
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
        self._in_flight.update(batches)
        try:
            version = conn.version_for(ProduceRequest)
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
                topic_data=[TopicProduceData(t, parts) for t, parts in by_topic.items()],
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
        fut.add_done_callback(partial(self._on_response, by_tp, conn.node_id, now))

    def _fail_request(
        self, node_id: int, batches: list[ProducerBatch], cause: Exception, now: float
    ) -> None:
        """A request could not be sent: retry its batches if ``cause`` says that may
        help (the connection closed meanwhile), else fail them, naming the cause."""
        if isinstance(cause, KafkaError) and cause.retriable:
            for batch in batches:
                self._retry_or_fail(batch, cause, now)
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
            self._finish(batch, error=batch_errors.unsendable(batch, cause))

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
            self._fail_queued(batch, error)
        else:
            self._finish(batch, error=error)

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
            self._finish(
                batch,
                error=UnsupportedCompressionTypeError(
                    f"broker node {node_id} speaks Produce v{version}; zstd needs v7+",
                    topic=batch.queue.tp.topic,
                    partition=batch.queue.tp.partition,
                ),
            )

    def _on_response(
        self,
        batches: dict[tuple[str, int], ProducerBatch],
        node_id: int,
        sent_at: float,
        fut: asyncio.Future[ProduceResponse | None],
    ) -> None:
        sent = list(batches.values())  # _handle_response pops from the dict
        try:
            self._handle_outcome(batches, node_id, sent_at, fut)
        except Exception as e:
            # A done callback's exception would only be logged by asyncio, and the
            # batches not yet handled would stay in flight for ever: retry them
            # (or fail them, past their retries), as for an answer that did not parse.
            log.exception("node %s: handling a Produce answer failed", node_id)
            error = ProtocolError(f"cannot handle the Produce answer of node {node_id}: {e!r}")
            error.__cause__ = e
            now = time.monotonic()
            for batch in sent:
                if batch in self._in_flight:
                    batch.maybe_written = True
                    self._settle_safely(batch, error, now)
        finally:
            self.wakeup()

    def _settle_safely(self, batch: ProducerBatch, error: KafkaError, now: float) -> None:
        """Retry or fail ``batch``; if even that raises, fail its records directly."""
        try:
            self._retry_or_fail(batch, error, now)
        except Exception:
            log.exception("failing %r directly", batch)
            if batch in self._in_flight:
                self._in_flight.discard(batch)
                self._acc.in_flight_done(batch)
            self._acc.discard_queued(batch)
            batch.fail(batch_errors.attach_tp(error, batch))
            self._acc.deallocate(batch)

    def _handle_outcome(
        self,
        batches: dict[tuple[str, int], ProducerBatch],
        node_id: int,
        sent_at: float,
        fut: asyncio.Future[ProduceResponse | None],
    ) -> None:
        now = time.monotonic()
        self.metrics.request_done(sent_at, now)
        if fut.cancelled():
            exc: BaseException | None = KafkaConnectionError(
                f"request to node {node_id} was cancelled"
            )
        else:
            exc = fut.exception()
        if exc is not None:
            err = exc if isinstance(exc, KafkaError) else KafkaConnectionError(str(exc))
            for batch in batches.values():
                # The request left us; whether the broker wrote it is unknown.
                batch.maybe_written = True
                self._retry_or_fail(batch, err, now)
        else:
            response = fut.result()
            if response is None:  # acks=0: nothing to wait for
                for batch in batches.values():
                    self._finish(batch, unacknowledged=True)
            else:
                self._handle_response(batches, response, node_id, now)

    def _handle_response(
        self,
        batches: dict[tuple[str, int], ProducerBatch],
        response: ProduceResponse,
        node_id: int,
        now: float,
    ) -> None:
        self.metrics.throttled(response.throttle_time_ms, now)
        # KIP-951: leaders named in partition errors come with their addresses.
        endpoints = {
            e.node_id: Node(e.node_id, e.host, e.port, e.rack) for e in response.node_endpoints
        }
        unasked: list[str] = []
        for topic_response in response.responses:
            topic = topic_response.name
            for p in topic_response.partition_responses:
                batch = batches.pop((topic, p.index), None)
                if batch is None:
                    unasked.append(f"{topic}[{p.index}]")
                    continue
                if p.error_code == 0 or (
                    p.error_code == DUPLICATE_SEQUENCE_NUMBER and self._idem is not None
                ):
                    # A duplicate was written by an earlier attempt: that is success.
                    self._finish(
                        batch,
                        base_offset=p.base_offset,
                        append_time=p.log_append_time_ms,
                        log_start_offset=p.log_start_offset,
                    )
                else:
                    self._handle_partition_error(batch, p, endpoints, now)
        if unasked:  # one line per answer, however many it names
            log.warning(
                "node %s answered for %d partition(s) not in the request (or twice): %s",
                node_id,
                len(unasked),
                ", ".join(unasked[:5]) + (" ..." if len(unasked) > 5 else ""),
            )
        for batch in batches.values():  # the broker left these out of its answer
            self._retry_or_fail(
                batch, ProtocolError(f"node {node_id} sent no result for {batch.queue.tp}"), now
            )

    def _handle_partition_error(
        self,
        batch: ProducerBatch,
        p: PartitionProduceResponse,
        endpoints: dict[int, Node],
        now: float,
    ) -> None:
        topic, partition = batch.queue.tp
        message = p.error_message
        if p.record_errors:
            message = "; ".join(
                f"record {e.batch_index}: {e.batch_index_error_message}" for e in p.record_errors
            ) + (f" ({message})" if message else "")
        error = error_from_response(p.error_code, topic=topic, partition=partition, message=message)
        if self._idem is not None and p.error_code in (
            OUT_OF_ORDER_SEQUENCE_NUMBER,
            UNKNOWN_PRODUCER_ID,
        ):
            self._handle_sequence_error(batch, error, now)
            return
        if error.invalid_metadata:
            leader = p.current_leader
            if (
                leader is None
                or leader.leader_id < 0
                or not self._metadata.move_leader(
                    topic,
                    partition,
                    leader.leader_id,
                    leader.leader_epoch,
                    endpoints.get(leader.leader_id),
                )
            ):
                self._metadata.request_update()
        self._retry_or_fail(batch, error, now)

    def _handle_sequence_error(self, batch: ProducerBatch, error: KafkaError, now: float) -> None:
        assert self._idem is not None
        if isinstance(error, OutOfOrderSequenceNumberError) and not self._idem.is_next_expected(
            batch.queue.tp, batch.base_sequence
        ):
            # An earlier batch of this partition is not written yet (it is
            # being retried): this one simply goes again after it.
            self._requeue_or_fail(batch, error, now)
            return
        # The broker lost our producer state, or has a gap we cannot explain:
        # start a new epoch once nothing is in flight, then number afresh.
        self._idem.bump_needed = True
        if self._txn is not None:
            # In a transaction the gap spoils it: it must be aborted, and the
            # abort starts the new epoch.
            self._finish(batch, error=error)
            return
        log.warning("%s: starting a new producer epoch", error)
        self._requeue_or_fail(batch, error, now)

    # -- producer id and epoch -------------------------------------------------------------

    def _producer_id_ready(self, now: float) -> bool:
        idem = self._idem
        assert idem is not None
        if self._fatal is not None:
            return False
        if idem.has_producer_id and not idem.bump_needed:
            return True
        if self._txn is not None:
            return False  # the transaction manager starts (and bumps) epochs
        if idem.bump_needed and self._in_flight:
            return False  # a new epoch only once every request of the old one is answered
        if self._pid_task is None:
            self._pid_task = self._tasks.spawn(
                self._init_producer_id, name="aiokafka_lite.init_producer_id"
            )
        return False

    async def _init_producer_id(self) -> None:
        """A new producer id or epoch (producer_id.py); a failure no retry fixes is fatal."""
        assert self._idem is not None
        # Never zero: a failure before any await (no broker reachable) would spin.
        backoff = max(self._config.retry_backoff_ms, _MIN_LOOP_BACKOFF_MS) / 1000
        try:
            found = await fetch_producer_id(
                self._client, self._idem, backoff, lambda: self._running, self._note_pid_error
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
                self._fail_queued(
                    batch,
                    DeliveryOutcomeUnknownError(
                        f"{batch.count} record(s) for {batch.queue.tp.topic}"
                        f"[{batch.queue.tp.partition}] may or may not have been written: a "
                        "request carrying them got no answer, and the producer had to start a "
                        "new epoch, under which re-sending them could write them twice"
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
        self._fatal = error
        self._acc.fail_waiters(error)
        for batch in self._acc.abort_undrained(error):
            self.records_failed += batch.count
            self.metrics.failed(batch.count, time.monotonic())
        self._on_fatal(error)

    def _abort_queued(self, error: KafkaError) -> None:
        """Fail every batch still waiting in a queue (its transaction is aborted)."""
        for batch in self._acc.queued_batches():
            self._fail_queued(batch, error)

    def _fail_unauthenticated(self) -> None:
        """Fail what is buffered at once: retrying with the same credentials cannot help.

        Not fatal: the next records try again (a token provider may have a new token).
        """
        error, self._client.auth_error = self._client.auth_error, None
        assert error is not None
        self._acc.fail_waiters(error)
        for batch in self._acc.abort_undrained(error):
            self.records_failed += batch.count
            self.metrics.failed(batch.count, time.monotonic())

    # -- outcomes ------------------------------------------------------------------------

    def _retry_or_fail(self, batch: ProducerBatch, error: KafkaError, now: float) -> None:
        if error.retriable:
            self._requeue_or_fail(batch, error, now)
        else:
            self._finish(batch, error=batch_errors.attach_tp(error, batch))

    def _requeue_or_fail(self, batch: ProducerBatch, error: KafkaError, now: float) -> None:
        """Retry ``batch`` after a backoff if retries and delivery_timeout_ms allow."""
        aborted = batch.queue.aborted
        if aborted is not None:  # sent behind a batch that failed for good
            self._finish(batch, error=batch_errors.aborted(batch, aborted))
        elif self._can_retry(batch, now):
            log.debug("retrying %r after %s", batch, error)
            batch.last_error = error
            self._in_flight.discard(batch)
            self.records_retried += batch.count
            self.metrics.retried(batch.count, now)
            delay = backoff_delay(
                self._config.retry_backoff_ms, self._config.retry_backoff_max_ms, batch.attempts + 1
            )
            self._acc.requeue(batch, now + delay)
            if isinstance(error, KafkaConnectionError | KafkaTimeoutError):
                self._metadata.request_update()
        else:
            self._finish(batch, error=self._final_error(batch, error, now))

    def _final_error(self, batch: ProducerBatch, error: KafkaError, now: float) -> KafkaError:
        """What a batch that may not be retried again fails with.

        Past delivery_timeout_ms: a KafkaTimeoutError naming the last error, as when
        it expires in its queue. A batch whose request may have been written (no
        usable answer) says that its outcome is unknown. Else the error itself.
        """
        if now - batch.created >= self._config.delivery_timeout_ms / 1000:
            return batch_errors.expired(batch, now, self._config.delivery_timeout_ms, error)
        if batch.maybe_written and self._running and self._fatal is None:
            return batch_errors.outcome_unknown(batch, error, self._config.retries)
        return batch_errors.attach_tp(error, batch)

    def _can_retry(self, batch: ProducerBatch, now: float) -> bool:
        return (
            self._running
            and self._fatal is None
            and batch.attempts < self._config.retries
            and now - batch.created < self._config.delivery_timeout_ms / 1000
        )

    def _expire(self, batch: ProducerBatch, now: float) -> None:
        cause = self._why_not_sent(batch)
        self._fail_queued(
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
        if leader < 0:
            return self._metadata.last_error
        return self._pid_error  # no producer id: nothing could be sent

    def _fail_queued(self, batch: ProducerBatch, error: KafkaError) -> None:
        """Fail a batch that is not in flight (expired, or unsafe under a new epoch)."""
        self._acc.discard_queued(batch)
        self._failed_for_good(batch, error)
        self._acc.deallocate(batch)

    def _sequence_gap(self, batch: ProducerBatch) -> None:
        # A batch numbered but never written leaves a hole in its partition's
        # sequence that the broker would refuse to step over: a new epoch
        # starts the numbering again.
        if self._idem is not None and batch.base_sequence >= 0 and self._fatal is None:
            self._idem.bump_needed = True

    def _finish(
        self,
        batch: ProducerBatch,
        *,
        base_offset: int = -1,
        append_time: int = -1,
        log_start_offset: int = -1,
        error: BaseException | None = None,
        unacknowledged: bool = False,
    ) -> None:
        if batch not in self._in_flight:
            return  # already finished (e.g. aborted by stop before its answer came)
        self._in_flight.discard(batch)
        self._acc.in_flight_done(batch)
        if unacknowledged:
            batch.complete_unacknowledged()
        elif error is None:
            if self._idem is not None and batch.base_sequence >= 0:
                self._idem.acknowledged(batch.queue.tp, batch.base_sequence, batch.count)
            batch.complete(base_offset, append_time, log_start_offset)
        else:
            self._failed_for_good(batch, error)
        self._acc.deallocate(batch)

    def _failed_for_good(self, batch: ProducerBatch, error: BaseException) -> None:
        self._sequence_gap(batch)
        if self._txn is not None:
            self._txn.batch_failed(error)
        self.records_failed += batch.count
        self.metrics.failed(batch.count, time.monotonic())
        batch.fail(error)
        q = batch.queue
        if self._config.fail_partition_on_error and q.aborted is None and self._running:
            # franz-go's rule: the records behind a failed one fail with it, so
            # the partition never shows a gap. In-flight ones fail when they
            # come back with an error; the partition resumes once they are in.
            q.aborted = error
            for behind in list(q.batches):
                self._fail_queued(behind, batch_errors.aborted(behind, error))


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
