"""aiokafka_lite._internal.compression: codec framing, levels, errors, and whole batches read back.

Every blob is decompressed by something other than the library that made it:

* gzip (made by zlib): the stdlib ``gzip`` module's reader and cramjam's (Rust) inflater;
* snappy (made by cramjam): a pure-Python snappy decoder and xerial-frame parser below;
* lz4 (made by python-lz4): a pure-Python LZ4 frame reader below that applies the checks of
  Java's ``Lz4BlockInputStream`` (version, independent blocks, header checksum, each block
  decoded on its own), and cramjam's LZ4 frame decoder;
* zstd (made by zstandard): cramjam's zstd decoder, plus a hand parse of the frame header.

Then whole record batches: built with :class:`RecordBatchBuilder`, compressed here the way
``records.py`` is going to do it (compress ``buf[61:]``, set the codec bits of
``attributes``, fix ``batchLength`` and the CRC-32C over ``buf[21:]``), and read back by
kafka-python's ``DefaultRecordBatch`` (which checks the CRC), and through the embedded
broker by confluent-kafka (librdkafka, ``check.crcs``) and aiokafka. Tansu stores produced
batches byte for byte and does not decompress them, so those readers see exactly our bytes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gzip
import json
import random
import struct
import sys
import types
import zlib
from dataclasses import dataclass

import cramjam
import crc32c
import lz4.frame  # type: ignore[import-untyped]
import pytest
from conftest import TopicFactory
from kafka.record.default_records import DefaultRecordBatch  # type: ignore[import-untyped]
from readers import ReadRecord, read_all_aiokafka, read_all_confluent

from aiokafka_lite._internal import compression
from aiokafka_lite._internal.client import NetworkClient
from aiokafka_lite._internal.compression import ATTR_CODEC_MASK, CODEC_NAMES, Codec, get_codec
from aiokafka_lite._internal.protocol.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from aiokafka_lite._internal.records import BATCH_HEADER_SIZE, RecordBatchBuilder
from aiokafka_lite.config import ProducerConfig
from aiokafka_lite.errors import ConfigError, UnsupportedCodecError

CODECS = ("gzip", "snappy", "lz4", "zstd")


def codec(name: str) -> Codec:
    c = get_codec(name)
    assert c is not None
    return c


def sample(size: int, seed: int = 1) -> bytes:
    """JSON-like records: compressible the way real payloads are."""
    rnd = random.Random(seed)
    words = ["alpha", "beta", "order", "click", "view", "purchase", "cart", "user"]
    out = bytearray()
    i = 0
    while len(out) < size:
        rec = {
            "id": i,
            "ts": 1_700_000_000_000 + rnd.randint(0, 10**6),
            "event": rnd.choice(words),
            "user": f"u{rnd.randint(0, 50_000)}",
            "amount": round(rnd.random() * 1000, 2),
            "uuid": f"{rnd.getrandbits(128):032x}",
        }
        out += json.dumps(rec).encode()
        i += 1
    return bytes(out[:size])


def noise(size: int, seed: int = 2) -> bytes:
    return random.Random(seed).randbytes(size)


# ---------------------------------------------------------------------------
# independent decoders


def snappy_raw_decode(block: bytes | memoryview) -> bytes:
    """Decode one raw snappy block (format_description.txt of google/snappy)."""
    src = bytes(block)
    pos = 0
    expected = shift = 0
    while True:  # preamble: uncompressed length, little-endian base-128 varint
        b = src[pos]
        pos += 1
        expected |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    out = bytearray()
    while pos < len(src):
        tag = src[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:  # literal
            n = tag >> 2
            if n >= 60:
                extra = n - 59
                n = int.from_bytes(src[pos : pos + extra], "little")
                pos += extra
            n += 1
            out += src[pos : pos + n]
            pos += n
            continue
        if kind == 1:
            length = 4 + ((tag >> 2) & 7)
            offset = ((tag >> 5) << 8) | src[pos]
            pos += 1
        elif kind == 2:
            length = (tag >> 2) + 1
            offset = int.from_bytes(src[pos : pos + 2], "little")
            pos += 2
        else:
            length = (tag >> 2) + 1
            offset = int.from_bytes(src[pos : pos + 4], "little")
            pos += 4
        assert 0 < offset <= len(out), "snappy copy reaches before the block"
        start = len(out) - offset
        for k in range(length):  # may overlap its own output
            out.append(out[start + k])
    assert len(out) == expected
    return bytes(out)


XERIAL_HEADER = b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01"


def xerial_decode(blob: bytes) -> list[bytes]:
    """Parse Java's SnappyOutputStream framing; return every chunk decoded."""
    assert blob[:16] == XERIAL_HEADER
    chunks = []
    pos = 16
    while pos < len(blob):
        (n,) = struct.unpack_from(">i", blob, pos)
        pos += 4
        assert 0 < n <= len(blob) - pos
        chunks.append(snappy_raw_decode(blob[pos : pos + n]))
        pos += n
    assert pos == len(blob)
    return chunks


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32_short(data: bytes, seed: int = 0) -> int:
    """XXH32 of fewer than 16 bytes (enough for an LZ4 frame descriptor)."""
    assert len(data) < 16
    h = (seed + _P5 + len(data)) & _M32
    i = 0
    while i + 4 <= len(data):
        h = (h + int.from_bytes(data[i : i + 4], "little") * _P3) & _M32
        h = (_rotl(h, 17) * _P4) & _M32
        i += 4
    for b in data[i:]:
        h = (h + b * _P5) & _M32
        h = (_rotl(h, 11) * _P1) & _M32
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _lz4_length(nibble: int, src: bytes, pos: int) -> tuple[int, int]:
    """A token's 4-bit length, extended (when 15) by the bytes at ``pos`` up to the first
    that is not 255; returns the length and the position after it."""
    n = nibble
    if n == 15:
        while True:
            b = src[pos]
            pos += 1
            n += b
            if b != 255:
                break
    return n, pos


