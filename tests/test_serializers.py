"""aiokafka_lite.serializers: exact output for sample inputs, None pass-through, errors.

JSON output is also parsed back with the stdlib ``json`` module and MessagePack output with
``msgspec.msgpack.decode`` into plain Python objects, so the checks do not only compare
msgspec with itself.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from array import array
from typing import Any

import msgspec
import pytest

from aiokafka_lite.serializers import (
    JsonSerializer,
    MsgpackSerializer,
    Serializer,
    bytes_serializer,
    json_serializer,
    msgpack_serializer,
    str_serializer,
)


class Point(msgspec.Struct):
    x: int
    y: int


@dataclasses.dataclass
class Order:
    id: int
    items: list[str]
    at: datetime.datetime


class Color(enum.Enum):
    RED = "red"


UTC_TIME = datetime.datetime(2024, 5, 17, 12, 30, 45, 123000, tzinfo=datetime.UTC)

ALL: list[Serializer[Any]] = [
    bytes_serializer,
    str_serializer,
    json_serializer,
    msgpack_serializer,
    JsonSerializer(),
    MsgpackSerializer(),
]


@pytest.mark.parametrize("serializer", ALL)
def test_none_passes_through_for_tombstones(serializer: Serializer[Any]) -> None:
    assert serializer(None) is None


# -- bytes ----------------------------------------------------------------------------


def test_bytes_is_identity() -> None:
    data = b"\x00\xffabc"
    assert bytes_serializer(data) is data  # no copy
    assert bytes_serializer(b"") == b""


def test_bytes_accepts_bytearray_and_memoryview() -> None:
    assert bytes_serializer(bytearray(b"abc")) == b"abc"
    assert type(bytes_serializer(bytearray(b"abc"))) is bytes
    assert bytes_serializer(memoryview(b"xabcx")[1:4]) == b"abc"
    # a memoryview of wider items gives its bytes, not its item count
    wide = memoryview(array("H", [1, 2]))
    assert bytes_serializer(wide) == array("H", [1, 2]).tobytes()
    # non-contiguous
    assert bytes_serializer(memoryview(b"abcdef")[::2]) == b"ace"


def test_bytes_subclass_becomes_plain_bytes() -> None:
    class B(bytes):
        pass

    out = bytes_serializer(B(b"abc"))
    assert out == b"abc"
    assert type(out) is bytes


@pytest.mark.parametrize("value", ["abc", 1, 1.5, ["a"], {"a": 1}, object()])
def test_bytes_rejects_other_types_naming_them(value: object) -> None:
    with pytest.raises(TypeError, match=f"got {type(value).__name__}$"):
        bytes_serializer(value)  # type: ignore[arg-type]


# -- str ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", b""),
        ("abc", b"abc"),
        ("ключ", "ключ".encode()),
        ("€ 😀", b"\xe2\x82\xac \xf0\x9f\x98\x80"),
        ("\x00", b"\x00"),
    ],
)
def test_str_is_utf8(value: str, expected: bytes) -> None:
    assert str_serializer(value) == expected


def test_str_subclass() -> None:
    class S(str):
        pass

    assert str_serializer(S("abc")) == b"abc"


def test_str_rejects_lone_surrogates() -> None:
    with pytest.raises(UnicodeEncodeError):
        str_serializer("\ud800")


@pytest.mark.parametrize("value", [b"abc", 1, ["a"], bytearray(b"a")])
def test_str_rejects_other_types_naming_them(value: object) -> None:
    with pytest.raises(TypeError, match=f"str_serializer expects str, got {type(value).__name__}"):
        str_serializer(value)  # type: ignore[arg-type]


# -- json -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": 1, "b": [1, 2.5, None, True]}, b'{"a":1,"b":[1,2.5,null,true]}'),
        ([], b"[]"),
        ("text", b'"text"'),
        (0, b"0"),
        (False, b"false"),
        ({"ключ": "€"}, '{"ключ":"€"}'.encode()),
        (Point(1, 2), b'{"x":1,"y":2}'),
        (
            Order(7, ["a", "b"], UTC_TIME),
            b'{"id":7,"items":["a","b"],"at":"2024-05-17T12:30:45.123000Z"}',
        ),
        (UTC_TIME, b'"2024-05-17T12:30:45.123000Z"'),
        (datetime.date(2024, 5, 17), b'"2024-05-17"'),
        (uuid.UUID(int=1), b'"00000000-0000-0000-0000-000000000001"'),
        (decimal.Decimal("1.10"), b'"1.10"'),
        (Color.RED, b'"red"'),
        ((1, "a"), b'[1,"a"]'),
    ],
)
def test_json_output(value: Any, expected: bytes) -> None:
    assert json_serializer(value) == expected
    assert JsonSerializer()(value) == expected
    json.loads(expected)  # valid JSON


def test_json_nested_none_is_null_but_top_level_none_is_a_tombstone() -> None:
    assert json_serializer({"a": None}) == b'{"a":null}'
    assert json_serializer(None) is None


def test_json_round_trips_through_stdlib_json() -> None:
    value = {"id": 1, "tags": ["x", "y"], "nested": {"f": 1.25, "ok": True, "n": None}}
    out = json_serializer(value)
    assert out is not None
    assert json.loads(out) == value


def test_json_unsupported_type_raises() -> None:
    with pytest.raises(TypeError, match="Encoding objects of type object is unsupported"):
        json_serializer(object())
    with pytest.raises(TypeError):
        json_serializer({1j: 1})


def test_json_enc_hook() -> None:
    class Money:
        def __init__(self, cents: int) -> None:
            self.cents = cents

    def hook(obj: Any) -> Any:
        if isinstance(obj, Money):
            return f"{obj.cents / 100:.2f}"
        raise NotImplementedError

    ser = JsonSerializer(enc_hook=hook)
    assert ser({"price": Money(1999)}) == b'{"price":"19.99"}'
    assert ser(None) is None
    with pytest.raises(NotImplementedError):  # the hook's own error comes out
        ser(object())


def test_json_options() -> None:
    assert JsonSerializer(decimal_format="number")(decimal.Decimal("1.5")) == b"1.5"
    assert JsonSerializer(uuid_format="hex")(uuid.UUID(int=1)) == b'"' + b"0" * 31 + b'1"'
    assert JsonSerializer(order="sorted")({"b": 1, "a": 2}) == b'{"a":2,"b":1}'


def test_json_encoder_is_created_once() -> None:
    ser = JsonSerializer()
    encoder = ser.encoder
    ser({"a": 1})
    ser([1])
    assert ser.encoder is encoder
    assert isinstance(encoder, msgspec.json.Encoder)


def test_repr() -> None:
    assert repr(JsonSerializer()) == "JsonSerializer()"
    assert repr(MsgpackSerializer(order="sorted")) == "MsgpackSerializer(order='sorted')"


# -- msgpack --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": 1}, b"\x81\xa1a\x01"),  # fixmap(1) fixstr "a" fixint 1
        ([1, "b", None, True], b"\x94\x01\xa1b\xc0\xc3"),
        ("", b"\xa0"),
        (-1, b"\xff"),
        (1.5, b"\xcb" + bytes.fromhex("3ff8000000000000")),
        (b"\x00\x01", b"\xc4\x02\x00\x01"),  # bin 8
        (Point(1, 2), b"\x82\xa1x\x01\xa1y\x02"),
    ],
)
def test_msgpack_output(value: Any, expected: bytes) -> None:
    assert msgpack_serializer(value) == expected
    assert MsgpackSerializer()(value) == expected


def test_msgpack_dataclass_and_datetime() -> None:
    out = msgpack_serializer(Order(7, ["a"], UTC_TIME))
    assert out is not None
    decoded = msgspec.msgpack.decode(out)
    assert decoded["id"] == 7
    assert decoded["items"] == ["a"]
    # msgspec writes datetimes as the msgpack timestamp extension (-1)
    assert msgspec.msgpack.decode(out, type=Order) == Order(7, ["a"], UTC_TIME)


def test_msgpack_enc_hook_and_options() -> None:
    ser = MsgpackSerializer(enc_hook=lambda obj: str(obj), uuid_format="bytes")
    assert ser(uuid.UUID(int=1)) == b"\xc4\x10" + (1).to_bytes(16, "big")
    assert ser(1j) == msgspec.msgpack.encode("1j")


def test_msgpack_unsupported_type_raises() -> None:
    with pytest.raises(TypeError):
        msgpack_serializer(object())


# -- typing ---------------------------------------------------------------------------


def test_serializers_fit_the_serializer_type() -> None:
    # (checked by mypy; at run time just callables)
    as_str: Serializer[str] = str_serializer
    as_bytes: Serializer[bytes] = bytes_serializer
    as_dict: Serializer[dict[str, int]] = json_serializer
    as_list: Serializer[list[int]] = msgpack_serializer
    assert as_str("a") == b"a"
    assert as_bytes(b"a") == b"a"
    assert as_dict({"a": 1}) == b'{"a":1}'
    assert as_list([1]) == b"\x91\x01"
