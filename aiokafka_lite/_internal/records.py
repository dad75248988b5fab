"""Record batch v2 (magic 2): records are encoded straight into the batch buffer.

Layout of a batch (all integers big-endian)::

    0  baseOffset int64        27 baseTimestamp int64
    8  batchLength int32       35 maxTimestamp int64
    12 partitionLeaderEpoch    43 producerId int64
    16 magic int8 = 2          51 producerEpoch int16
    17 crc uint32 (CRC-32C)    53 baseSequence int32
    21 attributes int16        57 recordCount int32
    23 lastOffsetDelta int32   61 records...

The CRC covers everything from ``attributes`` to the end. A record is::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    | keyLength varint | key | valueLength varint | value | headerCount varint
    | (headerKeyLength varint | headerKey | headerValueLength varint | value)*

All varints are zigzag encoded. The header is written once, when the batch is
closed for sending (so producer id, epoch and sequence can be set, and set again
if a retry needs a new epoch); records are appended as they arrive.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING

import crc32c

from .. import speedups
from .compression import Compressor

__all__ = [
    "BATCH_HEADER_SIZE",
    "MAX_RECORD_OVERHEAD",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "RECORD_OVERHEAD",
    "Header",
    "PyRecordBatchBuilder",
    "RecordBatchBuilder",
    "encode_varint",
    "record_size",
]

BATCH_HEADER_SIZE = 61
# The most a record without headers adds beyond its key and value: length,
# attributes, timestamp delta (varlong), offset delta, key and value lengths,
# header count.
RECORD_OVERHEAD = 5 + 1 + 10 + 5 + 5 + 5 + 5
# ... and with the header of the batch it may have to start (placement.record_bound's
# rule for a record without headers).
MAX_RECORD_OVERHEAD = RECORD_OVERHEAD + BATCH_HEADER_SIZE
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
MAGIC = 2

ATTR_TRANSACTIONAL = 0x10

Header = tuple[str, bytes | None]

_HEADER_AFTER_OFFSET = struct.Struct(">iib")  # batchLength, partitionLeaderEpoch, magic
_HEADER_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. recordCount
_CRC = struct.Struct(">I")


def _zigzag_varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


# Lengths, offset deltas and timestamp deltas are almost always small and
# non-negative: look their encodings up instead of computing them per record.
_TABLE_SIZE = 1 << 14
_VARINT = tuple(_zigzag_varint(i) for i in range(_TABLE_SIZE))
_NULL = _zigzag_varint(-1)  # length of a null key / value


def encode_varint(n: int) -> bytes:
    """Zigzag varint encoding of a signed integer, as record fields use it."""
    if 0 <= n < _TABLE_SIZE:
        return _VARINT[n]
    return _zigzag_varint(n)


def _encode_headers(headers: Sequence[Header]) -> bytes:
    out = bytearray(encode_varint(len(headers)))
    for hkey, hval in headers:
        kb = hkey.encode()
        out += encode_varint(len(kb))
        out += kb
        if hval is None:
            out += _NULL
        else:
            out += encode_varint(len(hval))
            out += hval
    return bytes(out)


def record_size(key: bytes | None, value: bytes | None, headers: Sequence[Header] | None) -> int:
    """Upper bound of a record's encoded size (for limits checked before appending)."""
    size = RECORD_OVERHEAD
    if key is not None:
        size += len(key)
    if value is not None:
        size += len(value)
    if headers:
        size += len(_encode_headers(headers))
    return size


