"""MockProducer's own behaviour: history, completion by hand, flush, stop, transactions.

What it must share with the real producer (its API, its errors, its partitions) is
checked against the real one in test_mock_producer_parity.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from aiokafka_lite import AIOKafkaProducer, ProducerRecord, RecordMetadata, TopicPartition
from aiokafka_lite._internal.partitioner import default_partition
from aiokafka_lite.errors import (
    DeliveryFailedError,
    IllegalStateError,
    KafkaTimeoutError,
    ProducerClosedError,
    ProducerFencedError,
    TransactionAbortedError,
    TransactionAbortRequiredError,
    WrongEventLoopError,
)
from aiokafka_lite.structs import OffsetAndMetadata
from aiokafka_lite.testing import MockProducer, SentRecord


async def _not_done_after_a_while(fut: asyncio.Future[Any] | asyncio.Task[Any]) -> bool:
    await asyncio.sleep(0.05)
    return not fut.done()


async def test_history_holds_records_as_the_producer_writes_them() -> None:
    async with MockProducer(
        key_serializer="str",
        value_serializer=lambda v: json.dumps(v).encode(),
        partitions={"orders": 6},
    ) as producer:
        await producer.send("orders", {"n": 1}, key="user-1", headers=[("h", b"1")])
        await producer.send("orders", None, key="user-2", timestamp_ms=1234)
        await producer.send("orders", {"n": 3}, partition=5)
        history = producer.history
    assert [r.topic for r in history] == ["orders"] * 3
    assert history[0].key == b"user-1" and history[0].value == b'{"n": 1}'
    assert history[0].headers == (("h", b"1"),)
    assert history[0].partition == default_partition(b"user-1", 6)
    assert history[1] == SentRecord(
        "orders", default_partition(b"user-2", 6), b"user-2", b"null", (), 1234
    )
    assert history[2].partition == 5 and history[2].key is None
    assert abs(history[0].timestamp - history[2].timestamp) < 60_000  # "now", in ms


async def test_auto_complete_gives_offsets_that_grow_per_partition() -> None:
    async with MockProducer(partitions={"t": 2}) as producer:
        mds = [await producer.send_and_wait("t", b"v", partition=i % 2) for i in range(6)]
        futures = [await producer.send("t", b"v", partition=1)]
    assert all(isinstance(f, asyncio.Future) and f.done() for f in futures)
    assert [(md.partition, md.offset) for md in mds] == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
    ]  # fmt: skip
    assert futures[0].result().offset == 3
    assert mds[0].topic_partition == TopicPartition("t", 0)
    assert mds[0].timestamp_type == 0  # CreateTime


async def test_manual_completion_resolves_in_send_order() -> None:
    async with MockProducer(auto_complete=False) as producer:
        first = await producer.send("t", b"1")
        second = await producer.send("t", b"2")
        assert await _not_done_after_a_while(first)
        assert [r.value for r in producer.pending] == [b"1", b"2"]
        assert producer.complete_next() is True
        assert first.done() and not second.done()
        assert first.result().offset == 0
        boom = RuntimeError("broker said no")
        assert producer.fail_next(boom) is True
        assert second.exception() is boom
        assert producer.complete_next() is False and producer.fail_next(boom) is False
        assert producer.pending == []
        # A failed record takes no offset: the next one gets offset 1.
        third = await producer.send("t", b"3")
        producer.complete_next()
        assert third.result().offset == 1
        assert [r.value for r in producer.history] == [b"1", b"2", b"3"]


async def test_send_and_wait_waits_for_the_test_to_complete_it() -> None:
    async with MockProducer(auto_complete=False) as producer:
        waiting = asyncio.create_task(producer.send_and_wait("t", b"v"))
        assert await _not_done_after_a_while(waiting)
        producer.complete_next()
        md = await waiting
        assert (md.topic, md.partition, md.offset) == ("t", 0, 0)
        failing = asyncio.create_task(producer.send_and_wait("t", b"v"))
        await asyncio.sleep(0)
        producer.fail_next(KafkaTimeoutError("expired"))
        with pytest.raises(KafkaTimeoutError, match="expired"):
            await failing


async def test_fail_next_takes_only_exceptions() -> None:
    async with MockProducer(auto_complete=False) as producer:
        await producer.send("t", b"v")
        with pytest.raises(TypeError, match="takes an exception"):
            producer.fail_next("boom")  # type: ignore[arg-type]
        assert len(producer.pending) == 1


async def test_flush_waits_for_what_is_pending() -> None:
    async with MockProducer(auto_complete=False) as producer:
        fut = await producer.send("t", b"v")
        flushing = asyncio.create_task(producer.flush())
        assert await _not_done_after_a_while(flushing)
        later = await producer.send("t", b"w")  # sent after the flush began
        producer.complete_next()
        await asyncio.wait_for(flushing, 1)
        assert fut.done() and not later.done()
        with pytest.raises(KafkaTimeoutError, match=r"flush did not complete within 0\.05s"):
            await producer.flush(timeout=0.05)
        producer.complete_next()
        await producer.flush()  # nothing pending: returns at once


async def test_stop_fails_what_is_still_pending_and_refuses_more() -> None:
    producer = MockProducer(auto_complete=False)
    await producer.start()
    fut = await producer.send("t", b"v")
    await producer.stop()
    assert isinstance(fut.exception(), KafkaTimeoutError)
    assert producer.pending == []
    with pytest.raises(ProducerClosedError):
        await producer.send("t", b"v")
    with pytest.raises(ProducerClosedError):
        await producer.start()
    await producer.stop()  # again: nothing to do


async def test_stop_with_a_timeout_waits_for_pending_records() -> None:
    producer = MockProducer(auto_complete=False)
    await producer.start()
    fut = await producer.send("t", b"v")
    asyncio.get_running_loop().call_later(0.05, producer.complete_next)
    await producer.stop(timeout=5)
    assert fut.result().offset == 0


async def test_clear_forgets_the_history() -> None:
    async with MockProducer() as producer:
        await producer.send("t", b"1")
        producer.clear()
        await producer.send("t", b"2")
        assert [r.value for r in producer.history] == [b"2"]


async def test_send_many_and_send_batch_are_recorded() -> None:
    async with MockProducer(key_serializer="str", partitions={"t": 4}) as producer:
        report = await (await producer.send_many("t", [("a", b"1"), ("b", b"2")]))
        assert [md.partition for md in report] == [
            default_partition(b"a", 4),
            default_partition(b"b", 4),
        ]
        # A bad record fails alone, as with the real producer.
        failed = await producer.send_many("t", [("c", b"3"), ("d", "not bytes")])
        with pytest.raises(DeliveryFailedError) as info:
            await failed
        assert set(info.value.errors) == {1}
        assert isinstance(info.value.errors[1], TypeError)

        batch = producer.create_batch()
        assert batch.append(key="x", value=b"y", timestamp=5) is not None
        assert batch.append(key="z", value=b"w", timestamp=6) is not None
        md = await (await producer.send_batch(batch, "t", partition=3))
        assert (md.partition, md.offset) == (3, 0)
        assert batch.append(value=b"late") is None  # sent: closed
        empty = await (await producer.send_batch(producer.create_batch(), "t", partition=None))
        assert empty is None
        values = [(r.key, r.value, r.partition) for r in producer.history]
    assert values[:3] == [
        (b"a", b"1", default_partition(b"a", 4)),
        (b"b", b"2", default_partition(b"b", 4)),
        (b"c", b"3", default_partition(b"c", 4)),
    ]
    assert values[3:] == [(b"x", b"y", 3), (b"z", b"w", 3)]
    assert [r.timestamp for r in producer.history[3:]] == [5, 6]


async def test_acks_0_resolves_to_none_as_the_real_producer() -> None:
    async with MockProducer(acks=0) as producer:
        assert await producer.send_and_wait("t", b"v") is None


async def test_interceptors_see_each_record_and_its_outcome() -> None:
    seen: list[tuple[str, object]] = []

    class Tagger:
        def on_send(self, record: ProducerRecord) -> ProducerRecord:
            seen.append(("send", record.value))
            return record._replace(headers=[("tag", b"1")])

        def on_acknowledgement(
            self, metadata: RecordMetadata | None, exception: BaseException | None
        ) -> None:
            seen.append(("ack", exception if exception else metadata and metadata.offset))

    async with MockProducer(interceptors=[Tagger()], auto_complete=False) as producer:
        await producer.send("t", b"a")
        await producer.send("t", b"b")
        producer.complete_next()
        boom = RuntimeError("no")
        producer.fail_next(boom)
        await asyncio.sleep(0)  # done callbacks
    assert seen == [("send", b"a"), ("send", b"b"), ("ack", 0), ("ack", boom)]
    assert producer.history[0].headers == (("tag", b"1"),)


async def test_partition_counts_per_topic_and_default() -> None:
    async with MockProducer(partitions={"big": 12}, default_partitions=3) as producer:
        assert await producer.partitions_for("big") == set(range(12))
        assert await producer.partitions_for("other") == {0, 1, 2}
        with pytest.raises(ValueError, match="out of range for 'other', which has 3"):
            await producer.send("other", b"v", partition=3)
    with pytest.raises(ValueError, match="must be an int >= 1"):
        MockProducer(partitions={"t": 0})


async def test_it_is_an_aiokafka_producer() -> None:
    producer: AIOKafkaProducer[bytes, bytes] = MockProducer()
    assert isinstance(producer, AIOKafkaProducer)
    async with producer:
        assert producer.metrics() == {}
        assert producer.config.client_id  # named as the real one: producer-N


# -- transactions ------------------------------------------------------------------------


async def test_committed_and_aborted_transactions_are_recorded() -> None:
    async with MockProducer(transactional_id="app") as producer:
        async with producer.transaction():
            await producer.send("out", b"1")
            await producer.send_offsets_to_transaction({TopicPartition("in", 0): 10}, "group")
        with pytest.raises(RuntimeError, match="app failed"):
            async with producer.transaction():
                await producer.send("out", b"2")
                raise RuntimeError("app failed")
        await producer.begin_transaction()
        await producer.send("out", b"3")
        assert [t.outcome for t in producer.transactions] == ["committed", "aborted", "open"]
    # stop() aborted the open transaction, as the real producer does.
    assert [t.outcome for t in producer.transactions] == ["committed", "aborted", "aborted"]
    assert [r.value for r in producer.committed] == [b"1"]
    assert [r.value for r in producer.aborted] == [b"2", b"3"]
    assert [r.value for r in producer.history] == [b"1", b"2", b"3"]
    assert producer.transactions[0].offsets == {
        "group": {TopicPartition("in", 0): OffsetAndMetadata(10, "")}
    }


async def test_transaction_states_are_the_real_producers() -> None:
    async with MockProducer(transactional_id="app") as producer:
        with pytest.raises(IllegalStateError, match="can only send inside a transaction"):
            await producer.send("t", b"v")
        with pytest.raises(IllegalStateError, match="no transaction to commit"):
            await producer.commit_transaction()
        await producer.begin_transaction()
        with pytest.raises(IllegalStateError, match="already in transaction"):
            await producer.begin_transaction()
        await producer.abort_transaction()
    async with MockProducer() as plain:
        with pytest.raises(IllegalStateError, match="need a transactional_id"):
            await plain.begin_transaction()


async def test_commit_waits_for_pending_records() -> None:
    async with MockProducer(transactional_id="app", auto_complete=False) as producer:
        await producer.begin_transaction()
        fut = await producer.send("t", b"v")
        committing = asyncio.create_task(producer.commit_transaction())
        assert await _not_done_after_a_while(committing)
        assert producer.transactions[0].outcome == "open"
        producer.complete_next()
        await asyncio.wait_for(committing, 1)
        assert fut.result().offset == 0
        assert producer.transactions[0].outcome == "committed"


async def test_a_failed_record_makes_the_transaction_abort_only() -> None:
    async with MockProducer(transactional_id="app", auto_complete=False) as producer:
        await producer.begin_transaction()
        await producer.send("t", b"v")
        producer.fail_next(RuntimeError("record failed"))
        with pytest.raises(TransactionAbortRequiredError, match="record failed"):
            await producer.commit_transaction()
        with pytest.raises(TransactionAbortRequiredError):
            await producer.send("t", b"more")
        await producer.abort_transaction()
        assert producer.transactions[0].outcome == "aborted"
        await producer.begin_transaction()  # usable again


async def test_abort_fails_the_transactions_pending_records() -> None:
    async with MockProducer(transactional_id="app", auto_complete=False) as producer:
        await producer.begin_transaction()
        fut = await producer.send("t", b"v")
        await producer.abort_transaction()
        assert isinstance(fut.exception(), TransactionAbortedError)
        assert producer.pending == []


async def test_fenced_producer_fails_every_later_call() -> None:
    async with MockProducer(transactional_id="app", auto_complete=False) as producer:
        await producer.begin_transaction()
        fut = await producer.send("t", b"v")
        producer.fence()
        assert isinstance(fut.exception(), ProducerFencedError)
        for call in (
            lambda: producer.send("t", b"v"),
            producer.commit_transaction,
            producer.flush,
        ):
            with pytest.raises(ProducerFencedError):
                await call()
    async with MockProducer() as plain:
        with pytest.raises(IllegalStateError, match="transactional_id"):
            plain.fence()


def test_used_from_another_event_loop_it_fails_at_once() -> None:
    # The real producer's check (inherited): a producer belongs to the loop that started it.
    producer = MockProducer()
    asyncio.run(producer.start())
    with pytest.raises(WrongEventLoopError, match="started in event loop"):
        asyncio.run(producer.send("t", b"v"))


async def test_stop_never_hangs_on_a_commit_waiting_for_pending_records() -> None:
    """stop() waits for pending records at most its timeout (none by default), also when
    a commit is waiting for them: they fail, the commit fails with them (nothing of the
    transaction is committed), and the transaction is aborted. It used to wait for the
    commit's max_block_ms (60 s by default)."""
    producer = MockProducer(transactional_id="app", auto_complete=False)
    await producer.start()
    await producer.begin_transaction()
    fut = await producer.send("t", b"v")
    committing = asyncio.create_task(producer.commit_transaction())
    assert await _not_done_after_a_while(committing)
    async with asyncio.timeout(2):
        await producer.stop()
    assert isinstance(fut.exception(), KafkaTimeoutError)
    with pytest.raises(TransactionAbortRequiredError, match="stopped before this record"):
        await committing
    assert [t.outcome for t in producer.transactions] == ["aborted"]
    assert producer.committed == []