def lz4_block_decode(src: bytes, max_size: int) -> bytes:
    """Decode one LZ4 block with an EMPTY history (as Java decodes every frame block)."""
    out = bytearray()
    pos = 0
    while True:
        token = src[pos]
        pos += 1
        n, pos = _lz4_length(token >> 4, src, pos)
        out += src[pos : pos + n]
        pos += n
        if pos == len(src):
            break  # the last sequence has literals only
        offset = src[pos] | (src[pos + 1] << 8)
        pos += 2
        length, pos = _lz4_length(token & 15, src, pos)
        length += 4
        assert 0 < offset <= len(out), "LZ4 match reaches before the block (linked blocks?)"
        start = len(out) - offset
        for k in range(length):
            out.append(out[start + k])
    assert len(out) <= max_size
    return bytes(out)


@dataclass
class Lz4Frame:
    flg: int
    bd: int
    blocks: list[bytes]  # decoded, one per block

    @property
    def data(self) -> bytes:
        return b"".join(self.blocks)


def lz4_frame_decode_like_java(blob: bytes) -> Lz4Frame:
    """Read an LZ4 frame applying the checks of Kafka's Java Lz4BlockInputStream."""
    assert blob[:4] == b"\x04\x22\x4d\x18", "LZ4 frame magic"
    flg, bd = blob[4], blob[5]
    assert flg & 3 == 0, "reserved FLG bits"
    assert (flg >> 5) & 1 == 1, "Java: 'Dependent block stream is unsupported'"
    assert (flg >> 6) & 3 == 1, "frame version 1"
    assert bd & 0x8F == 0, "reserved BD bits"
    block_size_id = (bd >> 4) & 7
    assert 4 <= block_size_id <= 7
    max_block = 1 << (2 * block_size_id + 8)
    pos = 6
    if (flg >> 3) & 1:  # content size
        pos += 8
    # magic 2 batches carry the CORRECT descriptor checksum (the broken one was magic 0)
    assert blob[pos] == (xxh32_short(blob[4:pos]) >> 8) & 0xFF, "frame descriptor checksum"
    pos += 1
    block_checksum = (flg >> 4) & 1
    blocks = []
    while True:
        (size,) = struct.unpack_from("<I", blob, pos)
        pos += 4
        if size == 0:
            break
        stored = size & 0x80000000
        size &= 0x7FFFFFFF
        assert size <= max_block
        raw = blob[pos : pos + size]
        blocks.append(raw if stored else lz4_block_decode(raw, max_block))
        pos += size + 4 * block_checksum
    if (flg >> 2) & 1:  # content checksum
        pos += 4
    assert pos == len(blob), "bytes after the end mark"
    return Lz4Frame(flg, bd, blocks)


