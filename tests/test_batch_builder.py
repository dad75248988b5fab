"""``create_batch()``'s builder: the compiled twin does what the pure one does.

:mod:`aiokafka_lite._internal.batch_builder` is the pure-Python ``BatchBuilder`` and
``_cbatch_builder.pyx`` its compiled twin (used when built). The same calls on both must
return the same metadata, raise the same errors and encode the same bytes, whatever the
input: plain records, serializers, headers, explicit and bad timestamps, a batch that
fills up, closing. The batches' bytes are then read back by kafka-python's own decoder,
not ours. (The producer tests run ``create_batch()``/``send_batch()`` against the broker
in whichever twin is in use; CI runs the suite in both builds.)
"""

from __future__ import annotations

import importlib
import time
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch  # type: ignore[import-untyped]

from aiokafka_lite._internal import batch_builder
from aiokafka_lite._internal.compression import get_codec
from aiokafka_lite._internal.records import PyRecordBatchBuilder
from aiokafka_lite.errors import RecordTooLargeError


def _compiled_twin() -> Any:
    """The compiled BatchBuilder when it was built (also when the pure modules are forced:
    the comparison runs in both CI runs), else None."""
    try:
        return importlib.import_module("aiokafka_lite._internal._cbatch_builder").BatchBuilder
    except ImportError:
        return None


PURE = batch_builder.PyBatchBuilder
COMPILED = _compiled_twin()
needs_build = pytest.mark.skipif(COMPILED is None, reason="the extension is not built")
TS = 1_700_000_000_000


def outcome(append: Any, **args: Any) -> tuple[str, Any]:
    """What ``append(**args)`` returned (metadata as a tuple), or the error it raised."""
    try:
        got = append(**args)
    except Exception as e:  # compared by type and message
        return "raised", (type(e), str(e))
    if got is None:
        return "returned", None
    return "returned", (got.offset, got.size, got.timestamp, got.crc)


def records_of(builder: Any) -> list[tuple[Any, ...]]:
    """The batch's records, decoded by kafka-python."""
    taken = builder._take("t", 1 << 30)
    if taken is None:
        return []
    batch = DefaultRecordBatch(bytes(taken.close()))
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


odd_payload = (
    st.none()
    | st.binary(max_size=50)
    | st.binary(max_size=50).map(bytearray)
    | st.binary(max_size=50).map(memoryview)
    | st.text(max_size=20)
    | st.integers()
)
header = st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20))
timestamps = st.none() | st.integers(0, 2**45) | st.just(-1) | st.just(2**64) | st.just(1.5)
appends = st.lists(
    st.tuples(odd_payload, odd_payload, timestamps, st.none() | st.lists(header, max_size=2)),
    max_size=40,
)


# (Not a clock past int64 milliseconds, year 292 million: the compiled twin refuses it at
# append(), the pure one only when the batch is encoded.)
clocks = st.floats(0.0, 2e10) | st.sampled_from([float("nan"), float("inf"), -1.0])


@needs_build
@settings(max_examples=300, deadline=None)
@given(appends, st.integers(-1, 3000), clocks, st.booleans())
def test_both_twins_return_raise_and_encode_the_same(
    calls: list[tuple[Any, Any, Any, Any]], batch_size: int, clock: float, gzip: bool
) -> None:
    """``clock``: what time.time() says (both twins read it per record), any float. The
    pure twin runs on the pure encoder, the compiled one on the compiled encoder."""
    codec = get_codec("gzip") if gzip else None
    compress = None if codec is None else codec.compressor(None)
    codec_id = 0 if codec is None else codec.id
    pure, compiled = PURE(batch_size, compress, codec_id), COMPILED(batch_size, compress, codec_id)
    for key, value, ts, headers in calls:
        args = {"key": key, "value": value, "timestamp": ts, "headers": headers}
        with mock.patch("time.time", return_value=clock):
            got = outcome(compiled.append, **args)
            with mock.patch.object(batch_builder, "RecordBatchBuilder", PyRecordBatchBuilder):
                assert got == outcome(pure.append, **args)
        assert (pure.closed(), pure.size(), pure.record_count()) == (
            compiled.closed(),
            compiled.size(),
            compiled.record_count(),
        )
    assert records_of(pure) == records_of(compiled)
    assert pure.closed() and compiled.closed()


@needs_build
def test_serializers_and_their_errors_are_the_same_in_both_twins() -> None:
    def key_serializer(k: Any) -> bytes:
        if k == "bad":
            raise ValueError("no bad keys")
        return str(k).encode()

    twins = [
        cls(1 << 20, key_serializer=key_serializer, value_serializer=lambda v: repr(v).encode())
        for cls in (PURE, COMPILED)
    ]
    for key, value in [("a", 1), (7, None), ("bad", 2), (None, {"x": 1})]:
        a, b = (outcome(t.append, key=key, value=value, timestamp=TS) for t in twins)
        assert a == b
    assert records_of(twins[0]) == records_of(twins[1]) != []


@pytest.mark.parametrize("cls", [PURE, batch_builder.BatchBuilder], ids=["pure", "active"])
def test_a_plain_record_is_stamped_now_and_a_full_batch_takes_no_more(cls: Any) -> None:
    builder = cls(300)
    before = int(time.time() * 1000)
    first = builder.append(key=b"k", value=b"v" * 100)
    after = int(time.time() * 1000)
    assert first.offset == 0 and before <= first.timestamp <= after
    assert builder.append(key=b"k", value=b"v" * 100, timestamp=TS).offset == 1
    assert builder.append(key=b"k", value=b"v" * 100) is None  # full: nothing added
    assert builder.closed() and builder.record_count() == 2
    assert builder.append(key=b"k", value=b"") is None  # and it stays closed
    assert [r[2:4] for r in records_of(builder)] == [(b"k", b"v" * 100)] * 2


@pytest.mark.parametrize("cls", [PURE, batch_builder.BatchBuilder], ids=["pure", "active"])
def test_a_batch_larger_than_a_request_is_refused_naming_the_topic(cls: Any) -> None:
    builder = cls(16)
    assert builder.append(value=b"x" * 1000) is not None  # a first record always fits
    with pytest.raises(RecordTooLargeError, match="'big'"):
        builder._take("big", 500)
    assert cls(16)._take("t", 500) is None  # nothing appended: nothing to send
