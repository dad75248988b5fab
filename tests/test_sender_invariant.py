"""The sender's invariant: a batch taken from the accumulator is always in exactly one place.

In flight, back in its queue, or failed with a named error: whatever is raised while
the request is built, encoded or sent, or while its answer is handled, fails exactly
the batches involved (logged once, with the cause), and the sender goes on with the
rest. Every scenario runs against a scripted broker (tests/scripted_cluster.py, whose
log is parsed by kafka-python's reader) and ends with the shared invariants
(tests/invariants.py): no future pending after stop(), no task left, named errors.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from invariants import Watch
from scripted_broker import DEFAULT_API_VERSIONS, ReceivedRequest, answer
from scripted_cluster import INIT_PRODUCER_ID, PRODUCE, LogCluster

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite._internal.protocol.produce import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from aiokafka_lite.errors import (
    IncompatibleBrokerVersionError,
    KafkaTimeoutError,
    ProtocolError,
    RequestEncodingError,
)

STEP = 10.0  # far below delivery_timeout_ms (120 s): resolving by expiry would fail the test


async def settled(futures: list[asyncio.Future[Any]]) -> None:
    """Wait (bounded) until every future is done; fail the test otherwise."""
    _, pending = await asyncio.wait(futures, timeout=STEP)
    assert not pending, f"{len(pending)} of {len(futures)} futures unresolved after {STEP} s"


def producer_for(address: str, **config: Any) -> AIOKafkaProducer[Any, Any]:
    config.setdefault("request_timeout_ms", 3000)
    return AIOKafkaProducer(bootstrap_servers=address, **config)


async def test_a_broker_speaking_only_produce_v0_to_v2_fails_the_records_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Produce v3 (record batch v2) is the oldest we speak: every record fails, named,
    and the sender keeps running (a later record fails the same way)."""
    cluster = LogCluster()
    versions = dict(DEFAULT_API_VERSIONS)
    versions[PRODUCE] = (0, 2)
    watch = Watch.begin()
    async with cluster.running(api_versions=versions) as broker:
        producer = producer_for(broker.address)
        await producer.start()
        futures = [await producer.send("t", b"%d" % i, partition=i % 2) for i in range(4)]
        await settled(futures)
        later = await producer.send("t", b"later", partition=3)
        await settled([later])
        futures.append(later)
        errors = await watch.stop_and_check(producer, futures, stop_timeout=2)
    assert len(errors) == 5
    for e in errors:
        assert isinstance(e, IncompatibleBrokerVersionError)
        assert "v0-v2" in str(e) and "t[" in str(e)
    assert not cluster.log
    failures = [r for r in caplog.records if "IncompatibleBrokerVersion" in r.getMessage()]
    assert 1 <= len(failures) <= 4, [r.getMessage() for r in failures]


def _failing_codec(section: memoryview) -> bytes:
    raise RuntimeError("the codec failed")


