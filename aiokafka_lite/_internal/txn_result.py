"""A commit or abort that outlives its caller, and ``async with producer.transaction()``.

Java's ``commitTransaction`` and ``abortTransaction`` start the work in the transaction
manager and await its ``TransactionalRequestResult`` for at most ``max.block.ms``; a
call after a timeout awaits the same pending result. :class:`TransactionalResult` is
that here: the commit or abort runs as a task of its own, awaited through a shield, so
that a caller's timeout or cancellation cannot stop it half-way (which would leave the
transaction neither committed nor aborted); calling again joins it, and
``begin_transaction()`` waits for it to finish. :class:`Transaction` is aiokafka's
``TransactionContext``. The transaction's states and requests are
:mod:`aiokafka_lite._internal.transaction` and :mod:`aiokafka_lite._internal.txn_requests`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Protocol

from ..errors import KafkaTimeoutError
from .tasks import BackgroundTasks, Handle
from .transaction import BegunTransaction, TransactionManager

__all__ = ["Transaction", "TransactionalResult"]


class TransactionalResult:
    """The commit or abort under way (or last run), as a task whose caller may be gone."""

    def __init__(self, log: logging.Logger) -> None:
        self.handle: Handle[None] | None = None
        # The producer's: where a failure nobody awaits any more is told.
        self._log = log

    def begin(
        self, transactions: Callable[[], TransactionManager], max_block_ms: float
    ) -> Coroutine[Any, Any, None]:
        """``begin_transaction()``: now, or once a commit or abort still finishing is done."""
        txn = transactions()
        ending = self.handle
        if ending is not None and not ending.done():
            return _begin_after(ending, transactions, max_block_ms)
        txn.begin()
        return BegunTransaction(txn)

    async def end(
        self, name: str, op: Callable[[], Coroutine[Any, Any, None]], tasks: BackgroundTasks
    ) -> None:
        """Run ``op`` (the commit or abort called ``name``) as a task and await it."""
        running = self.handle
        if running is not None and not running.done() and running.name == name:
            handle = running  # called again (after a cancelled call, or concurrently): join it
        else:
            # op() checks the state and raises at once, or begins the commit/abort.
            handle = self.handle = tasks.spawn(_await, op(), name=name)
        try:
            await handle
        except asyncio.CancelledError:
            handle.add_done_callback(self._log_unawaited_failure)
            raise

    def _log_unawaited_failure(self, handle: Handle[None]) -> None:
        # Its caller was cancelled, so nobody else will see how it ended.
        if (exc := handle.exception()) is not None:
            self._log.warning("%s() failed after its caller was cancelled: %s", handle.name, exc)


async def _begin_after(
    ending: Handle[None], transactions: Callable[[], TransactionManager], max_block_ms: float
) -> None:
    try:
        async with asyncio.timeout(max_block_ms / 1000):
            await ending.wait()
    except TimeoutError:
        raise KafkaTimeoutError(
            f"begin_transaction(): {ending.name}() did not finish within "
            f"max_block_ms ({max_block_ms} ms)"
        ) from None
    transactions().begin()


async def _await(coro: Coroutine[Any, Any, None]) -> None:
    await coro


class TransactionalProducer(Protocol):
    """What :class:`Transaction` calls: an ``AIOKafkaProducer``'s transaction methods."""

    def begin_transaction(self) -> Coroutine[Any, Any, None]: ...

    async def commit_transaction(self) -> None: ...

    async def abort_transaction(self) -> None: ...

    def _transaction_open(self) -> bool: ...


class Transaction:
    """``async with producer.transaction():`` (aiokafka's TransactionContext)."""

    def __init__(self, producer: TransactionalProducer) -> None:
        self._producer = producer

    async def __aenter__(self) -> Transaction:
        await self._producer.begin_transaction()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            await self._producer.commit_transaction()
            return
        if self._producer._transaction_open():
            # (Not after a fatal error, or if the block ended the transaction
            # itself: the exception raised says what happened.)
            await self._producer.abort_transaction()
