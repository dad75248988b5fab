"""aiokafka_lite._internal.records checked against kafka-python's independent record-batch v2 code.

Batches built by :class:`RecordBatchBuilder` are parsed with
``kafka.record.default_records.DefaultRecordBatch`` (and compared byte for byte with
kafka-python's own ``DefaultRecordBatchBuilder``); varints are checked against
``kafka.record.util.encode_varint`` and the zigzag definition.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.util import decode_varint as kp_decode_varint
from kafka.record.util import encode_varint as kp_encode_varint

from aiokafka_lite._internal.records import (
    BATCH_HEADER_SIZE,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Header,
    RecordBatchBuilder,
    encode_varint,
    record_size,
)

BIG = 1 << 30  # a limit no test batch reaches


@dataclass(frozen=True)
class Rec:
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]


class Ids(NamedTuple):
    """What ``close()`` writes into a batch's header (its defaults: a plain producer's)."""

    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    transactional: bool = False


PLAIN = Ids()


def build(base: int, records: list[Rec], ids: Ids = PLAIN) -> bytes:
    b = RecordBatchBuilder(base)
    for r in records:
        before = b.size
        added = b.append(r.timestamp, r.key, r.value, r.headers, BIG)
        assert added > 0
        assert b.size == before + added  # the return value is exactly the bytes added
    return bytes(b.close(**ids._asdict()))


def parse(buf: bytes) -> tuple[DefaultRecordBatch, list]:
    """Parse with kafka-python; checks the CRC (must happen before iterating)."""
    batch = DefaultRecordBatch(bytes(buf))
    assert batch.validate_crc()
    return batch, list(batch)


def check_batch(buf: bytes, base: int, records: list[Rec], ids: Ids = PLAIN) -> None:
    batch, parsed = parse(buf)
    # header fields (the ones kafka-python does not check itself, too)
    assert batch.magic == 2
    assert batch.base_offset == 0
    (batch_length,) = struct.unpack_from(">i", buf, 8)
    assert batch_length == len(buf) - 12
    assert batch.size_in_bytes == len(buf)
    assert batch.leader_epoch == -1  # NO_PARTITION_LEADER_EPOCH, as the Java producer writes
    assert batch.producer_id == ids.producer_id
    assert batch.producer_epoch == ids.producer_epoch
    assert batch.base_sequence == ids.base_sequence
    assert batch.is_transactional is ids.transactional
    assert batch.attributes == (0x10 if ids.transactional else 0)  # no codec, CreateTime
    assert not batch.is_control_batch
    assert batch.records_count == len(records)
    assert batch.last_offset_delta == len(records) - 1
    assert batch.first_timestamp == base
    assert batch.max_timestamp == max([base, *(r.timestamp for r in records)])
    # records
    assert len(parsed) == len(records)
    for i, (got, want) in enumerate(zip(parsed, records, strict=True)):
        assert got.offset == i
        assert got.timestamp == want.timestamp
        assert got.timestamp_type == 0
        assert got.key == want.key
        assert got.value == want.value
        assert got.headers == list(want.headers)


# ---------------------------------------------------------------------------
# fixed scenarios


def test_single_minimal_record() -> None:
    buf = build(1_700_000_000_000, [Rec(1_700_000_000_000, None, None, [])])
    check_batch(buf, 1_700_000_000_000, [Rec(1_700_000_000_000, None, None, [])])
    # header + length(1) attrs(1) tsDelta(1) offDelta(1) key(1) value(1) headerCount(1)
    assert len(buf) == BATCH_HEADER_SIZE + 7
    assert buf[BATCH_HEADER_SIZE:] == b"\x0c\x00\x00\x00\x01\x01\x00"


def test_keys_values_and_headers_of_every_shape() -> None:
    base = 1_700_000_000_000
    records = [
        Rec(base, None, b"v", []),
        Rec(base + 1, b"", b"", []),
        Rec(base + 2, b"k", None, []),
        Rec(base + 3, b"k" * 20_000, b"v" * 100 * 1024, []),  # lengths >= 2**14: table fallback
        Rec(base + 4, b"\x00\xff" * 9000, b"x", [("h", b"y" * 17_000)]),
        Rec(
            base + 5,
            b"key",
            b"value",
            [("k", b"1"), ("k", None), ("k", b""), ("ключ", "значение".encode()), ("", b"e")],
        ),
        Rec(base + 6, None, None, [("ü" * 9000, None)]),  # header key > 16 KiB once encoded
    ]
    check_batch(build(base, records), base, records)


def test_record_count_and_offset_deltas_past_varint_table() -> None:
    # 16_400 records: offset deltas cross the 2**14 lookup table of small varints.
    base = 1000
    records = [Rec(base, None, b"", [])] * 16_400
    buf = build(base, records)
    batch, parsed = parse(buf)
    assert batch.records_count == 16_400
    assert batch.last_offset_delta == 16_399
    assert [r.offset for r in parsed] == list(range(16_400))


@pytest.mark.parametrize(
    "deltas",
    [
        [0, -1],
        [0, -1000, -16_384, -16_385],
        [0, -(10**12), 10**12],
        [0, 16_383, 16_384, 2**31, 2**40],
        [0, 2**62],  # the largest varlong range a real delta can take
    ],
)
def test_timestamp_deltas_negative_and_large(deltas: list[int]) -> None:
    base = 1_700_000_000_000
    records = [Rec(base + d, bytes([i]), b"v", []) for i, d in enumerate(deltas)]
    buf = build(base, records)
    check_batch(buf, base, records)


def test_timestamps_all_before_a_later_base() -> None:
    # A builder whose base is later than every record: negative deltas only.
    base = 5_000
    records = [Rec(4_999, None, b"a", []), Rec(0, None, b"b", [])]
    batch, parsed = parse(build(base, records))
    assert batch.first_timestamp == base
    assert [r.timestamp for r in parsed] == [4_999, 0]


def test_bytes_identical_to_kafka_python_builder() -> None:
    base = 1_700_000_000_000
    records = [
        Rec(base, None, b"v", []),
        Rec(base - 10, b"", None, [("k", None), ("k", b"x"), ("ключ", b"")]),
        Rec(base + 2**40, b"k" * 20_000, b"v" * 1024, []),
    ]
    ours = build(base, records, Ids(5, 2, 7, transactional=True))
    kp = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=True,
        producer_id=5,
        producer_epoch=2,
        base_sequence=7,
        batch_size=BIG,
    )
    for i, r in enumerate(records):
        assert kp.append(i, r.timestamp, r.key, r.value, r.headers) is not None
    theirs = bytes(kp.build())
    # kafka-python writes partitionLeaderEpoch 0; Java (and we) write -1. Everything else,
    # CRC included (it does not cover that field), must be byte for byte the same.
    assert ours[12:16] == b"\xff\xff\xff\xff"
    assert ours[:12] + ours[16:] == theirs[:12] + theirs[16:]


def test_corrupted_batch_fails_crc() -> None:
    # Sanity check of the oracle: a flipped byte in the CRC-covered area is detected.
    buf = bytearray(build(0, [Rec(0, b"k", b"v", [])]))
    buf[-2] ^= 0x01
    assert not DefaultRecordBatch(bytes(buf)).validate_crc()


# ---------------------------------------------------------------------------
# producer id / epoch / sequence / transactional, and closing twice


@pytest.mark.parametrize(
    ("producer_id", "producer_epoch", "base_sequence"),
    [
        (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE),
        (0, 0, 0),
        (123_456_789_012, 32_767, 2_147_483_000),
        (2**63 - 1, 1, 5),
    ],
)
@pytest.mark.parametrize("transactional", [False, True])
def test_header_fields_as_given_to_close(
    producer_id: int, producer_epoch: int, base_sequence: int, transactional: bool
) -> None:
    records = [Rec(10, b"a", b"1", []), Rec(11, b"b", b"2", [("h", b"v")])]
    ids = Ids(producer_id, producer_epoch, base_sequence, transactional)
    check_batch(build(10, records, ids), 10, records, ids)


def test_transactional_flag_is_attribute_bit_0x10() -> None:
    b = RecordBatchBuilder(0)
    b.append(0, None, b"v", None, BIG)
    plain = bytes(b.close())
    txn = bytes(b.close(transactional=True))
    (plain_attrs,) = struct.unpack_from(">h", plain, 21)
    (txn_attrs,) = struct.unpack_from(">h", txn, 21)
    assert plain_attrs == 0
    assert txn_attrs == 0x10
    assert DefaultRecordBatch(txn).is_transactional
    assert not DefaultRecordBatch(plain).is_transactional


def test_close_twice_rewrites_header_and_crc() -> None:
    base = 1_000
    records = [Rec(1_000, b"k1", b"v1", []), Rec(999, None, b"v2", [("h", None)])]
    b = RecordBatchBuilder(base)
    for r in records:
        b.append(r.timestamp, r.key, r.value, r.headers, BIG)
    first = bytes(b.close(producer_id=42, producer_epoch=0, base_sequence=0))
    check_batch(first, base, records, Ids(producer_id=42, producer_epoch=0, base_sequence=0))
    # A retry with a bumped epoch and a new sequence, now inside a transaction.
    second = bytes(b.close(producer_id=43, producer_epoch=1, base_sequence=17, transactional=True))
    assert second != first
    assert len(second) == len(first)  # the header is rewritten in place, nothing appended
    check_batch(second, base, records, Ids(43, 1, 17, transactional=True))
    # and back to no producer id: the CRC follows again
    third = bytes(b.close())
    check_batch(third, base, records)
    assert struct.unpack_from(">qhi", third, 43) == (-1, -1, -1)
    # the records themselves were never touched
    assert first[BATCH_HEADER_SIZE:] == second[BATCH_HEADER_SIZE:] == third[BATCH_HEADER_SIZE:]


# ---------------------------------------------------------------------------
# the size limit


def test_append_over_limit_returns_zero_and_appends_nothing() -> None:
    b = RecordBatchBuilder(100)
    first = b.append(100, b"k", b"x" * 50, None, 200)
    assert first > 0
    size_after_first = b.size
    buf_after_first = bytes(b.buf)

    # What the next record would add: measured on an identical twin builder.
    twin = RecordBatchBuilder(100)
    twin.append(100, b"k", b"x" * 50, None, BIG)
    would_add = twin.append(150, b"k2", b"y" * 80, [("h", b"v")], BIG)

    # one byte short: refused, nothing changes
    limit = size_after_first + would_add - 1
    assert b.append(150, b"k2", b"y" * 80, [("h", b"v")], limit) == 0
    assert b.size == size_after_first
    assert bytes(b.buf) == buf_after_first
    assert b.count == 1
    assert b.max_timestamp == 100  # the refused record's later timestamp was not counted
    check_batch(bytes(b.close()), 100, [Rec(100, b"k", b"x" * 50, [])])

    # exactly at the limit: accepted
    assert b.append(150, b"k2", b"y" * 80, [("h", b"v")], limit + 1) == would_add
    assert b.size == limit + 1
    check_batch(
        bytes(b.close()),
        100,
        [Rec(100, b"k", b"x" * 50, []), Rec(150, b"k2", b"y" * 80, [("h", b"v")])],
    )


def test_first_record_accepted_even_if_larger_than_limit() -> None:
    b = RecordBatchBuilder(7)
    added = b.append(7, b"k", b"v" * 5000, [("h", b"x")], limit=100)
    assert added > 100
    assert b.size == BATCH_HEADER_SIZE + added
    # a second record, however small, is now refused
    assert b.append(7, None, None, None, limit=100) == 0
    check_batch(bytes(b.close()), 7, [Rec(7, b"k", b"v" * 5000, [("h", b"x")])])


def test_limit_below_header_size_still_takes_first_record() -> None:
    b = RecordBatchBuilder(0)
    assert b.append(0, None, None, None, limit=0) > 0
    assert b.append(0, None, None, None, limit=0) == 0
    assert b.count == 1


# ---------------------------------------------------------------------------
# varints


def zigzag_reference(n: int) -> bytes:
    """Straight from the definition: zigzag to unsigned, then 7 bits per byte, LSB first."""
    z = 2 * n if n >= 0 else -2 * n - 1
    out = bytearray()
    while True:
        byte = z & 0x7F
        z >>= 7
        if z:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def kp_varint(n: int) -> bytes:
    out = bytearray()
    # (its returned byte count is off by one past 5 bytes: only the bytes are compared)
    kp_encode_varint(n, out.append)
    return bytes(out)


VARINT_SAMPLES = sorted(
    set(range(-300, 300))
    | {s * (2**k + d) for k in range(6, 64) for d in (-1, 0, 1) for s in (1, -1)}
    | {2**14 - 1, 2**14, 2**14 + 1, 8191, 8192, -8192, -8193}
    | {2**63 - 1, -(2**63)}
)


def test_encode_varint_matches_definition_and_kafka_python() -> None:
    samples = [n for n in VARINT_SAMPLES if -(2**63) <= n < 2**63]
    assert len(samples) > 900
    for n in samples:
        got = encode_varint(n)
        assert got == zigzag_reference(n), n
        assert got == kp_varint(n), n
        assert kp_decode_varint(bytearray(got), 0) == (n, len(got)), n


def test_encode_varint_known_values() -> None:
    assert encode_varint(0) == b"\x00"
    assert encode_varint(-1) == b"\x01"
    assert encode_varint(1) == b"\x02"
    assert encode_varint(-2) == b"\x03"
    assert encode_varint(63) == b"\x7e"
    assert encode_varint(-64) == b"\x7f"
    assert encode_varint(64) == b"\x80\x01"
    assert encode_varint(8191) == b"\xfe\x7f"
    assert encode_varint(8192) == b"\x80\x80\x01"
    assert encode_varint(2**14) == b"\x80\x80\x02"
    assert encode_varint(-(2**63)) == b"\xff" * 9 + b"\x01"


def test_encode_varint_whole_lookup_table() -> None:
    # every entry of the precomputed table, and its edges
    for n in range(-(2**14) - 2, 2**14 + 2):
        assert encode_varint(n) == zigzag_reference(n), n


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
@settings(max_examples=300, deadline=None)
def test_encode_varint_property(n: int) -> None:
    assert encode_varint(n) == kp_varint(n) == zigzag_reference(n)


# ---------------------------------------------------------------------------
# property: random batches round-trip through kafka-python

_opt_bytes = st.none() | st.binary(max_size=40)
_headers = st.lists(st.tuples(st.text(max_size=6), _opt_bytes), max_size=4)
_records = st.lists(
    st.tuples(st.integers(-(10**9), 10**9), _opt_bytes, _opt_bytes, _headers),
    min_size=1,
    max_size=15,
)


@given(
    base=st.integers(min_value=0, max_value=2**42),
    raw=_records,
    producer_id=st.integers(-1, 2**63 - 1),
    producer_epoch=st.integers(-1, 2**15 - 1),
    base_sequence=st.integers(-1, 2**31 - 1),
    transactional=st.booleans(),
)
@settings(max_examples=150, deadline=None)
def test_random_batches_round_trip(
    base: int,
    raw: list[tuple[int, bytes | None, bytes | None, list[Header]]],
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
) -> None:
    # As the producer does, the base timestamp is the first record's; the others lie
    # within +-10**9 ms of it (so negative and multi-byte deltas both occur).
    records = [Rec(base + (d if i else 0), k, v, h) for i, (d, k, v, h) in enumerate(raw)]
    b = RecordBatchBuilder(base)
    for r in records:
        before = b.size
        added = b.append(r.timestamp, r.key, r.value, r.headers, BIG)
        assert b.size == before + added
        assert 0 < added <= record_size(r.key, r.value, r.headers)
    ids = Ids(producer_id, producer_epoch, base_sequence, transactional)
    buf = bytes(b.close(**ids._asdict()))
    check_batch(buf, base, records, ids)
    kp = DefaultRecordBatchBuilder(
        2, 0, transactional, producer_id, producer_epoch, base_sequence, BIG
    )
    for i, r in enumerate(records):
        kp.append(i, r.timestamp, r.key, r.value, r.headers)
    theirs = bytes(kp.build())
    assert buf[:12] + buf[16:] == theirs[:12] + theirs[16:]


# ---------------------------------------------------------------------------
# append_many (send_many's bulk path)


def _bulk_records() -> tuple[list[bytes | None], list[bytes | None]]:
    # Nulls, empties, and lengths past the varint table (16384) on both sides.
    keys: list[bytes | None] = [None, b"", b"k1", b"K" * 20_000, None, b"k5", b"k6", b"k7"]
    values: list[bytes | None] = [b"v0", None, b"", b"v3", b"V" * 17_000, b"v5", None, b"v7"]
    return keys, values


def test_append_many_writes_what_append_writes_in_the_given_order() -> None:
    keys, values = _bulk_records()
    order = [7, 0, 3, 1, 4, 6, 2, 5]
    base, ts = 1_000, 1_234
    bulk, single = RecordBatchBuilder(base), RecordBatchBuilder(base)
    bulk.append(base, b"before", b"x", None, BIG)  # into a batch that already holds a record
    single.append(base, b"before", b"x", None, BIG)
    assert bulk.append_many(ts, keys, values, order, 0, BIG, BIG) == len(order)
    for i in order:
        single.append(ts, keys[i], values[i], None, BIG)
    assert bulk.buf == single.buf
    assert (bulk.count, bulk.max_timestamp) == (single.count, single.max_timestamp) == (9, ts)
    expected = [Rec(base, b"before", b"x", [])] + [Rec(ts, keys[i], values[i], []) for i in order]
    check_batch(bytes(bulk.close()), base, expected)


def test_append_many_stops_at_the_limit_and_at_the_budget() -> None:
    keys, values = _bulk_records()
    order = list(range(len(keys)))
    sizes = []
    probe = RecordBatchBuilder(0)
    for i in order:
        sizes.append(probe.append(0, keys[i], values[i], None, BIG))

    # The limit counts the whole buffer; the first record goes in regardless.
    b = RecordBatchBuilder(0)
    assert b.append_many(0, keys, values, order, 0, BATCH_HEADER_SIZE + 1, BIG) == 1
    # ... and a later run resumes where the last one stopped.
    limit = b.size + sizes[1] + sizes[2]
    assert b.append_many(0, keys, values, order, 1, limit, BIG) == 3
    assert b.size == limit and b.count == 3

    # The budget counts only the bytes this call adds, and binds the first record too.
    c = RecordBatchBuilder(0)
    assert c.append_many(0, keys, values, order, 0, BIG, sizes[0] - 1) == 0
    assert c.count == 0 and c.size == BATCH_HEADER_SIZE
    assert c.append_many(0, keys, values, order, 0, BIG, sum(sizes[:4])) == 4
    assert c.count == 4 and c.size == BATCH_HEADER_SIZE + sum(sizes[:4])
    check_batch(bytes(c.close()), 0, [Rec(0, keys[i], values[i], []) for i in order[:4]])
