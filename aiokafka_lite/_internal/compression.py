"""Compression codecs for record batches (``compression_type``), with explicit levels.

With compression, a record batch v2 keeps its 61-byte header uncompressed and compresses
everything after it (the records) as ONE blob; the low 3 bits of ``attributes`` name the
codec (:attr:`Codec.id`) and the batch CRC-32C is computed over the compressed bytes. This
module only turns the records section into the codec's stream; ``records.py`` does the rest.

Usage (the hot path: look the codec up and validate the level once, then one call per
batch; inputs may be ``bytes``, ``bytearray`` or a ``memoryview``, which is not copied)::

    codec = get_codec("zstd")            # None for None / "none"
    compress = codec.compressor(level)   # level None = the codec's default; bad -> ConfigError
    blob = compress(memoryview(buf)[61:])

Libraries (each one is imported on first use, so a missing optional library only matters
to the producer that asks for its codec)
------------------------------------------------------------------------------------------

================  ==========================  ==============================================
codec (id)        library                     install
================  ==========================  ==============================================
``gzip`` (1)      ``zlib`` (stdlib)           always available
``snappy`` (2)    ``cramjam``                 ``pip install "aiokafka-lite[snappy]"``
``lz4`` (3)       ``lz4`` (python-lz4)        ``pip install "aiokafka-lite[lz4]"``
``zstd`` (4)      ``zstandard``               ``pip install "aiokafka-lite[zstd]"``
================  ==========================  ==============================================

In a clone of the repository the same extras install with ``pip install -e ".[snappy]"``
(and so on), or all three with ``pip install -e ".[compression]"``.

Why these (measured on this machine with JSON-like records, 16 KiB and 1 MiB batches):

* gzip: ``zlib.compress(data, level, wbits=31)`` writes a gzip container (header + deflate +
  CRC-32 + size trailer), which is what Kafka's gzip codec is (Java reads it with
  ``GZIPInputStream``). zlib's memLevel 8 is Java's ``Deflater`` default, so a level gives
  the same ratio and speed as in Java. cramjam's gzip was slower at level 6 (20 vs 35 MB/s).
* snappy: ``cramjam`` (one maintained Rust-backed wheel per platform). ``python-snappy`` is
  no alternative: since 0.7 it is itself a thin wrapper around cramjam. cramjam's raw
  snappy block encoder (``compress_raw``) is used and the Java framing is written here.
* lz4: ``lz4`` (python-lz4), because its ``lz4.frame.compress`` sets every frame flag in one
  call on a memoryview and produces the exact frame header Java's
  ``Lz4BlockOutputStream`` writes (``04 22 4D 18 | FLG 60 | BD 40 | HC 82``). cramjam's
  one-shot ``lz4.compress`` writes LINKED blocks (FLG ``54``), which Java brokers and
  consumers reject ("Dependent block stream is unsupported", see below); its streaming
  ``Compressor`` can turn linking off but always adds block checksums, refuses a
  memoryview (forcing a copy) and was slower (434 vs 509 MB/s at 1 MiB, fast mode).
* zstd: ``zstandard``, which reuses a compression context per thread: 15-25% faster than
  cramjam on 16 KiB batches (379 vs 303 MB/s at level 3), equal at 1 MiB, same bytes.

(So ``cramjam`` alone could serve snappy, lz4 and zstd with one dependency, but only with
a slower LZ4 path and a copy per batch; the split costs two small extra wheels.)

Framing that Kafka needs (each is checked by ``tests/test_compression.py``; the output was
also read once with the Java libraries Kafka uses: snappy-java's ``SnappyInputStream``,
lz4-java under the checks of Kafka's ``Lz4BlockInputStream``, zstd-jni, ``GZIPInputStream``)
------------------------------------------------------------------------------------------

* lz4: the standard LZ4 *frame* format (KIP-57, Kafka >= 0.10; magic 2 batches always use
  the correct frame-descriptor checksum, the "broken" one was magic 0 only) with
  INDEPENDENT blocks: Java's ``Lz4BlockInputStream`` decompresses every block on its own
  and its ``FLG.validate()`` throws "Dependent block stream is unsupported" for a linked
  stream. We write exactly Java's flags: version 1, independent blocks, no block
  checksum, no content checksum, no content size, 64 KiB maximum block size. (Old Java
  readers ignore a content checksum and new ones verify it; leaving it out, as Java
  does, is the form every reader takes.)
* snappy: the xerial ``SnappyOutputStream`` framing that the Java producer writes: the
  16-byte header ``82 'SNAPPY' 00``, version 1, compatible version 1 (two big-endian
  int32), then for every 32 KiB of input (xerial's and Java's default block size) a
  big-endian int32 length and one raw snappy block. Java's ``SnappyInputStream`` reads
  this (and falls back to one raw block when the header is absent, which is how it reads
  librdkafka's unframed output); librdkafka, kafka-python and aiokafka detect the header
  and read both forms too. Xerial framing is chosen because it is what the reference
  (Java) client produces, so no reader that works with Java producers can fail on it.
* zstd: one standard zstd frame with the content size in its header (lets librdkafka size
  its output buffer at once) and no checksum (the batch CRC covers the bytes), the same as
  ``ZSTD_compress``. Zstd needs Produce v7+ on the broker (Kafka 2.1+).

Levels: explicit and documented defaults (Java's, KIP-390)
----------------------------------------------------------

A codec's level changes latency a lot (at 1 MiB: gzip 6 runs at ~35 MB/s, gzip 9 at ~9 MB/s;
LZ4 fast mode ~500 MB/s, LZ4 HC 9 ~30 MB/s), so defaults are fixed here, never taken from
a library's own default, and a level outside the range raises :class:`ConfigError`.

======  =============  ============  ======================================================
codec   default        valid range   notes
======  =============  ============  ======================================================
gzip    6              1..9          Java: ``Deflater.DEFAULT_COMPRESSION`` (-1), i.e. zlib 6
snappy  (none)         (none)        snappy has no levels; a level raises ConfigError
lz4     9              1..17         Java's range; level 9, the DEFAULT, is LZ4 *fast* mode
zstd    3              -131072..22   zstd's own default; negative levels are faster
======  =============  ============  ======================================================

LZ4 levels follow Java exactly: Java's ``Lz4BlockOutputStream`` uses lz4-java's *fast*
compressor when the level is the default 9 and the HC compressor at the given level for
any other value. So here level 9 is LZ4 fast mode (as Java's and librdkafka's defaults,
~9-17x faster than HC 9) and every other level is LZ4 HC at that level; liblz4 caps HC at
12 (13..17 act as 12) and its frame API runs levels 1 and 2 in fast mode as well.

Migrating from aiokafka: its defaults are gzip 9 and LZ4 HC 9 (much slower than the above);
pass ``compression_level`` explicitly to keep aiokafka's ratio.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from types import ModuleType
from typing import Final

from ..errors import ConfigError, UnsupportedCodecError

__all__ = [
    "ATTR_CODEC_MASK",
    "CODEC_NAMES",
    "BytesLike",
    "Codec",
    "Compressor",
    "get_codec",
]

BytesLike = bytes | bytearray | memoryview
"""What a compressor accepts. A memoryview (e.g. of the batch buffer) is not copied."""

Compressor = Callable[[BytesLike], bytes]
"""A codec bound to one level: takes the uncompressed records section, returns the blob."""

ATTR_CODEC_MASK: Final = 0x07
"""The bits of a batch's ``attributes`` that hold :attr:`Codec.id`."""

