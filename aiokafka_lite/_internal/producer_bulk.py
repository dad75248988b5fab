"""The producer's batch API: ``create_batch()``/``send_batch()`` and ``send_many()``.

:class:`ProducerBulk` is a base class of :class:`~aiokafka_lite.producer.AIOKafkaProducer`
(as :class:`~aiokafka_lite._internal.producer_transactions.ProducerTransactions` is): the ways to
send many records with one call or one future. Each checks the producer and the topic
as ``send()`` does, then hands the records to the accumulator: a batch the user built
as one unit (``append_built``), or ``send_many()``'s pairs through
:mod:`aiokafka_lite._internal.bulk_send`, placed by the producer's one partitioner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic

from ..structs import DeliveryReport, RecordMetadata
from . import bulk_send
from .batch_builder import BatchBuilder
from .hand_over import pass_on
from .key_value import K, V

if TYPE_CHECKING:
    from .accumulator import RecordAccumulator
    from .compression import Compressor
    from .placement import RecordPartitioner, RecordPlacement

__all__ = ["ProducerBulk"]


class ProducerBulk(Generic[K, V]):
    """The batch API of :class:`~aiokafka_lite.producer.AIOKafkaProducer`."""

    if TYPE_CHECKING:  # the producer's, which these methods use
        _acc: RecordAccumulator
        _batch_size: int
        _codec_id: int
        _compress: Compressor | None
        _interceptors: tuple[Any, ...]
        _max_block: float
        _max_request_size: int
        _placement: RecordPlacement
        _record_partitioner: RecordPartitioner
        send: Callable[..., Awaitable[asyncio.Future[RecordMetadata]]]

        def _check_sending(self) -> None: ...
        def _check_transactional_send(self) -> None: ...
        def _known_partitions(self, topic: str) -> tuple[Any, ...] | None: ...
        async def _wait_on_metadata(self, topic: str, deadline: float) -> tuple[Any, ...]: ...

    def create_batch(self) -> BatchBuilder:
        """An empty batch to fill with ``append`` and send with :meth:`send_batch`."""
        return BatchBuilder(
            self._batch_size,
            self._compress,
            self._codec_id,
            key_serializer=self._placement.key_serializer,
            value_serializer=self._placement.value_serializer,
        )

    async def send_batch(
        self, batch: BatchBuilder, topic: str, *, partition: int | None
    ) -> asyncio.Future[RecordMetadata]:
        """Send a batch built with :meth:`create_batch` to one partition.

        With ``partition=None`` the partitioner picks it (as for a keyless
        record, as aiokafka does). The future resolves to the metadata of the
        batch's first record (to None for an empty batch, which sends nothing).
        """
        self._check_sending()
        self._check_transactional_send()
        if not isinstance(batch, BatchBuilder):
            raise TypeError(
                f"batch must come from create_batch(), got {type(batch).__name__} (for {topic!r})"
            )
        parts = self._known_partitions(topic)
        if parts is None:
            parts = await self._wait_on_metadata(topic, time.monotonic() + self._max_block)
        partition = self._record_partitioner.for_batch(topic, len(parts), partition)
        builder = batch._take(topic, self._max_request_size)
        if builder is None:
            # Nothing to send: resolved at once, to None (as aiokafka's).
            empty: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
            empty.set_result(None)  # type: ignore[arg-type]
            return empty
        fut = await self._acc.append_built(topic, partition, builder, self._max_block)
        # The hand-over lets the sender ship it while the caller builds the next one,
        # instead of after a whole loop of batches: a yield, unless the loop turned less
        # than a slice ago. (Queuing it woke the sender.)
        await pass_on(self._acc, None)
        return fut

    async def send_many(
        self,
        topic: str,
        records: Iterable[tuple[K | None, V | None]],
        *,
        partition: int | None = None,
    ) -> asyncio.Future[DeliveryReport]:
        """Send ``(key, value)`` pairs to one topic: the fastest way to send many records.

        Records are placed and encoded as by :meth:`send`, but share one
        future instead of one each: it resolves, once all are delivered, to a
        :class:`~aiokafka_lite.structs.DeliveryReport` (their metadata in call
        order), or fails with :class:`~aiokafka_lite.errors.DeliveryFailedError`
        whose ``errors`` map failed positions to exceptions. A bad record
        (serializer error, too large) fails alone there, not the call. Awaits, like ``send``, for
        the topic's metadata and for buffer memory, together at most
        ``max_block_ms``: records that got no memory by then fail (in the
        report) with :class:`~aiokafka_lite.errors.KafkaTimeoutError`.
        All records of the call share one timestamp (the time of the call).
        """
        self._check_sending()
        self._check_transactional_send()
        deadline = time.monotonic() + self._max_block  # for the whole call
        parts = self._known_partitions(topic)
        if parts is None:
            parts = await self._wait_on_metadata(topic, deadline)
        if partition is not None:
            self._record_partitioner.partition(topic, None, len(parts), partition)  # raises if bad
        # With interceptors each record goes through send(), so that they see it.
        send = self.send if self._interceptors else None
        return await bulk_send.send_many(
            self._acc, self._placement, send, topic, records, partition, parts, deadline
        )
