"""A task that awaits ``send()`` in a loop lets the sender send its full batches.

``send()`` suspends only for metadata or memory, so a loop of ``await send()`` never
lets the event loop turn: without a hand-over the sender would send nothing until the
loop ended or the buffer ran out, and the broker would idle meanwhile. A task fills a
batch when its record does not fit the open one; when that task sends again on the
general path, ``send()`` yields once before it appends (``aiokafka_lite._internal.hand_over``):
for plain records, which the fast path takes, that is mostly the task's next fill, for
any other record its next send. Checked against the real broker, keyed and keyless in both
twins of the fast path and on the general path alone: the loop's early records are
acknowledged while it runs; records keep their order; a send cancelled in the yield
appends nothing; one whose producer stops meanwhile raises; and tasks that each send
once (``gather``, request handlers in rounds) never yield there (the call order of a
gather is also pinned by
``test_send_path.test_records_of_concurrent_sends_keep_the_order_of_the_calls``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import TopicFactory
from loop_turns import counting_turns
from partition_checks import java_partition
from readers import read_all_confluent
from test_send_path import TWINS, path_of, started

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite._internal.hand_over import HAND_OVER_SLICE, hand_over
from aiokafka_lite.errors import ProducerClosedError
from aiokafka_lite.producer import _no_fast_path

# 2 KiB batches hold ~17 of these records: a batch fills every ~17 sends.
BATCH = 2048
LOOP = 100_000  # ~11.5 MB: inside the 32 MiB buffer, so no send waits for memory


# keyed and keyless records in each twin of the fast path, and records that take the
# general path only (a producer without a fast path, as with a serializer)
CASES = [pytest.param(p.values[0], b"k", id=p.id) for p in TWINS]
CASES += [pytest.param(p.values[0], None, id=f"{p.id}-keyless") for p in TWINS]
CASES.append(pytest.param(None, None, id="general"))


def value(i: int) -> bytes:
    return b"%05d" % i + b"v" * 100


def use_twin(cls: Any, producer: AIOKafkaProducer[Any, Any]) -> None:
    """Give the producer's send() a fast path of twin ``cls`` (start() picks the built one;
    None: no fast path, every record takes the general path)."""
    if cls is None:
        producer._fast_append = _no_fast_path
        return
    path = path_of(cls, producer)
    producer._fast_append = path.append


@contextlib.asynccontextmanager
async def first_sent(
    cls: Any, bootstrap: str, topic_factory: TopicFactory
) -> AsyncIterator[tuple[AIOKafkaProducer[Any, Any], str]]:
    """A started producer (``BATCH``-byte batches) with the fast path of twin ``cls`` (see
    :func:`use_twin`), and a new one-partition topic where it sent a first record
    (b"first", at offset 0)."""
    topic = topic_factory(1)
    async with started(bootstrap, batch_size=BATCH, linger_ms=5) as producer:
        use_twin(cls, producer)
        await producer.send_and_wait(topic, b"first", b"k")
        yield producer, topic


@pytest.mark.parametrize(("cls", "key"), CASES)
async def test_a_loop_of_awaited_sends_gets_acknowledgements_while_it_runs(
    cls: Any, key: bytes | None, bootstrap: str, topic_factory: TopicFactory
) -> None:
    async with first_sent(cls, bootstrap, topic_factory) as (producer, topic):
        futures = []
        for i in range(LOOP):
            futures.append(await producer.send(topic, value(i), key))
            if futures[0].done():
                break
        # Without the hand-over the loop never lets the sender run: nothing is sent
        # (let alone acknowledged) before it ends.
        assert futures[0].done(), "no record was acknowledged while the loop ran"
        assert len(futures) < LOOP
        offsets = [md.offset for md in await asyncio.gather(*futures)]
        assert offsets == list(range(1, 1 + len(futures)))
    read = read_all_confluent(bootstrap, topic, 1 + len(futures))
    assert [r.value for r in read] == [b"first", *(value(i) for i in range(len(futures)))]


async def test_a_loop_of_awaited_send_batch_calls_gets_acknowledgements_while_it_runs(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """send_batch() queues the batch, wakes the sender and yields once (hand_over.pass_on):
    the loop's first batches are acknowledged while it goes on building more."""
    async with first_sent(None, bootstrap, topic_factory) as (producer, topic):
        await asyncio.sleep(0.2)  # the sender has nothing to do: it sleeps until woken
        futures, n = [], 0
        while n < LOOP and not (futures and futures[0].done()):
            batch = producer.create_batch()
            for _ in range(10):
                assert batch.append(key=None, value=value(n), timestamp=None) is not None
                n += 1
            futures.append(await producer.send_batch(batch, topic, partition=0))
        # Without the wake the idle sender sleeps on: nothing is sent (let alone
        # acknowledged) before the loop ends.
        assert futures[0].done(), "no batch was acknowledged while the loop ran"
        assert n < LOOP
        offsets = [md.offset for md in await asyncio.gather(*futures)]
        assert offsets == list(range(1, 1 + n, 10))
    read = read_all_confluent(bootstrap, topic, 1 + n)
    assert [r.value for r in read] == [b"first", *(value(i) for i in range(n))]


