"""What a record needs before the accumulator takes it: its bytes, its size, its partition.

These are the steps of Java's ``KafkaProducer.doSend`` between the metadata wait and
the append: serialize key and value (its ``Serializer``), check the record's size
(``ensureValidRecordSize``) and choose the partition (``KafkaProducer.partition`` and the
``BuiltInPartitioner`` each topic has in Java's ``RecordAccumulator``).

* :func:`record_bound` is the one sizing rule: the most bytes a record may take in a
  batch it may have to start (exact header bytes included). Every path checks
  ``max_request_size`` and reserves ``buffer_memory`` with it.
* :class:`RecordPartitioner` is the one partitioner of a producer: a partition given, a
  user's partitioner, murmur2 of the key (through its hash cache), or for a keyless
  record the topic's sticky partition (KIP-794). Every path places with it: ``send()``
  (its fast path reads its tables), ``try_send()``, ``send_many()``, ``send_batch()``,
  the accumulator's append, the Spark task writer and aiokafka's ``_partition``.
* :class:`RecordPlacement` is a producer's serializers, size check and partitioner.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import serializers
from ..config import ProducerConfig
from ..errors import RecordTooLargeError, UnknownTopicOrPartitionError
from . import aiokafka_arguments, checks
from .metadata import Metadata
from .partitioner import KeyHashCache, StickyPartitioner, sticky_moves_on
from .records import BATCH_HEADER_SIZE, Header, record_size

__all__ = ["RecordPartitioner", "RecordPlacement", "record_bound"]


def record_bound(key: bytes | None, value: bytes | None, headers: Sequence[Header] | None) -> int:
    """The most bytes a record takes in a batch, counting the header of a batch it may
    start: :func:`~aiokafka_lite._internal.records.record_size` (its headers' exact bytes) plus
    ``BATCH_HEADER_SIZE``. Java's ``AbstractRecords.estimateSizeInBytesUpperBound``."""
    return record_size(key, value, headers) + BATCH_HEADER_SIZE


class RecordPartitioner:
    """A producer's partitioner: the partition for each record, as Java's producer picks it.

    One object per producer holds everything the choice remembers: the key hash cache
    and, per topic, the sticky partition of its keyless records and the bytes they added
    there (Java's ``BuiltInPartitioner``; franz-go's sticky ``Partitioner`` with its
    new-batch hook is the same idea). Keyless records follow KIP-794 as Java's
    ``RecordAccumulator.append`` drives it: :meth:`peek` before the append,
    :meth:`update` after it with the bytes the append added (and whether the switch is
    enabled: the partition's batch is full), and :meth:`update` with 0 bytes when the
    partition has no open batch (its batches are all full). :meth:`update` asks
    :func:`~aiokafka_lite._internal.partitioner.sticky_moves_on` and calls :meth:`move_on`.

    ``current`` and ``produced`` are the sticky tables themselves (never replaced), which
    the compiled fast path reads and updates in place (``_csend_path``).
    """

    __slots__ = ("_sticky", "batch_size", "current", "custom", "hashes", "metadata", "produced")

    def __init__(
        self,
        custom: Callable[..., int] | None,
        batch_size: int,
        rng: random.Random | None = None,
    ) -> None:
        self.custom = custom  # a user's partitioner (aiokafka's signature), or None
        self.batch_size = batch_size
        self.hashes = KeyHashCache()
        self._sticky = StickyPartitioner(rng)
        self.current = self._sticky.current  # topic -> its sticky partition
        self.produced = self._sticky.produced  # topic -> keyless bytes added there
        # The cluster the partitions are chosen in: set when the producer starts.
        self.metadata: Metadata

    def seed(self, rng: random.Random) -> None:
        """Draw the sticky partitions from ``rng`` (tests make placements repeatable)."""
        self._sticky._rng = rng

    def partition(self, topic: str, key: bytes | None, n: int, partition: int | None) -> int:
        """The partition of a record with a key, a partition given or a user's
        partitioner; -1 for a keyless record of the built-in one (placed by
        :meth:`peek` and :meth:`update`, where it is appended)."""
        if partition is not None:
            if type(partition) is not int or not 0 <= partition < n:
                raise checks.bad_partition(partition, topic, n)
            return partition
        if self.custom is not None:
            available = self.metadata.cluster.available_partitions_by_topic.get(topic, ())
            chosen = int(self.custom(key, list(range(n)), list(available)))
            if not 0 <= chosen < n:
                raise ValueError(f"partitioner returned {chosen} for {topic!r} with {n} partitions")
            return chosen
        if key is not None:
            return self.hashes.hash(bytes(key)) % n
        return -1

    def peek(self, topic: str) -> int:
        """The topic's sticky partition (chosen on first use; Java's
        ``peekCurrentPartitionInfo``). Its partitions must be known."""
        n = len(self.metadata.partitions_by_topic.get(topic, ()))
        if not n:  # (known when send() began: gone during its wait for memory)
            raise UnknownTopicOrPartitionError(f"{topic!r} has no partitions in the metadata")
        part = self.current.get(topic)
        if part is None or part >= n:  # (first use, or the topic was created again, smaller)
            available = self.metadata.cluster.available_partitions_by_topic.get(topic, ())
            part = self._sticky.move_on(topic, available, n)
        return part

    def update(self, topic: str, partition: int, added: int, limit: int, full: bool) -> int:
        """Count ``added`` bytes of keyless records appended to ``partition`` (a batch of
        ``limit`` bytes, ``full`` or not), moving the topic on when
        :func:`~aiokafka_lite._internal.partitioner.sticky_moves_on` says so (Java's
        ``updatePartitionInfo``). Returns the topic's sticky partition now."""
        current = self.current.get(topic)
        if current != partition:
            return self.peek(topic)  # placed before a wait for memory, and moved on since
        produced = self.produced.get(topic, 0) + added
        if sticky_moves_on(produced, limit, full):
            return self.move_on(topic)
        self.produced[topic] = produced
        return partition

    def keyless(self, topic: str, size: int) -> int:
        """The partition for a keyless record of ``size`` bytes (at most) placed by a
        caller that appends no single record to a batch itself (``send_many``'s runs,
        the mock producer, aiokafka's ``_partition``): :meth:`peek`, then
        :meth:`update` as if its batch were full (no batch state to consult)."""
        partition = self.peek(topic)
        if size:
            self.update(topic, partition, size, self.batch_size, True)
        return partition

    def move_on(self, topic: str) -> int:
        """Give ``topic`` a new sticky partition (:meth:`StickyPartitioner.move_on`)."""
        n = len(self.metadata.partitions_by_topic.get(topic, ()))
        available = self.metadata.cluster.available_partitions_by_topic.get(topic, ())
        if not (n or available):  # no partitions known now: it stays (never raises here)
            return self.current[topic]
        return self._sticky.move_on(topic, available, n)

    def for_batch(self, topic: str, n: int, partition: int | None) -> int:
        """The partition for a batch built with ``create_batch`` (no key to hash)."""
        if partition is not None or self.custom is not None:
            return self.partition(topic, None, n, partition)
        # A whole batch: any available partition (aiokafka picks one at random too).
        available = self.metadata.cluster.available_partitions_by_topic.get(topic)
        return random.choice(available) if available else random.randrange(n)


class RecordPlacement:
    """One producer's serializers, size limit and :class:`RecordPartitioner`."""

    def __init__(self, config: ProducerConfig) -> None:
        self.key_serializer = serializers.resolve(config.key_serializer)
        self.value_serializer = serializers.resolve(config.value_serializer)
        # None: Java's default (murmur2 for keys, sticky for keyless records), which is
        # also what aiokafka's own default (FastStream passes it explicitly) does.
        custom: Callable[..., int] | None = (
            None
            if aiokafka_arguments.is_aiokafka_default_partitioner(config.partitioner)
            else config.partitioner
        )
        self.partitioner = RecordPartitioner(custom, config.batch_size)
        self.max_request_size = config.max_request_size
        # Records that need nothing but a type check and murmur2 (send_many's runs).
        self.plain = (
            self.key_serializer is None and self.value_serializer is None and custom is None
        )

    @property
    def metadata(self) -> Metadata:
        """The cluster the partitions are chosen in (set when the producer starts)."""
        return self.partitioner.metadata

    @metadata.setter
    def metadata(self, metadata: Metadata) -> None:
        self.partitioner.metadata = metadata

    def prepare(
        self, topic: str, key: Any, value: Any, headers: Sequence[Header] | None
    ) -> tuple[bytes | None, bytes | None, int, Sequence[Header] | None]:
        """Serialize and size-check one record (raises for this record only); its size
        is :func:`record_bound`'s."""
        key, value = checks.serialize(self.key_serializer, self.value_serializer, key, value, topic)
        headers = checks.check_headers(headers, topic)
        size = record_bound(key, value, headers)
        if size > self.max_request_size:
            raise RecordTooLargeError(
                f"a record of {size} bytes for {topic!r} is larger than max_request_size "
                f"({self.max_request_size})"
            )
        return key, value, size, headers

    def place(
        self,
        topic: str,
        key: bytes | None,
        parts: Sequence[Any] | Mapping[Any, Any],
        size: int,
        partition: int | None,
    ) -> int:
        """The partition for a record appended by no single-record append (see
        :meth:`RecordPartitioner.keyless`): checked if given, else chosen as Java does."""
        chosen = self.partitioner.partition(topic, key, len(parts), partition)
        return chosen if chosen >= 0 else self.partitioner.keyless(topic, size)
