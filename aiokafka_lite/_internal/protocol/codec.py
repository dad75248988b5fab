"""One generic encoder/decoder for Kafka protocol messages declared as data.

A message is a :class:`msgspec.Struct` whose fields carry a :class:`F` spec in
``Annotated[...]`` metadata, transcribed from Apache Kafka's JSON message
schemas: the wire type (the schema's own type string, e.g. ``"int32"``,
``"[]int32"``, ``"string"``, ``"[]PartitionProduceData"``), the versions the
field exists in, the versions it may be null in, and its tag if it is a tagged
field. From those declarations we compile, once per (message, version), small
encode/decode steps per field, and one encode and one decode function per struct
that runs them in order (a run of adjacent fixed-size numbers packed or unpacked
at once); nothing about a message's layout is written by hand anywhere else.

Decoding is defensive because the bytes come from the network: every length is
checked against what is left in the frame before it is used, so a truncated or
garbled frame raises :class:`DecodeError` instead of reading garbage or
allocating gigabytes.
"""

from __future__ import annotations

import keyword
import struct
import typing
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, get_args

import msgspec

__all__ = [
    "DecodeError",
    "F",
    "Message",
    "Request",
    "Response",
    "decode",
    "encode",
    "read_uvarint",
    "write_uvarint",
]

_MAX_VERSION = 0x7FFF


class DecodeError(ValueError):
    """The bytes do not form a valid message of the expected type and version."""


def _parse_range(spec: str | None) -> tuple[int, int]:
    """Parse a schema version range: "3+", "8-10", "5", or "none"/None."""
    if spec is None or spec == "none":
        return (1, 0)  # empty range
    if spec.endswith("+"):
        return (int(spec[:-1]), _MAX_VERSION)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


