"""The parts :class:`~aiokafka_lite.testing.MockProducer` is made of, besides itself.

:class:`SentRecord` is what the mock keeps of each record, as the real producer would
write it (serialized, partitioned, timestamped). :class:`Deliveries` holds the records
whose futures are not resolved yet, and gives the transaction manager the flush it
waits on. :class:`MockTransactions` is the real
:class:`~aiokafka_lite._internal.transaction.TransactionManager` (its states, checks and error
messages) with the broker's requests replaced by bookkeeping. :class:`MockBatch` is a
:class:`~aiokafka_lite._internal.batch_builder.BatchBuilder` that remembers what it was given.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

from .._internal import checks
from .._internal.batch_builder import BatchBuilder
from .._internal.records import Header
from .._internal.tasks import BackgroundTasks
from .._internal.transaction import TransactionManager, TxnState
from ..config import ProducerConfig
from ..errors import KafkaError, ProducerFencedError
from ..structs import BatchRecordMetadata, OffsetAndMetadata, RecordMetadata, TopicPartition

if TYPE_CHECKING:
    from .._internal.accumulator import RecordAccumulator
    from .._internal.client import NetworkClient
    from .._internal.idempotence import IdempotenceState

__all__ = [
    "Deliveries",
    "MockBatch",
    "MockTransaction",
    "MockTransactions",
    "Pending",
    "SentRecord",
]


class SentRecord(NamedTuple):
    """One record as the producer would write it: key and value after the serializers,
    the partition the partitioner chose, the timestamp (ms) it would carry."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp: int


class MockTransaction:
    """One transaction of a transactional mock: its records, the consumer offsets sent
    with it (``{group_id: {TopicPartition: OffsetAndMetadata}}``) and how it ended."""

    def __init__(self) -> None:
        self.records: list[SentRecord] = []
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        self.outcome: Literal["open", "committed", "aborted"] = "open"

    def __repr__(self) -> str:
        return f"<MockTransaction {self.outcome} records={len(self.records)}>"


class Pending:
    """A sent record whose future the mock has not resolved yet."""

    __slots__ = ("future", "record", "transaction")

    def __init__(
        self,
        record: SentRecord,
        future: asyncio.Future[RecordMetadata],
        transaction: MockTransaction | None,
    ) -> None:
        self.record = record
        self.future = future
        self.transaction = transaction


class Deliveries:
    """The records not resolved yet, oldest first, and the flush that waits for them.

    Its ``begin_flush``/``await_flush_completion``/``end_flush``/``fail_waiters``/
    ``has_incomplete`` are the accumulator's, as the transaction manager calls them.
    """

    def __init__(self) -> None:
        self.queue: collections.deque[Pending] = collections.deque()
        self._flushing: list[asyncio.Future[RecordMetadata]] = []

    def has_incomplete(self) -> bool:
        return bool(self.queue)

    def begin_flush(self) -> None:
        # What is pending now: a flush waits for these, not for records sent meanwhile.
        self._flushing = [p.future for p in self.queue]

    async def await_flush_completion(self) -> None:
        waiting = [f for f in self._flushing if not f.done()]
        if waiting:
            await asyncio.wait(waiting)

    def end_flush(self) -> None:
        self._flushing = []

    def fail_waiters(self, error: BaseException) -> None:
        """Sends waiting for memory or metadata: the mock never has any."""


class _NoIdempotence:
    """What the transaction manager reads of the idempotence state: no epoch to bump."""

    bump_needed = False


class _Requests:
    """The transaction manager's broker requests, answered at once and written down."""

    def __init__(self, owner: MockTransactions) -> None:
        self._owner = owner
        #: KIP-890's transactions v2 (as TxnRequests.v2): the mock runs v1's steps
        self.v2 = False

    async def add_offsets(self, group_id: str) -> None:
        pass

    async def commit_offsets(
        self, group_id: str, topics: dict[str, dict[int, OffsetAndMetadata]]
    ) -> None:
        current = self._owner.current
        if current is not None:
            offsets = current.offsets.setdefault(group_id, {})
            for topic, parts in topics.items():
                for partition, om in parts.items():
                    offsets[TopicPartition(topic, partition)] = om

    async def end_txn(self, commit: bool) -> None:
        pass


