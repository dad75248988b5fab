"""The checks every record argument passes before anything touches a batch.

A bad argument raises ``TypeError`` or ``ValueError`` at the call, naming the
argument and the topic, and nothing else is affected: no batch is created for
it, no metadata request names it. ``send()``'s hot path inlines the cheap part
of these checks (``type(x) is int`` and a range) and calls in here for anything
unusual.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import InvalidTopicNameError, SerializationError
from .records import Header

__all__ = [
    "TIMESTAMP_LIMIT",
    "bad_partition",
    "bad_timestamp",
    "check_headers",
    "check_topic",
    "serialization_error",
    "serialize",
]

# Record timestamps are int64 milliseconds; Java's ProducerRecord refuses negative ones.
TIMESTAMP_LIMIT = 1 << 63
# Kafka's topic name rules (Java's org.apache.kafka.common.internals.Topic).
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def check_topic(topic: object) -> str:
    """``topic`` if it is a name Kafka accepts; else a TypeError or an
    :class:`InvalidTopicNameError` (a ValueError, and the KafkaError aiokafka's users
    catch) saying why.

    A str subclass is a name too (as for aiokafka), whether or not its partitions are
    known yet.
    """
    if not isinstance(topic, str):
        raise TypeError(f"topic must be a str, got {type(topic).__name__} ({topic!r})")
    if _TOPIC_NAME.fullmatch(topic) is None or topic in (".", ".."):
        raise InvalidTopicNameError(
            f"topic {topic!r} is not a valid Kafka topic name: 1 to 249 characters of "
            "ASCII letters, digits, '.', '_' and '-', and not '.' or '..'"
        )
    return topic


def bad_partition(partition: object, topic: str, count: int) -> Exception:
    """The error for a ``partition`` argument that is not an int in ``range(count)``."""
    if type(partition) is not int:
        return TypeError(
            f"partition for {topic!r} must be an int (or None), "
            f"got {type(partition).__name__} ({partition!r})"
        )
    return ValueError(
        f"partition {partition} is out of range for {topic!r}, which has {count} partition(s)"
    )


def record_timestamp(timestamp: object, topic: str) -> int:
    """A record's timestamp: ``timestamp``, or now when None (raises if it is neither)."""
    if timestamp is None:
        return int(time.time() * 1000)
    if type(timestamp) is int and 0 <= timestamp < TIMESTAMP_LIMIT:
        return timestamp
    raise bad_timestamp(timestamp, topic)


def bad_timestamp(timestamp: object, topic: str) -> Exception:
    """The error for a ``timestamp_ms`` that is not an int in 0 .. 2**63-1."""
    if type(timestamp) is not int:
        return TypeError(
            f"timestamp_ms for {topic!r} must be an int of milliseconds since the epoch "
            f"(or None), got {type(timestamp).__name__} ({timestamp!r})"
        )
    return ValueError(
        f"timestamp_ms for {topic!r} must be in 0 .. 2**63-1 (ms since the epoch), got {timestamp}"
    )


def serialize(
    key_serializer: Callable[[Any], bytes | None] | None,
    value_serializer: Callable[[Any], bytes | None] | None,
    key: Any,
    value: Any,
    topic: str,
) -> tuple[bytes | None, bytes | None]:
    """Key and value as bytes (or None), or an error naming what was wrong."""
    try:
        if key_serializer is not None:
            key = key_serializer(key)
        if value_serializer is not None:
            value = value_serializer(value)
    except Exception as e:
        raise serialization_error(e, topic) from e
    if key is not None and type(key) is not bytes:
        key = _as_bytes(key, "key", topic)
    if value is not None and type(value) is not bytes:
        value = _as_bytes(value, "value", topic)
    return key, value


# SerializationError subclasses that are also the built-in category of what the
# serializer raised (ValueError, TypeError, ...), made on first use.
_CATEGORIZED: dict[type[BaseException], type[SerializationError]] = {}


def serialization_error(cause: Exception, topic: str) -> SerializationError:
    """A SerializationError that is also the built-in category of ``cause``.

    aiokafka lets a serializer's exception through unchanged, so code written
    for it catches ``ValueError`` or ``TypeError`` there: those clauses keep
    catching. The serializer's own exception is the ``__cause__``.
    """
    category = next(c for c in type(cause).__mro__ if c.__module__ == "builtins")
    cls = _CATEGORIZED.get(category)
    if cls is None:
        cls = SerializationError
        if category not in (Exception, BaseException):
            try:
                cls = type(
                    "SerializationError",
                    (SerializationError, category),
                    # Pickled as a plain SerializationError (this class has no import path).
                    {"__module__": SerializationError.__module__, "__reduce__": _plain},
                )
            except TypeError:  # a category with its own instance layout (OSError)
                cls = SerializationError
        _CATEGORIZED[category] = cls
    return cls(f"cannot serialize a record for {topic!r}: {cause!r}")


def _plain(error: SerializationError) -> tuple[type[SerializationError], tuple[Any, ...]]:
    return SerializationError, error.args


def _as_bytes(data: object, what: str, topic: str) -> bytes:
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TypeError(
        f"{what} for {topic!r} must be bytes (or set {what}_serializer), got {type(data).__name__}"
    )


def check_headers(headers: Iterable[Header] | None, topic: str) -> list[Header] | None:
    """``headers`` as a list of ``(str, bytes | None)`` pairs (None if there are none).

    Any iterable of pairs is taken (it is read once); keys must be UTF-8 encodable.
    """
    if headers is None:
        return None
    if isinstance(headers, str | bytes | bytearray | dict):
        raise TypeError(
            f"headers for {topic!r} must be a list of (str, bytes) pairs, "
            f"got {type(headers).__name__}"
        )
    try:
        items = list(headers)
    except TypeError:
        raise TypeError(
            f"headers for {topic!r} must be a list of (str, bytes) pairs, "
            f"got {type(headers).__name__}"
        ) from None
    out: list[Header] = []
    for item in items:
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise TypeError(
                f"headers for {topic!r}: each header must be a (str, bytes) pair, got {item!r}"
            )
        hkey, hvalue = item
        if not isinstance(hkey, str):
            raise TypeError(
                f"headers for {topic!r}: header key must be str, got {type(hkey).__name__}"
            )
        try:
            hkey.encode()
        except UnicodeEncodeError as e:
            raise ValueError(
                f"headers for {topic!r}: header key {hkey!r} is not valid UTF-8 ({e.reason})"
            ) from None
        if hvalue is not None and not isinstance(hvalue, bytes):
            if not isinstance(hvalue, bytearray | memoryview):
                raise TypeError(
                    f"headers for {topic!r}: value of header {hkey!r} must be bytes or None, "
                    f"got {type(hvalue).__name__}"
                )
            hvalue = bytes(hvalue)
        out.append((hkey, hvalue))
    return out or None