@dataclass
class ZstdHeader:
    content_size: int | None
    checksum: bool
    dict_id: int


def zstd_header(blob: bytes) -> ZstdHeader:
    """Parse a zstd frame header (RFC 8878, 3.1.1.1)."""
    assert blob[:4] == b"\x28\xb5\x2f\xfd", "zstd frame magic"
    fhd = blob[4]
    fcs_flag, single_segment = fhd >> 6, (fhd >> 5) & 1
    checksum, dict_flag = (fhd >> 2) & 1, fhd & 3
    assert (fhd >> 3) & 1 == 0, "reserved bit"
    pos = 5 + (0 if single_segment else 1)
    dict_size = (0, 1, 2, 4)[dict_flag]
    dict_id = int.from_bytes(blob[pos : pos + dict_size], "little")
    pos += dict_size
    fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    content_size = None
    if fcs_size:
        content_size = int.from_bytes(blob[pos : pos + fcs_size], "little")
        if fcs_size == 2:
            content_size += 256
    return ZstdHeader(content_size, bool(checksum), dict_id)


def decode(name: str, blob: bytes) -> bytes:
    """The uncompressed bytes, by the independent decoders (and cross-checked)."""
    if name == "gzip":
        out = gzip.decompress(blob)
        assert bytes(cramjam.gzip.decompress(blob)) == out
        return out
    if name == "snappy":
        return b"".join(xerial_decode(blob))
    if name == "lz4":
        out = bytes(cramjam.lz4.decompress(blob))
        if len(out) <= 300_000:  # the pure-Python reader is slow on big inputs
            assert lz4_frame_decode_like_java(blob).data == out
        return out
    if name == "zstd":
        out = bytes(cramjam.zstd.decompress(blob))
        header = zstd_header(blob)
        assert header.content_size == len(out)
        return out
    raise AssertionError(name)


def test_reference_decoders_are_sound() -> None:
    """The hand-written decoders agree with known vectors and the real libraries."""
    assert xxh32_short(b"") == 0x02CC5D05  # xxHash's published test vector
    data = sample(100_000) + noise(1000) + b"a" * 5000
    assert snappy_raw_decode(bytes(cramjam.snappy.compress_raw(data))) == data
    frame = lz4.frame.compress(data, block_linked=False, content_checksum=True, store_size=True)
    assert lz4_frame_decode_like_java(frame).data == data
    # a linked-block frame (what cramjam's one-shot lz4.compress writes) must be refused
    linked = lz4.frame.compress(data, block_linked=True)
    with pytest.raises(AssertionError, match="Dependent block stream"):
        lz4_frame_decode_like_java(linked)


# ---------------------------------------------------------------------------
# registry and documented defaults


def test_defaults_and_ranges_are_pinned() -> None:
    """Explicit levels: a change here changes users' latency, so it must be deliberate."""
    table = {
        name: (c.id, c.default_level, c.min_level, c.max_level)
        for name in CODECS
        for c in [codec(name)]
    }
    assert table == {
        "gzip": (1, 6, 1, 9),
        "snappy": (2, None, None, None),
        "lz4": (3, 9, 1, 17),
        "zstd": (4, 3, -131072, 22),
    }
    assert [codec(n).id & ATTR_CODEC_MASK for n in CODECS] == [1, 2, 3, 4]
    assert CODEC_NAMES == ("none", "gzip", "snappy", "lz4", "zstd")
    assert not codec("snappy").has_levels
    assert codec("zstd").has_levels
    assert "default_level=3" in repr(codec("zstd"))
    assert "no levels" in repr(codec("snappy"))


