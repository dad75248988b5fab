"""The producer's transaction API: Java's ``KafkaProducer`` transaction methods.

:class:`ProducerTransactions` is a base class of
:class:`~aiokafka_lite.producer.AIOKafkaProducer`: ``begin_transaction``,
``commit_transaction``, ``abort_transaction``, ``send_offsets_to_transaction`` and
``transaction()``. Each checks the producer is running and has a ``transactional_id``,
then hands the work to the sender's
:class:`~aiokafka_lite._internal.transaction.TransactionManager`;
a commit or abort runs through :class:`~aiokafka_lite._internal.txn_result.TransactionalResult`, so
that cancelling its caller does not stop it half-way.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import IllegalStateError
from ..structs import OffsetAndMetadata, TopicPartition
from .transaction import TransactionManager
from .txn_result import Transaction, TransactionalResult

if TYPE_CHECKING:
    from ..config import ProducerConfig
    from .runtime import Runtime
    from .sender import Sender

__all__ = ["ProducerTransactions"]


class ProducerTransactions:
    """The transaction methods of :class:`~aiokafka_lite.producer.AIOKafkaProducer`."""

    if TYPE_CHECKING:  # the producer's, which these methods use
        _config: ProducerConfig
        _runtime: Runtime | None
        _sender: Sender
        _txn_result: TransactionalResult

        def _check_running(self) -> None: ...

    def _transactions(self) -> TransactionManager:
        self._check_running()
        txn = self._sender.transactions
        if txn is None:
            raise IllegalStateError(
                "transactions need a transactional_id: AIOKafkaProducer(transactional_id=...)"
            )
        return txn

    def begin_transaction(self) -> Coroutine[Any, Any, None]:
        """Open a transaction: records sent from now on commit or abort together.

        Takes effect at the call; awaiting the result (as with aiokafka) is
        optional, except right after a commit or abort whose caller was
        cancelled: that one is still finishing, and awaiting waits for it (at
        most ``max_block_ms``) before it begins. Run as a task
        (``asyncio.create_task(producer.begin_transaction())``) and cancelled
        before it ran, it leaves no transaction open, as in aiokafka.
        """
        return self._txn_result.begin(self._transactions, self._config.max_block_ms)

    async def commit_transaction(self) -> None:
        """Deliver every record of the transaction, then commit it.

        If a record failed, raises :class:`TransactionAbortRequiredError` (the
        failure is its cause): call :meth:`abort_transaction`. If it times out
        (``max_block_ms``), it may be called again. Cancelling the caller does
        not stop the commit: it finishes in the background, as in aiokafka.
        """
        await self._end_transaction("commit_transaction", self._transactions().commit)

    async def abort_transaction(self) -> None:
        """Drop unsent records, then abort: no record of the transaction is ever read
        by a ``read_committed`` consumer. Cancelling the caller does not stop the abort."""
        await self._end_transaction("abort_transaction", self._transactions().abort)

    async def _end_transaction(
        self, name: str, op: Callable[[], Coroutine[Any, Any, None]]
    ) -> None:
        assert self._runtime is not None  # (op came from _transactions(): started)
        await self._txn_result.end(name, op, self._runtime.tasks)

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        group_id: str,
    ) -> None:
        """Commit ``group_id``'s consumer offsets with the transaction (consume-transform-produce).

        ``offsets`` maps each partition to the offset of the next record to consume.
        """
        await self._transactions().send_offsets(offsets, group_id)

    def transaction(self) -> Transaction:
        """``async with producer.transaction():`` begins; commits, or aborts on an exception."""
        return Transaction(self)

    def _transaction_open(self) -> bool:
        txn = self._sender.transactions
        return txn is not None and txn.open