CODEC_NAMES: Final = ("none", "gzip", "snappy", "lz4", "zstd")
"""Every valid ``compression_type`` (``None`` means ``"none"`` too)."""

# Names people write for a codec, mapped to ours (only used for "did you mean" hints).
_HINTS: Final = {
    "zstandard": "zstd",
    "zst": "zstd",
    "zlib": "gzip",
    "deflate": "gzip",
    "gz": "gzip",
    "lz4hc": "lz4",
    "lz4_frame": "lz4",
    "snappy_java": "snappy",
    "xerial": "snappy",
    "null": "none",
    "off": "none",
    "uncompressed": "none",
}

# Both forms: from PyPI, and from a clone of the repository (an editable install).
_INSTALL = (
    'pip install{flags} "aiokafka-lite[{extra}]" '
    '(or, in a clone of the repository, pip install{flags} -e ".[{extra}]")'
)


class Codec:
    """One compression codec: its wire id, its levels, and the compressor factory.

    Obtain instances with :func:`get_codec` (which has made sure the library is there).
    ``default_level``/``min_level``/``max_level`` are ``None`` for a codec without levels
    (snappy). Instances are immutable and safe to share between threads, and so are the
    compressors they return.
    """

    __slots__ = (
        "_default",
        "_make",
        "default_level",
        "extra",
        "id",
        "library",
        "max_level",
        "min_level",
        "name",
    )

    name: str
    id: int
    default_level: int | None
    min_level: int | None
    max_level: int | None
    library: str
    extra: str | None

    def __init__(
        self,
        name: str,
        id: int,
        *,
        default_level: int | None,
        min_level: int | None,
        max_level: int | None,
        library: str,
        extra: str | None,
        make: Callable[[int | None], Compressor],
    ) -> None:
        self.name = name
        self.id = id  # the attributes' low 3 bits
        self.default_level = default_level
        self.min_level = min_level
        self.max_level = max_level
        self.library = library  # what compresses, for messages and docs
        self.extra = extra  # the pip extra that installs the library (None: stdlib)
        self._make = make
        self._default = make(default_level)

    def __repr__(self) -> str:
        if self.default_level is None:
            return f"<Codec {self.name} id={self.id} (no levels)>"
        return (
            f"<Codec {self.name} id={self.id} default_level={self.default_level} "
            f"levels={self.min_level}..{self.max_level}>"
        )

    @property
    def has_levels(self) -> bool:
        return self.default_level is not None

    def check_level(self, level: int | None) -> int | None:
        """Return the level to use for ``level`` (``None``: the default); else ConfigError.

        The message names the setting (``compression_level``), the codec and its range.
        """
        if level is None:
            return self.default_level
        if isinstance(level, bool) or not isinstance(level, int):
            raise ConfigError(
                f"compression_level: expected an int or None, got {type(level).__name__}"
            )
        if self.min_level is None or self.max_level is None:
            raise ConfigError(
                f"compression_level: {self.name} has no compression levels (got {level}); "
                "leave it unset"
            )
        if not self.min_level <= level <= self.max_level:
            raise ConfigError(
                f"compression_level: {level} is out of range for {self.name} "
                f"(valid: {self.min_level}..{self.max_level}, default {self.default_level})"
            )
        return level

    def compressor(self, level: int | None = None) -> Compressor:
        """A compress function bound to ``level`` (validated now, once)."""
        checked = self.check_level(level)
        if checked == self.default_level:
            return self._default
        return self._make(checked)

    def compress(self, data: BytesLike, level: int | None = None) -> bytes:
        """Compress one records section. Prefer :meth:`compressor` on a hot path."""
        if level is None:
            return self._default(data)
        return self.compressor(level)(data)