def test_none_means_no_compression() -> None:
    assert get_codec(None) is None
    assert get_codec("none") is None


def test_codecs_are_cached() -> None:
    assert get_codec("zstd") is get_codec("zstd")


def test_default_level_is_what_compress_uses() -> None:
    data = sample(50_000)
    gz = codec("gzip")
    assert gz.compress(data) == zlib.compress(data, 6, 31)
    assert gz.compress(data) == gz.compress(data, 6) == gz.compressor()(data)
    assert gz.compress(data, 1) != gz.compress(data)
    assert codec("zstd").compress(data) == codec("zstd").compress(data, 3)


def test_lz4_level_9_is_fast_mode_as_in_java() -> None:
    """Java's Lz4BlockOutputStream: default level 9 -> fast compressor, else HC(level)."""
    data = sample(200_000)
    lz = codec("lz4")
    fast = lz4.frame.compress(
        data,
        compression_level=0,
        block_linked=False,
        content_checksum=False,
        block_checksum=False,
        store_size=False,
    )
    assert lz.compress(data) == fast
    assert lz.compress(data, 9) == fast
    assert len(lz.compress(data, 10)) < len(fast)  # HC compresses better than fast mode
    assert len(lz.compress(data, 8)) < len(fast)


# ---------------------------------------------------------------------------
# round trips


def _levels(name: str) -> list[int | None]:
    c = codec(name)
    if not c.has_levels:
        return [None]
    assert c.min_level is not None and c.max_level is not None
    middle = {"gzip": [5], "lz4": [3, 12], "zstd": [-5, 0, 1, 19]}[name]
    return [None, c.min_level, *middle, c.max_level]


ROUND_TRIP_CASES = [(name, level) for name in CODECS for level in _levels(name)]


@pytest.mark.parametrize(("name", "level"), ROUND_TRIP_CASES)
def test_round_trip(name: str, level: int | None) -> None:
    c = codec(name)
    compress = c.compressor(level)
    for data in (
        sample(100),
        sample(16_384),
        sample(200_000, seed=3),  # several LZ4 blocks and snappy chunks
        noise(70_000),  # incompressible: LZ4 stores blocks raw
        b"x",
    ):
        blob = compress(data)
        assert isinstance(blob, bytes)
        assert decode(name, blob) == data
        assert c.compress(data, level) == blob


@pytest.mark.parametrize("name", CODECS)
def test_empty_input(name: str) -> None:
    assert decode(name, codec(name).compress(b"")) == b""


@pytest.mark.parametrize("name", CODECS)
def test_bytes_bytearray_and_memoryview_give_the_same_bytes(name: str) -> None:
    data = sample(40_000)
    buf = bytearray(b"H" * BATCH_HEADER_SIZE + data)
    want = codec(name).compress(data)
    assert codec(name).compress(bytearray(data)) == want
    assert codec(name).compress(memoryview(buf)[BATCH_HEADER_SIZE:]) == want  # no copy needed
    # a memoryview whose items are not bytes still means its bytes
    wide = memoryview(data[:40_000]).cast("I")
    assert decode(name, codec(name).compress(wide)) == data[:40_000]


def test_gzip_is_a_gzip_container() -> None:
    blob = codec("gzip").compress(sample(1000))
    assert blob[:3] == b"\x1f\x8b\x08"  # gzip magic + deflate
    (isize,) = struct.unpack("<I", blob[-4:])
    assert isize == 1000


