"""RecordAccumulator's memory budget and its bulk path, at unit level.

No broker here, on purpose: these tests need the accumulator in states a
running sender would leave at once (memory held by a batch that is "in
flight" until the test says it is done, a shutdown landing while send_many is
between two batches). The end-to-end behaviour is in test_send_many.py.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest

from aiokafka_lite._internal.accumulator import (
    BATCH_MEMORY,
    SEND_BOUND,
    BulkDelivery,
    ProducerBatch,
    RecordAccumulator,
)
from aiokafka_lite._internal.compression import get_codec
from aiokafka_lite._internal.placement import RecordPlacement
from aiokafka_lite._internal.records import MAX_RECORD_OVERHEAD
from aiokafka_lite.config import ProducerConfig
from aiokafka_lite.errors import DeliveryFailedError, KafkaTimeoutError

TS = 1_700_000_000_000
# A budget in which a send() record of 1,400 bytes is held and a waiter reserving the
# bound of a 1,000-byte one (plus what it may hold: SEND_BOUND) does not fit beside it,
# but two small records fit once the large one is gone. (SEND_BOUND depends on the build.)
LIMIT = 2000 + 2 * SEND_BOUND


def accumulator(buffer_memory: int, batch_size: int = 1000) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=batch_size,
        linger_ms=0,
        buffer_memory=buffer_memory,
        delivery_timeout_ms=60_000,
        max_in_flight_per_partition=1,
        wakeup=lambda: None,
    )


def hold(acc: RecordAccumulator, value_size: int) -> ProducerBatch:
    """Append one record to partition 0 and take its batch as the sender would."""
    assert acc.try_append("t", 0, TS, None, b"x" * value_size, None, value_size + 100) is not None
    q = acc.queue_for("t", 0)
    (batch,) = acc.drain([q], 1 << 20)
    return batch


def deliver(acc: RecordAccumulator, batch: ProducerBatch) -> None:
    acc.in_flight_done(batch)
    batch.complete(0, -1, 0)
    acc.deallocate(batch)


async def waiting(acc: RecordAccumulator, n: int) -> None:
    """Let the task just created run up to its wait for memory."""
    await asyncio.sleep(0)
    assert acc.waiting_for_memory == n


async def test_memory_reserved_but_unused_by_append_goes_to_the_next_waiter() -> None:
    acc = accumulator(LIMIT)
    held = hold(acc, 1400)
    # The first waiter reserves a loose upper bound (1000) for a small record;
    # the second needs 1100, which fits as soon as the first gives back its rest.
    first = asyncio.create_task(acc.append("t", 1, TS, None, b"a", None, 1000, 5))
    await waiting(acc, 1)
    second = asyncio.create_task(acc.append("t", 2, TS, None, b"b", None, 1100, 5))
    await waiting(acc, 2)
    deliver(acc, held)
    await asyncio.wait_for(first, 2)
    assert acc.waiting_for_memory == 0, "the unused reservation was kept from the next waiter"
    await asyncio.wait_for(second, 2)
    assert acc.used <= acc.limit


async def test_memory_reserved_but_unused_by_append_run_goes_to_the_next_waiter() -> None:
    # Batches of BATCH_MEMORY + 1000 bytes; a large record held takes the room of the
    # waiter below and of a whole batch.
    acc = accumulator(LIMIT + BATCH_MEMORY, batch_size=BATCH_MEMORY + 1000)
    held = hold(acc, BATCH_MEMORY + 1400)
    blocked = asyncio.create_task(acc.append("t", 1, TS, None, b"a", None, 600, 5))
    await waiting(acc, 1)
    delivery = BulkDelivery(acc.create_future(), "t", 1)
    # Behind a waiter, append_run reserves a whole batch for one small record.
    bulk = asyncio.create_task(
        acc.append_run(
            "t", 2, TS, [None], [b"small"], 0, [0], delivery, deadline=time.monotonic() + 5
        )
    )
    await waiting(acc, 2)
    last = asyncio.create_task(acc.append("t", 3, TS, None, b"b", None, 500, 5))
    await waiting(acc, 3)
    deliver(acc, held)  # grants 600 + 1000; 500 more does not fit yet
    await asyncio.wait_for(blocked, 2)
    await asyncio.wait_for(bulk, 2)
    assert acc.waiting_for_memory == 0, "the unused reservation was kept from the next waiter"
    await asyncio.wait_for(last, 2)


async def test_send_many_stops_appending_once_the_accumulator_is_shut_down() -> None:
    # batch_size 200 and 50 records of ~60 bytes: several batches, and
    # append_run yields after each one fills.
    acc = accumulator(1 << 20, batch_size=200)
    delivery = BulkDelivery(acc.create_future(), "t", 50)
    values: list[bytes | None] = [b"v" * 50] * 50
    bulk = asyncio.create_task(
        acc.append_run(
            "t",
            0,
            TS,
            [None] * 50,
            values,
            0,
            list(range(50)),
            delivery,
            deadline=time.monotonic() + 5,
        )
    )
    await asyncio.sleep(0)  # append_run fills the first batch and yields
    assert not bulk.done()
    stopped = KafkaTimeoutError("the producer was stopped")
    aborted = acc.abort_undrained(stopped)  # what Sender.stop does once its timeout is up
    assert aborted
    await asyncio.wait_for(bulk, 2)
    delivery.seal()

    assert delivery.future.done(), "records appended after the shutdown are never reported"
    with pytest.raises(DeliveryFailedError) as info:
        delivery.future.result()
    assert sorted(info.value.errors) == list(range(50))
    assert all(e is stopped for e in info.value.errors.values())
    assert not acc.has_incomplete() and acc.used == 0


async def test_append_refuses_after_the_accumulator_is_shut_down() -> None:
    acc = accumulator(LIMIT)
    held = hold(acc, 1400)
    waiter = asyncio.create_task(acc.append("t", 1, TS, None, b"a", None, 1000, 5))
    await waiting(acc, 1)
    deliver(acc, held)  # grants the waiter; it has not run yet
    stopped = KafkaTimeoutError("the producer was stopped")
    acc.fail_waiters(stopped)
    acc.abort_undrained(stopped)
    with pytest.raises(KafkaTimeoutError):
        await asyncio.wait_for(waiter, 2)
    assert not acc.has_incomplete() and acc.used == 0


async def test_a_learned_compression_ratio_sizes_every_partitions_next_batch() -> None:
    codec = get_codec("gzip")
    assert codec is not None
    acc = RecordAccumulator(
        batch_size=1000,
        linger_ms=0,
        buffer_memory=1 << 20,
        delivery_timeout_ms=60_000,
        max_in_flight_per_partition=1,
        wakeup=lambda: None,
        compress=codec.compressor(None),
        codec_id=codec.id,
    )
    assert acc.try_append("t", 0, TS, None, b"a", None, 200) is not None
    open_batch = acc.queue_for("t", 0).batches[-1]
    acc.observe_compression("t", raw=10_000, compressed=2_000)  # 5:1
    expected = int(1000 / (0.2 * 1.05))  # batch_size / (ratio with Java's 5% margin)
    # A partition never used before, and one whose open batch is taken: their
    # next batches may hold that much uncompressed.
    assert acc.try_append("t", 1, TS, None, b"b", None, 200) is not None
    assert acc.queue_for("t", 1).batch_limit == expected
    open_batch.full = True
    assert acc.try_append("t", 0, TS, None, b"c", None, 200) is not None
    assert acc.queue_for("t", 0).batches[-1] is not open_batch
    assert acc.queue_for("t", 0).batch_limit == expected
    # Another topic has learned nothing: ratio 1.0, with the margin.
    assert acc.queue_for("other", 0).batch_limit == int(1000 / 1.05)


def soon() -> float:
    """A deadline (monotonic clock) that these tests never reach."""
    return time.monotonic() + 5


class Partitions:
    """What the keyless placement reads of the metadata: ``n`` partitions, all up."""

    def __init__(self, topic: str, n: int) -> None:
        self.partitions_by_topic = {topic: tuple(range(n))}
        self.cluster = self
        self.available_partitions_by_topic = {topic: list(range(n))}


@pytest.mark.parametrize("door", ["send", "send_many"])
async def test_a_keyless_record_that_waited_for_memory_is_placed_as_send_places_it(
    door: str,
) -> None:
    """A keyless record that waits for memory is placed when the memory comes, by either
    door: here it then closes its sticky partition's batch, which moves the topic on
    (batch_size bytes went there and the batch is full), and it goes to the next
    partition, counted there. The record of ``send()`` and that of ``send_many()`` land
    alike, and the partitioner's state after them is the same."""
    topic, batch_size = "k", 1000
    acc = accumulator(1 << 16, batch_size=batch_size)
    placement = RecordPlacement(ProducerConfig.from_kwargs(max_batch_size=batch_size))
    placement.metadata = Partitions(topic, 1000)  # type: ignore[assignment]
    placement.partitioner.seed(random.Random(7))
    keyless = placement.partitioner
    value = b"v" * 300
    size = MAX_RECORD_OVERHEAD + len(value)
    for _ in range(6):  # two batches of three on the sticky partition, the second open
        assert acc.try_append(topic, -1, TS, None, value, None, size, keyless) is not None
    first = keyless.current[topic]
    assert [b.count for b in acc.queue_for(topic, first).batches] == [3, 3]
    held = hold(acc, acc.limit - acc.used - SEND_BOUND - 300)  # too little left for a 7th
    if door == "send":
        task: asyncio.Task[Any] = asyncio.create_task(
            acc.append(topic, -1, TS, None, value, None, size, 5, keyless)
        )
    else:
        delivery = BulkDelivery(acc.create_future(), topic, 1)
        keys: list[bytes | None] = [None]
        task = asyncio.create_task(
            acc.append_run(topic, -1, TS, keys, [value], 0, [0], delivery, soon(), keyless)
        )
    await waiting(acc, 1)
    deliver(acc, held)
    await asyncio.wait_for(task, 2)
    moved = keyless.current[topic]
    assert moved != first  # (this seed's draw: another of the 1,000 partitions)
    assert acc.queue_for(topic, first).batches[-1].full
    (batch,) = acc.queue_for(topic, moved).batches  # the record started a batch there
    assert batch.count == 1
    assert keyless.produced[topic] == len(batch.buf)  # its bytes, with the batch's header
