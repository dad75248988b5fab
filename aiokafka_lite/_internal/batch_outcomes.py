"""What becomes of each batch the sender has taken from the accumulator.

A drained batch is always in exactly one place: in flight (in :attr:`BatchOutcomes.in_flight`
until its request is answered), back at the front of its partition's queue to be retried,
or finished (its records' futures resolved, its memory given back). This module makes
those moves, as Java's ``Sender.handleProduceResponse``, ``completeBatch``,
``reenqueueBatch``, ``failBatch`` and ``canRetry`` do:

* each partition's result in a Produce answer completes its batch, or puts it back to
  retry after ``retry_backoff_ms`` (exponential, with jitter), moving the partition's
  leader first where the answer names the new one (KIP-951), or fails it with an error
  that names the topic, partition and the broker's error;
* an idempotent producer's sequence errors are sorted out here: a batch that overtook
  an earlier one is retried after it; a gap the broker cannot explain asks for a new
  epoch (:mod:`aiokafka_lite._internal.idempotence`);
* a batch that fails for good fails the partition's queued batches behind it when
  ``fail_partition_on_error`` is set, and spoils an open transaction.

The messages are the sender's (logger ``aiokafka_lite._internal.sender``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from ..config import ProducerConfig
from ..errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    OutOfOrderSequenceNumberError,
    ProtocolError,
    error_from_response,
)
from ..metrics import ProducerMetrics
from . import batch_errors
from .accumulator import RecordAccumulator
from .backoff import backoff_delay
from .cluster import Node
from .idempotence import IdempotenceState
from .metadata import Metadata
from .producer_batch import ProducerBatch
from .protocol.produce import PartitionProduceResponse, ProduceResponse
from .transaction import TransactionManager, explain_fencing

__all__ = ["BatchOutcomes"]

OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
UNKNOWN_PRODUCER_ID = 59
_FENCING = (47, 90)  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
# Partition errors a leader may answer after it appended the batch: with acks=all it
# appends first, then waits for the in-sync replicas, and answers NOT_LEADER_OR_FOLLOWER
# if it lost the leadership meanwhile, NOT_ENOUGH_REPLICAS_AFTER_APPEND if the replicas
# fell below min.insync.replicas, REQUEST_TIMED_OUT if they did not catch up in time,
# KAFKA_STORAGE_ERROR if the partition's log directory went offline meanwhile (Kafka's
# DelayedProduce.tryComplete, ReplicaManager.getPartitionOrError); the followers may
# already have copied it. Such a batch may be in the log: re-sent under a new epoch it
# could be written twice. With acks=0 or 1 the leader answers at once, and gives
# NOT_LEADER_OR_FOLLOWER only before appending; KAFKA_STORAGE_ERROR may come mid-append.
_MAYBE_APPENDED = frozenset((6, 7, 20, 56))
_MAYBE_APPENDED_ACKS_1 = frozenset((56,))

# The sender's logger: these are its messages, documented under its name.
_log = logging.getLogger("aiokafka_lite.sender")


class BatchOutcomes:
    """The batches in flight, and each one's completion, retry or failure."""

    def __init__(
        self,
        config: ProducerConfig,
        accumulator: RecordAccumulator,
        metadata: Metadata,
        idem: IdempotenceState | None,
        txn: TransactionManager | None,
        metrics: ProducerMetrics,
        answered: Callable[[int, asyncio.Future[Any]], None],
    ) -> None:
        self._config = config
        self._acc = accumulator
        self._metadata = metadata
        self._idem = idem
        self._txn = txn
        self._metrics = metrics
        self._answered = answered  # the sender's pass after an answer (Sender.answered)
        self._maybe_appended = (
            _MAYBE_APPENDED if config.acks_value == -1 else _MAYBE_APPENDED_ACKS_1
        )
        self.in_flight: set[ProducerBatch] = set()
        # False once the sender stops (or gave up at stop()): nothing is retried after.
        self.running = True
        # The error that failed the producer for good: nothing is retried after it either.
        self.fatal: KafkaError | None = None
        self.records_retried = 0
        self.records_failed = 0

    # -- Produce answers ------------------------------------------------------------------

    def on_response(
        self,
        batches: dict[tuple[str, int], ProducerBatch],
        node_id: int,
        sent_at: float,
        fut: asyncio.Future[ProduceResponse | None],
    ) -> None:
        """The done callback of a Produce request carrying ``batches`` (by partition)."""
        sent = list(batches.values())  # _handle_response pops from the dict
        try:
            self._handle_outcome(batches, node_id, sent_at, fut)
        except Exception as e:
            # A done callback's exception would only be logged by asyncio, and the
            # batches not yet handled would stay in flight for ever: retry them
            # (or fail them, past their retries), as for an answer that did not parse.
            _log.exception("node %s: handling a Produce answer failed", node_id)
            error = ProtocolError(f"cannot handle the Produce answer of node {node_id}: {e!r}")
            error.__cause__ = e
            now = time.monotonic()
            for batch in sent:
                if batch in self.in_flight:
                    batch.maybe_written = True
                    self._settle_safely(batch, error, now)
        finally:
            self._answered(node_id, fut)

    def _settle_safely(self, batch: ProducerBatch, error: KafkaError, now: float) -> None:
        """Retry or fail ``batch``; if even that raises, fail its records directly."""
        try:
            self.retry_or_fail(batch, error, now)
        except Exception:
            _log.exception("failing %r directly", batch)
            if batch in self.in_flight:
                self.in_flight.discard(batch)
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
        self._metrics.request_done(sent_at, now)
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
                self.retry_or_fail(batch, err, now)
        else:
            response = fut.result()
            if response is None:  # acks=0: nothing to wait for
                for batch in batches.values():
                    self.finish(batch, unacknowledged=True)
            else:
                self._handle_response(batches, response, node_id, now)

    def _handle_response(
        self,
        batches: dict[tuple[str, int], ProducerBatch],
        response: ProduceResponse,
        node_id: int,
        now: float,
    ) -> None:
        self._metrics.throttled(response.throttle_time_ms, now)
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
                    self.finish(
                        batch,
                        base_offset=p.base_offset,
                        append_time=p.log_append_time_ms,
                        log_start_offset=p.log_start_offset,
                    )
                else:
                    self._handle_partition_error(batch, p, endpoints, now)
        if unasked:  # one line per answer, however many it names
            _log.warning(
                "node %s answered for %d partition(s) not in the request (or twice): %s",
                node_id,
                len(unasked),
                ", ".join(unasked[:5]) + (" ..." if len(unasked) > 5 else ""),
            )
        for batch in batches.values():  # the broker left these out of its answer
            # (and may have written them: re-sent under a new epoch, they could be twice)
            batch.maybe_written = True
            self.retry_or_fail(
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
        if p.error_code in self._maybe_appended:
            batch.maybe_written = True
        if self._local_epoch_refused(batch, p.error_code):
            # Not written: the broker does not take an epoch we bumped ourselves.
            _log.warning("%s: a new producer id replaces the locally bumped epoch", error)
            self._requeue_or_fail(batch, error, now)
            return
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
        self.retry_or_fail(batch, error, now)

    def _local_epoch_refused(self, batch: ProducerBatch, code: int) -> bool:
        """A non-transactional batch refused as only a broker that does not take an epoch
        bumped by the producer refuses it: PRODUCER_FENCED or INVALID_PRODUCER_EPOCH
        (Tansu), or UNKNOWN_PRODUCER_ID for sequence 0 (a broker that knows only the
        producer ids it gave out; Kafka takes sequence 0 of any). If the epoch was bumped
        locally, a new producer id is asked for (IdempotenceState.local_epoch_refused)."""
        if self._idem is None or self._txn is not None:
            return False
        if code in _FENCING or (code == UNKNOWN_PRODUCER_ID and batch.base_sequence == 0):
            return self._idem.local_epoch_refused()
        return False

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
        # start a new epoch once nothing is in flight, then number afresh, one batch
        # in flight on this partition until the broker knows the producer again.
        self._idem.bump_needed = True
        self._idem.forget(batch.queue.tp)
        if self._txn is not None:
            # In a transaction the gap spoils it: it must be aborted, and the
            # abort starts the new epoch.
            self.finish(batch, error=error)
            return
        _log.warning("%s: starting a new producer epoch", error)
        self._requeue_or_fail(batch, error, now)

    # -- retry or fail ----------------------------------------------------------------------

    def retry_or_fail(self, batch: ProducerBatch, error: KafkaError, now: float) -> None:
        """Retry ``batch`` if ``error`` is retriable and its retries allow, else fail it."""
        if error.retriable:
            self._requeue_or_fail(batch, error, now)
        else:
            self.finish(batch, error=batch_errors.attach_tp(error, batch))

    def _requeue_or_fail(self, batch: ProducerBatch, error: KafkaError, now: float) -> None:
        """Retry ``batch`` after a backoff if retries and delivery_timeout_ms allow."""
        aborted = batch.queue.aborted
        if aborted is not None:  # sent behind a batch that failed for good
            self.finish(batch, error=batch_errors.aborted(batch, aborted))
        elif self._can_retry(batch, now):
            _log.debug("retrying %r after %s", batch, error)
            batch.last_error = error
            self.in_flight.discard(batch)
            self.records_retried += batch.count
            self._metrics.retried(batch.count, now)
            delay = backoff_delay(
                self._config.retry_backoff_ms, self._config.retry_backoff_max_ms, batch.attempts + 1
            )
            self._acc.requeue(batch, now + delay)
            if isinstance(error, KafkaConnectionError | KafkaTimeoutError):
                self._metadata.request_update()
        else:
            self.finish(batch, error=self._final_error(batch, error, now))

    def _final_error(self, batch: ProducerBatch, error: KafkaError, now: float) -> KafkaError:
        """What a batch that may not be retried again fails with.

        Past delivery_timeout_ms: a KafkaTimeoutError naming the last error, as when
        it expires in its queue. A batch whose request may have been written (no
        usable answer) says that its outcome is unknown. Else the error itself.
        """
        if now - batch.created >= self._config.delivery_timeout_ms / 1000:
            return batch_errors.expired(batch, now, self._config.delivery_timeout_ms, error)
        if batch.maybe_written and self.running and self.fatal is None:
            return batch_errors.outcome_unknown(batch, error, self._config.retries)
        return batch_errors.attach_tp(error, batch)

    def _can_retry(self, batch: ProducerBatch, now: float) -> bool:
        return (
            self.running
            and self.fatal is None
            and batch.attempts < self._config.retries
            and now - batch.created < self._config.delivery_timeout_ms / 1000
        )

    # -- finished ---------------------------------------------------------------------------

    def finish(
        self,
        batch: ProducerBatch,
        *,
        base_offset: int = -1,
        append_time: int = -1,
        log_start_offset: int = -1,
        error: BaseException | None = None,
        unacknowledged: bool = False,
    ) -> None:
        """Complete (or, with ``error``, fail) a batch in flight; its memory is given back."""
        if batch not in self.in_flight:
            return  # already finished (e.g. aborted by stop before its answer came)
        self.in_flight.discard(batch)
        self._acc.in_flight_done(batch)
        if unacknowledged:
            batch.complete_unacknowledged()
        elif error is None:
            if self._idem is not None and batch.base_sequence >= 0:
                self._idem.acknowledged(batch.queue.tp, batch.base_sequence, batch.count)
            try:
                batch.complete(base_offset, append_time, log_start_offset)
            except Exception as e:  # a bug: still, no future of the batch is left pending
                _log.exception("completing %r failed; its records fail with that error", batch)
                batch.fail(e)
        else:
            self._failed_for_good(batch, error)
        self._acc.deallocate(batch)

    def fail_queued(self, batch: ProducerBatch, error: KafkaError) -> None:
        """Fail a batch that is not in flight (expired, or unsafe under a new epoch)."""
        self._acc.discard_queued(batch)
        self._failed_for_good(batch, error)
        self._acc.deallocate(batch)

    def abort_undrained(self, error: KafkaError, *, for_good: bool = True) -> None:
        """Fail the records waiting for memory and every batch still in a queue, counted
        as failed: a fatal error (``for_good``: no append is taken after it), or
        credentials the broker refused (the next records try again)."""
        self._acc.fail_waiters(error)
        for batch in self._acc.abort_undrained(error, for_good=for_good):
            self.records_failed += batch.count
            self._metrics.failed(batch.count, time.monotonic())

    def _failed_for_good(self, batch: ProducerBatch, error: BaseException) -> None:
        self._sequence_gap(batch)
        if self._txn is not None:
            if isinstance(error, KafkaError):  # its records say why too, not just the code
                error = explain_fencing(error, self._txn.transactional_id)
            self._txn.batch_failed(error)
        self.records_failed += batch.count
        self._metrics.failed(batch.count, time.monotonic())
        batch.fail(error)
        q = batch.queue
        if self._config.fail_partition_on_error and q.aborted is None and self.running:
            # franz-go's rule: the records behind a failed one fail with it, so
            # the partition never shows a gap. In-flight ones fail when they
            # come back with an error; the partition resumes once they are in.
            q.aborted = error
            for behind in list(q.batches):
                self.fail_queued(behind, batch_errors.aborted(behind, error))

    def _sequence_gap(self, batch: ProducerBatch) -> None:
        # A batch numbered but never written leaves a hole in its partition's
        # sequence that the broker would refuse to step over: a new epoch
        # starts the numbering again.
        if self._idem is not None and batch.base_sequence >= 0 and self.fatal is None:
            self._idem.bump_needed = True