def test_snappy_uses_java_xerial_framing_in_32k_chunks() -> None:
    data = sample(100_000)
    blob = codec("snappy").compress(data)
    assert blob[:16] == XERIAL_HEADER
    chunks = xerial_decode(blob)
    assert [len(c) for c in chunks] == [32768, 32768, 32768, 100_000 - 3 * 32768]
    assert b"".join(chunks) == data
    # one chunk for a batch of up to 32 KiB
    assert len(xerial_decode(codec("snappy").compress(sample(32768)))) == 1


@pytest.mark.parametrize("level", [None, 1, 3, 12, 17])
def test_lz4_frame_header_is_javas(level: int | None) -> None:
    """The exact descriptor Java's Lz4BlockOutputStream writes: FLG 0x60, BD 0x40, HC 0x82."""
    data = sample(150_000)
    blob = codec("lz4").compress(data, level)
    assert blob[:7] == bytes.fromhex("04224d18604082")
    frame = lz4_frame_decode_like_java(blob)
    assert frame.flg == 0x60  # version 1, independent blocks, no checksums, no content size
    assert frame.bd == 0x40  # 64 KiB blocks
    assert [len(b) for b in frame.blocks] == [65536, 65536, 150_000 - 2 * 65536]
    assert frame.data == data
    info = lz4.frame.get_frame_info(blob)
    assert info["block_linked"] is False
    assert info["content_checksum"] is False
    assert info["block_checksum"] is False


def test_zstd_frame_has_content_size_and_no_checksum() -> None:
    data = sample(70_000)
    header = zstd_header(codec("zstd").compress(data))
    assert header == ZstdHeader(content_size=70_000, checksum=False, dict_id=0)


def test_zstd_compressor_is_safe_across_threads() -> None:
    compress = codec("zstd").compressor(5)
    inputs = [sample(30_000, seed=s) for s in range(16)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        blobs = list(pool.map(compress, inputs * 4))
    for data, blob in zip(inputs * 4, blobs, strict=True):
        assert decode("zstd", blob) == data


# ---------------------------------------------------------------------------
# errors


@pytest.mark.parametrize(
    ("name", "level", "valid"),
    [
        ("gzip", 0, "1..9"),
        ("gzip", 10, "1..9"),
        ("gzip", -1, "1..9"),
        ("lz4", 0, "1..17"),
        ("lz4", 18, "1..17"),
        ("zstd", 23, "-131072..22"),
        ("zstd", -131073, "-131072..22"),
    ],
)
def test_level_out_of_range(name: str, level: int, valid: str) -> None:
    c = codec(name)
    with pytest.raises(ConfigError) as info:
        c.compressor(level)
    message = str(info.value)
    assert message.startswith("compression_level:")
    assert name in message
    assert valid in message
    assert f"default {c.default_level}" in message
    with pytest.raises(ConfigError):
        c.compress(b"data", level)
    with pytest.raises(ValueError, match="out of range"):  # ConfigError is a ValueError
        c.check_level(level)


@pytest.mark.parametrize("level", [True, 2.0, "3"])
def test_level_must_be_an_int(level: object) -> None:
    with pytest.raises(ConfigError, match="expected an int or None"):
        codec("zstd").compressor(level)  # type: ignore[arg-type]


def test_snappy_has_no_levels() -> None:
    with pytest.raises(ConfigError, match="snappy has no compression levels"):
        codec("snappy").compressor(1)
    assert codec("snappy").check_level(None) is None


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("zstandard", "zstd"),
        ("GZIP", "gzip"),
        ("Snappy", "snappy"),
        ("lz5", "lz4"),
        ("lz4hc", "lz4"),
        ("zlib", "gzip"),
        ("snapy", "snappy"),
        ("zstd ", "zstd"),
        ("uncompressed", "none"),
    ],
)
def test_unknown_codec_suggests_the_nearest(name: str, suggestion: str) -> None:
    with pytest.raises(UnsupportedCodecError) as info:
        get_codec(name)
    message = str(info.value)
    assert message.startswith("compression_type: unknown codec")
    assert repr(name) in message
    assert f"did you mean {suggestion!r}?" in message
    assert "'none', 'gzip', 'snappy', 'lz4', 'zstd'" in message
    assert isinstance(info.value, ConfigError)


