"""Transactions under faults on a real 3-node Apache Kafka cluster.

* The transaction coordinator's node is killed (kill -9) mid-transaction, while records
  stream; the transaction then commits (every record read exactly once by
  ``read_committed`` consumers) or aborts (none of them read), and the producer goes on
  with a next transaction.
* A second producer with the same ``transactional_id`` fences the first mid-transaction:
  the first fails with ProducerFencedError naming the cause, and none of its records is
  ever read by ``read_committed`` consumers; the second one's are.

Read back by confluent-kafka and Java's console consumer, both ``read_committed``. The
non-transactional faults are in tests/test_kafka_faults.py.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from invariants import Watch
from kafka_cluster import KafkaCluster
from kafka_faults import (
    FAULT_MARKS,
    Stream,
    keyed,
    named_cause,
    new_topic,
    producer_for,
    read_back_both,
    transaction_coordinator,
    transaction_state,
    wait_for,
)
from test_faults_checks import Outcome, check_errors, outcome_of, stop_in_time, value

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    KafkaError,
    ProducerFencedError,
    TransactionAbortedError,
)

pytestmark = FAULT_MARKS

#: transaction_timeout_ms of the failover cases: longer than the waits they allow for a
#: failover (90 s), which a loaded 2-core machine can use up. With the default (60 s)
#: the coordinator may abort the transaction before commit_transaction() (seen once in
#: about ten loaded runs, as a fenced producer): a timeout, not the failover under test,
#: which test_transaction_open_past_its_timeout covers.
FAILOVER_TXN_TIMEOUT_MS = 300_000

#: Records of a later transaction (or another producer) are numbered from here on.
LATER = 1_000_000


async def stream_until(stream: Stream, count: int, timeout: float = 60.0) -> None:
    """Wait until ``count`` records were sent and the first ``count`` are acknowledged."""
    async with asyncio.timeout(timeout):
        while len(stream.futures) < count:  # noqa: ASYNC110 (the stream task appends)
            await asyncio.sleep(0.05)
        await asyncio.gather(*stream.futures[:count])


async def later_transaction(producer: AIOKafkaProducer, topic: str) -> list[asyncio.Future[object]]:
    """A next transaction of 100 records (``value(LATER + j)``), committed."""
    await producer.begin_transaction()
    futures = [
        await producer.send(topic, value(LATER + j), key=keyed(LATER + j)) for j in range(100)
    ]
    await asyncio.wait_for(producer.commit_transaction(), 60)
    return futures


def combined(*parts: tuple[int, list[asyncio.Future[object]]]) -> Outcome:
    """One outcome over several lists of futures, each numbered from its own base."""
    out = Outcome({}, {}, [])
    for base, futures in parts:
        o = outcome_of(futures)  # type: ignore[arg-type]
        out.acked.update({base + i: md for i, md in o.acked.items()})
        out.failed.update({base + i: e for i, e in o.failed.items()})
        out.pending.extend(base + i for i in o.pending)
    return out


@pytest.mark.parametrize("end", ["commit", "abort"])
async def test_coordinator_killed_mid_transaction(healthy: KafkaCluster, end: str) -> None:
    watch = Watch.begin()
    topic = new_topic(healthy, partitions=3)
    tid = f"faults-{uuid.uuid4().hex[:8]}"
    producer = producer_for(
        healthy, transactional_id=tid, transaction_timeout_ms=FAILOVER_TXN_TIMEOUT_MS
    )
    await producer.start()
    await producer.begin_transaction()
    stream = Stream(producer, topic, keyed).start()
    await stream_until(stream, 300)
    coordinator = await asyncio.to_thread(transaction_coordinator, healthy, tid)
    await asyncio.to_thread(healthy.kill, coordinator)
    sent = len(stream.futures)
    await stream_until(stream, sent + 300, timeout=90)  # records go on under new leaders
    await stream.stop()
    assert not stream.call_errors, f"send() raised: {list(stream.call_errors.values())[:3]}"
    if end == "commit":
        await asyncio.wait_for(producer.commit_transaction(), 90)
    else:
        await asyncio.wait_for(producer.abort_transaction(), 90)
    later = await later_transaction(producer, topic)  # the producer is usable afterwards
    await watch.stop_and_check(producer, [*stream.futures, *later], stop_timeout=10)
    first = outcome_of(stream.futures)
    if end == "commit":
        assert not first.failed and not first.pending
        expected = combined((0, stream.futures), (LATER, later))  # type: ignore[arg-type]
    else:
        check_errors(first, (TransactionAbortedError,))  # only records still buffered
        expected = combined((LATER, later))
    assert len(expected.acked) == (len(stream.futures) if end == "commit" else 0) + 100
    # An aborted record read back is "in the log but its future was never sent".
    await read_back_both(healthy, topic, expected, key=keyed)


async def test_transaction_open_past_its_timeout(healthy: KafkaCluster) -> None:
    """The coordinator aborts a transaction left open past transaction_timeout_ms (a slow
    failover is one way to get there): commit_transaction() fails with an error that
    names the timeout, and none of the transaction's records is ever read."""
    watch = Watch.begin()
    topic = new_topic(healthy, partitions=3)
    tid = f"faults-{uuid.uuid4().hex[:8]}"
    producer = producer_for(healthy, transactional_id=tid, transaction_timeout_ms=2000)
    await producer.start()
    await producer.begin_transaction()
    futures = [await producer.send(topic, value(i), key=keyed(i)) for i in range(100)]
    await asyncio.wait_for(asyncio.gather(*futures), 60)
    await asyncio.to_thread(
        wait_for,
        lambda: transaction_state(healthy, tid) == "CompleteAbort",
        60,
        f"the coordinator aborting {tid}'s transaction after its timeout",
    )
    with pytest.raises(InvalidTxnStateError) as commit_error:
        await asyncio.wait_for(producer.commit_transaction(), 60)
    text = named_cause(commit_error.value)
    assert "transaction_timeout_ms (2000 ms)" in text and repr(tid) in text, text
    await watch.stop_and_check(producer, futures, stop_timeout=10)  # acked, then aborted
    await read_back_both(healthy, topic, Outcome({}, {}, []), key=keyed)