# -- the codecs ----------------------------------------------------------------------------


def _make_gzip(level: int | None) -> Compressor:
    # wbits=31: a gzip container (16 + 15-bit window), what Kafka's gzip codec is.
    return functools.partial(zlib.compress, level=6 if level is None else level, wbits=31)


_XERIAL_HEADER: Final = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)  # magic, version, compat
_XERIAL_BLOCK: Final = 32 * 1024  # xerial's SnappyOutputStream default, used by Java
_INT32 = struct.Struct(">i")


def _make_snappy(lib: ModuleType) -> Callable[[int | None], Compressor]:
    compress_raw = lib.snappy.compress_raw

    def make(level: int | None) -> Compressor:
        pack = _INT32.pack
        block = _XERIAL_BLOCK

        def compress(data: BytesLike) -> bytes:
            mv = memoryview(data)
            if mv.itemsize != 1 or mv.ndim != 1:  # len() and slices must count bytes
                mv = mv.cast("B")
            n = len(mv)
            if n <= block:  # the common case (batch_size defaults to 16 KiB): one block
                raw = compress_raw(mv)
                return b"".join((_XERIAL_HEADER, pack(len(raw)), raw))
            parts: list[bytes] = [_XERIAL_HEADER]
            for start in range(0, n, block):
                raw = compress_raw(mv[start : start + block])
                parts.append(pack(len(raw)))
                parts.append(raw)
            return b"".join(parts)  # cramjam returns Buffer objects: join takes any buffer

        return compress

    return make


_LZ4_JAVA_FAST_LEVEL: Final = 9  # Java's default LZ4 level, which means "fast mode"


def _make_lz4(lib: ModuleType) -> Callable[[int | None], Compressor]:
    frame = importlib.import_module(lib.__name__ + ".frame")
    compress = frame.compress
    block_size = frame.BLOCKSIZE_MAX64KB

    def make(level: int | None) -> Compressor:
        # Java: level 9 (the default) -> lz4-java's fast compressor; other levels -> HC.
        # In the frame API, compression_level 0 is fast mode and 3..12 are HC levels.
        return functools.partial(
            compress,
            compression_level=0 if level == _LZ4_JAVA_FAST_LEVEL else level,
            block_size=block_size,
            block_linked=False,  # Java cannot read linked blocks
            block_checksum=False,
            content_checksum=False,
            store_size=False,
            return_bytearray=False,
        )

    return make