class F:
    """A field's wire spec, transcribed from the Kafka JSON schema."""

    __slots__ = ("nullable", "tag", "type", "versions")

    def __init__(
        self,
        type: str,
        versions: str = "0+",
        *,
        nullable: str | None = None,
        tag: int | None = None,
    ) -> None:
        self.type = type
        self.versions = _parse_range(versions)
        self.nullable = _parse_range(nullable)
        self.tag = tag

    def present_in(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def nullable_in(self, version: int) -> bool:
        return self.nullable[0] <= version <= self.nullable[1]


class Message(msgspec.Struct):
    """Base of every protocol struct (messages and their nested structs)."""


class Request(Message):
    API_KEY: ClassVar[int]
    MIN_VERSION: ClassVar[int]
    MAX_VERSION: ClassVar[int]
    FLEXIBLE_SINCE: ClassVar[int]  # first version using compact types + tagged fields
    RESPONSE: ClassVar[type[Response]]


class Response(Message):
    API_KEY: ClassVar[int]
    FLEXIBLE_SINCE: ClassVar[int]


# ---------------------------------------------------------------------------
# primitives

Encoder = Callable[[bytearray, Any], None]
Decoder = Callable[[bytes, int], tuple[Any, int]]

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")


def write_uvarint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")


def _fixed(st: struct.Struct) -> tuple[Encoder, Decoder]:
    pack, unpack_from, size = st.pack, st.unpack_from, st.size

    def enc(out: bytearray, v: Any) -> None:
        out += pack(v)

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise DecodeError("truncated fixed-size field")
        return unpack_from(buf, pos)[0], pos + size

    enc.fixed = st  # type: ignore[attr-defined]  # (a plain number: _compile merges runs)
    return enc, dec


def _bool() -> tuple[Encoder, Decoder]:
    def enc(out: bytearray, v: Any) -> None:
        out.append(1 if v else 0)

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        if pos >= len(buf):
            raise DecodeError("truncated bool")
        return buf[pos] != 0, pos + 1

    return enc, dec


def _uuid() -> tuple[Encoder, Decoder]:
    def enc(out: bytearray, v: Any) -> None:
        if len(v) != 16:
            raise ValueError("uuid must be 16 bytes")
        out += v

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        if pos + 16 > len(buf):
            raise DecodeError("truncated uuid")
        return bytes(buf[pos : pos + 16]), pos + 16

    return enc, dec


def _length_prefix(compact: bool, wide: bool) -> tuple[Encoder, Decoder]:
    """Length of a string (int16), bytes/array (int32), or compact (uvarint + 1).

    -1 means null; the decoder returns it as -1 for the caller to interpret.
    """
    if compact:

        def enc(out: bytearray, n: int) -> None:
            if 0 <= n < 0x7F:
                out.append(n + 1)
            else:
                write_uvarint(out, n + 1)

        def dec(buf: bytes, pos: int) -> tuple[int, int]:
            if pos < len(buf) and buf[pos] < 0x80:  # (a length under 127: one byte)
                return buf[pos] - 1, pos + 1
            n, pos = read_uvarint(buf, pos)
            return n - 1, pos

        return enc, dec
    return _fixed(_INT32 if wide else _INT16)


def _blob(kind: str, compact: bool, nullable: bool) -> tuple[Encoder, Decoder]:
    """string (UTF-8), bytes, or records: a length prefix then the data."""
    is_str = kind == "string"
    enc_len, dec_len = _length_prefix(compact, wide=not is_str)

    def enc(out: bytearray, v: Any) -> None:
        if v is None:
            if not nullable:
                raise ValueError(f"{kind} field is not nullable in this version")
            enc_len(out, -1)
            return
        data = v.encode() if is_str else v
        enc_len(out, len(data))
        out += data

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        n, pos = dec_len(buf, pos)
        if n < 0:
            if n == -1 and nullable:
                return None, pos
            raise DecodeError(f"invalid {kind} length {n}")
        end = pos + n
        if end > len(buf):
            raise DecodeError(f"{kind} of length {n} runs past the end of the frame")
        data = buf[pos:end]
        try:
            return (data.decode() if is_str else bytes(data)), end
        except UnicodeDecodeError as e:
            raise DecodeError(f"string is not valid UTF-8: {e}") from None

    return enc, dec


def _array(item: tuple[Encoder, Decoder], compact: bool, nullable: bool) -> tuple[Encoder, Decoder]:
    enc_item, dec_item = item
    enc_len, dec_len = _length_prefix(compact, wide=True)

    def enc(out: bytearray, v: Any) -> None:
        if v is None:
            if not nullable:
                raise ValueError("array field is not nullable in this version")
            enc_len(out, -1)
            return
        enc_len(out, len(v))
        for x in v:
            enc_item(out, x)

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        n, pos = dec_len(buf, pos)
        if n < 0:
            if n == -1 and nullable:
                return None, pos
            raise DecodeError(f"invalid array length {n}")
        # Every element takes at least one byte: a count larger than what is
        # left is garbage, and must not make us loop or allocate on its say-so.
        if n > len(buf) - pos:
            raise DecodeError(f"array of {n} elements cannot fit in the frame")
        items = []
        for _ in range(n):
            x, pos = dec_item(buf, pos)
            items.append(x)
        return items, pos

    return enc, dec


_FIXED = {
    "int8": _INT8,
    "int16": _INT16,
    "uint16": _UINT16,
    "int32": _INT32,
    "uint32": _UINT32,
    "int64": _INT64,
    "float64": _FLOAT64,
}


def _scalar(kind: str, compact: bool, nullable: bool) -> tuple[Encoder, Decoder]:
    if kind in _FIXED:
        return _fixed(_FIXED[kind])
    if kind == "bool":
        return _bool()
    if kind == "uuid":
        return _uuid()
    if kind in ("string", "bytes", "records"):
        return _blob(kind, compact, nullable)
    raise TypeError(f"unknown wire type {kind!r}")


# ---------------------------------------------------------------------------
# structs


def _struct_class(hint: Any) -> type[Message] | None:
    """The Message class inside a hint such as ``list[X]`` or ``X | None``."""
    if isinstance(hint, type) and issubclass(hint, Message):
        return hint
    for arg in get_args(hint):
        found = _struct_class(arg)
        if found is not None:
            return found
    return None


def _field_codec(spec: F, hint: Any, version: int, flexible: bool) -> tuple[Encoder, Decoder]:
    nullable = spec.nullable_in(version)
    kind = spec.type
    if kind.startswith("[]"):
        elem = kind[2:]
        sub = _struct_class(hint)
        item = _codecs(sub, version, flexible) if sub else _scalar(elem, flexible, False)
        return _array(item, flexible, nullable)
    sub = _struct_class(hint) if kind not in _FIXED else None
    if sub is not None:
        return _codecs(sub, version, flexible)
    return _scalar(kind, flexible, nullable)


class _Plan(typing.NamedTuple):
    names: tuple[str, ...]
    # per field: encoder or None when the field is absent or tagged in this version
    encoders: tuple[Encoder | None, ...]
    decoders: tuple[Decoder | None, ...]
    defaults: tuple[Any, ...]
    tagged: dict[int, tuple[int, Encoder, Decoder]]  # tag -> (field index, codec)


def _default_of(cls: type[Message], name: str) -> Any:
    fields = cls.__struct_fields__
    defaults = cls.__struct_defaults__
    idx = fields.index(name) - (len(fields) - len(defaults))
    if idx < 0:
        raise TypeError(f"{cls.__name__}.{name} needs a default value")
    return defaults[idx]


def _plan(cls: type[Message], version: int, flexible: bool) -> _Plan:
    hints = typing.get_type_hints(cls, include_extras=True)
    encoders: list[Encoder | None] = []
    decoders: list[Decoder | None] = []
    defaults: list[Any] = []
    tagged: dict[int, tuple[int, Encoder, Decoder]] = {}
    for i, name in enumerate(cls.__struct_fields__):
        hint = hints[name]
        specs = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, F)]
        if len(specs) != 1:
            raise TypeError(f"{cls.__name__}.{name} needs exactly one F(...) spec")
        spec = specs[0]
        defaults.append(_default_of(cls, name))
        base = get_args(hint)[0]
        if not spec.present_in(version):
            encoders.append(None)
            decoders.append(None)
            continue
        enc, dec = _field_codec(spec, base, version, flexible)
        if spec.tag is not None:
            if flexible:
                tagged[spec.tag] = (i, enc, dec)
            encoders.append(None)
            decoders.append(None)
        else:
            encoders.append(enc)
            decoders.append(dec)
    return _Plan(
        tuple(cls.__struct_fields__), tuple(encoders), tuple(decoders), tuple(defaults), tagged
    )


