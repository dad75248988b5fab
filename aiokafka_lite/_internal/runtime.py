"""What a started producer runs, and how it starts and stops.

A :class:`Runtime` holds the connections (:class:`~aiokafka_lite._internal.client.NetworkClient`),
the :class:`~aiokafka_lite._internal.accumulator.RecordAccumulator`, the
:class:`~aiokafka_lite._internal.sender.Sender` and the one task group that owns all of
their background tasks. It holds nothing of the producer object itself (the one
callback into it is a weak reference), so a producer dropped without ``stop()``
is collected, warns, and has its runtime torn down.

Stopping has two speeds:

* :meth:`Runtime.close`: sends waiting for metadata or memory fail at once
  (the producer is closing), a commit or abort under way finishes, an open
  transaction is aborted, everything buffered is delivered within the timeout,
  and what is left fails with a named error;
* cancelling :meth:`Runtime.close` (a caller's ``wait_for``), or the event loop
  tearing the producer down, stops now: every record still pending fails at
  once. Either way the task group and the connections are closed before
  ``close()`` returns or raises, even while it is being cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..config import ProducerConfig
from ..errors import KafkaError, KafkaTimeoutError, ProducerClosedError
from .accumulator import RecordAccumulator
from .client import NetworkClient
from .compression import Compressor
from .sender import Sender
from .tasks import BackgroundTasks, Handle, uncancellable

__all__ = ["Runtime"]

log = logging.getLogger("aiokafka_lite.runtime")


class Runtime:
    def __init__(
        self,
        config: ProducerConfig,
        compress: Compressor | None,
        codec_id: int,
        on_fatal: Callable[[KafkaError], None],
    ) -> None:
        self.config = config
        self.tasks = BackgroundTasks(f"aiokafka_lite.producer[{config.client_id}]")
        self.client = NetworkClient(config, self.wakeup, self.tasks)
        self.metadata = self.client.metadata
        self.acc = RecordAccumulator(
            batch_size=config.batch_size,
            linger_ms=config.linger_ms,
            buffer_memory=config.buffer_memory,
            delivery_timeout_ms=config.delivery_timeout_ms,
            # Without idempotence nothing stops a later batch overtaking a
            # retried one, so each partition has one batch in flight at a time;
            # with it, sequence numbers keep order across several.
            max_in_flight_per_partition=(
                config.max_in_flight_requests_per_connection if config.enable_idempotence else 1
            ),
            wakeup=self.batch_queued,
            compress=compress,
            codec_id=codec_id,
            max_request_size=config.max_request_size,
        )
        self.sender = Sender(config, self.client, self.acc, _weak(on_fatal), self.tasks)
        self.acc.on_wait = self.sender.metrics.waited_for_buffer
        self.loop = asyncio.get_running_loop()

    def wakeup(self) -> None:
        sender = getattr(self, "sender", None)  # (the client is made before the sender)
        if sender is not None:
            sender.wakeup()

    def batch_queued(self) -> None:
        sender = getattr(self, "sender", None)
        if sender is not None:
            sender.batch_queued()

    def metrics(self) -> dict[str, float]:
        """The producer's metrics now: the sender's window, its totals, the buffer's state."""
        sender, acc = self.sender, self.acc
        snapshot = sender.metrics.snapshot()
        snapshot.update(
            {
                "request-total": sender.requests_sent,
                "batch-total": sender.batches_sent,
                "record-send-total": sender.records_sent,
                "record-retry-total": sender.records_retried,
                "record-error-total": sender.records_failed,
                "buffer-total-bytes": acc.limit,
                "buffer-available-bytes": acc.limit - acc.used,
                "waiting-threads": acc.waiting_for_memory,
                "metadata-age": time.monotonic() - self.metadata.last_success,
            }
        )
        return snapshot

    # -- starting ----------------------------------------------------------------------

    async def open(self) -> None:
        """Open the task group, fetch the first metadata, fence older transactional
        instances; then start the sender. On any failure, close what was opened."""
        try:
            await self.tasks.open()
            await self.client.bootstrap(self.config.request_timeout_ms / 1000)
            if self.sender.transactions is not None:
                # aiokafka (and Java's initTransactions): fence older instances now.
                await self.sender.transactions.initialize()
            self.sender.start()
        except BaseException:
            await uncancellable(self._shut_down())
            raise

    # -- stopping ----------------------------------------------------------------------

    def closing(self) -> None:
        """The producer is closing: sends waiting for metadata or memory fail now."""
        self.metadata.close_waiters(
            ProducerClosedError("the producer was stopped while this send waited for metadata")
        )
        # Java's "Producer closed while allocating memory".
        self.acc.fail_waiters(
            ProducerClosedError(
                "the producer was stopped while this record waited for buffer memory"
            )
        )

    async def close(self, timeout: float, ending: Handle[None] | None) -> None:
        """Deliver within ``timeout`` s, fail the rest, close tasks and connections."""
        self.closing()
        deadline = time.monotonic() + timeout
        try:
            if ending is not None and not ending.done():
                # A commit or abort whose caller was cancelled: let it finish.
                await asyncio.wait({asyncio.ensure_future(ending.wait())}, timeout=timeout)
            await self._abort_open_transaction(max(0.0, deadline - time.monotonic()))
            await self.sender.stop(max(0.0, deadline - time.monotonic()))
        except asyncio.CancelledError:
            self.fail_everything(
                KafkaTimeoutError(
                    "the producer's stop() was cancelled before this record was delivered"
                )
            )
            raise
        finally:
            await uncancellable(self._shut_down())

    async def _abort_open_transaction(self, timeout: float) -> None:
        # Java's close() does the same: what was not committed never becomes
        # visible, and the coordinator need not wait for transaction_timeout_ms.
        txn = self.sender.transactions
        if txn is None or not txn.open:
            return
        log.info("aborting the open transaction of %r on stop()", txn.transactional_id)
        try:
            async with asyncio.timeout(timeout):
                await txn.abort()
        except (KafkaError, TimeoutError) as e:
            log.warning("could not abort the open transaction on stop(): %s", e)

    def fail_everything(self, error: KafkaError) -> None:
        """Resolve every record still pending (queued or in flight) with ``error``, now."""
        self.closing()
        self.sender.fail_all(error)

    async def _shut_down(self) -> None:
        self.sender.halt()
        await self.tasks.close()
        await self.client.close()

    def abandon(self) -> None:
        """Tear down without awaiting: for a producer dropped without ``stop()``."""
        if self.tasks.closed or self.loop.is_closed():
            return

        def tear_down() -> None:
            self.fail_everything(
                ProducerClosedError("the producer was dropped without stop() before delivery")
            )
            self.sender.halt()
            self.tasks.abandon()
            self.client.abandon()

        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            self.loop.call_soon_threadsafe(tear_down)


def _weak(method: Callable[[KafkaError], None]) -> Callable[[KafkaError], None]:
    """``method`` held through a weak reference to its object (the producer)."""
    ref = weakref.WeakMethod(method)

    def call(error: KafkaError) -> Any:
        target = ref()
        if target is not None:
            target(error)

    return call