def _make_zstd(lib: ModuleType) -> Callable[[int | None], Compressor]:
    zstd_compressor = lib.ZstdCompressor

    def make(level: int | None) -> Compressor:
        # A ZstdCompressor keeps its context between calls (faster) but must not be used by
        # two threads at once: keep one per thread.
        local = threading.local()

        def new() -> Callable[[BytesLike], bytes]:
            c = zstd_compressor(level=level, write_content_size=True, write_checksum=False)
            fn: Callable[[BytesLike], bytes] = c.compress
            local.compress = fn
            return fn

        def compress(data: BytesLike) -> bytes:
            try:
                fn: Callable[[BytesLike], bytes] = local.compress
            except AttributeError:
                fn = new()
            return fn(data)

        return compress

    return make


@dataclass(frozen=True, slots=True)
class _Spec:
    """A codec: its name and wire id, its levels (default, min, max), the module that
    implements it and the pip extra that installs it (None, None: the standard library's)."""

    name: str
    id: int
    default: int | None
    min: int | None
    max: int | None
    _: KW_ONLY
    module: str | None
    library: str
    extra: str | None
    factory: Callable[[ModuleType], Callable[[int | None], Compressor]] | None = None


_SPECS: Final = {
    "gzip": _Spec("gzip", 1, 6, 1, 9, module=None, library="zlib (stdlib)", extra=None),
    "snappy": _Spec(
        "snappy",
        2,
        None,
        None,
        None,
        module="cramjam",
        library="cramjam",
        extra="snappy",
        factory=_make_snappy,
    ),
    "lz4": _Spec(
        "lz4",
        3,
        _LZ4_JAVA_FAST_LEVEL,
        1,
        17,
        module="lz4",
        library="lz4 (python-lz4)",
        extra="lz4",
        factory=_make_lz4,
    ),
    "zstd": _Spec(
        "zstd",
        4,
        3,
        -131072,
        22,
        module="zstandard",
        library="zstandard",
        extra="zstd",
        factory=_make_zstd,
    ),
}

_codecs: dict[str, Codec] = {}


def _load(spec: _Spec) -> Codec:
    make: Callable[[int | None], Compressor]
    if spec.module is None or spec.factory is None:
        make = _make_gzip
    else:
        install = _INSTALL.format(extra=spec.extra, flags="")
        upgrade = _INSTALL.format(extra=spec.extra, flags=" --upgrade")
        try:
            lib = importlib.import_module(spec.module)
        except ImportError as exc:
            raise UnsupportedCodecError(
                f"compression_type {spec.name!r} needs the {spec.module!r} package, which is "
                f"not installed: {install}"
            ) from exc
        try:
            make = spec.factory(lib)
        except (ImportError, AttributeError) as exc:
            raise UnsupportedCodecError(
                f"compression_type {spec.name!r}: the installed {spec.module!r} package is "
                f"too old or broken ({exc}); upgrade it: {upgrade}"
            ) from exc
    return Codec(
        spec.name,
        spec.id,
        default_level=spec.default,
        min_level=spec.min,
        max_level=spec.max,
        library=spec.library,
        extra=spec.extra,
        make=make,
    )


def get_codec(name: str | None) -> Codec | None:
    """The codec called ``name``; ``None`` for ``None`` or ``"none"`` (no compression).

    Raises :class:`~aiokafka_lite.errors.UnsupportedCodecError` (a ConfigError) for an
    unknown name, suggesting the nearest valid one, or when the codec's library is not
    installed, naming the pip extra that installs it. Names are Kafka's, lower case.
    """
    if name is None or name == "none":
        return None
    if not isinstance(name, str):
        raise UnsupportedCodecError(
            f"compression_type: expected a codec name or None, got {type(name).__name__}"
        )
    codec = _codecs.get(name)
    if codec is not None:
        return codec
    spec = _SPECS.get(name)
    if spec is None:
        raise UnsupportedCodecError(f"compression_type: unknown codec {name!r}{_suggest(name)}")
    codec = _codecs[name] = _load(spec)
    return codec


def _suggest(name: str) -> str:
    valid = ", ".join(repr(n) for n in CODEC_NAMES)
    key = name.strip().lower().replace("-", "_")
    hint = key if key in CODEC_NAMES else _HINTS.get(key)
    if hint is None:
        close = difflib.get_close_matches(key, CODEC_NAMES, n=1, cutoff=0.5)
        hint = close[0] if close else None
    if hint is None:
        return f" (valid: {valid})"
    return f"; did you mean {hint!r}? (valid: {valid})"