def _fresh(v: Any) -> Any:
    # msgspec stores a mutable default such as [] as a factory: call it so that
    # decoded instances never share one list.
    factory = getattr(v, "factory", None)
    return factory() if factory is not None else v


_CACHE: dict[tuple[type[Message], int, bool], tuple[Encoder, Decoder]] = {}


def _codecs(cls: type[Message], version: int, flexible: bool) -> tuple[Encoder, Decoder]:
    key = (cls, version, flexible)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    codecs = _compile(cls, _plan(cls, version, flexible), flexible)
    _CACHE[key] = codecs
    return codecs


def _compile(cls: type[Message], plan: _Plan, flexible: bool) -> tuple[Encoder, Decoder]:
    """One encode and one decode function for the plan, written out as Python source: a
    run of adjacent fixed-size numbers is packed or unpacked with one struct call, every
    other field goes through its step; the same steps and checks as calling them in a
    loop, with none of the loop's per-field overhead. Only field names (identifiers, as
    msgspec requires) and numbers enter the source."""
    env: dict[str, Any] = {
        "DecodeError": DecodeError,
        "cls": cls,
        "len": len,
        "_encode_tagged": _encode_tagged,
        "_decode_tagged": _decode_tagged,
        "tag_steps": sorted(
            (tag, plan.names[i], _fresh(plan.defaults[i]), enc)
            for tag, (i, enc, _) in plan.tagged.items()
        ),
        "tag_decoders": {tag: (i, dec) for tag, (i, _, dec) in plan.tagged.items()},
    }
    for name in plan.names:
        if not name.isidentifier() or keyword.iskeyword(name):  # (none is)
            raise TypeError(f"{cls.__name__}: field name {name!r} is not an attribute name")
    enc_src = ["def encode_struct(out, msg):"]
    dec_src = ["def decode_struct(buf, pos):"]
    n = len(plan.names)
    i = 0
    while i < n:
        name = plan.names[i]
        enc, dec = plan.encoders[i], plan.decoders[i]
        if enc is None or dec is None:  # absent or tagged in this version
            default = plan.defaults[i]
            if getattr(default, "factory", None) is None:
                env[f"c{i}"] = default
                dec_src.append(f"    v{i} = c{i}")
            else:
                env[f"f{i}"] = default.factory
                dec_src.append(f"    v{i} = f{i}()")
            i += 1
            continue
        run: list[int] = []
        while i + len(run) < n and getattr(plan.encoders[i + len(run)], "fixed", None):
            run.append(i + len(run))
        if run:
            fmt = ">" + "".join(plan.encoders[j].fixed.format.lstrip(">") for j in run)  # type: ignore[union-attr]
            st = struct.Struct(fmt)
            env[f"P{i}"], env[f"U{i}"] = st.pack, st.unpack_from
            args = ", ".join(f"msg.{plan.names[j]}" for j in run)
            enc_src.append(f"    out += P{i}({args})")
            targets = "".join(f"v{j}, " for j in run)
            dec_src.append(f"    if pos + {st.size} > len(buf):")
            dec_src.append("        raise DecodeError('truncated fixed-size field')")
            dec_src.append(f"    {targets}= U{i}(buf, pos)")
            dec_src.append(f"    pos += {st.size}")
            i += len(run)
            continue
        env[f"e{i}"], env[f"d{i}"] = enc, dec
        enc_src.append(f"    e{i}(out, msg.{name})")
        dec_src.append(f"    v{i}, pos = d{i}(buf, pos)")
        i += 1
    values = ", ".join(f"v{j}" for j in range(n))
    if flexible:
        # Most structs have no tagged field set: one zero byte, written and read inline.
        if env["tag_steps"]:
            enc_src.append("    _encode_tagged(out, msg, tag_steps)")
        else:
            enc_src.append("    out.append(0)")
        dec_src.append("    if pos < len(buf) and buf[pos] == 0:")
        dec_src.append(f"        return cls({values}), pos + 1")
        dec_src.append(f"    values = [{values}]")
        dec_src.append("    pos = _decode_tagged(buf, pos, values, tag_decoders)")
        dec_src.append("    return cls(*values), pos")
    else:
        enc_src.append("    pass")
        dec_src.append(f"    return cls({values}), pos")
    exec("\n".join(enc_src) + "\n" + "\n".join(dec_src), env)
    return env["encode_struct"], env["decode_struct"]


