"""The root of the hierarchy, the client-side errors, and the broker errors' base class.

When aiokafka is installed, every class here also derives from aiokafka's
class of the same meaning (named by its ``aiokafka=`` class keyword, and for
broker errors found by error code): code written for aiokafka, whose
``except aiokafka.errors.KafkaTimeoutError`` clauses surround calls now made on
aiokafka_lite's producer, keeps catching what it caught. Without aiokafka
nothing changes but the bases.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..structs import DeliveryReport

__all__ = [
    "AuthenticationFailedError",
    "AuthenticationMethodNotSupported",
    "BrokerResponseError",
    "BufferFullError",
    "Cancelled",
    "CommitFailedError",
    "ConfigError",
    "ConsumerStoppedError",
    "CorrelationIdError",
    "DeliveryFailedError",
    "DeliveryOutcomeUnknownError",
    "IllegalArgumentError",
    "IllegalStateError",
    "IncompatibleBrokerVersionError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaTimeoutError",
    "KafkaUnavailableError",
    "MetadataEmptyBrokerList",
    "NoBrokersAvailable",
    "NoOffsetForPartitionError",
    "NodeNotReadyError",
    "PartitionAbortedError",
    "ProducerClosedError",
    "ProducerNotStartedError",
    "ProtocolError",
    "QuotaViolationError",
    "RequestEncodingError",
    "SerializationError",
    "StaleMetadata",
    "TooManyInFlightRequests",
    "TransactionAbortRequiredError",
    "TransactionAbortedError",
    "UnrecognizedBrokerVersion",
    "UnsupportedCodecError",
    "WrongEventLoopError",
]


def _load_aiokafka_errors() -> ModuleType | None:
    try:
        if importlib.util.find_spec("aiokafka") is None:
            return None
        return importlib.import_module("aiokafka.errors")
    except Exception:  # a broken (or blocked) aiokafka: nothing to be compatible with
        return None


_AIOKAFKA = _load_aiokafka_errors()
# aiokafka's broker error classes by code (codes 2, 14, 15 and 16 have two names each).
_AIOKAFKA_BY_CODE: dict[int, list[type]] = {}
if _AIOKAFKA is not None:
    for _cls in vars(_AIOKAFKA).values():
        _code = getattr(_cls, "errno", None)
        if isinstance(_cls, type) and isinstance(_code, int):
            _same_code = _AIOKAFKA_BY_CODE.setdefault(_code, [])
            if _cls not in _same_code:  # some names are aliases of one class
                _same_code.append(_cls)


class _AiokafkaCompatible(type):
    """Adds aiokafka's counterparts (``aiokafka=`` names, or by ``errno``) to a class's bases."""

    def __new__(
        mcs,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        *,
        aiokafka: tuple[str, ...] = (),
        **kwargs: Any,
    ) -> _AiokafkaCompatible:
        extra = _counterparts(aiokafka, namespace.get("errno"))
        extra = [c for c in extra if not any(issubclass(b, c) for b in bases)]
        if extra:
            # A base that an aiokafka class already derives from (RuntimeError for
            # the root) goes: it comes back after that class in the MRO.
            bases = tuple(b for b in bases if not any(issubclass(c, b) for c in extra))
            bases += tuple(extra)
        return super().__new__(mcs, name, bases, namespace, **kwargs)


def _counterparts(names: tuple[str, ...], code: object) -> list[type]:
    if _AIOKAFKA is None:
        return []
    found = [getattr(_AIOKAFKA, n) for n in names if isinstance(getattr(_AIOKAFKA, n, None), type)]
    if isinstance(code, int):
        found += [c for c in _AIOKAFKA_BY_CODE.get(code, []) if c not in found]
    return found


class KafkaError(RuntimeError, metaclass=_AiokafkaCompatible, aiokafka=("KafkaError",)):
    """Base class of every aiokafka_lite exception (a RuntimeError, as aiokafka's)."""

    retriable: ClassVar[bool] = False
    """The same request may succeed if sent again."""
    invalid_metadata: ClassVar[bool] = False
    """The client should refresh its metadata before retrying."""

    # The message alone, whether or not aiokafka (whose KafkaError.__str__ adds
    # the class name) is among the bases.
    __str__ = Exception.__str__


# -- client-side errors ------------------------------------------------------------------


class KafkaTimeoutError(KafkaError, aiokafka=("KafkaTimeoutError",)):
    """An operation ran out of time (a request, ``max_block_ms``, ``delivery_timeout_ms``)."""

    retriable = True


class KafkaConnectionError(KafkaError, aiokafka=("KafkaConnectionError",)):
    """A connection to a broker failed or was cut."""

    retriable = True
    invalid_metadata = True


class NoBrokersAvailable(KafkaConnectionError, aiokafka=("NoBrokersAvailable",)):
    """No broker could be reached to send a request to."""


class ProtocolError(KafkaError, aiokafka=("KafkaProtocolError",)):
    """The broker's bytes could not be parsed, or the answer does not fit the request."""

    retriable = True


class CorrelationIdError(ProtocolError, aiokafka=("CorrelationIdError",)):
    """A response's correlation id is not the one of the oldest request in flight."""


class IllegalStateError(KafkaError, aiokafka=("IllegalStateError", "IllegalOperation")):
    """The producer cannot do this in its current state (aiokafka: ``IllegalOperation``)."""


class ProducerNotStartedError(IllegalStateError):
    """The producer was used before ``start()``."""


class WrongEventLoopError(IllegalStateError, RuntimeError):
    """The producer was used from an event loop other than the one that started it.

    Its connections, timers and futures belong to that loop; a producer is
    started and used in one loop (e.g. in an ASGI app's lifespan), or from
    threads through :class:`aiokafka_lite.sync.Producer`.
    """


class ProducerClosedError(IllegalStateError, aiokafka=("ProducerClosed",)):
    """The producer was used after ``stop()``, or stopped while a send was waiting."""


class TransactionAbortRequiredError(IllegalStateError):
    """The current transaction hit an error and can only be aborted.

    Raised by ``send()``, ``send_offsets_to_transaction()`` and
    ``commit_transaction()`` until ``abort_transaction()`` is called; the
    error that broke the transaction is its ``__cause__``.
    """


class TransactionAbortedError(KafkaError):
    """The record was not sent (or not kept): its transaction was aborted."""


class DeliveryOutcomeUnknownError(KafkaError):
    """The record may or may not have been written, and cannot safely be sent again.

    Its request got no answer (timeout or lost connection), or an error a leader
    may answer after appending (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR), and then the idempotent producer
    had to start a new epoch; under a new epoch the broker cannot recognise a
    re-sent copy, so re-sending could write it twice. Or its requests got such
    answers until its ``retries`` were used up.
    """


class PartitionAbortedError(KafkaError):
    """Not sent: an earlier record of the same partition failed for good.

    Only with ``fail_partition_on_error=True``, which fails the records queued
    (or in flight) behind a failed one so that the partition has no gap.
    """


class DeliveryFailedError(KafkaError):
    """Some records of one ``send_many()`` call failed; the others were delivered.

    ``errors`` maps the failed records' positions in the call to their
    exceptions; ``report`` is the call's
    :class:`~aiokafka_lite.structs.DeliveryReport` (whose entry for a failed
    record raises that record's exception).
    """

    def __init__(self, topic: str, report: DeliveryReport) -> None:
        errors = report.errors
        first = min(errors)
        super().__init__(
            f"{len(errors)} of {len(report)} records for {topic!r} failed; "
            f"first (record {first}): {errors[first]!r}"
        )
        self.topic = topic
        self.report = report
        self.errors = errors


class BufferFullError(KafkaError):
    """``try_send`` found ``buffer_memory`` exhausted.

    Retriable: the same call may succeed once in-flight batches complete.
    """

    retriable = True


class SerializationError(KafkaError):
    """A key or value serializer failed."""


class IncompatibleBrokerVersionError(KafkaError, aiokafka=("IncompatibleBrokerVersion",)):
    """The broker supports none of the versions of an API that this client speaks."""


class RequestEncodingError(KafkaError):
    """A record batch or request could not be put on the wire.

    A value does not fit its protocol field (a timestamp beyond int64, a number past
    int32), or building the request failed in another way. The message names the
    partition and the cause; the original exception is the ``__cause__``. Not
    retriable: the same bytes would fail the same way again.
    """


class AuthenticationFailedError(KafkaError, aiokafka=("AuthenticationFailedError",)):
    """SASL authentication or the TLS handshake failed; never retried.

    The message names the mechanism (or TLS) and the broker's own reason; never
    a credential. Records waiting for the broker fail with it at once instead
    of waiting out ``delivery_timeout_ms``.
    """


class ConfigError(KafkaError, ValueError, aiokafka=("KafkaConfigurationError",)):
    """A producer setting is invalid; the message names the setting."""


class UnsupportedCodecError(ConfigError, aiokafka=("UnsupportedCodecError",)):
    """``compression_type`` names a codec whose library is not installed."""


# -- aiokafka's other names ------------------------------------------------------------------
# aiokafka.errors names for situations of its own client or consumer. aiokafka_lite never
# raises these; they exist so that code importing them from aiokafka keeps importing.


class IllegalArgumentError(KafkaError, ValueError, aiokafka=("IllegalArgumentError",)):
    """aiokafka's name; aiokafka_lite raises ``TypeError``/``ValueError`` naming the argument."""


class NodeNotReadyError(KafkaError, aiokafka=("NodeNotReadyError",)):
    """aiokafka's client name; never raised here."""

    retriable = True


class Cancelled(KafkaError, aiokafka=("Cancelled",)):
    """aiokafka's client name; never raised here."""

    retriable = True


class TooManyInFlightRequests(KafkaError, aiokafka=("TooManyInFlightRequests",)):
    """aiokafka's client name; never raised here."""

    retriable = True


class StaleMetadata(KafkaError, aiokafka=("StaleMetadata",)):
    """aiokafka's client name; never raised here."""

    retriable = True
    invalid_metadata = True


class MetadataEmptyBrokerList(KafkaError, aiokafka=("MetadataEmptyBrokerList",)):
    """aiokafka's client name; never raised here."""

    retriable = True


class UnrecognizedBrokerVersion(KafkaError, aiokafka=("UnrecognizedBrokerVersion",)):
    """aiokafka's client name; never raised here."""


class AuthenticationMethodNotSupported(KafkaError, aiokafka=("AuthenticationMethodNotSupported",)):
    """aiokafka's name; an unsupported mechanism is a :class:`ConfigError` here."""


class KafkaUnavailableError(KafkaError, aiokafka=("KafkaUnavailableError",)):
    """aiokafka's client name; never raised here."""


class QuotaViolationError(KafkaError, aiokafka=("QuotaViolationError",)):
    """aiokafka's name; never raised here."""


class CommitFailedError(KafkaError, aiokafka=("CommitFailedError",)):
    """aiokafka's consumer name; never raised here (aiokafka_lite has no consumer)."""


class NoOffsetForPartitionError(KafkaError, aiokafka=("NoOffsetForPartitionError",)):
    """aiokafka's consumer name; never raised here (aiokafka_lite has no consumer)."""


class ConsumerStoppedError(KafkaError, aiokafka=("ConsumerStoppedError",)):
    """aiokafka's consumer name; never raised here (aiokafka_lite has no consumer)."""


# -- broker error codes ------------------------------------------------------------------


class BrokerResponseError(KafkaError, aiokafka=("BrokerResponseError",)):
    """An error code returned by a broker.

    Subclasses set the class attributes ``errno`` (the code), ``name`` (the Kafka name, such
    as ``"NOT_LEADER_OR_FOLLOWER"``) and ``retriable``. Instances carry the ``topic`` and
    ``partition`` the error is about, when known, and the broker's error ``message``.
    """

    errno: ClassVar[int]
    name: ClassVar[str]
    description: ClassVar[str] = "an error code returned by a broker"

    message: str | None
    topic: str | None
    partition: int | None

    def __init__(
        self,
        message: str | None = None,
        *,
        topic: str | None = None,
        partition: int | None = None,
    ) -> None:
        if not hasattr(type(self), "errno"):
            raise TypeError(
                f"{type(self).__name__} has no error code: raise a subclass, "
                "or use error_from_response()"
            )
        message = message or None
        super().__init__(*(() if message is None else (message,)))
        self.message = message
        self.topic = topic
        self.partition = partition

    def __str__(self) -> str:
        text = f"{self.name} ({self.errno})"
        if self.topic is not None:
            text += f" for {self.topic}"
            if self.partition is not None:
                text += f"[{self.partition}]"
        elif self.partition is not None:
            text += f" for partition {self.partition}"
        if self.message:
            text += f": {self.message}"
        return text

    def __repr__(self) -> str:
        parts = [] if self.message is None else [repr(self.message)]
        if self.topic is not None:
            parts.append(f"topic={self.topic!r}")
        if self.partition is not None:
            parts.append(f"partition={self.partition!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __reduce__(self) -> str | tuple[Any, ...]:
        from .codes import made_for_unknown_code, unknown_code_error

        if made_for_unknown_code(type(self)):
            # Made by for_code(), so not a module attribute pickle could find by name.
            return (unknown_code_error, (self.errno, self.message), self.__dict__)
        return super().__reduce__()