class MockTransactions(TransactionManager):
    """The real transaction manager, talking to no coordinator.

    ``begin``, ``check_can_send``, ``commit``, ``abort`` and ``send_offsets`` are the
    producer's own code: the same states, the same errors, the same messages. Only the
    requests are replaced (:class:`_Requests`), and the end of each transaction is
    recorded (:attr:`transactions`).
    """

    def __init__(
        self,
        config: ProducerConfig,
        deliveries: Deliveries,
        tasks: BackgroundTasks,
        on_fatal: Callable[[KafkaError], None],
        abort_queued: Callable[[KafkaError], None],
    ) -> None:
        super().__init__(
            config,
            cast("NetworkClient", None),  # never used: every request goes to _Requests
            cast("RecordAccumulator", deliveries),
            cast("IdempotenceState", _NoIdempotence()),
            on_fatal=on_fatal,
            abort_queued=abort_queued,
            wakeup=lambda: None,
            tasks=tasks,
        )
        self._requests = _Requests(self)  # type: ignore[assignment]
        self.state = TxnState.READY  # InitProducerId: nothing to fence, nothing to wait for
        self.transactions: list[MockTransaction] = []
        self.current: MockTransaction | None = None

    def begin(self) -> None:
        super().begin()
        self.current = MockTransaction()
        self.transactions.append(self.current)

    def unbegin(self) -> None:
        super().unbegin()
        if self.state is TxnState.READY and self.current is not None:
            self.transactions.remove(self.current)
            self.current = None

    def record_sent(self, record: SentRecord) -> MockTransaction:
        """A record sent in the open transaction (its partition is now in the transaction)."""
        assert self.current is not None
        self._started = True
        self.current.records.append(record)
        return self.current

    def _completed(self) -> None:
        if self.current is not None:
            self.current.outcome = "committed" if self.state is TxnState.COMMITTING else "aborted"
            self.current = None
        super()._completed()

    def fence(self) -> None:
        """As a newer producer with this ``transactional_id`` would: fatal from now on."""
        self._fail(
            ProducerFencedError(
                f"transactional id {self.transactional_id!r}: fenced by a newer producer "
                "(MockProducer.fence())"
            ),
            fatal=True,
        )


class MockBatch(BatchBuilder):
    """A :class:`~aiokafka_lite._internal.batch_builder.BatchBuilder` that remembers its records.

    The serializers run here, through the same function the real batch uses; the
    rest (headers, timestamp, the size limit) is the real batch's own ``append``.
    """

    def __init__(
        self,
        batch_size: int,
        key_serializer: Callable[[Any], bytes | None] | None,
        value_serializer: Callable[[Any], bytes | None] | None,
    ) -> None:
        super().__init__(batch_size)
        self._mock_key_serializer = key_serializer
        self._mock_value_serializer = value_serializer
        self.entries: list[tuple[bytes | None, bytes | None, tuple[Header, ...], int]] = []

    def append(
        self,
        *,
        key: Any = None,
        value: Any = None,
        timestamp: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> BatchRecordMetadata | None:
        if self.closed():
            return None
        key, value = checks.serialize(
            self._mock_key_serializer, self._mock_value_serializer, key, value, "batch"
        )
        md = super().append(key=key, value=value, timestamp=timestamp, headers=headers)
        if md is not None:
            checked = checks.check_headers(headers, "batch")
            self.entries.append((key, value, tuple(checked or ()), md.timestamp))
        return md


class AllAvailable:
    """The metadata a placement reads (``partitions_by_topic`` and
    ``cluster.available_partitions_by_topic``): every partition of every topic is there
    and available."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self.cluster = self
        self.available_partitions_by_topic = self
        self.partitions_by_topic = self
        self._count = count

    def get(self, topic: str, default: Iterable[int] | None = None) -> list[int]:
        return list(range(self._count(topic)))