def _encode_tagged(
    out: bytearray, msg: Any, tag_steps: list[tuple[int, str, Any, Encoder]]
) -> None:
    present = []
    for tag, name, default, enc in tag_steps:
        v = getattr(msg, name)
        if v != default:
            body = bytearray()
            enc(body, v)
            present.append((tag, body))
    write_uvarint(out, len(present))
    for tag, body in present:
        write_uvarint(out, tag)
        write_uvarint(out, len(body))
        out += body


def _decode_tagged(
    buf: bytes, pos: int, values: list[Any], tag_decoders: dict[int, tuple[int, Decoder]]
) -> int:
    count, pos = read_uvarint(buf, pos)
    if count > len(buf) - pos:
        raise DecodeError(f"{count} tagged fields cannot fit in the frame")
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise DecodeError(f"tagged field {tag} of {size} bytes runs past the frame")
        known = tag_decoders.get(tag)
        if known is not None:
            # Decode within the field's own bytes so a lying size cannot
            # make the field's decoder read into what follows it.
            idx, dec = known
            values[idx], used = dec(buf[:end], pos)
            if used != end:
                raise DecodeError(f"tagged field {tag} is {size} bytes but decodes differently")
        pos = end  # unknown tags are skipped, as the protocol intends
    return pos


# ---------------------------------------------------------------------------
# public entry points

M = TypeVar("M", bound=Message)


def encode(msg: Request | Response, version: int, out: bytearray | None = None) -> bytearray:
    """Encode a request or response body (no header) at ``version``, appended to ``out``
    (a frame's header, so that a Produce request's batches are copied once) or to a new
    buffer; returns the buffer."""
    flexible = version >= type(msg).FLEXIBLE_SINCE
    enc, _ = _codecs(type(msg), version, flexible)
    if out is None:
        out = bytearray()
    enc(out, msg)
    return out


def decode(cls: type[M], version: int, buf: bytes, pos: int = 0) -> tuple[M, int]:
    """Decode a ``cls`` body at ``version`` from ``buf[pos:]``; return it and the end."""
    flexible = version >= cls.FLEXIBLE_SINCE  # type: ignore[attr-defined]
    _, dec = _codecs(cls, version, flexible)
    try:
        msg, end = dec(buf, pos)
    except DecodeError:
        raise
    except (struct.error, IndexError, ValueError, TypeError) as e:
        raise DecodeError(f"cannot decode {cls.__name__} v{version}: {e}") from None
    return typing.cast(M, msg), end