async def test_second_producer_fences_the_first(healthy: KafkaCluster) -> None:
    watch = Watch.begin()
    topic = new_topic(healthy, partitions=3)
    tid = f"faults-{uuid.uuid4().hex[:8]}"
    first = producer_for(healthy, transactional_id=tid)
    await first.start()
    await first.begin_transaction()
    stream = Stream(first, topic, keyed).start()
    await stream_until(stream, 300)
    second = producer_for(healthy, transactional_id=tid)
    await second.start()  # InitProducerId: a new epoch; the first's transaction is aborted
    later = await later_transaction(second, topic)
    # The first learns it was fenced from its next request: send() refuses from then on.
    async with asyncio.timeout(60):
        while not stream.call_errors:  # noqa: ASYNC110 (the stream task records them)
            await asyncio.sleep(0.05)
    await stream.stop()
    with pytest.raises(KafkaError) as commit_error:
        await asyncio.wait_for(first.commit_transaction(), 60)
    fenced = (ProducerFencedError, InvalidProducerEpochError)
    for exc in [commit_error.value, *stream.call_errors.values()]:
        text = named_cause(exc)
        assert any(isinstance(e, fenced) for e in chain(exc)), f"not fenced: {text}"
        assert f"transactional id {tid!r} is fenced" in text, text
    await stop_in_time(first)
    await stop_in_time(second)
    watch.check([*stream.futures, *later])  # (the first's records: named failures or acked)
    failures = [f.exception() for f in stream.futures if f.exception() is not None]
    for exc in failures:  # each record's own error says it was fenced, and why
        assert exc is not None and f"transactional id {tid!r} is fenced" in str(exc), named_cause(
            exc
        )
    print(f"{len(stream.futures)} sent by the fenced producer, {len(failures)} failed")
    # Records of the first may have been written (and acknowledged) before the fence: in
    # an aborted transaction, never read by read_committed consumers.
    await read_back_both(healthy, topic, combined((LATER, later)), key=keyed)  # type: ignore[arg-type]


def chain(exc: BaseException) -> Iterator[BaseException]:
    seen: BaseException | None = exc
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__
