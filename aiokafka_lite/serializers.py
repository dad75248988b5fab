"""Ready-made key/value serializers for ``key_serializer=`` / ``value_serializer=``.

A serializer is any callable taking the key or value given to ``send()`` and returning
``bytes`` (or ``None``)::

    from aiokafka_lite.serializers import json_serializer, str_serializer

    producer = AIOKafkaProducer(key_serializer=str_serializer, value_serializer=json_serializer)
    await producer.send("orders", {"id": 1, "at": datetime.now(UTC)}, key="customer-7")

Every serializer here passes ``None`` through as ``None``, so ``send(topic, None, key=k)``
still writes a tombstone (a null value) and a ``None`` key stays a null key. (So
:data:`json_serializer` never writes the JSON text ``null`` for ``None``.)

=========================  ===================================================================
serializer                 input -> bytes
=========================  ===================================================================
:func:`bytes_serializer`   ``bytes`` as is (no copy); ``bytearray``/``memoryview`` copied to
                           ``bytes``; anything else is a ``TypeError`` naming the type
:func:`str_serializer`     ``str`` as UTF-8 (strict: a lone surrogate is an error); others are
                           a ``TypeError`` (``bytes`` too: use :func:`bytes_serializer`)
:data:`json_serializer`    JSON via ``msgspec.json`` (compact, UTF-8): dicts, lists, tuples,
                           str/int/float/bool, ``msgspec.Struct``, dataclasses, attrs
                           classes, ``datetime``/``date``/``time`` (RFC 3339), ``UUID``,
                           ``Decimal`` (as a string), enums, ...
:data:`msgpack_serializer` MessagePack via ``msgspec.msgpack``; the same types
=========================  ===================================================================

For other types (or other formats of the built-in ones) make your own encoder with
:class:`JsonSerializer` / :class:`MsgpackSerializer`, e.g. ``JsonSerializer(enc_hook=f)``
where ``f(obj)`` returns something msgspec can encode and raises ``NotImplementedError``
otherwise. Each instance creates its msgspec ``Encoder`` once, not per call.

Errors raised by a serializer (``TypeError``, ``msgspec.EncodeError``, ...) reach the
caller of ``send()`` wrapped in :class:`~aiokafka_lite.errors.SerializationError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeAlias, TypeVar

import msgspec

__all__ = [
    "BY_NAME",
    "JsonSerializer",
    "MsgpackSerializer",
    "Serializer",
    "bytes_serializer",
    "json_serializer",
    "msgpack_serializer",
    "resolve",
    "str_serializer",
]

T = TypeVar("T")

Serializer: TypeAlias = Callable[[T], bytes | None]
"""The type of a serializer for values of type ``T``, e.g. ``Serializer[str]``."""

EncHook: TypeAlias = Callable[[Any], Any]
"""msgspec's ``enc_hook``: turn an unsupported object into a supported one, or raise
``NotImplementedError``."""


def bytes_serializer(value: bytes | bytearray | memoryview | None) -> bytes | None:
    """``bytes`` unchanged; ``bytearray``/``memoryview`` as ``bytes``; ``None`` as ``None``."""
    if type(value) is bytes or value is None:
        return value
    if isinstance(value, bytes):  # a bytes subclass: plain bytes, as the wire holds
        return bytes(value)
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, memoryview):
        return value.tobytes()  # also right for non-byte formats and non-contiguous views
    raise TypeError(
        f"bytes_serializer expects bytes, bytearray or memoryview, got {type(value).__name__}"
    )


def str_serializer(value: str | None) -> bytes | None:
    """``str`` encoded as UTF-8; ``None`` as ``None``."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()  # UTF-8, strict
    raise TypeError(f"str_serializer expects str, got {type(value).__name__}")


class _EncoderSerializer:
    """Calls a msgspec encoder; ``None`` passes through as ``None``."""

    __slots__ = ("_encode", "encoder")

    encoder: msgspec.json.Encoder | msgspec.msgpack.Encoder
    _encode: Callable[[Any], bytes]

    def __call__(self, value: Any) -> bytes | None:
        if value is None:
            return None
        return self._encode(value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_describe(self.encoder)})"


