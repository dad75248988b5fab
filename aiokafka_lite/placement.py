"""What a record needs before the accumulator takes it: its bytes, its size checked, its partition.

These are the steps of Java's ``KafkaProducer.doSend`` between the metadata wait and
the append: serialize key and value (its ``Serializer``), check the record's size
(``ensureValidRecordSize``) and choose the partition (``KafkaProducer.partition``: a
partition given, a user's partitioner, murmur2 of the key, or for a keyless record
``BuiltInPartitioner``'s sticky choice, KIP-794). ``send()`` inlines the common cases
(plain bytes, a key with the default partitioner); every other record of ``send()``,
and those of ``try_send()``, ``send_batch()`` and ``send_many()``, come here.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import aiokafka_arguments, checks, serializers
from .config import ProducerConfig
from .errors import RecordTooLargeError, UnknownTopicOrPartitionError
from .metadata import Metadata
from .partitioner import KeyHashCache, StickyPartitioner, sticky_moves_on
from .records import BATCH_HEADER_SIZE, RECORD_OVERHEAD, Header

if TYPE_CHECKING:
    from .producer_batch import PartitionQueue

__all__ = ["MAX_RECORD_OVERHEAD", "RecordPlacement"]

# Bytes a record adds beyond its key, value and headers, at most: length,
# attributes, timestamp and offset deltas, key/value lengths, header count,
# plus the header of the batch it may have to start. Memory is reserved by
# this upper bound before the record is encoded.
MAX_RECORD_OVERHEAD = RECORD_OVERHEAD + BATCH_HEADER_SIZE


class RecordPlacement:
    """One producer's serializers, size limit and partition choice."""

    def __init__(self, config: ProducerConfig) -> None:
        self.key_serializer = serializers.resolve(config.key_serializer)
        self.value_serializer = serializers.resolve(config.value_serializer)
        # None: Java's default (murmur2 for keys, sticky for keyless records), which is
        # also what aiokafka's own default (FastStream passes it explicitly) does.
        self.partitioner: Callable[..., int] | None = (
            None
            if aiokafka_arguments.is_aiokafka_default_partitioner(config.partitioner)
            else config.partitioner
        )
        self.max_request_size = config.max_request_size
        self._batch_size = config.batch_size
        self.hashes = KeyHashCache()  # shared with send()'s inline keyed path
        # Records that need nothing but a type check and murmur2 (send_many's runs).
        self.plain = (
            self.key_serializer is None
            and self.value_serializer is None
            and self.partitioner is None
        )
        self._sticky = StickyPartitioner()
        # The cluster the partitions are chosen in, and the accumulator's topic ->
        # partition -> queue (whose batches the sticky choice looks at): set when the
        # producer starts.
        self.metadata: Metadata
        self.queues: Mapping[str, Mapping[int, PartitionQueue]] = {}

    def prepare(
        self, topic: str, key: Any, value: Any, headers: Sequence[Header] | None
    ) -> tuple[bytes | None, bytes | None, int, Sequence[Header] | None]:
        """Serialize and size-check one record (raises for this record only)."""
        key, value = checks.serialize(self.key_serializer, self.value_serializer, key, value, topic)
        size = MAX_RECORD_OVERHEAD
        if key is not None:
            size += len(key)
        if value is not None:
            size += len(value)
        headers = checks.check_headers(headers, topic)
        if headers is not None:
            for hkey, hvalue in headers:
                size += 10 + len(hkey) * 4 + (len(hvalue) if hvalue is not None else 0)
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
        parts: Sequence[Any],
        size: int,
        partition: int | None,
    ) -> int:
        """The partition for a record: checked if given, else chosen as Java does."""
        n = len(parts)
        if partition is not None:
            if type(partition) is not int or not 0 <= partition < n:
                raise checks.bad_partition(partition, topic, n)
            return partition
        if self.partitioner is not None:
            available = self.metadata.cluster.available_partitions_by_topic.get(topic, ())
            chosen = int(self.partitioner(key, list(range(n)), list(available)))
            if not 0 <= chosen < n:
                raise ValueError(f"partitioner returned {chosen} for {topic!r} with {n} partitions")
            return chosen
        if key is not None:
            return self.hashes.hash(bytes(key)) % n
        return self._sticky_partition(topic, n, size)

    def place_batch(self, topic: str, parts: Sequence[Any], partition: int | None) -> int:
        """The partition for a batch built with ``create_batch`` (no key to hash)."""
        if partition is not None or self.partitioner is not None:
            return self.place(topic, None, parts, 0, partition)
        # A whole batch: any available partition (aiokafka picks one at random too).
        available = self.metadata.cluster.available_partitions_by_topic.get(topic)
        return random.choice(available) if available else random.randrange(len(parts))

    def sticky_tables(self) -> tuple[dict[str, int], dict[str, int], Callable[[str], int]]:
        """What send()'s fast path reads to place a keyless record as
        :meth:`sticky_partition` does and count it as :meth:`sticky_appended` does (the
        dicts themselves, never replaced): each topic's sticky partition, the bytes its
        keyless records added there, and :meth:`move_on`."""
        return self._sticky.current, self._sticky.produced, self.move_on

    # Keyless records follow Java's BuiltInPartitioner (KIP-794) as RecordAccumulator.append
    # drives it: the partition is peeked before the append (moving on first if the bytes
    # were reached and the partition's batches are all full, i.e. its last batch was closed
    # or sent), and the bytes the append added are counted after it (moving on once
    # sticky_moves_on says so). Bytes are the batch's own: a record's encoded size, plus
    # the batch header for the record that starts a batch; the limit is the partition's
    # batch limit (batch_size, scaled by the topic's compression estimate as Java's
    # estimated sizes are).

    def sticky_partition(self, topic: str) -> int:
        """The partition for the topic's next keyless record (its partitions are known)."""
        sticky = self._sticky
        n = len(self.metadata.partitions_by_topic.get(topic, ()))
        if not n:  # (known when send() began: gone during its wait for memory)
            raise UnknownTopicOrPartitionError(f"{topic!r} has no partitions in the metadata")
        available = self.metadata.cluster.available_partitions_by_topic.get(topic, ())
        partition = sticky.partition(topic, available, n)
        produced = sticky.produced.get(topic, 0)
        if produced:
            q = self.queues.get(topic, {}).get(partition)
            # Java's allBatchesFull: no batch open (the last closed or sent). A batch at
            # its limit but not marked full refuses the next record, which is then
            # placed again (RecordAccumulator.append): the same move.
            if q is None or not q.batches or q.batches[-1].full:
                limit = self._batch_size if q is None else q.batch_limit
                if sticky_moves_on(produced, limit, True):
                    partition = sticky.move_on(topic, available, n)
        return partition

    def sticky_appended(self, topic: str, partition: int, added: int, q: PartitionQueue) -> None:
        """Count ``added`` bytes of a keyless record appended to ``q``'s last batch."""
        sticky = self._sticky
        if sticky.current.get(topic) != partition:
            return  # placed before a wait for memory, and the topic moved on meanwhile
        produced = sticky.produced.get(topic, 0) + added
        limit = q.batch_limit
        if sticky_moves_on(produced, limit, len(q.batches[-1].buf) >= limit):
            self.move_on(topic)
        else:
            sticky.produced[topic] = produced

    def move_on(self, topic: str) -> int:
        """Give ``topic`` a new sticky partition (:meth:`StickyPartitioner.move_on`)."""
        n = len(self.metadata.partitions_by_topic.get(topic, ()))
        available = self.metadata.cluster.available_partitions_by_topic.get(topic, ())
        if not (n or available):  # no partitions known now: it stays (never raises here)
            return self._sticky.current[topic]
        return self._sticky.move_on(topic, available, n)

    def _sticky_partition(self, topic: str, n: int, size: int) -> int:
        # place()'s callers that append no single record to a batch themselves (send_many,
        # the mock producer, aiokafka's _partition): the record counts at its upper-bound
        # ``size``, and a batch counts as full once batch_size bytes went to it.
        available = self.metadata.cluster.available_partitions_by_topic.get(topic, ())
        sticky = self._sticky
        partition = sticky.partition(topic, available, n)
        if size:
            produced = sticky.produced.get(topic, 0) + size
            if sticky_moves_on(produced, self._batch_size, True):
                sticky.move_on(topic, available, n)
            else:
                sticky.produced[topic] = produced
        return partition
