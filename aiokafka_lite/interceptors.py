"""Producer interceptors: Java's ``ProducerInterceptor`` for asyncio code.

An interceptor sees every record before it is serialized (``on_send``, which
may return a changed record) and every outcome (``on_acknowledgement``, with
the record's metadata or its exception). Interceptors run on the event loop,
so they must be quick and must not block. An exception raised inside one is
logged and ignored: an interceptor can never break delivery.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ._internal.records import Header
from .structs import RecordMetadata

__all__ = ["ProducerInterceptor", "ProducerRecord", "run_on_acknowledgement", "run_on_send"]

log = logging.getLogger("aiokafka_lite.interceptors")


class ProducerRecord(NamedTuple):
    """A record as ``send()`` received it (before serialization)."""

    topic: str
    value: Any
    key: Any = None
    partition: int | None = None
    timestamp_ms: int | None = None
    headers: Sequence[Header] | None = None


@runtime_checkable
class ProducerInterceptor(Protocol):
    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        """Return the record to send (the same one, or a changed copy)."""
        ...

    def on_acknowledgement(
        self, metadata: RecordMetadata | None, exception: BaseException | None
    ) -> None:
        """Called once per record: with its metadata, or with the exception it failed with."""
        ...


def run_on_send(
    interceptors: Sequence[ProducerInterceptor], record: ProducerRecord
) -> ProducerRecord:
    for interceptor in interceptors:
        try:
            changed = interceptor.on_send(record)
        except Exception:
            log.exception("interceptor %r failed in on_send; record left unchanged", interceptor)
            continue
        if isinstance(changed, ProducerRecord):
            record = changed
        else:
            log.error(
                "interceptor %r returned %r from on_send, not a ProducerRecord",
                interceptor,
                changed,
            )
    return record


def run_on_acknowledgement(
    interceptors: Sequence[ProducerInterceptor],
    metadata: RecordMetadata | None,
    exception: BaseException | None,
) -> None:
    for interceptor in interceptors:
        try:
            interceptor.on_acknowledgement(metadata, exception)
        except Exception:
            log.exception("interceptor %r failed in on_acknowledgement", interceptor)