class JsonSerializer(_EncoderSerializer):
    """JSON (``msgspec.json``) serializer; ``None`` passes through as ``None``.

    Arguments are ``msgspec.json.Encoder``'s: ``enc_hook`` for unsupported types,
    ``decimal_format`` (``"string"``/``"number"``), ``uuid_format`` (``"canonical"``/
    ``"hex"``) and ``order`` (``None``, ``"deterministic"`` or ``"sorted"`` for dict keys and
    struct fields).
    """

    __slots__ = ()

    def __init__(
        self,
        enc_hook: EncHook | None = None,
        *,
        decimal_format: Literal["string", "number"] = "string",
        uuid_format: Literal["canonical", "hex"] = "canonical",
        order: Literal[None, "deterministic", "sorted"] = None,
    ) -> None:
        self.encoder = msgspec.json.Encoder(
            enc_hook=enc_hook,
            decimal_format=decimal_format,
            uuid_format=uuid_format,
            order=order,
        )
        self._encode = self.encoder.encode


class MsgpackSerializer(_EncoderSerializer):
    """MessagePack (``msgspec.msgpack``) serializer; ``None`` passes through as ``None``.

    Arguments are ``msgspec.msgpack.Encoder``'s: ``enc_hook``, ``decimal_format``,
    ``uuid_format`` (``"canonical"``/``"hex"``/``"bytes"``) and ``order``.
    """

    __slots__ = ()

    def __init__(
        self,
        enc_hook: EncHook | None = None,
        *,
        decimal_format: Literal["string", "number"] = "string",
        uuid_format: Literal["canonical", "hex", "bytes"] = "canonical",
        order: Literal[None, "deterministic", "sorted"] = None,
    ) -> None:
        self.encoder = msgspec.msgpack.Encoder(
            enc_hook=enc_hook,
            decimal_format=decimal_format,
            uuid_format=uuid_format,
            order=order,
        )
        self._encode = self.encoder.encode


def _describe(encoder: msgspec.json.Encoder | msgspec.msgpack.Encoder) -> str:
    parts = []
    if encoder.enc_hook is not None:
        parts.append(f"enc_hook={encoder.enc_hook!r}")
    if encoder.decimal_format != "string":
        parts.append(f"decimal_format={encoder.decimal_format!r}")
    if encoder.uuid_format != "canonical":
        parts.append(f"uuid_format={encoder.uuid_format!r}")
    if encoder.order is not None:
        parts.append(f"order={encoder.order!r}")
    return ", ".join(parts)


json_serializer: JsonSerializer = JsonSerializer()
"""JSON via ``msgspec.json`` with msgspec's defaults; ``None`` passes through."""

msgpack_serializer: MsgpackSerializer = MsgpackSerializer()
"""MessagePack via ``msgspec.msgpack`` with msgspec's defaults; ``None`` passes through."""


# Names accepted for key_serializer / value_serializer, so configs written as
# data (or pasted from Java: "key.serializer") need no Python callables.
BY_NAME: dict[str, Serializer[Any]] = {
    "bytes": bytes_serializer,
    "str": str_serializer,
    "string": str_serializer,
    "json": json_serializer,
    "msgpack": msgpack_serializer,
    "org.apache.kafka.common.serialization.ByteArraySerializer": bytes_serializer,
    "org.apache.kafka.common.serialization.BytesSerializer": bytes_serializer,
    "org.apache.kafka.common.serialization.StringSerializer": str_serializer,
}


def resolve(spec: Serializer[Any] | str | None) -> Serializer[Any] | None:
    """A serializer from a callable, a name in :data:`BY_NAME`, or None."""
    if spec is None or callable(spec):
        return spec
    found = BY_NAME.get(spec)
    if found is None:
        raise KeyError(spec)
    return found
