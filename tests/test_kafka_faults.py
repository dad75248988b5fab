"""Faults on a real 3-node Apache Kafka cluster while records stream.

Replication factor 3, ``min.insync.replicas=2``, ``acks=all``, idempotence on (the
producer's defaults). Each case hits the cluster while a :class:`kafka_faults.Stream`
keeps sending, and ends with the same checks: every future resolved (none pending,
counted), failures only of the allowed, named kinds, no task of the producer left after
``stop()``, and every acknowledged record read back exactly once, where its metadata
says, in send order per partition, by two independent consumers: confluent-kafka and
Java's console consumer (both ``read_committed``).

The cluster is shared by the module; each case starts from :func:`kafka_faults.heal`
(every node up, every partition fully in sync) and may leave nodes down for the next
one to bring back. Transactions: tests/test_kafka_faults_txn.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from invariants import Watch
from kafka_cluster import KafkaCluster
from kafka_faults import (
    FAULT_MARKS,
    Stream,
    add_partitions,
    busiest_leader,
    delete_topic,
    fully_replicated,
    keyed,
    leaders,
    named_cause,
    new_topic,
    producer_for,
    read_back_both,
    streaming,
    wait_for,
)
from partition_checks import java_partition
from test_faults_checks import Outcome, check_errors, outcome_of, value

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import (
    DeliveryOutcomeUnknownError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NotEnoughReplicasError,
    UnknownTopicOrPartitionError,
)

pytestmark = FAULT_MARKS


async def finish(
    cluster: KafkaCluster,
    producer: AIOKafkaProducer,
    stream: Stream,
    watch: Watch,
    *,
    allowed: tuple[type[BaseException], ...] = (),
    within: float = 60.0,
    key: Callable[[int], bytes | None] | None = None,
    read_back: bool = True,
) -> Outcome:
    """Stop the stream, settle every future, stop the producer, check, read back, check."""
    await stream.stop()
    if stream.futures:
        await asyncio.wait(stream.futures, timeout=within)
    outcome = outcome_of(stream.futures)
    assert not outcome.pending, (
        f"{len(outcome.pending)} of {len(stream.futures)} futures pending after {within} s"
    )
    # stop() within its timeout, no pending future, every failure named, no task left
    watch_errors = await watch.stop_and_check(producer, stream.futures, stop_timeout=10)
    assert len(watch_errors) == len(outcome.failed)
    kinds = sorted({type(e).__name__ for e in outcome.failed.values()})
    print(f"{stream.topic}: {len(outcome.acked)} acked, {len(outcome.failed)} failed {kinds}")
    for kind in kinds:
        sample = next(e for e in outcome.failed.values() if type(e).__name__ == kind)
        print("  ", named_cause(sample))
    check_errors(outcome, allowed)
    for i, exc in outcome.failed.items():
        # The user reads what failed (the topic) and why (the broker's error or the
        # connection failure behind a timeout).
        text = named_cause(exc)
        assert stream.topic in text, f"record {i}: the error does not name the topic: {text}"
        if isinstance(exc, KafkaTimeoutError):
            assert "last error" in str(exc), f"record {i}: a timeout without its cause: {text}"
    if read_back:
        await read_back_both(cluster, stream.topic, outcome, key=key)
    return outcome


async def begin_stream(
    cluster: KafkaCluster,
    key: Callable[[int], bytes | None] = keyed,
    partitions: int = 6,
    **config: Any,
) -> tuple[Watch, AIOKafkaProducer, Stream]:
    """The watch begun, then a started producer (:func:`producer_for` with ``config``)
    streaming records keyed by ``key`` to a new topic of ``partitions`` (``stream.topic``)."""
    watch = Watch.begin()
    topic = new_topic(cluster, partitions)
    producer = producer_for(cluster, **config)
    await producer.start()
    return watch, producer, await streaming(producer, topic, key)


async def fault_busiest_leader(
    cluster: KafkaCluster, stream: Stream, used: set[int], fault: Callable[[int], Any]
) -> int:
    """``fault(node)`` (in a thread) on the node leading most of the stream's partitions;
    returns once every partition in ``used`` acknowledged records sent after it. The node."""
    node = busiest_leader(cluster, stream.topic)
    mark = len(stream.futures)
    await asyncio.to_thread(fault, node)
    await stream.progress(mark, used)
    return node


async def test_leader_of_busy_partitions_killed(healthy: KafkaCluster) -> None:
    """kill -9 of the node leading most partitions: leaders move, nothing fails or doubles."""
    watch, producer, stream = await begin_stream(healthy)
    used = stream.acked_partitions(0)
    # every partition written again, under new leaders
    await fault_busiest_leader(healthy, stream, used, healthy.kill)
    await finish(healthy, producer, stream, watch, key=keyed)


async def test_controlled_restart_of_a_leader(healthy: KafkaCluster) -> None:
    """SIGTERM (controlled shutdown) of a leader, then start it again, while streaming."""
    watch, producer, stream = await begin_stream(healthy)
    used = stream.acked_partitions(0)
    node = await fault_busiest_leader(healthy, stream, used, healthy.stop_node)
    await asyncio.to_thread(healthy.start_node, node)
    await asyncio.to_thread(wait_for, lambda: fully_replicated(healthy), 90, "node back in ISR")
    mark = len(stream.futures)
    await stream.progress(mark, used)
    await finish(healthy, producer, stream, watch, key=keyed)


@pytest.mark.timeout(300)
async def test_rolling_restart_of_all_nodes(healthy: KafkaCluster) -> None:
    """Each node in turn: controlled shutdown, records flow, start, back in sync."""
    watch, producer, stream = await begin_stream(healthy)
    used = stream.acked_partitions(0)
    for node in healthy.nodes:
        await asyncio.to_thread(healthy.stop_node, node.node_id)
        await stream.progress(len(stream.futures), used)
        await asyncio.to_thread(healthy.start_node, node.node_id)
        await asyncio.to_thread(wait_for, lambda: fully_replicated(healthy), 90, "back in ISR")
    await stream.progress(len(stream.futures), used)
    await finish(healthy, producer, stream, watch, key=keyed)


@pytest.mark.timeout(300)
async def test_two_nodes_down_then_back(healthy: KafkaCluster) -> None:
    """Two of three nodes killed (no quorum, fewer than min.insync.replicas), then back.

    Records sent meanwhile are delivered once the nodes are back, or fail with a named
    error (a delivery timeout naming the partition and what held it back); none
    acknowledged is lost or doubled. The outage lasts until records fail, so that the
    producer bumps its epoch (KIP-360: the same producer id, the next epoch, which
    fences the old epoch's requests): a record that failed but was written anyway (the
    survivor had appended it) is still in send order in its partition.
    """
    watch, producer, stream = await begin_stream(
        healthy, request_timeout_ms=5000, delivery_timeout_ms=20000
    )
    idem = producer._sender._idem
    assert idem is not None
    first_id, first_epoch = idem.producer_id, idem.epoch
    used = stream.acked_partitions(0)
    survivor = healthy.node(1)
    down = [n for n in healthy.nodes if n is not survivor]
    for node in down:
        await asyncio.to_thread(healthy.kill, node.node_id)
    outage_start = len(stream.futures)
    # The outage lasts until a record failed (delivery_timeout_ms after it), at most 60 s.
    async with asyncio.timeout(60):
        while not any(f.done() and f.exception() for f in stream.futures[outage_start:]):  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    for node in down:
        await asyncio.to_thread(healthy.start_node, node.node_id, wait=False)
    await asyncio.to_thread(healthy.wait_ready)
    await stream.progress(len(stream.futures), used, timeout=90)
    outcome = await finish(
        healthy,
        producer,
        stream,
        watch,
        key=keyed,
        allowed=(KafkaTimeoutError, NotEnoughReplicasError, DeliveryOutcomeUnknownError),
        read_back=False,
    )
    written = await read_back_both(healthy, stream.topic, outcome, key=keyed)  # in send order
    assert survivor.alive
    during = [i for i in outcome.acked if i >= outage_start]
    assert during, "no record sent during the outage was delivered after it"
    print(f"producer id {first_id} epoch {first_epoch} -> id {idem.producer_id} epoch {idem.epoch}")
    assert idem.producer_id == first_id, "a new producer id, where KIP-360 bumps the epoch"
    if written:  # a failed record that had been sent: its sequence number was lost
        assert idem.epoch > first_epoch, "records failed after they were sent, and no new epoch"


@pytest.mark.timeout(300)
async def test_a_record_appended_before_an_error_is_not_written_twice_under_a_new_epoch(
    healthy: KafkaCluster,
) -> None:
    """A leader appends a record, then answers an error; the producer starts a new epoch
    before the record's retry. Re-sent under the new epoch it would be written twice
    (the broker cannot tell the copy from new records), so it fails as outcome unknown
    and is in the log once.

    A follower of the partition is paused (SIGSTOP): the leader appends the record and
    waits for that follower (``acks=all``) until the request's timeout, then answers
    REQUEST_TIMED_OUT. The client's own timer for the request runs out at the same
    moment; the test holds the client's event loop past it, as a busy machine would, so
    that the broker's answer is read first (asyncio handles ready sockets before due
    timers). A record too large for a second topic (``max.message.bytes``) then fails
    after it was numbered, which makes the producer start a new epoch while the first
    record waits for its retry. The follower stays paused until every record is settled:
    the controller fences it, and two replicas in sync are enough
    (``min.insync.replicas=2``), so a re-sent copy would be written.
    """
    topic = new_topic(healthy, 1)
    small = new_topic(healthy, 1, {"max.message.bytes": "1024"})
    led = {leaders(healthy, topic)[0], leaders(healthy, small)[0]}
    paused = next(n.node_id for n in healthy.nodes if n.node_id not in led)
    watch = Watch.begin()
    producer = producer_for(
        healthy, request_timeout_ms=2000, retry_backoff_ms=3000, retry_backoff_max_ms=3000
    )
    await producer.start()
    idem = producer._sender._idem
    assert idem is not None
    futures = [await producer.send(topic, value(0), partition=0)]
    await futures[0]
    await (await producer.send(small, b"fits", partition=0))  # its metadata, before the pause
    first_epoch = idem.epoch
    healthy.pause(paused)
    try:
        futures.append(await producer.send(topic, value(1), partition=0))
        # Hold the loop from 1.5 s to 3 s after the send: the broker answers at 2 s, and
        # fences the paused node 5 s or more after the pause.
        asyncio.get_running_loop().call_later(1.5, time.sleep, 1.5)
        async with asyncio.timeout(60):  # its answer puts it back for a retry
            while not producer.metrics().get("record-retry-total"):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        assert not futures[1].done()
        with pytest.raises(MessageSizeTooLargeError):
            await (await producer.send(small, b"x" * 4096, partition=0))
        await asyncio.wait(futures, timeout=60)
        assert idem.epoch > first_epoch, "the failed record did not start a new epoch"
    finally:
        healthy.resume(paused)
    # The record is committed once the paused node is fenced or has caught up.
    await asyncio.to_thread(wait_for, lambda: fully_replicated(healthy), 90, "full ISRs")
    outcome = outcome_of(futures)
    await watch.stop_and_check(producer, futures, stop_timeout=10)
    written = await read_back_both(healthy, topic, outcome)  # acked once; failed at most once
    assert sorted(outcome.acked) == [0] and not outcome.pending
    error = outcome.failed[1]
    assert isinstance(error, DeliveryOutcomeUnknownError), named_cause(error)
    assert "new epoch" in str(error) and f"{topic}[0]" in str(error), str(error)
    assert written == [1], "the record appended before the error is not in the log once"


async def test_partitions_added_mid_stream(healthy: KafkaCluster) -> None:
    """CreatePartitions 2 -> 4 while streaming: keyless records reach the new partitions
    after the next metadata refresh; keyed ones follow murmur2 over the new count."""

    def key_of(i: int) -> bytes | None:
        return None if i % 2 else f"k{i % 40}".encode()

    watch, producer, stream = await begin_stream(
        healthy, key_of, partitions=2, metadata_max_age_ms=1000, batch_size=512
    )
    topic = stream.topic
    before = len(stream.futures)
    await asyncio.to_thread(add_partitions, healthy, topic, 4)
    for _ in range(300):
        if len(await producer.partitions_for(topic)) == 4:
            break
        await asyncio.sleep(0.05)
    grown_at = len(stream.futures)
    assert len(await producer.partitions_for(topic)) == 4
    await stream.progress(grown_at, {0, 1, 2, 3})
    # Keyless records move on every few records (512-byte batches), to any of the four:
    # wait for them on every partition (timing out here if they never reach 2 or 3).
    await stream.progress(grown_at, {0, 1, 2, 3}, which=lambda i: key_of(i) is None)
    outcome = await finish(healthy, producer, stream, watch, key=key_of)
    for i, md in outcome.acked.items():
        k = key_of(i)
        if k is not None and (i < before or i >= grown_at):
            count = 2 if i < before else 4
            assert md.partition == java_partition(k, count), (i, md.partition)
    keyless_new = {md.partition for i, md in outcome.acked.items() if i >= grown_at and i % 2}
    assert keyless_new & {2, 3}, f"keyless records never reached a new partition: {keyless_new}"


async def test_topic_deleted_mid_stream(healthy: KafkaCluster) -> None:
    """The topic deleted while streaming: every future resolves; those that fail name the
    topic and the cause (unknown topic, or a delivery/metadata timeout); none is pending.

    Nothing is read back: the topic (and what was acknowledged in it) is gone.
    """
    watch, producer, stream = await begin_stream(
        healthy, partitions=3, request_timeout_ms=3000, delivery_timeout_ms=10000, max_block_ms=3000
    )
    topic = stream.topic
    await asyncio.to_thread(delete_topic, healthy, topic)
    deleted_at = len(stream.futures)
    # Streams on until send() itself refuses the topic (no metadata within max_block_ms).
    for _ in range(600):
        if stream.call_errors:
            break
        await asyncio.sleep(0.05)
    assert stream.call_errors, "send() kept accepting records for a deleted topic"
    outcome = await finish(
        healthy,
        producer,
        stream,
        watch,
        allowed=(UnknownTopicOrPartitionError, KafkaTimeoutError, DeliveryOutcomeUnknownError),
        within=30,
        read_back=False,
    )
    assert any(i >= deleted_at for i in outcome.failed), "no record failed after the deletion"
    for i, exc in stream.call_errors.items():
        assert topic in str(exc), f"send() of record {i} raised {exc!r}, not naming {topic}"