def test_unknown_codec_without_a_near_name() -> None:
    with pytest.raises(UnsupportedCodecError, match=r"unknown codec 'brotli' \(valid: "):
        get_codec("brotli")


def test_codec_name_must_be_a_string() -> None:
    with pytest.raises(UnsupportedCodecError, match="expected a codec name or None, got int"):
        get_codec(2)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "module", "extra"),
    [("snappy", "cramjam", "snappy"), ("lz4", "lz4", "lz4"), ("zstd", "zstandard", "zstd")],
)
def test_missing_library_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, name: str, module: str, extra: str
) -> None:
    # A MOCK: the library IS installed here. A None entry in sys.modules makes
    # `import <module>` raise ImportError, as if it were not; the codec cache is
    # replaced so that get_codec tries to import it again.
    monkeypatch.setattr(compression, "_codecs", {})
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(UnsupportedCodecError) as info:
        get_codec(name)
    message = str(info.value)
    # Both forms of the install: from PyPI, and from a clone of the repository.
    assert f'pip install "aiokafka-lite[{extra}]"' in message
    assert f'in a clone of the repository, pip install -e ".[{extra}]"' in message
    assert repr(module) in message
    assert repr(name) in message
    assert isinstance(info.value.__cause__, ImportError)
    assert isinstance(info.value, ConfigError)


def test_gzip_needs_no_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compression, "_codecs", {})
    for module in ("cramjam", "lz4", "zstandard"):  # mock: none of them "installed"
        monkeypatch.setitem(sys.modules, module, None)
    assert codec("gzip").id == 1
    assert get_codec("none") is None


def test_too_old_library_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    # A MOCK of a zstandard without ZstdCompressor (the real one is installed here).
    monkeypatch.setattr(compression, "_codecs", {})
    monkeypatch.setitem(sys.modules, "zstandard", types.ModuleType("zstandard"))
    with pytest.raises(UnsupportedCodecError, match=r"too old or broken") as info:
        get_codec("zstd")
    message = str(info.value)
    assert 'upgrade it: pip install --upgrade "aiokafka-lite[zstd]"' in message
    assert 'in a clone of the repository, pip install --upgrade -e ".[zstd]"' in message


# ---------------------------------------------------------------------------
# whole batches, compressed the way records.py will do it


@dataclass(frozen=True)
class Rec:
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


BASE_TS = 1_700_000_000_000


def records(n: int = 400) -> list[Rec]:
    rnd = random.Random(n)
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else f"key-{i % 37}".encode()
        if i % 11 == 0:
            value: bytes | None = None
        elif i % 13 == 0:
            value = b""
        else:
            value = sample(rnd.randint(10, 600), seed=i)
        headers: list[tuple[str, bytes | None]] = (
            [("trace", f"{i:08x}".encode()), ("ключ", None)] if i % 7 == 0 else []
        )
        out.append(Rec(BASE_TS + i * 3, key, value, headers))
    out.append(Rec(BASE_TS + 5000, b"big", sample(150_000, seed=99), []))  # multi-block
    return out


def build_batch(recs: list[Rec], name: str | None, level: int | None = None) -> bytes:
    """Build a batch, then compress it as records.py is going to (emulated here)."""
    b = RecordBatchBuilder(BASE_TS)
    for r in recs:
        assert b.append(r.timestamp, r.key, r.value, r.headers, 1 << 30) > 0
    buf = b.close()
    c = get_codec(name)
    if c is not None:
        blob = c.compressor(level)(memoryview(buf)[BATCH_HEADER_SIZE:])
        del buf[BATCH_HEADER_SIZE:]
        buf += blob
        (attributes,) = struct.unpack_from(">h", buf, 21)
        struct.pack_into(">h", buf, 21, (attributes & ~ATTR_CODEC_MASK) | c.id)
        struct.pack_into(">i", buf, 8, len(buf) - 12)  # batchLength
        struct.pack_into(">I", buf, 17, crc32c.crc32c(memoryview(buf)[21:]))
    return bytes(buf)