async def test_a_batch_whose_close_raises_fails_alone_and_the_rest_is_delivered() -> None:
    """One batch cannot be closed: its codec raises when the batch is closed for sending.

    The codec of that open batch is replaced by one that raises (a mock, standing in
    for a codec library that fails, or any value the batch header cannot carry: send()
    refuses such values at the call, so this does not depend on those checks).
    Exactly that batch fails, named; the batches of the same request and the
    partition's later batches are delivered.
    """
    cluster = LogCluster()
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = producer_for(broker.address, linger_ms=50)
        await producer.start()
        good = [await producer.send("t", b"%d" % i, partition=i % 3) for i in range(12)]
        bad = await producer.send("t", b"bad", partition=3)
        producer._acc.queue_for("t", 3).batches[-1].compress = _failing_codec
        good += [await producer.send("t", b"%d" % i, partition=i % 3) for i in range(12, 16)]
        await settled([*good, bad])
        # The partition the bad batch was on keeps working.
        after = await producer.send("t", b"after", partition=3)
        await settled([after])
        errors = await watch.stop_and_check(producer, [*good, bad, after], stop_timeout=2)
    assert len(errors) == 1
    (error,) = errors
    assert isinstance(error, RequestEncodingError)
    assert "t[3]" in str(error) and "the codec failed" in str(error)
    assert isinstance(error.__cause__, RuntimeError)
    assert [f.result().offset for f in good] == [i // 3 for i in range(16)]
    values = {r.value for r in cluster.records()}
    assert values == {b"%d" % i for i in range(16)} | {b"after"}
    # The failed batch gave its sequence numbers back: no gap, so no new epoch.
    assert cluster.counts[INIT_PRODUCER_ID] == 1


async def test_a_request_whose_encoding_raises_fails_its_batches_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """request_timeout_ms past int32 cannot be encoded into Produce's timeout_ms.

    The config refuses such a value; it is forced into the started producer's config
    (msgspec's force_setattr skips validation) so that the real encoder raises.
    """
    cluster = LogCluster()
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = producer_for(broker.address)
        await producer.start()
        msgspec.structs.force_setattr(producer._sender._config, "request_timeout_ms", 2**31)
        futures = [await producer.send("t", b"%d" % i, partition=i % 4) for i in range(8)]
        await settled(futures)
        errors = await watch.stop_and_check(producer, futures, stop_timeout=2)
    assert len(errors) == 8
    for e in errors:
        assert isinstance(e, RequestEncodingError)
        assert "timeout" in str(e) or "format" in str(e), str(e)
    assert not cluster.log
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged, "the failure was not logged"


def _mangled_produce_answer(case: str) -> Any:
    def hook(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        produce = req.decode()
        topics = []
        for t in produce.topic_data:
            results = []
            for pd in t.partition_data:
                if case == "unasked-partitions":
                    results.append(PartitionProduceResponse(pd.index + 100, 0, 0))
                elif case == "answered-twice":
                    results += [PartitionProduceResponse(pd.index, 0, 5)] * 2
                else:  # NOT_LEADER_OR_FOLLOWER: the sender asks for new metadata
                    results.append(PartitionProduceResponse(pd.index, error_code=6))
            topics.append(TopicProduceResponse(name=t.name, partition_responses=results))
        return answer(req, ProduceResponse(responses=topics))

    return hook


@pytest.mark.parametrize("case", ["unasked-partitions", "answered-twice", "handling-raises"])
async def test_a_hostile_produce_answer_leaves_no_batch_unresolved(case: str) -> None:
    """Answers that decode but do not fit the request: only partitions we never sent
    (ours come back as "no result", retried until delivery_timeout_ms), a partition
    answered twice (the first counts), and an answer whose handling raises.

    For the last one the metadata update that a NOT_LEADER answer triggers is replaced
    by one that raises (a mock): no answer the real code handles is known to raise,
    and this is the stand-in for the bug that one day will.
    """
    cluster = LogCluster(hooks={PRODUCE: _mangled_produce_answer(case)})
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = producer_for(
            broker.address, delivery_timeout_ms=3000, request_timeout_ms=1000, linger_ms=0
        )
        await producer.start()
        await producer.partitions_for("t")
        if case == "handling-raises":

            def boom(*args: Any) -> Any:
                raise RuntimeError("leader update failed")

            producer._metadata.move_leader = boom  # type: ignore[method-assign]
            producer._metadata.request_update = boom  # type: ignore[method-assign]
        futures = [await producer.send("t", b"%d" % i, partition=i % 4) for i in range(8)]
        await settled(futures)
        errors = await watch.stop_and_check(producer, futures, stop_timeout=2)
    if case == "answered-twice":
        assert not errors
        assert all(f.result().offset >= 5 for f in futures)  # the first answer counts
        return
    assert len(errors) == 8
    for e in errors:
        assert isinstance(e, ProtocolError | KafkaTimeoutError), repr(e)
    if case == "handling-raises":
        assert any("leader update failed" in str(e) for e in errors), errors


async def test_an_init_producer_id_that_raises_is_retried_with_backoff_and_records_expire(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Building InitProducerId raises something that is not a KafkaError (a mock: no
    real broker answer gets that far, parse errors are ProtocolErrors): the producer id
    task must neither die silently nor be restarted in a busy loop; the records expire
    with the cause named."""
    from aiokafka_lite._internal.connection import BrokerConnection
    from aiokafka_lite._internal.protocol.transactions import InitProducerIdRequest

    original = BrokerConnection.version_for
    calls = 0

    def version_for(self: BrokerConnection, request_cls: Any) -> int:
        nonlocal calls
        if request_cls is InitProducerIdRequest:
            calls += 1
            raise RuntimeError("cannot build InitProducerId")
        return original(self, request_cls)

    monkeypatch.setattr(BrokerConnection, "version_for", version_for)
    cluster = LogCluster()
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = producer_for(
            broker.address, request_timeout_ms=500, delivery_timeout_ms=1500, retry_backoff_ms=0
        )
        await producer.start()
        futures = [await producer.send("t", b"x", partition=0)]
        await settled(futures)
        errors = await watch.stop_and_check(producer, futures, stop_timeout=2)
    (error,) = errors
    assert isinstance(error, KafkaTimeoutError)
    assert "cannot build InitProducerId" in str(error), str(error)
    assert 1 <= calls <= 200, f"{calls} InitProducerId attempts in 1.5 s"
    assert not cluster.log


async def test_a_sender_pass_that_keeps_raising_backs_off_instead_of_spinning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every pass of the sender raises (the accumulator's ready() is replaced by one
    that raises: a mock, standing in for a bug no real input is known to trigger).
    Even with retry_backoff_ms=0 the passes back off, and the traceback is logged on
    the 1st, 2nd, 4th, 8th ... failure in a row, not on every pass."""
    cluster = LogCluster()
    watch = Watch.begin()
    async with cluster.running() as broker:
        producer = producer_for(broker.address, retry_backoff_ms=0, retry_backoff_max_ms=0)
        await producer.start()
        calls = 0

        def ready(*args: Any) -> Any:
            nonlocal calls
            calls += 1
            raise RuntimeError("ready() is broken")

        producer._acc.ready = ready  # type: ignore[method-assign]
        producer._sender.wakeup()
        await asyncio.sleep(1.5)
        producer._acc.ready = type(producer._acc).ready.__get__(producer._acc)  # type: ignore[method-assign]
        await watch.stop_and_check(producer, stop_timeout=2)
    # 10 ms doubling to 1 s (+-20%): at most ~10 passes in 1.5 s; a busy loop makes thousands.
    assert 3 <= calls <= 15, calls
    logged = [r for r in caplog.records if "sender iteration failed" in r.getMessage()]
    assert 2 <= len(logged) <= 5, [r.getMessage() for r in logged]
