"""Records for one partition built ahead of time: aiokafka's ``create_batch`` API.

A :class:`BatchBuilder` encodes records straight into one record batch (Java's
``MemoryRecordsBuilder``, which Java keeps internal) with the producer's serializers and
compression; ``AIOKafkaProducer.send_batch`` queues it whole, behind the partition's open
batch, with one future for the batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import speedups
from ..errors import RecordTooLargeError
from ..structs import BatchRecordMetadata
from . import checks
from .compression import Compressor
from .records import Header, RecordBatchBuilder

__all__ = ["BatchBuilder", "PyBatchBuilder", "check_request_size"]


class BatchBuilder:
    """Records for one partition built ahead of time (aiokafka's ``create_batch``).

    ``append`` serializes with the producer's serializers and returns the
    record's :class:`BatchRecordMetadata`, or None once the batch is full or
    closed; :meth:`close` takes no more records. :meth:`AIOKafkaProducer.send_batch`
    sends it (and closes it).
    """

    def __init__(
        self,
        batch_size: int,
        compress: Compressor | None = None,
        codec_id: int = 0,
        *,
        key_serializer: Callable[[Any], bytes | None] | None = None,
        value_serializer: Callable[[Any], bytes | None] | None = None,
    ) -> None:
        self._limit = batch_size
        self._compress = compress
        self._codec_id = codec_id
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        # No serializers: bytes keys and values go to the encoder as they are.
        self._plain = key_serializer is None and value_serializer is None
        self._builder: RecordBatchBuilder | None = None
        self._closed = False

    def append(
        self,
        *,
        key: Any = None,
        value: Any = None,
        timestamp: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> BatchRecordMetadata | None:
        """Add a record; None (nothing added) when the batch is full or closed.

        ``timestamp`` is in milliseconds since the epoch (None: now).
        """
        if self._closed:
            return None
        if not (
            self._plain
            and (key is None or type(key) is bytes)
            and (value is None or type(value) is bytes)
        ):  # serializers to run, or types to check and convert
            key, value = checks.serialize(
                self._key_serializer, self._value_serializer, key, value, "batch"
            )
        if headers is not None:
            headers = checks.check_headers(headers, "batch")
        if timestamp is None:
            ts = int(time.time() * 1000)
        elif type(timestamp) is int and 0 <= timestamp < checks.TIMESTAMP_LIMIT:
            ts = timestamp
        else:
            raise checks.bad_timestamp(timestamp, "batch")
        builder = self._builder
        if builder is None:
            builder = self._builder = RecordBatchBuilder(ts, self._compress, self._codec_id)
        offset = builder.count
        added = builder.append(ts, key, value, headers, self._limit)
        if not added:
            self._closed = True  # as aiokafka: a full batch takes no more records
            return None
        return BatchRecordMetadata(offset, added, ts)

    def close(self) -> None:
        """Take no more records (``append`` returns None from now on)."""
        self._closed = True

    def closed(self) -> bool:
        return self._closed

    def size(self) -> int:
        return 0 if self._builder is None else len(self._builder.buf)

    def record_count(self) -> int:
        return 0 if self._builder is None else self._builder.count

    def _take(self, topic: str, max_request_size: int) -> RecordBatchBuilder | None:
        """For ``send_batch``: the records, closing this batch; None when it holds none."""
        builder = self._builder
        if builder is None or not builder.count:
            self._closed = True  # nothing to send (send_batch resolves it at once)
            return None
        check_request_size(builder, topic, max_request_size)
        self._builder = None
        self._closed = True
        return builder


def check_request_size(builder: RecordBatchBuilder, topic: str, max_request_size: int) -> None:
    """Refuse a batch larger than one request may be (``_take``, in both twins): a batch's
    first record is always accepted, so one big record can make it larger than the broker
    would take."""
    if len(builder.buf) > max_request_size:
        raise RecordTooLargeError(
            f"a batch of {len(builder.buf)} bytes for {topic!r} is larger than "
            f"max_request_size ({max_request_size})"
        )


# The pure class stays reachable (tests run both); the compiled twin (_cbatch_builder.pyx:
# a plain record goes from append() to its encoder with no interpreted code) takes the
# name when it was built (see aiokafka_lite.speedups).
PyBatchBuilder = BatchBuilder
_compiled = speedups.compiled_module("_cbatch_builder")
if _compiled is not None and not TYPE_CHECKING:
    BatchBuilder = _compiled.BatchBuilder