E2E_CASES = [(None, None)] + [
    (name, level)
    for name in CODECS
    for level in dict.fromkeys([None, codec(name).min_level, codec(name).max_level])
]


@pytest.mark.parametrize(("name", "level"), E2E_CASES)
def test_kafka_python_reads_compressed_batches(name: str | None, level: int | None) -> None:
    recs = records()
    plain = build_batch(recs, None)
    buf = build_batch(recs, name, level)
    if name is not None and level is None:
        assert len(buf) < 0.6 * len(plain)
    batch = DefaultRecordBatch(buf)
    assert batch.validate_crc()
    assert batch.compression_type == (0 if name is None else codec(name).id)
    assert batch.records_count == len(recs)
    assert batch.size_in_bytes == len(buf)
    got = list(batch)
    assert len(got) == len(recs)
    for i, (g, want) in enumerate(zip(got, recs, strict=True)):
        assert g.offset == i
        assert g.timestamp == want.timestamp
        assert g.key == want.key
        assert g.value == want.value
        assert g.headers == want.headers
    # the header is untouched apart from attributes, batchLength and CRC
    assert buf[:8] == plain[:8]
    assert buf[12:17] == plain[12:17]
    assert buf[23:BATCH_HEADER_SIZE] == plain[23:BATCH_HEADER_SIZE]
    if name is not None:
        assert decode(name, buf[BATCH_HEADER_SIZE:]) == plain[BATCH_HEADER_SIZE:]


async def _produce(bootstrap: str, topic: str, batches: list[bytes]) -> None:
    """Send one batch per partition in a single Produce request, with our own client."""
    client = NetworkClient(ProducerConfig.from_kwargs(bootstrap_servers=bootstrap), lambda: None)
    try:
        await client.bootstrap(10)
        node = next(iter(client.metadata.cluster.nodes))
        request = ProduceRequest(
            acks=-1,
            timeout_ms=10_000,
            topic_data=[
                TopicProduceData(
                    name=topic,
                    partition_data=[
                        PartitionProduceData(index=p, records=b) for p, b in enumerate(batches)
                    ],
                )
            ],
        )
        response = await client.request(node, request)
        errors = [p.error_code for t in response.responses for p in t.partition_responses]
        assert errors == [0] * len(batches)
    finally:
        await client.close()


BROKER_CASES = [(n, lvl) for n in CODECS for lvl in _levels(n)] + [
    ("snappy-raw", None)  # librdkafka-style unframed snappy, for comparison
]


def test_broker_readers_read_every_codec_and_level(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """confluent-kafka (librdkafka, check.crcs) and aiokafka read each batch via Tansu."""
    recs = records(120)
    batches = []
    for name, level in BROKER_CASES:
        if name == "snappy-raw":
            buf = bytearray(build_batch(recs, None))
            blob = bytes(cramjam.snappy.compress_raw(bytes(buf[BATCH_HEADER_SIZE:])))
            del buf[BATCH_HEADER_SIZE:]
            buf += blob
            struct.pack_into(">h", buf, 21, 2)
            struct.pack_into(">i", buf, 8, len(buf) - 12)
            struct.pack_into(">I", buf, 17, crc32c.crc32c(memoryview(buf)[21:]))
            batches.append(bytes(buf))
        else:
            batches.append(build_batch(recs, name, level))
    topic = topic_factory(len(batches))
    asyncio.run(_produce(bootstrap, topic, batches))
    expected = len(recs) * len(batches)

    def check(read: list[ReadRecord]) -> None:
        assert len(read) == expected
        for r in read:
            want = recs[r.offset]
            assert (r.key, r.value, r.headers, r.timestamp) == (
                want.key,
                want.value,
                want.headers,
                want.timestamp,
            ), f"partition {r.partition} = {BROKER_CASES[r.partition]}"

    check(read_all_confluent(bootstrap, topic, expected))
    check(asyncio.run(read_all_aiokafka(bootstrap, topic, expected)))
