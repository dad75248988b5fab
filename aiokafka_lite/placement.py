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
from collections.abc import Callable, Sequence
from typing import Any

from . import aiokafka_arguments, checks, serializers
from .config import ProducerConfig
from .errors import RecordTooLargeError
from .metadata import Metadata
from .partitioner import KeyHashCache, StickyPartitioner
from .records import BATCH_HEADER_SIZE, RECORD_OVERHEAD, Header

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
        self._sticky_bytes: dict[str, int] = {}
        # The cluster the partitions are chosen in: set when the producer starts.
        self.metadata: Metadata

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

    def sticky_tables(self) -> tuple[dict[str, int], dict[str, int], int]:
        """What send()'s fast path reads to place a keyless record as
        :meth:`_sticky_partition` does (the dicts themselves, never replaced): each
        topic's sticky partition, the bytes sent to it, and the bytes that move it on."""
        return self._sticky.current, self._sticky_bytes, self._batch_size

    def _sticky_partition(self, topic: str, n: int, size: int) -> int:
        # KIP-794: keyless records stick to one partition until about a batch
        # worth of bytes went to it, then move on; batches fill up instead of
        # spreading thin records over every partition.
        available = self.metadata.cluster.available_partitions_by_topic.get(topic, ())
        partition = self._sticky.partition(topic, available, n)
        produced = self._sticky_bytes.get(topic, 0) + size
        if produced >= self._batch_size:
            self._sticky.on_new_batch(topic, partition, available, n)
            produced = 0
        self._sticky_bytes[topic] = produced
        return partition