@pytest.mark.parametrize("call", ["send", "send_many", "send_batch"])
async def test_a_filler_hands_over_once_per_slice_and_its_batches_share_requests(
    call: str, bootstrap: str, topic_factory: TopicFactory
) -> None:
    """A loop of ``await send()``, or a bulk call, that fills batches faster than the
    hand-over slice yields at a full batch only once the loop last turned a slice ago or
    more: its turns are bounded by its time, not by its fills (~4,800 here), and the
    batches of a slice leave together, several to a request (one per partition), instead
    of a request each. Every record is read back by confluent-kafka, in order per
    partition."""
    topic = topic_factory(4)
    keys = [b"k%d" % (i % 97) for i in range(40_000)]
    async with started(bootstrap, batch_size=BATCH // 2, linger_ms=5) as producer:
        await producer.partitions_for(topic)
        fills = 0
        futures: list[Any] = []
        async with counting_turns() as turns:
            started_at = time.monotonic()
            if call == "send":
                futures = [await producer.send(topic, value(i), k) for i, k in enumerate(keys)]
                fills = producer._acc.fills
            elif call == "send_many":
                futures.append(
                    await producer.send_many(topic, [(k, value(i)) for i, k in enumerate(keys)])
                )
                fills = producer._sender.batches_sent + sum(
                    len(q.batches)
                    for parts in producer._acc.queues.values()
                    for q in parts.values()
                )
            else:
                parts = [java_partition(k, 4) for k in keys]
                open_batches = [producer.create_batch() for _ in range(4)]
                for i, (k, p) in enumerate(zip(keys, parts, strict=True)):
                    if open_batches[p].append(key=k, value=value(i), timestamp=None) is None:
                        futures.append(
                            await producer.send_batch(open_batches[p], topic, partition=p)
                        )
                        fills += 1
                        open_batches[p] = producer.create_batch()
                        assert open_batches[p].append(key=k, value=value(i), timestamp=None)
                for p, b in enumerate(open_batches):
                    futures.append(await producer.send_batch(b, topic, partition=p))
            took = time.monotonic() - started_at
        await asyncio.gather(*futures)
        requests, batches = producer._sender.requests_sent, producer._sender.batches_sent
    assert fills > 4_000
    # At most a yield per slice, each giving the ticker a turn or two; a yield per
    # fill would give it a turn per fill (a fill takes ~10-100 µs here, a slice 1 ms).
    assert HAND_OVER_SLICE == 0.001  # the slice the docs promise (1 ms; linger 5 ms)
    assert turns.count <= 2 * (took / 0.001 + 1) + 2, (turns, took, fills)
    assert batches >= 1.5 * requests, (batches, requests)
    read = read_all_confluent(bootstrap, topic, len(keys))
    for p in range(4):
        got = [r.value for r in read if r.partition == p]
        assert got == [value(i) for i, k in enumerate(keys) if java_partition(k, 4) == p]


async def test_with_linger_0_a_send_batch_loop_yields_at_every_batch(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """``linger_ms=0`` makes the hand-over slice 0: every ``send_batch()`` call yields, so
    a task counting its turns of the loop gets one per call, however fast they come."""
    topic = topic_factory(1)
    async with started(bootstrap, linger_ms=0) as producer:
        assert producer._acc.hand_over_slice == 0
        await producer.partitions_for(topic)
        futures = []
        async with counting_turns() as turns:
            for i in range(300):
                batch = producer.create_batch()
                assert batch.append(key=None, value=value(i), timestamp=None)
                futures.append(await producer.send_batch(batch, topic, partition=0))
        assert turns.count >= 300, turns
        offsets = [md.offset for md in await asyncio.gather(*futures)]
        assert offsets == list(range(300))


async def test_a_batch_whose_call_did_not_yield_leaves_at_the_callers_next_await(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """Right after a sender pass the slice is running: ``send_batch()`` queues its batch,
    wakes the sender and returns without yielding. A caller that then computes without
    awaiting holds the batch back (nothing else can run: the loop does not turn); at its
    next await the sender takes it, before the caller resumes."""
    topic = topic_factory(2)
    async with started(bootstrap, linger_ms=5) as producer:
        await producer.send_and_wait(topic, b"first", partition=0)
        skipped = 0
        for i in range(5):
            await asyncio.sleep(0.01)
            batch = producer.create_batch()
            assert batch.append(key=None, value=value(i), timestamp=None)
            # Another record starts a batch (waking the sender) and the loop turns: a
            # sender pass runs just before the call, as in a busy producer.
            await producer.send(topic, b"other", partition=1)
            await asyncio.sleep(0)
            fut = await producer.send_batch(batch, topic, partition=0)
            queued = producer._acc.queues[topic][0].batches  # partition 0's queue
            skipped += bool(queued)  # still there: the call did not yield
            time.sleep(0.02)  # noqa: ASYNC251 (the caller's own work, no await)
            await asyncio.sleep(0)  # the caller's next await: one turn of the loop
            assert not queued, "the batch did not leave at the caller's next await"
            assert (await fut).offset == 1 + i
        assert skipped, "no call skipped its yield: the case is not reached"


@dataclass
class Looping:
    producer: AIOKafkaProducer[Any, Any]
    topic: str
    task: asyncio.Task[None]  # awaiting send() in a loop
    futures: list[Any]  # what its sends have returned


@contextlib.asynccontextmanager
async def in_its_first_hand_over(
    cls: Any, key: bytes | None, bootstrap: str, topic_factory: TopicFactory
) -> AsyncIterator[Looping]:
    """:func:`first_sent`'s producer and topic, and a task awaiting send() of ``key``'s
    records in a loop, started and now in its first hand-over's yield; and the futures
    its sends have returned so far."""
    async with first_sent(cls, bootstrap, topic_factory) as (producer, topic):
        futures: list[Any] = []

        async def sending() -> None:
            for i in range(LOOP):
                futures.append(await producer.send(topic, value(i), key))

        task = asyncio.create_task(sending())
        await asyncio.sleep(0)  # the loop runs until its first hand-over yields
        assert not task.done() and 0 < len(futures) < LOOP
        yield Looping(producer, topic, task, futures)


@pytest.mark.parametrize(("cls", "key"), CASES)
async def test_a_send_cancelled_while_it_hands_over_appends_nothing(
    cls: Any, key: bytes | None, bootstrap: str, topic_factory: TopicFactory
) -> None:
    async with in_its_first_hand_over(cls, key, bootstrap, topic_factory) as looping:
        looping.task.cancel()  # ... in that yield: the send in progress raises
        with pytest.raises(asyncio.CancelledError):
            await looping.task
        n = len(looping.futures)
        # Exactly the records whose futures were returned are sent: the next record
        # sent gets the offset after them.
        after = await looping.producer.send_and_wait(looping.topic, b"after", b"k")
        assert after.offset == 1 + n
        assert [md.offset for md in await asyncio.gather(*looping.futures)] == list(range(1, 1 + n))
    read = read_all_confluent(bootstrap, looping.topic, 3 + n, idle=2.0, at_least=2 + n)
    assert [r.value for r in read] == [b"first", *(value(i) for i in range(n)), b"after"]


@pytest.mark.parametrize(("cls", "key"), CASES)
async def test_a_send_whose_producer_stops_while_it_hands_over_raises(
    cls: Any, key: bytes | None, bootstrap: str, topic_factory: TopicFactory
) -> None:
    async with in_its_first_hand_over(cls, key, bootstrap, topic_factory) as looping:
        n = len(looping.futures)
        await looping.producer.stop()  # begins before the loop resumes, delivers what was sent
        with pytest.raises(ProducerClosedError):
            await looping.task
        assert len(looping.futures) == n  # nothing appended after stop() began
        assert [f.result().offset for f in looping.futures] == list(range(1, 1 + n))
    read = read_all_confluent(bootstrap, looping.topic, 2 + n, idle=2.0, at_least=1 + n)
    assert [r.value for r in read] == [b"first", *(value(i) for i in range(n))]


@pytest.mark.parametrize(("cls", "key"), CASES)
async def test_tasks_that_each_send_once_never_yield_to_hand_over(
    cls: Any, key: bytes | None, bootstrap: str, topic_factory: TopicFactory
) -> None:
    """Each task of a gather finds at most one full batch: none of them yields, so every
    send() completes in the task's first step (it would not if a send() had yielded)."""
    async with first_sent(cls, bootstrap, topic_factory) as (producer, topic):
        tasks = [asyncio.create_task(producer.send(topic, value(i), key)) for i in range(2000)]
        await asyncio.sleep(0)  # every task has run its first step
        assert all(t.done() for t in tasks)
        futures = [t.result() for t in tasks]
        assert [md.offset for md in await asyncio.gather(*futures)] == list(range(1, 2001))


@pytest.mark.parametrize(("cls", "key"), CASES)
async def test_one_shot_tasks_in_rounds_keep_the_order_of_their_calls(
    cls: Any, key: bytes | None, bootstrap: str, topic_factory: TopicFactory
) -> None:
    """A server's request handlers: rounds of 1-3 tasks that each send one record. A new
    task often reuses the memory (and id()) of a finished one that filled the last batch;
    it must not be taken for that task and yield, or later tasks would append first."""
    rnd = random.Random(5)
    async with first_sent(cls, bootstrap, topic_factory) as (producer, topic):
        futures: list[Any] = []

        async def one(i: int) -> None:
            futures.append(await producer.send(topic, value(i), key))

        sent = 0
        for _ in range(1500):  # ~3,000 records: ~170 full batches
            tasks = [asyncio.create_task(one(sent + j)) for j in range(rnd.randint(1, 3))]
            sent += len(tasks)
            await asyncio.sleep(0)  # each task runs its one send() to the end
            assert all(t.done() for t in tasks), "a one-shot send() yielded"
            del tasks  # (finished: their memory may be reused by the next round's)
        offsets = [md.offset for md in await asyncio.gather(*futures)]
        assert offsets == list(range(1, 1 + sent))
    read = read_all_confluent(bootstrap, topic, 1 + sent)
    assert [r.value for r in read] == [b"first", *(value(i) for i in range(sent))]


async def test_a_send_outside_any_task_never_yields_for_a_filler_that_ended() -> None:
    """The remembered filler is compared with the running task. A filler that has ended
    (its weak reference gives None) must not match a ``send()`` stepped outside any task
    (``current_task()`` None too, as for a coroutine driven by a loop callback): that
    send goes straight on. (hand_over() is stepped by hand here: no broker is needed.)"""

    class Ended:  # (stands for a task that ended: what hand_over reads is the reference)
        pass

    ended = Ended()
    fills = SimpleNamespace(filler=weakref.ref(ended))
    del ended
    assert fills.filler() is None
    woken: list[int] = []
    stepped: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def step() -> None:
        coro = hand_over(fills, False, lambda: woken.append(1))
        try:
            coro.send(None)
        except StopIteration:
            stepped.set_result("went on")
        else:
            coro.close()
            stepped.set_result("yielded")

    asyncio.get_running_loop().call_soon(step)
    assert await stepped == "went on"
    assert woken == [] and fills.filler is None
