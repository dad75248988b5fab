"""Transactions: the transactional half of Java's ``TransactionManager``.

A transactional producer is an idempotent producer whose producer id is bound
to a ``transactional_id`` by the transaction coordinator (a broker found with
FindCoordinator). InitProducerId with that id fences every older producer
instance using it (their epoch is now stale) and aborts whatever transaction
they left open. Then, per transaction::

    begin_transaction()             local only: READY -> IN_TRANSACTION
    send(...)                       the sender asks AddPartitionsToTxn for each new
                                    partition and drains a partition only once added
    send_offsets_to_transaction()   AddOffsetsToTxn (txn coordinator), then
                                    TxnOffsetCommit (the group's coordinator)
    commit_transaction()            flush, then EndTxn(commit)  -> READY
    abort_transaction()             drop unsent batches, wait for in-flight ones,
                                    EndTxn(abort)               -> READY

On KIP-890's transactions v2 (Apache Kafka 4.0+ clusters finalize ``transaction.version``
2; decided once, at start), the brokers add partitions themselves: Produce v12 adds a
partition, TxnOffsetCommit v5 the group's offsets (no AddPartitionsToTxn, no
AddOffsetsToTxn), and EndTxn v5 answers with a new epoch for the next transaction, whose
records number from 0 again. On v1 the producer stays at Produce v11, EndTxn v4 and
TxnOffsetCommit v4, as the brokers expect from a v1 client.

States::

    UNINITIALIZED -> INITIALIZING -> READY -> IN_TRANSACTION -> COMMITTING -> READY
                                                      |     \\--> ABORTING ---> READY
                                                      v             ^
                                               ABORTABLE_ERROR -----/
    any state -> FATAL_ERROR (fenced, not authorized, ...): every later call raises it

An error that spoils only the current transaction (a record that failed, a
partition we may not write to) is *abortable*: the producer refuses to send or
commit until the transaction is aborted. Being fenced by a newer instance
(PRODUCER_FENCED, INVALID_PRODUCER_EPOCH) is *fatal*: the producer can only be
stopped. Coordinator moves (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS), CONCURRENT_TRANSACTIONS and lost connections
are retried with backoff, looking the coordinator up again where it may have
moved.

This module is the state machine and the producer's and sender's calls into it; each
request is built, sent and checked in :mod:`aiokafka_lite._internal.txn_requests`, through the
coordinator lookups of :mod:`aiokafka_lite._internal.coordinator`.
"""

from __future__ import annotations

import asyncio
import collections.abc
import enum
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

from ..config import ProducerConfig
from ..errors import (
    BrokerResponseError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    TransactionAbortedError,
    TransactionAbortRequiredError,
)
from ..structs import OffsetAndMetadata, TopicPartition
from .accumulator import RecordAccumulator
from .client import NetworkClient
from .coordinator import Coordinators
from .idempotence import IdempotenceState
from .offsets import offset_topics
from .producer_batch import PartitionQueue
from .protocol.transactions import EndTxnResponse
from .tasks import BackgroundTasks, Handle
from .txn_requests import TxnRequests

__all__ = ["TransactionManager", "TxnState", "explain_fencing"]

log = logging.getLogger("aiokafka_lite.transaction")

# Codes after which no later transactional call can succeed (Java's fatal errors).
_FATAL_CODES = frozenset(
    {
        31,  # CLUSTER_AUTHORIZATION_FAILED
        35,  # UNSUPPORTED_VERSION
        47,  # INVALID_PRODUCER_EPOCH: a newer instance took over
        48,  # INVALID_TXN_STATE
        49,  # INVALID_PRODUCER_ID_MAPPING
        52,  # TRANSACTION_COORDINATOR_FENCED
        53,  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        90,  # PRODUCER_FENCED
    }
)


class TxnState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    COMMITTING = "committing"
    ABORTING = "aborting"
    ABORTABLE_ERROR = "abortable error"
    FATAL_ERROR = "fatal error"


def is_fatal(error: BaseException) -> bool:
    return isinstance(error, BrokerResponseError) and error.errno in _FATAL_CODES


