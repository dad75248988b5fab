"""The checks every fault test makes, in one place (and tests that they catch what they should).

Every fault scenario (mock cluster, fault proxy, scripted broker) ends with
:func:`check_fault_outcome`, which asserts the same things:

* no future is still pending once the scenario is over;
* every failed future carries a named error (a subclass of ``KafkaError``, not the
  bare base class), of a type the test allows;
* ``producer.stop(timeout)`` returns within that timeout (plus a little slack);
* reading the topic back with an independent consumer (confluent-kafka), every
  record whose future succeeded is there exactly once, where its metadata says
  (partition, and offset unless the broker reported -1 for a duplicate), with its
  key; nothing is there twice; a record that was not acknowledged is there only
  if its error says its outcome is unknown; and within each partition records are
  in send order.

Records are identified by their value: the test sends ``value(i)`` (the decimal
index ``i`` of the future in the list handed to the helper), in send order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pytest

from aiokafka_lite import RecordMetadata
from aiokafka_lite.errors import DeliveryOutcomeUnknownError, KafkaError, KafkaTimeoutError
from aiokafka_lite.structs import TopicPartition

__all__ = [
    "LogRecord",
    "Outcome",
    "check_errors",
    "check_fault_outcome",
    "check_log",
    "outcome_of",
    "settle",
    "stop_in_time",
    "value",
]

STOP_TIMEOUT = 10.0  # the timeout given to producer.stop() by default
STOP_SLACK = 2.0  # stop() may overrun its timeout by this much (closing sockets, tasks)

# A record that failed with one of these may or may not be in the log (its
# request may have been written without our hearing so): present at most once.
MAYBE_WRITTEN: tuple[type[BaseException], ...] = (DeliveryOutcomeUnknownError, KafkaTimeoutError)


class LogRecord(Protocol):
    """What the readers return (tests/readers.py ReadRecord, test_mockcluster Read)."""

    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


def value(i: int) -> bytes:
    """The value of the i-th record sent in a fault test: its index."""
    return str(i).encode()


@dataclass
class Outcome:
    acked: dict[int, RecordMetadata]
    failed: dict[int, BaseException]
    pending: list[int]


async def settle(futures: Sequence[asyncio.Future[RecordMetadata]], within: float) -> Outcome:
    """Wait (at most ``within`` s) for every future; sort them into acked/failed/pending."""
    if futures:
        await asyncio.wait(futures, timeout=within)
    return outcome_of(futures)


def outcome_of(futures: Sequence[asyncio.Future[RecordMetadata]]) -> Outcome:
    """Sort the futures as they are now into acked, failed and pending (by record index)."""
    acked: dict[int, RecordMetadata] = {}
    failed: dict[int, BaseException] = {}
    pending: list[int] = []
    for i, f in enumerate(futures):
        if not f.done():
            pending.append(i)
        elif f.cancelled():
            failed[i] = asyncio.CancelledError(f"record {i}'s future was cancelled")
        elif (exc := f.exception()) is not None:
            failed[i] = exc
        else:
            acked[i] = f.result()
    return Outcome(acked, failed, pending)


async def stop_in_time(producer: Any, timeout: float = STOP_TIMEOUT) -> float:
    """``await producer.stop(timeout)``; assert it returned within the timeout (+ slack)."""
    t0 = time.monotonic()
    try:
        async with asyncio.timeout(timeout + STOP_SLACK):
            await producer.stop(timeout)
    except TimeoutError:
        pytest.fail(f"producer.stop({timeout}) did not return within {timeout + STOP_SLACK} s")
    return time.monotonic() - t0


def check_errors(outcome: Outcome, allowed: tuple[type[BaseException], ...]) -> None:
    """Every failure is a named KafkaError of an allowed type."""
    for i, exc in outcome.failed.items():
        assert isinstance(exc, KafkaError) and type(exc) is not KafkaError, (
            f"record {i} failed with an unnamed error: {exc!r}"
        )
        assert isinstance(exc, allowed), (
            f"record {i} failed with {type(exc).__name__} ({exc}); expected one of "
            + ", ".join(t.__name__ for t in allowed)
            if allowed
            else f"record {i} failed ({exc!r}) where nothing may fail"
        )


def check_log(
    log: Sequence[LogRecord],
    outcome: Outcome,
    *,
    key: Callable[[int], bytes | None] | None = None,
    check_offsets: bool = True,
) -> None:
    """Acked records exactly once, where their metadata says; send order per partition."""
    seen: dict[int, list[LogRecord]] = {}
    for r in log:
        assert r.value is not None, f"a record without value at {r.partition}/{r.offset}"
        seen.setdefault(int(r.value), []).append(r)
    twice = {i: [(r.partition, r.offset) for r in rs] for i, rs in seen.items() if len(rs) > 1}
    assert not twice, f"{len(twice)} records written more than once, e.g. " + str(
        sorted(twice.items())[:3]
    )
    missing = sorted(set(outcome.acked) - set(seen))
    assert not missing, f"{len(missing)} acknowledged records not in the log: {missing[:10]}"
    for i in sorted(set(seen) - set(outcome.acked)):
        exc = outcome.failed.get(i)
        assert exc is not None and isinstance(exc, MAYBE_WRITTEN), (
            f"record {i} is in the log but its future "
            + ("was never sent" if exc is None else f"failed with {exc!r}")
        )
    for i, md in outcome.acked.items():
        (r,) = seen[i]
        assert r.partition == md.partition, (
            f"record {i}: metadata says partition {md.partition}, the log has it in {r.partition}"
        )
        if check_offsets and md.offset >= 0:  # -1: a duplicate whose offset the broker forgot
            assert r.offset == md.offset, (
                f"record {i}: metadata says offset {md.offset}, the log has it at {r.offset}"
            )
        if key is not None:
            assert r.key == key(i), f"record {i}: key {r.key!r}, sent {key(i)!r}"
    by_partition: dict[int, list[tuple[int, int]]] = {}
    for r in log:
        assert r.value is not None
        by_partition.setdefault(r.partition, []).append((r.offset, int(r.value)))
    for p, entries in by_partition.items():
        order = [i for _, i in sorted(entries)]
        assert order == sorted(order), f"partition {p} is not in send order: {order[:20]}..."


def confluent_reader(bootstrap: str, topic: str) -> Callable[[Outcome], Awaitable[list[Any]]]:
    """``check_fault_outcome``'s reader for a topic on a broker: confluent-kafka's consumer.

    Read from a thread (a fault proxy on this loop keeps pumping meanwhile). Tansu's
    high watermark is wrong: read until one more record than could be there (every
    acked and every failed one, +1) or, once the acked count is in, 2 s without a new
    one (15 s at most), so that a duplicate or a written "maybe" is seen too.
    """
    from readers import read_all_confluent

    async def read(outcome: Outcome) -> list[Any]:
        return await asyncio.to_thread(
            read_all_confluent,
            bootstrap,
            topic,
            len(outcome.acked) + len(outcome.failed) + 1,
            15.0,
            idle=2.0,
            at_least=len(outcome.acked),
        )

    return read


async def check_fault_outcome(
    producer: Any,
    futures: Sequence[asyncio.Future[RecordMetadata]],
    read: Callable[[Outcome], Awaitable[Sequence[LogRecord]]],
    *,
    allowed_errors: tuple[type[BaseException], ...] = (),
    within: float = 15.0,
    stop_timeout: float = STOP_TIMEOUT,
    key: Callable[[int], bytes | None] | None = None,
    check_offsets: bool = True,
) -> Outcome:
    """Settle the futures, stop the producer, read back, and check it all (see module doc).

    ``read(outcome)`` returns the topic's records (it may use ``len(outcome.acked)``
    as the number to wait for, for brokers whose high watermark cannot be trusted).
    """
    outcome = await settle(futures, within)
    await stop_in_time(producer, stop_timeout)
    assert not outcome.pending, (
        f"{len(outcome.pending)} futures still pending after {within} s, e.g. records "
        f"{outcome.pending[:10]}"
    )
    check_errors(outcome, allowed_errors)
    check_log(await read(outcome), outcome, key=key, check_offsets=check_offsets)
    return outcome


# -- the checks catch what they should ----------------------------------------------------


@dataclass(frozen=True)
class _R:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def _md(partition: int, offset: int) -> RecordMetadata:
    return RecordMetadata("t", partition, TopicPartition("t", partition), offset, -1, 0, -1)


def _outcome(acked: dict[int, tuple[int, int]], failed: dict[int, BaseException]) -> Outcome:
    return Outcome({i: _md(p, o) for i, (p, o) in acked.items()}, failed, [])


def test_check_log_passes_a_clean_log() -> None:
    log = [_R(0, 0, None, b"0"), _R(0, 1, None, b"2"), _R(1, 0, None, b"1")]
    check_log(log, _outcome({0: (0, 0), 1: (1, 0), 2: (0, 1)}, {}))


@pytest.mark.parametrize(
    ("log", "failed", "message"),
    [
        ([_R(0, 0, None, b"0"), _R(0, 1, None, b"0")], {}, "more than once"),
        ([], {}, "not in the log"),
        ([_R(0, 0, None, b"0"), _R(0, 1, None, b"1")], {}, "never sent"),
        (
            [_R(0, 0, None, b"0"), _R(0, 1, None, b"1")],
            {1: KafkaError("refused")},
            "failed with",
        ),
        ([_R(0, 5, None, b"0")], {}, "offset"),
        ([_R(2, 0, None, b"0")], {}, "partition"),
    ],
)
def test_check_log_catches(log: list[_R], failed: dict[int, BaseException], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_log(log, _outcome({0: (0, 0)}, failed))


def test_check_log_catches_reordering_and_allows_unknown_outcomes() -> None:
    swapped = [_R(0, 0, None, b"1"), _R(0, 1, None, b"0")]
    with pytest.raises(AssertionError, match="send order"):
        check_log(swapped, _outcome({0: (0, 1), 1: (0, 0)}, {}))
    # A record whose outcome is unknown may be there (once).
    unknown = DeliveryOutcomeUnknownError("may or may not")
    check_log([_R(0, 0, None, b"0")], _outcome({}, {0: unknown}))


def test_check_errors_wants_named_allowed_errors() -> None:
    with pytest.raises(AssertionError, match="unnamed"):
        check_errors(_outcome({}, {0: KafkaError("x")}), (KafkaError,))
    with pytest.raises(AssertionError, match="nothing may fail"):
        check_errors(_outcome({}, {0: KafkaTimeoutError("x")}), ())
    check_errors(_outcome({}, {0: KafkaTimeoutError("x")}), (KafkaTimeoutError,))
