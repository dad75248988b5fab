"""The named errors a batch fails with: each says which partition, what happened, and why.

Built by the sender when a batch's records can no longer be delivered. Every one names
the topic and partition and the number of records, and keeps what led to it as its
``__cause__`` (so that a delivery that failed after connection problems says which).
"""

from __future__ import annotations

from typing import TypeVar

from ..errors import (
    BrokerResponseError,
    DeliveryOutcomeUnknownError,
    KafkaError,
    KafkaTimeoutError,
    PartitionAbortedError,
    RequestEncodingError,
)
from .producer_batch import ProducerBatch

E = TypeVar("E", bound=KafkaError)

__all__ = ["aborted", "attach_tp", "expired", "outcome_unknown", "unsendable"]


def _because(error: E, cause: BaseException | None) -> E:
    """``error``, with ``cause`` (what led to it) as its ``__cause__``."""
    error.__cause__ = cause
    return error


def _where(batch: ProducerBatch) -> str:
    topic, partition = batch.queue.tp
    return f"{batch.count} record(s) for {topic}[{partition}]"


def expired(
    batch: ProducerBatch, now: float, delivery_timeout_ms: int, cause: BaseException | None
) -> KafkaTimeoutError:
    """Past delivery_timeout_ms; ``cause`` is what kept the batch from delivery, if known."""
    return _because(
        KafkaTimeoutError(
            f"{_where(batch)} expired: {(now - batch.created) * 1000:.0f} ms since the batch "
            f"was created is past delivery_timeout_ms ({delivery_timeout_ms})"
            + ("" if cause is None else f"; last error: {cause}")
        ),
        cause,
    )


def outcome_unknown(batch: ProducerBatch, cause: KafkaError, retries: int) -> KafkaError:
    """Its requests got no usable answer (it may be written) and its retries are used up."""
    return _because(
        DeliveryOutcomeUnknownError(
            f"{_where(batch)} may or may not have been written: a request carrying them got "
            f"no usable answer, or an error its leader may answer after appending them "
            f"({cause}), and its retries (retries={retries}) are used up"
        ),
        cause,
    )


def aborted(batch: ProducerBatch, cause: BaseException) -> PartitionAbortedError:
    """Not sent: an earlier batch of the partition failed (fail_partition_on_error)."""
    return _because(
        PartitionAbortedError(
            f"{_where(batch)} not sent: an earlier record of the partition failed ({cause})"
        ),
        cause,
    )


def unsendable(batch: ProducerBatch, cause: Exception) -> KafkaError:
    """The batch could not be put on the wire (closing it or encoding its request raised)."""
    if isinstance(cause, KafkaError):
        return attach_tp(cause, batch)
    return _because(
        RequestEncodingError(f"{_where(batch)} could not be sent: {type(cause).__name__}: {cause}"),
        cause,
    )


def attach_tp(error: KafkaError, batch: ProducerBatch) -> KafkaError:
    """Name the partition in errors that came from the connection, not the broker."""
    if isinstance(error, BrokerResponseError):
        return error
    topic, partition = batch.queue.tp
    return _because(type(error)(f"{error} (while sending to {topic}[{partition}])"), error)