_FENCING_CODES = frozenset({47, 90})  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
_FENCED_TEXT = "is fenced:"


def explain_fencing(error: KafkaError, transactional_id: str) -> KafkaError:
    """A fencing error (same class and code) whose message says what it means for the user.

    The broker's code alone ("INVALID_PRODUCER_EPOCH (47) for t[0]") does not say why; the
    returned error names the transactional id and the likely causes, the original is its
    ``__cause__``. Other errors are returned as they are.
    """
    if not isinstance(error, BrokerResponseError) or error.errno not in _FENCING_CODES:
        return error
    if error.message and _FENCED_TEXT in error.message:
        return error  # explained already
    text = (
        f"transactional id {transactional_id!r} {_FENCED_TEXT} its producer epoch is no longer"
        " current (another producer with the same transactional_id has started, or the"
        " coordinator aborted the transaction after transaction_timeout_ms); this producer"
        " cannot be used any more, create a new one"
    )
    if error.message:
        text += f" (broker: {error.message})"
    explained = type(error)(text, topic=error.topic, partition=error.partition)
    explained.__cause__ = error
    return explained


class TransactionManager:
    """Transaction state, and which partitions are in the transaction (the requests
    themselves: :class:`~aiokafka_lite._internal.txn_requests.TxnRequests`).

    The sender consults :meth:`filter_ready` before draining; the producer's
    transactional methods call :meth:`begin`, :meth:`commit`, :meth:`abort`
    and :meth:`send_offsets`.
    """

    def __init__(
        self,
        config: ProducerConfig,
        client: NetworkClient,
        accumulator: RecordAccumulator,
        idem: IdempotenceState,
        *,
        on_fatal: Callable[[KafkaError], None],
        abort_queued: Callable[[KafkaError], None],
        wakeup: Callable[[], None],
        tasks: BackgroundTasks,
    ) -> None:
        assert config.transactional_id is not None
        self._tasks = tasks
        self.transactional_id: str = config.transactional_id
        self._config = config
        self._acc = accumulator
        self.idem = idem
        self._on_fatal = on_fatal
        self._abort_queued = abort_queued
        self._wakeup = wakeup
        self.state = TxnState.UNINITIALIZED
        self.error: KafkaError | None = None  # what broke the transaction, or the producer
        self._busy: str | None = None  # the transactional call in progress
        self._added: set[TopicPartition] = set()  # in the transaction on the coordinator
        self._pending: set[TopicPartition] = set()  # waiting for AddPartitionsToTxn
        self._adding: Handle[None] | None = None
        self._started = False  # the coordinator knows of this transaction
        self._coords = Coordinators(config, client, wakeup)
        self._requests = TxnRequests(config, self._coords, idem)
        self._max_block = config.max_block_ms / 1000

    def __repr__(self) -> str:
        return f"<TransactionManager {self.transactional_id!r} {self.state.value}>"

    # -- the producer's calls ----------------------------------------------------------

    async def initialize(self) -> None:
        """InitProducerId with our transactional id: fence older instances, get an epoch."""
        self.state = TxnState.INITIALIZING
        try:
            await self._init_producer_id(bump=False)
            if await self._requests.detect_v2():
                log.info("transactional id %r: transactions v2 (KIP-890)", self.transactional_id)
        except KafkaError as e:
            self._fail(e, fatal=True)
            raise
        self.state = TxnState.READY

    def begin(self) -> None:
        self._check_usable("begin_transaction")
        if self.state is not TxnState.READY:
            raise IllegalStateError(
                f"begin_transaction(): a transaction is already {self.state.value}; "
                "commit or abort it first"
            )
        self.state = TxnState.IN_TRANSACTION

    def unbegin(self) -> None:
        """Undo :meth:`begin` if the transaction holds nothing yet."""
        if self.state is TxnState.IN_TRANSACTION and not (
            self._started or self._added or self._pending or self._acc.has_incomplete()
        ):
            self.state = TxnState.READY

    def check_can_send(self) -> None:
        """Raise unless records may be appended now (inside an open transaction)."""
        if self.state is TxnState.IN_TRANSACTION:
            return
        self._check_usable("send")
        if self.state is TxnState.READY:
            raise IllegalStateError(
                f"producer with transactional_id {self.transactional_id!r} can only send "
                "inside a transaction: call begin_transaction() first"
            )
        raise IllegalStateError(f"cannot send: the transaction is {self.state.value}")

    def commit(self) -> Coroutine[Any, Any, None]:
        """Deliver every record of the transaction, then EndTxn(commit).

        The state changes at the call (so sends are refused from then on);
        the returned coroutine does the rest.
        """
        op = "commit_transaction"
        self._check_usable(op)
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            raise IllegalStateError(f"{op}(): no transaction to commit ({self.state.value})")
        self._enter(op)
        self.state = TxnState.COMMITTING
        return self._commit()

    async def _commit(self) -> None:
        op = "commit_transaction"
        try:
            await self._delivered_within_max_block()
            if self.state is not TxnState.COMMITTING:
                self._check_usable(op)  # raises, naming what broke the transaction
            if self._started:
                self._next_epoch(await self._requests.end_txn(commit=True))
        except KafkaError as e:
            if is_fatal(e):
                self._fail(e, fatal=True)
            elif not e.retriable and self.state is TxnState.COMMITTING:
                self._fail(e, fatal=False)
            # else (a timeout): still COMMITTING; commit_transaction() may be called again
            raise
        finally:
            self._busy = None
        self._completed()

    def abort(self) -> Coroutine[Any, Any, None]:
        """Drop unsent records, wait for in-flight ones, then EndTxn(abort).

        The state changes at the call; the returned coroutine does the rest.
        """
        op = "abort_transaction"
        if self.state is TxnState.FATAL_ERROR:
            self._check_usable(op)
        if self.state not in (
            TxnState.IN_TRANSACTION,
            TxnState.ABORTABLE_ERROR,
            TxnState.ABORTING,
        ):
            raise IllegalStateError(f"{op}(): no transaction to abort ({self.state.value})")
        self._enter(op)
        self.state = TxnState.ABORTING
        return self._abort()

    async def _abort(self) -> None:
        try:
            self._drop_unsent()
            await self._flush()  # what is in flight lands (and is aborted) or fails
            await self._adds_settled()
            confirmed = self._started
            if self._started:
                self._next_epoch(await self._requests.end_txn(commit=False))
            if self.idem.bump_needed:
                # A record failed after taking a sequence number: the broker
                # would refuse the next one. A new epoch numbers from 0 again.
                await self._bump_epoch(confirmed)
        except KafkaError as e:
            if is_fatal(e):
                self._fail(e, fatal=True)
            raise
        finally:
            self._busy = None
        self._completed()

    async def send_offsets(
        self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata], group_id: str
    ) -> None:
        """Commit a consumer group's offsets as part of the transaction."""
        op = "send_offsets_to_transaction"
        self._check_usable(op)
        if self.state is not TxnState.IN_TRANSACTION:
            raise IllegalStateError(f"{op}(): no transaction is open ({self.state.value})")
        if not isinstance(group_id, str) or not group_id:
            raise ValueError(f"{op}(): group_id must be a non-empty str, got {group_id!r}")
        topics = offset_topics(offsets)
        self._enter(op)
        try:
            if not self.v2:  # on v2, TxnOffsetCommit v5 adds the offsets itself
                await self._requests.add_offsets(group_id)
            self._started = True
            await self._requests.commit_offsets(group_id, topics)
        except KafkaError as e:
            self._fail(e, fatal=is_fatal(e))
            raise
        finally:
            self._busy = None

    @property
    def v2(self) -> bool:
        """KIP-890's transactions v2: brokers add partitions, every EndTxn bumps the epoch."""
        return self._requests.v2

    @property
    def open(self) -> bool:
        """A transaction is open (and should be aborted if the producer stops now)."""
        return self.state in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR)

    # -- the sender's hooks --------------------------------------------------------------

    def filter_ready(
        self, ready: dict[int, list[PartitionQueue]], queued: Iterable[TopicPartition]
    ) -> dict[int, list[PartitionQueue]]:
        """Only partitions already in the transaction may be drained; ask for the others."""
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            # Aborting, or broken; or a send() that was waiting (for metadata
            # or memory) appended after its transaction ended.
            self._drop_unsent()
            return {}
        added = self._added
        if self.v2:  # Produce v12 adds each partition to the transaction
            for tp in queued:
                added.add(tp)
                self._started = True
            return ready
        for tp in queued:
            if tp not in added:
                self._pending.add(tp)
        if self._pending and self._adding is None:
            adding = self._tasks.spawn(
                self._add_partitions, name="aiokafka_lite.add_partitions_to_txn"
            )
            if not adding.done():  # (done at once: the producer is closing)
                self._adding = adding
        if not self._pending:
            return ready
        out: dict[int, list[PartitionQueue]] = {}
        for node_id, queues in ready.items():
            allowed = [q for q in queues if q.tp in added]
            if allowed:
                out[node_id] = allowed
        return out

    def batch_failed(self, error: BaseException) -> None:
        """A record of the transaction failed for good: the transaction cannot commit."""
        if self.state not in (
            TxnState.IN_TRANSACTION,
            TxnState.COMMITTING,
            TxnState.ABORTABLE_ERROR,
        ):
            return  # dropped by an abort, or after the producer failed for good
        if isinstance(error, TransactionAbortedError):
            return
        fatal = is_fatal(error)
        if not fatal and self.state is TxnState.ABORTABLE_ERROR:
            return  # the first error is the one worth reporting
        self._fail(error if isinstance(error, KafkaError) else KafkaError(str(error)), fatal)

    # -- state ---------------------------------------------------------------------------

    def _check_usable(self, op: str) -> None:
        if self.state is TxnState.FATAL_ERROR:
            assert self.error is not None
            raise self.error
        if self.state is TxnState.ABORTABLE_ERROR:
            raise TransactionAbortRequiredError(
                f"{op}(): the transaction failed ({self.error}); call abort_transaction()"
            ) from self.error
        if self.state in (TxnState.UNINITIALIZED, TxnState.INITIALIZING):
            raise IllegalStateError(f"{op}(): the producer is not started")

    def _enter(self, op: str) -> None:
        if self._busy is not None:
            raise IllegalStateError(f"{op}(): {self._busy}() is still in progress; await it first")
        self._busy = op

    def _fail(self, error: KafkaError, fatal: bool) -> None:
        if self.state is TxnState.FATAL_ERROR:
            return
        if fatal:
            error = explain_fencing(error, self.transactional_id)
            log.error("transactional id %r: fatal error: %s", self.transactional_id, error)
            self.state = TxnState.FATAL_ERROR
            self.error = error
            self._on_fatal(error)
        else:
            log.warning(
                "transactional id %r: the transaction must be aborted: %s",
                self.transactional_id,
                error,
            )
            self.state = TxnState.ABORTABLE_ERROR
            self.error = error
        self._wakeup()

    def _completed(self) -> None:
        self._added.clear()
        self._pending.clear()
        self._started = False
        self.error = None
        self.state = TxnState.READY

    def _drop_unsent(self) -> None:
        cause = self.error
        if self.state is TxnState.READY:
            what = "ended before the record was appended"
        else:
            what = "was aborted" + (f" after an error ({cause})" if cause is not None else "")
        error = TransactionAbortedError(
            f"record not sent: the transaction of {self.transactional_id!r} {what}"
        )
        error.__cause__ = cause
        self._acc.fail_waiters(error)
        self._abort_queued(error)

    async def _delivered_within_max_block(self) -> None:
        """Every record of the transaction delivered (or failed), and its partitions added."""
        try:
            async with asyncio.timeout(self._max_block):
                await self._flush()
                await self._adds_settled()
        except TimeoutError:
            raise KafkaTimeoutError(
                "commit_transaction(): the transaction's records were not all delivered "
                f"within max_block_ms ({self._config.max_block_ms} ms); call it again"
            ) from None

    async def _flush(self) -> None:
        # Each record resolves within delivery_timeout_ms, so this ends.
        self._acc.begin_flush()
        self._wakeup()
        try:
            await self._acc.await_flush_completion()
        finally:
            self._acc.end_flush()

    async def _adds_settled(self) -> None:
        adding = self._adding
        if adding is not None:
            await adding.wait()

    # -- AddPartitionsToTxn ---------------------------------------------------------------

    async def _add_partitions(self) -> None:
        failures = 0
        try:
            while self._pending and self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
                try:
                    await self._add_pending()
                    failures = 0
                except KafkaError as e:
                    if not e.retriable:
                        self._fail(e, fatal=is_fatal(e))
                        return
                    failures += 1
                    delay = self._coords.backoff(failures)
                    log.info("AddPartitionsToTxn: %s; retrying in %.0f ms", e, delay * 1000)
                    await asyncio.sleep(delay)
        finally:
            self._adding = None
            self._wakeup()

    async def _add_pending(self) -> None:
        """One AddPartitionsToTxn for every pending partition; raises the first error."""
        tps = sorted(self._pending)
        added, first = await self._requests.add_partitions(tps)
        for tp in added:
            self._pending.discard(tp)
            self._added.add(tp)
            self._started = True
        if first is not None:
            raise first
        if self._pending.intersection(tps):
            raise KafkaConnectionError(
                "AddPartitionsToTxn: the coordinator's answer left out some partitions"
            )

    # -- producer id and epoch ------------------------------------------------------------

    async def _init_producer_id(self, bump: bool) -> None:
        response = await self._requests.init_producer_id(bump)
        self.idem.set_producer_id(response.producer_id, response.producer_epoch)
        log.info(
            "transactional id %r: producer id %s epoch %s",
            self.transactional_id,
            response.producer_id,
            response.producer_epoch,
        )

    def _next_epoch(self, response: EndTxnResponse) -> None:
        """Transactions v2: EndTxn v5 names the id and epoch of the next transaction."""
        if not self.v2 or response.producer_epoch < 0:
            return
        self.idem.set_producer_id(response.producer_id, response.producer_epoch)
        log.debug(
            "transactional id %r: next transaction with producer id %s epoch %s",
            self.transactional_id,
            response.producer_id,
            response.producer_epoch,
        )

    async def _bump_epoch(self, confirmed: bool) -> None:
        """KIP-360: the next epoch of our producer id, named by its current id and epoch."""
        try:
            await self._init_producer_id(bump=True)
            return
        except BrokerResponseError as e:
            if is_fatal(e) or e.retriable or not confirmed:
                self._fail(e, fatal=True)  # no safe way to number records again
                raise
            # Tansu answers UNKNOWN_SERVER_ERROR to a bump that names the
            # current id and epoch. The EndTxn(abort) just accepted our epoch,
            # so no newer instance exists and a plain InitProducerId (which
            # bumps the epoch of a transactional id, fencing older holders)
            # cannot fence anyone but ourselves.
            log.warning("epoch bump refused (%s); asking for the next epoch plainly", e)
        await self._init_producer_id(bump=False)


class BegunTransaction(collections.abc.Coroutine[Any, Any, None]):
    """What ``begin_transaction()`` returns: the transaction has begun at the call.

    Calling ``begin_transaction()`` without awaiting is the documented
    synchronous form (as a Coroutine subclass, not a native coroutine, this
    raises no "never awaited" warning). Awaited, or run as a task
    (``asyncio.create_task(producer.begin_transaction())``), it yields to the
    loop once, as aiokafka's does; cancelled then, it undoes the begin if
    nothing was sent in the transaction yet, as aiokafka's never began.
    """

    __slots__ = ("_txn", "_yielded")

    def __init__(self, txn: TransactionManager) -> None:
        self._txn = txn
        self._yielded = False

    def send(self, value: Any) -> Any:
        if self._yielded:
            raise StopIteration(None)
        self._yielded = True
        return None  # one trip through the event loop

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        exc = typ if isinstance(typ, BaseException) else typ(*(() if val is None else (val,)))
        if isinstance(exc, asyncio.CancelledError):
            self._txn.unbegin()
        raise exc

    def close(self) -> None:
        pass

    def __next__(self) -> Any:
        return self.send(None)

    def __iter__(self) -> BegunTransaction:
        return self

    def __await__(self) -> BegunTransaction:
        return self