class RecordBatchBuilder:
    """Encodes one Kafka record batch (v2): appends records to its buffer and writes its
    header when closed. Java's ``MemoryRecordsBuilder``."""

    __slots__ = ("base_timestamp", "buf", "codec_id", "compress", "count", "max_timestamp")

    def __init__(
        self, base_timestamp: int, compress: Compressor | None = None, codec_id: int = 0
    ) -> None:
        self.buf = bytearray(BATCH_HEADER_SIZE)
        self.count = 0
        self.base_timestamp = base_timestamp
        self.max_timestamp = base_timestamp
        # Records are encoded uncompressed; close() compresses them once.
        self.compress = compress
        self.codec_id = codec_id

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] | None,
        limit: int,
    ) -> int:
        """Encode one record into the buffer; return the bytes added.

        Returns 0, appending nothing, when the record would take the buffer
        past ``limit`` and the batch already holds a record (a first record
        is always accepted so that a record larger than ``batch_size`` still
        gets a batch of its own).
        """
        tsd = timestamp - self.base_timestamp
        od = self.count
        if key is None:
            k_b = _NULL
            key = b""
        else:
            n = len(key)
            k_b = _VARINT[n] if n < _TABLE_SIZE else _zigzag_varint(n)
        if value is None:
            v_b = _NULL
            value = b""
        else:
            n = len(value)
            v_b = _VARINT[n] if n < _TABLE_SIZE else _zigzag_varint(n)
        # Everything after the length prefix in one join; its length then
        # gives the prefix. Cheaper than summing the parts' lengths.
        body = b"".join(
            (
                b"\x00",  # attributes
                _VARINT[tsd] if 0 <= tsd < _TABLE_SIZE else _zigzag_varint(tsd),
                _VARINT[od] if od < _TABLE_SIZE else _zigzag_varint(od),
                k_b,
                key,
                v_b,
                value,
                _encode_headers(headers) if headers else b"\x00",
            )
        )
        n = len(body)
        len_b = _VARINT[n] if n < _TABLE_SIZE else _zigzag_varint(n)
        added = len(len_b) + n
        buf = self.buf
        if od and len(buf) + added > limit:
            return 0
        buf += len_b
        buf += body
        self.count = od + 1
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        return added

    def append_many(
        self,
        timestamp: int,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        order: Sequence[int],
        start: int,
        limit: int,
        budget: int,
        per_record: int = 0,
        base: int = 0,
    ) -> int:
        """Encode records ``order[start:]``, all stamped ``timestamp``: record ``i``'s key and
        value are ``keys[i - base]`` and ``values[i - base]`` (``send_many()`` keeps one chunk
        of its call there, from record ``base``).

        Stops before the record that would take the buffer past ``limit``
        (unless the batch is still empty, as in :meth:`append`) or make the
        bytes added, plus ``per_record`` for each record (memory held for it
        elsewhere), exceed ``budget``; returns the position in ``order`` it
        stopped at. The loop of :meth:`append`, inlined for a whole list.
        """
        tsd = timestamp - self.base_timestamp
        prefix = b"\x00" + encode_varint(tsd)  # attributes, timestamp delta
        # Body bytes besides the key, value and their varints: prefix, offset
        # delta, header count (the offset delta's varint is added per record).
        fixed = len(prefix) + 1
        od = self.count
        buf = self.buf
        hard = len(buf) + budget
        table, size, null = _VARINT, _TABLE_SIZE, _NULL
        join = b"".join
        end = len(buf)
        pos = start
        for pos in range(start, len(order)):
            i = order[pos] - base
            if i < 0:  # (no negative index may wrap around to another record)
                raise IndexError(f"record {i + base} is before keys/values from {base}")
            key = keys[i]
            value = values[i]
            n = fixed
            if key is None:
                k_b, key = null, b""
            else:
                kn = len(key)
                k_b = table[kn] if kn < size else _zigzag_varint(kn)
                n += kn
            if value is None:
                v_b, value = null, b""
            else:
                vn = len(value)
                v_b = table[vn] if vn < size else _zigzag_varint(vn)
                n += vn
            od_b = table[od] if od < size else _zigzag_varint(od)
            n += len(od_b) + len(k_b) + len(v_b)
            len_b = table[n] if n < size else _zigzag_varint(n)
            end += len(len_b) + n
            hard -= per_record
            if end > hard or (od and end > limit):
                break
            # One join and one append per record: the body is never built apart.
            buf += join((len_b, prefix, od_b, k_b, key, v_b, value, b"\x00"))
            od += 1
        else:
            pos = len(order)
        if od > self.count and timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        self.count = od
        return pos

    @property
    def size(self) -> int:
        return len(self.buf)

    def close(
        self,
        *,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        transactional: bool = False,
    ) -> bytearray:
        """Write the batch header (and CRC) and return the finished batch bytes.

        May be called again, e.g. to stamp a new producer epoch on a retry.
        """
        buf = self.buf
        if self.compress is not None:
            compress, self.compress = self.compress, None  # never twice (retries re-close)
            with memoryview(buf) as whole, whole[BATCH_HEADER_SIZE:] as section:
                blob = compress(section)
            del buf[BATCH_HEADER_SIZE:]
            buf += blob
        attributes = self.codec_id | (ATTR_TRANSACTIONAL if transactional else 0)
        _HEADER_AFTER_OFFSET.pack_into(buf, 8, len(buf) - 12, -1, MAGIC)
        _HEADER_AFTER_CRC.pack_into(
            buf,
            21,
            attributes,
            self.count - 1,
            self.base_timestamp,
            self.max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            self.count,
        )
        _CRC.pack_into(buf, 17, crc32c.crc32c(memoryview(buf)[21:]))
        return buf


# The pure class stays reachable (tests compare the two byte for byte); the compiled
# twin in _crecords.pyx takes its name when it was built (see aiokafka_lite.speedups).
PyRecordBatchBuilder = RecordBatchBuilder
_compiled = speedups.compiled_module("_crecords")
if _compiled is not None and not TYPE_CHECKING:
    RecordBatchBuilder = _compiled.RecordBatchBuilder
