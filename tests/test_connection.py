"""BrokerConnection and NetworkClient against a SCRIPTED broker (tests/scripted_broker.py).

The embedded broker (Tansu) answers every request promptly and correctly, so it
cannot show what the connection does when a broker negotiates versions in the
old layout, pipelines, answers with the wrong correlation id, sends garbled or
truncated frames, splits or coalesces responses, or never answers. A small
scripted broker (an asyncio server on 127.0.0.1:0 that parses request headers
and answers from a per-test script, encoding responses with our own codec) can.

Covered: ApiVersions negotiation and version selection; pipelining and the
in-flight FIFO; correlation id mismatch; garbled frames (bad size prefixes,
bodies that do not decode, random bodies via hypothesis); truncated responses;
the request timeout; split and coalesced responses; send() on a closed
connection; backoff_delay; NetworkClient.bootstrap.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import socket
import struct
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from invariants import loop_reports
from scripted_broker import (
    CLOSE,
    HANG,
    ReceivedRequest,
    ScriptedBroker,
    Trickle,
    answer,
    response_frame,
    size_prefixed,
)

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite._internal.backoff import backoff_delay
from aiokafka_lite._internal.client import NetworkClient
from aiokafka_lite._internal.cluster import Node
from aiokafka_lite._internal.connection import MAX_RESPONSE_SIZE, BrokerConnection
from aiokafka_lite._internal.protocol.codec import encode
from aiokafka_lite._internal.protocol.handshake import ApiVersionsRequest, ApiVersionsResponse
from aiokafka_lite._internal.protocol.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from aiokafka_lite._internal.protocol.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from aiokafka_lite.config import ProducerConfig
from aiokafka_lite.errors import (
    IncompatibleBrokerVersion,
    IncompatibleBrokerVersionError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ProtocolError,
    UnsupportedVersionError,
)

PRODUCE = ProduceRequest.API_KEY
METADATA = MetadataRequest.API_KEY
API_VERSIONS = ApiVersionsRequest.API_KEY
CLIENT_ID = "conn-test"
STEP = 5.0  # bound on any single wait below: a hang fails the test instead of stalling it


# ---------------------------------------------------------------------------
# helpers


@contextlib.asynccontextmanager
async def scripted(
    script: Callable[[ReceivedRequest], Any] | None = None, **kwargs: Any
) -> AsyncIterator[ScriptedBroker]:
    """A started scripted broker; also fails the test if the event loop saw an error.

    An exception escaping ``data_received`` (or any callback) would only be
    logged by asyncio; the handler turns it into a test failure.
    """
    with loop_reports() as loop_errors:
        async with ScriptedBroker(script, **kwargs) as broker:
            yield broker
    assert not loop_errors, f"the event loop reported errors: {loop_errors}"


async def connect(
    broker: ScriptedBroker, *, request_timeout_ms: float = 5000, node_id: int = 1
) -> BrokerConnection:
    conn = BrokerConnection(
        node_id,
        broker.host,
        broker.port,
        client_id=CLIENT_ID,
        request_timeout_ms=request_timeout_ms,
    )
    await conn.open(STEP)
    return conn


def produce_request(i: int) -> ProduceRequest:
    """A Produce request that names itself ``t<i>`` so its answer can be matched to it."""
    return ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[TopicProduceData(name=f"t{i}", partition_data=[PartitionProduceData(0)])],
    )


def produce_response(req: ReceivedRequest) -> ProduceResponse:
    """The answer to a :func:`produce_request`: same topic name, base offset 100*i."""
    name = req.decode().topic_data[0].name
    return ProduceResponse(
        responses=[
            TopicProduceResponse(
                name=name,
                partition_responses=[
                    PartitionProduceResponse(index=0, base_offset=100 * int(name[1:]))
                ],
            )
        ]
    )


def produce_answer(req: ReceivedRequest) -> bytes:
    return answer(req, produce_response(req))


def fake_request(i: int, version: int) -> ReceivedRequest:
    """What the broker would receive for ``produce_request(i)`` (to size answers up front)."""
    return ReceivedRequest(PRODUCE, version, 0, None, bytes(encode(produce_request(i), version)), 0)


def assert_answers(results: list[Any], first: int = 0) -> None:
    for i, resp in enumerate(results, first):
        assert isinstance(resp, ProduceResponse)
        assert resp.responses[0].name == f"t{i}"
        assert resp.responses[0].partition_responses[0].base_offset == 100 * i


async def failures(futures: list[asyncio.Future[Any]]) -> list[BaseException]:
    """Wait (bounded) for every future to fail and return the exceptions."""
    async with asyncio.timeout(STEP):
        results = await asyncio.gather(*futures, return_exceptions=True)
    for r in results:
        assert isinstance(r, BaseException), f"expected a failure, got {r!r}"
    return results  # type: ignore[return-value]


async def assert_closed(conn: BrokerConnection, broker: ScriptedBroker) -> None:
    """The connection is closed on our side, and the broker saw it go."""
    assert conn.closed
    assert conn.in_flight == 0
    async with asyncio.timeout(STEP):
        await conn.wait_closed()
        await broker.wait_disconnects(1)
    with pytest.raises(KafkaConnectionError):
        conn.send(produce_request(99))


def spy_on_reads(conn: BrokerConnection) -> list[int]:
    """Record the size of every chunk ``data_received`` gets."""
    sizes: list[int] = []
    original = conn.data_received

    def data_received(data: bytes) -> None:
        sizes.append(len(data))
        original(data)

    conn.data_received = data_received  # type: ignore[method-assign]
    return sizes


@contextlib.asynccontextmanager
async def answered(
    broker: ScriptedBroker, n: int
) -> AsyncIterator[tuple[BrokerConnection, list[int]]]:
    """A new connection that sent ``n`` Produce requests and got their right answers
    (:func:`assert_answers`), and the size of each chunk it read; closed on exit."""
    conn = await connect(broker)
    try:
        reads = spy_on_reads(conn)
        futures = [conn.send(produce_request(i)) for i in range(n)]
        async with asyncio.timeout(STEP):
            results = await asyncio.gather(*futures)
        assert_answers(results)
        yield conn, reads
    finally:
        conn.close()


def collect_then_answer(n: int, reply: Callable[[list[ReceivedRequest]], Any]) -> Any:
    """A script that stays silent until ``n`` requests arrived, then ``reply(them)``."""
    seen: list[ReceivedRequest] = []

    def script(req: ReceivedRequest) -> Any:
        seen.append(req)
        return reply(seen) if len(seen) == n else None

    return script


async def all_fail(
    n: int, reply: Callable[[list[ReceivedRequest]], Any], error: type[Exception], says: str
) -> None:
    """``n`` Produce requests, answered by ``reply`` once all arrived, all fail with
    ``error`` (exactly that type) whose message contains ``says``; the connection closes."""
    async with scripted(collect_then_answer(n, reply)) as broker:
        conn = await connect(broker)
        errors = await failures([conn.send(produce_request(i)) for i in range(n)])
        for e in errors:
            assert type(e) is error
            assert says in str(e)
        await assert_closed(conn, broker)


# ---------------------------------------------------------------------------
# 1. ApiVersions negotiation and version selection


async def test_api_versions_fallback_to_v0_uses_second_answer() -> None:
    versions = {18: (0, 2), 0: (0, 9), 3: (1, 12), 22: (0, 4)}
    async with scripted(api_versions=versions) as broker:
        conn = await connect(broker)
        try:
            # Asked in our newest version (4), told UNSUPPORTED_VERSION in v0 layout
            # listing only ApiVersions 0-2; asked again in v0.
            asked = broker.requests_for(API_VERSIONS)
            assert [r.api_version for r in asked] == [ApiVersionsRequest.MAX_VERSION, 0]
            assert [r.correlation_id for r in asked] == [0, 1]
            assert all(r.client_id == CLIENT_ID for r in asked)
            first = asked[0].decode()
            assert first.client_software_name == "aiokafka-lite"
            assert first.client_software_version
            # the map comes from the second (full) answer, not the error answer
            assert conn.api_versions == versions
            assert not conn.closed
            assert conn.in_flight == 0
            assert conn.version_for(ProduceRequest) == 9
            assert conn.version_for(MetadataRequest) == 12
            assert conn.version_for(ApiVersionsRequest) == 2
        finally:
            conn.close()


async def test_api_versions_newest_version_accepted_directly() -> None:
    async with scripted() as broker:
        conn = await connect(broker)
        try:
            asked = broker.requests_for(API_VERSIONS)
            assert [r.api_version for r in asked] == [ApiVersionsRequest.MAX_VERSION]
            assert conn.api_versions == broker.api_versions
        finally:
            conn.close()


@pytest.mark.parametrize(
    ("broker_range", "expected"),
    [
        ((0, 9), 9),  # broker older than us: its max
        ((0, 20), ProduceRequest.MAX_VERSION),  # broker newer: our max
        ((5, 7), 7),
        ((3, 3), 3),
        ((11, 11), 11),
    ],
)
async def test_version_for_picks_newest_common_version(
    broker_range: tuple[int, int], expected: int
) -> None:
    async with scripted(api_versions={18: (0, 4), 0: broker_range}) as broker:
        conn = await connect(broker)
        try:
            assert conn.version_for(ProduceRequest) == expected
            # and send() uses it when no version is given
            broker.script = produce_answer
            async with asyncio.timeout(STEP):
                assert_answers([await conn.send(produce_request(0))])
            assert broker.requests_for(PRODUCE)[0].api_version == expected
        finally:
            conn.close()


async def test_version_for_missing_api_raises_unsupported_version() -> None:
    async with scripted(api_versions={18: (0, 4), 3: (1, 12)}) as broker:
        conn = await connect(broker)
        try:
            with pytest.raises(UnsupportedVersionError, match="ProduceRequest"):
                conn.version_for(ProduceRequest)
            with pytest.raises(UnsupportedVersionError):
                conn.send(produce_request(0))
            assert conn.in_flight == 0
            assert not conn.closed
        finally:
            conn.close()


@pytest.mark.parametrize(
    ("lo", "hi"), [(0, 2), (ProduceRequest.MAX_VERSION + 1, ProduceRequest.MAX_VERSION + 4)]
)
async def test_version_for_disjoint_ranges_raise_incompatible(lo: int, hi: int) -> None:
    assert IncompatibleBrokerVersion is IncompatibleBrokerVersionError
    async with scripted(api_versions={18: (0, 4), 0: (lo, hi)}) as broker:
        conn = await connect(broker)
        try:
            with pytest.raises(IncompatibleBrokerVersionError) as info:
                conn.version_for(ProduceRequest)
            text = str(info.value)
            assert "ProduceRequest" in text
            assert f"v{lo}-v{hi}" in text  # the broker's range
            ours = f"v{ProduceRequest.MIN_VERSION}-v{ProduceRequest.MAX_VERSION}"
            assert ours in text
        finally:
            conn.close()


async def test_api_versions_error_fails_open() -> None:
    def script(req: ReceivedRequest) -> bytes:
        return answer(req, ApiVersionsResponse(error_code=33))

    async with scripted(script, answer_api_versions=False) as broker:
        conn = BrokerConnection(
            1, broker.host, broker.port, client_id=None, request_timeout_ms=5000
        )
        with pytest.raises(ProtocolError, match="ApiVersions failed with error code 33"):
            await conn.open(STEP)
        await assert_closed(conn, broker)
        assert broker.requests[0].client_id is None


async def test_open_fails_when_broker_closes_during_negotiation() -> None:
    async with scripted(lambda req: CLOSE, answer_api_versions=False) as broker:
        conn = BrokerConnection(
            1, broker.host, broker.port, client_id=None, request_timeout_ms=5000
        )
        with pytest.raises(KafkaConnectionError):
            await conn.open(STEP)
        await assert_closed(conn, broker)


async def test_open_times_out_when_broker_never_answers_api_versions() -> None:
    async with scripted(lambda req: None, answer_api_versions=False) as broker:
        conn = BrokerConnection(
            7, broker.host, broker.port, client_id=None, request_timeout_ms=5000
        )
        start = time.monotonic()
        with pytest.raises(KafkaConnectionError, match=r"node 7 .*timed out"):
            await conn.open(0.2)
        assert time.monotonic() - start < 2.0
        await assert_closed(conn, broker)


async def test_failed_open_leaves_a_closed_connection_that_wait_closed_reports() -> None:
    with _unused_port() as sock:
        port = sock.getsockname()[1]
        conn = BrokerConnection(3, "127.0.0.1", port, client_id=None, request_timeout_ms=1000)
        with pytest.raises(KafkaConnectionError, match=f"127.0.0.1:{port}"):
            await conn.open(STEP)
        assert conn.closed
        with pytest.raises(KafkaConnectionError):
            conn.send(produce_request(0), 3)
        # closed is closed: waiting for it must not hang
        async with asyncio.timeout(1.0):
            await conn.wait_closed()


# ---------------------------------------------------------------------------
# 2. pipelining


@pytest.mark.parametrize("produce_version", [3, 8, 9, 11])
async def test_pipelined_requests_are_answered_in_order(produce_version: int) -> None:
    saw_all_before_answering: list[bool] = []

    def reply(seen: list[ReceivedRequest]) -> list[bytes]:
        saw_all_before_answering.append(len(seen) == 5)
        return [produce_answer(r) for r in seen]  # separate writes, in order

    async with scripted(
        collect_then_answer(5, reply), api_versions={18: (0, 4), 0: (3, produce_version)}
    ) as broker:
        conn = await connect(broker)
        try:
            futures = [conn.send(produce_request(i)) for i in range(5)]
            assert conn.in_flight == 5
            assert not any(f.done() for f in futures)
            async with asyncio.timeout(STEP):
                results = await asyncio.gather(*futures)
            assert conn.in_flight == 0
            assert saw_all_before_answering == [True]
            assert_answers(results)
            produce = broker.requests_for(PRODUCE)
            assert [r.api_version for r in produce] == [produce_version] * 5
            ids = [r.correlation_id for r in produce]
            assert len(set(ids)) == 5
            assert ids == sorted(ids)
            assert not conn.closed
            # the connection stays usable
            broker.script = produce_answer
            async with asyncio.timeout(STEP):
                assert_answers([await conn.send(produce_request(5))], first=5)
        finally:
            conn.close()


async def test_expect_response_false_resolves_at_once_and_takes_no_slot() -> None:
    async with scripted(produce_answer) as broker:
        conn = await connect(broker)
        try:
            fut = conn.send(produce_request(0), expect_response=False)
            assert fut.done()
            assert fut.result() is None
            assert conn.in_flight == 0
        finally:
            conn.close()


# ---------------------------------------------------------------------------
# 3. correlation id mismatch


@pytest.mark.parametrize("wrong", ["next", "stale", "random"])
async def test_correlation_id_mismatch_fails_everything(wrong: str) -> None:
    def reply(seen: list[ReceivedRequest]) -> bytes:
        first = seen[0]
        cid = {
            "next": seen[1].correlation_id,  # answers out of order
            "stale": first.correlation_id - 1,  # an id already answered (ApiVersions)
            "random": 0x5EEDBEEF,
        }[wrong]
        return response_frame(cid, produce_response(first), first.api_version)

    await all_fail(3, reply, ProtocolError, "correlation")


async def test_answered_requests_keep_results_when_a_later_answer_is_corrupt() -> None:
    def reply(seen: list[ReceivedRequest]) -> bytes:
        good = produce_answer(seen[0])
        bad = response_frame(12345, produce_response(seen[1]), seen[1].api_version)
        return good + bad + produce_answer(seen[2])  # one write

    async with scripted(collect_then_answer(3, reply)) as broker:
        conn = await connect(broker)
        futures = [conn.send(produce_request(i)) for i in range(3)]
        async with asyncio.timeout(STEP):
            assert_answers([await futures[0]])
        errors = await failures(futures[1:])
        assert all(type(e) is ProtocolError for e in errors)
        await assert_closed(conn, broker)


async def test_unsolicited_response_closes_the_connection() -> None:
    def script(req: ReceivedRequest) -> bytes:
        # the answer, then an answer to nothing
        return produce_answer(req) + produce_answer(req)

    async with scripted(script) as broker:
        conn = await connect(broker)
        async with asyncio.timeout(STEP):
            assert_answers([await conn.send(produce_request(0))])
        await assert_closed(conn, broker)


# ---------------------------------------------------------------------------
# 4. garbled frames


@pytest.mark.parametrize(
    "size",
    [-1, -(2**31), 0, 3, MAX_RESPONSE_SIZE + 1, 2**31 - 1],
    ids=["minus-one", "int32-min", "zero", "three", "max-plus-one", "int32-max"],
)
async def test_size_prefix_out_of_range(size: int) -> None:
    def reply(seen: list[ReceivedRequest]) -> bytes:
        # what follows the bad prefix is a perfectly good correlation id and body
        return struct.pack(">i", size) + produce_answer(seen[0])[4:]

    await all_fail(3, reply, ProtocolError, str(size))


@pytest.mark.parametrize(
    "body",
    [
        b"",  # nothing after the correlation id
        b"\xff\xff\xff\xff",  # a null array where none is allowed
        b"\x7f\xff\xff\xff",  # an array of 2**31-1 topics in a 4-byte body
        b"\x00\x00\x00\x01\x00\x10",  # a topic name running past the frame
        b"\x00\x00\x00\x01\x00\x02\xc3\x28\x00\x00\x00\x00",  # invalid UTF-8 topic name
    ],
    ids=["empty", "null-array", "huge-array", "string-past-end", "bad-utf8"],
)
async def test_body_that_does_not_decode(body: bytes) -> None:
    # Produce v8: responses:[]TopicProduceResponse (int32 count), name:string (int16 length)
    def reply(seen: list[ReceivedRequest]) -> bytes:
        return size_prefixed(struct.pack(">i", seen[0].correlation_id) + body)

    async with scripted(collect_then_answer(2, reply), api_versions={18: (0, 4), 0: (3, 8)}) as b:
        conn = await connect(b)
        futures = [conn.send(produce_request(i)) for i in range(2)]
        errors = await failures(futures)
        for e in errors:
            assert type(e) is ProtocolError
            assert "ProduceResponse" in str(e)
        await assert_closed(conn, b)


@pytest.mark.parametrize("produce_version", [3, 8, 9, 11])
async def test_every_truncation_of_a_response_body_is_rejected(produce_version: int) -> None:
    """A strict prefix of a valid body never decodes (cut anywhere, frame size adjusted)."""
    payload = produce_answer(fake_request(1, produce_version))[4:]
    header = 5 if produce_version >= 9 else 4  # correlation id (+ empty tag section)
    versions = {18: (0, 4), 0: (3, produce_version)}
    for cut in range(header, len(payload)):

        def script(req: ReceivedRequest, cut: int = cut) -> bytes:
            return size_prefixed(produce_answer(req)[4 : 4 + cut])

        async with scripted(script, api_versions=versions) as broker:
            conn = await connect(broker)
            (error,) = await failures([conn.send(produce_request(1))])
            assert type(error) is ProtocolError, (cut, error)
            await assert_closed(conn, broker)


async def _random_body_scenario(body: bytes, produce_version: int) -> None:
    def reply(seen: list[ReceivedRequest]) -> list[bytes]:
        frame = struct.pack(">i", seen[0].correlation_id)
        if produce_version >= 9:
            frame += b"\x00"
        return [size_prefixed(frame + body), *(produce_answer(r) for r in seen[1:])]

    async with (
        asyncio.timeout(STEP),
        scripted(
            collect_then_answer(2, reply), api_versions={18: (0, 4), 0: (3, produce_version)}
        ) as broker,
    ):
        conn = await connect(broker)
        futures = [conn.send(produce_request(i)) for i in range(2)]
        results = await asyncio.gather(*futures, return_exceptions=True)
        if isinstance(results[0], BaseException):
            # garbage: everything in flight fails with ProtocolError, nothing else
            for r in results:
                assert type(r) is ProtocolError, repr(r)
            await assert_closed(conn, broker)
            event("rejected: ProtocolError")
        else:
            # the random bytes happened to form a ProduceResponse (trailing bytes
            # are ignored, as the Java client does); the stream stays in sync
            assert isinstance(results[0], ProduceResponse)
            assert_answers(results[1:], first=1)
            assert not conn.closed
            conn.close()
            event("decoded (random bytes formed a ProduceResponse)")


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), produce_version=st.sampled_from([3, 8, 9, 11]))
def test_random_body_after_correct_correlation_id(data: Any, produce_version: int) -> None:
    # Random bytes, or a valid body with a few bytes overwritten and junk appended
    # (those decode now and then, so both outcomes are exercised).
    valid = produce_answer(fake_request(0, produce_version))[9 if produce_version >= 9 else 8 :]
    mutated = st.builds(
        lambda flips, tail: bytes(_flip(valid, flips)) + tail,
        st.lists(st.tuples(st.integers(0, len(valid) - 1), st.integers(0, 255)), max_size=3),
        st.binary(max_size=8),
    )
    body = data.draw(st.one_of(st.binary(max_size=64), mutated), label="body")
    asyncio.run(_random_body_scenario(body, produce_version))


def _flip(valid: bytes, flips: list[tuple[int, int]]) -> bytearray:
    out = bytearray(valid)
    for i, b in flips:
        out[i] = b
    return out


# ---------------------------------------------------------------------------
# 5. truncated response, then the broker closes


@pytest.mark.parametrize("keep", [1, 3, 4, 10, -1], ids=lambda k: f"keep{k}")
async def test_truncated_response_then_close(keep: int) -> None:
    def reply(seen: list[ReceivedRequest]) -> list[Any]:
        return [produce_answer(seen[0])[:keep], CLOSE]

    await all_fail(2, reply, KafkaConnectionError, "lost")


async def test_broker_closes_without_answering() -> None:
    async with scripted(lambda req: CLOSE) as broker:
        conn = await connect(broker)
        (error,) = await failures([conn.send(produce_request(0))])
        assert type(error) is KafkaConnectionError
        await assert_closed(conn, broker)


# ---------------------------------------------------------------------------
# 6. request timeout


@pytest.mark.parametrize("behaviour", [None, HANG], ids=["silent", "hang"])
async def test_request_timeout_closes_the_connection(behaviour: Any) -> None:
    async with scripted(lambda req: behaviour) as broker:
        conn = await connect(broker, request_timeout_ms=200)
        start = time.monotonic()
        first = conn.send(produce_request(0))
        await asyncio.sleep(0.05)
        later = [conn.send(produce_request(i)) for i in (1, 2)]
        errors = await failures([first, *later])
        elapsed = time.monotonic() - start
        assert 0.19 <= elapsed < 2.0, elapsed
        for e in errors:
            assert type(e) is KafkaTimeoutError
            assert "request_timeout_ms" in str(e)
            assert "200 ms" in str(e)
            assert "ProduceRequest" in str(e)
        await assert_closed(conn, broker)


async def test_answered_request_does_not_time_out_later() -> None:
    async with scripted(produce_answer) as broker:
        conn = await connect(broker, request_timeout_ms=100)
        try:
            async with asyncio.timeout(STEP):
                assert_answers([await conn.send(produce_request(0))])
            await asyncio.sleep(0.2)  # past the request timeout
            assert not conn.closed
        finally:
            conn.close()


# ---------------------------------------------------------------------------
# 7. split and coalesced responses


@pytest.mark.parametrize("produce_version", [8, 9])
async def test_response_split_into_single_bytes(produce_version: int) -> None:
    def reply(seen: list[ReceivedRequest]) -> Trickle:
        return Trickle(b"".join(produce_answer(r) for r in seen), chunk=1, pause=0.0005)

    async with (
        scripted(
            collect_then_answer(3, reply), api_versions={18: (0, 4), 0: (3, produce_version)}
        ) as broker,
        answered(broker, 3) as (conn, reads),
    ):
        total = sum(len(produce_answer(r)) for r in broker.requests_for(PRODUCE))
        assert sum(reads) == total
        # the bytes really did arrive in pieces, most of them alone
        assert reads.count(1) > total // 2, reads
        assert conn.in_flight == 0
        assert not conn.closed


async def test_responses_coalesced_into_one_write() -> None:
    def reply(seen: list[ReceivedRequest]) -> bytes:
        return b"".join(produce_answer(r) for r in seen)

    async with (
        scripted(collect_then_answer(5, reply)) as broker,
        answered(broker, 5) as (conn, reads),
    ):
        assert len(reads) == 1, reads  # all five frames in one read
        assert conn.in_flight == 0


async def test_an_answer_many_times_the_read_buffer_arrives_whole() -> None:
    """Answers are read into the connection's one 64 KiB buffer. An answer of ~20 times
    that (one Produce answer for 40,000 partitions), with a small answer behind it in the
    same bytes, is kept aside until whole: both dispatch, to the right requests, and the
    connection reads every time into the buffer it owns."""
    parts = 40_000

    def reply(seen: list[ReceivedRequest]) -> bytes | None:
        if len(seen) < 2:
            return None
        big = ProduceResponse(
            responses=[
                TopicProduceResponse(
                    name="big",
                    partition_responses=[
                        PartitionProduceResponse(index=j, base_offset=j) for j in range(parts)
                    ],
                )
            ]
        )
        return answer(seen[0], big) + produce_answer(seen[1])

    async with scripted(collect_then_answer(2, reply)) as broker:
        conn = await connect(broker)
        try:
            own = conn.get_buffer(-1)
            assert len(own) == 64 * 1024
            reads = spy_on_reads(conn)
            futures = [conn.send(produce_request(0)), conn.send(produce_request(1))]
            async with asyncio.timeout(STEP):
                big, small = await asyncio.gather(*futures)
            assert sum(reads) > 10 * len(own) and len(reads) > 10
            assert max(reads) <= len(own)
            (topic,) = big.responses
            assert [p.base_offset for p in topic.partition_responses] == list(range(parts))
            assert_answers([small], first=1)
            assert conn.get_buffer(-1) is own
            assert conn.in_flight == 0 and not conn.closed
        finally:
            conn.close()


async def test_frames_cut_at_every_boundary() -> None:
    """Two responses written as two pieces, cut at every offset, on one connection."""
    pending: list[ReceivedRequest] = []
    cuts: list[int] = []

    def script(req: ReceivedRequest) -> list[bytes] | None:
        pending.append(req)
        if len(pending) < 2:
            return None
        data = b"".join(produce_answer(r) for r in pending)
        pending.clear()
        cut = cuts[-1]
        return [data[:cut], data[cut:]]

    version = ProduceRequest.MAX_VERSION
    length = sum(len(produce_answer(fake_request(i, version))) for i in range(2))
    async with scripted(script) as broker:
        conn = await connect(broker)
        try:
            for cut in range(1, length):
                cuts.append(cut)
                futures = [conn.send(produce_request(i)) for i in range(2)]
                async with asyncio.timeout(STEP):
                    results = await asyncio.gather(*futures)
                assert_answers(results)
            assert conn.in_flight == 0
            assert not conn.closed
        finally:
            conn.close()


async def test_flexible_response_header_tags_are_skipped() -> None:
    def script(req: ReceivedRequest) -> bytes:
        body = encode(produce_response(req), req.api_version)
        # header v1: correlation id, then 2 tagged fields the client does not know
        header = struct.pack(">i", req.correlation_id) + b"\x02" + b"\x05\x03abc" + b"\x7f\x00"
        return size_prefixed(header + body)

    async with scripted(script, api_versions={18: (0, 4), 0: (3, 9)}) as broker:
        conn = await connect(broker)
        try:
            async with asyncio.timeout(STEP):
                results = await asyncio.gather(*(conn.send(produce_request(i)) for i in range(2)))
            assert_answers(results)
        finally:
            conn.close()


# ---------------------------------------------------------------------------
# 8. send() on a closed connection


async def test_send_on_closed_connection_raises_immediately() -> None:
    async with scripted(produce_answer) as broker:
        conn = await connect(broker)
        conn.close()
        assert conn.closed
        with pytest.raises(KafkaConnectionError, match="not open"):
            conn.send(produce_request(0))
        with pytest.raises(KafkaConnectionError):
            conn.send(produce_request(0), expect_response=False)
        assert conn.in_flight == 0
        async with asyncio.timeout(STEP):
            await conn.wait_closed()
            await broker.wait_disconnects(1)
        assert broker.requests_for(PRODUCE) == []


async def test_send_after_the_broker_went_away_raises_immediately() -> None:
    async with scripted() as broker:
        conn = await connect(broker)
        await broker.stop()
        async with asyncio.timeout(STEP):
            await conn.wait_closed()
        with pytest.raises(KafkaConnectionError):
            conn.send(produce_request(0))


async def test_send_before_open_raises() -> None:
    conn = BrokerConnection(1, "127.0.0.1", 9, client_id=None, request_timeout_ms=1000)
    with pytest.raises(KafkaConnectionError):
        conn.send(produce_request(0), 3)


async def test_close_fails_in_flight_with_the_given_reason() -> None:
    async with scripted() as broker:
        conn = await connect(broker)
        futures = [conn.send(produce_request(i)) for i in range(3)]
        reason = KafkaConnectionError("shutting down")
        conn.close(reason)
        errors = await failures(futures)
        assert all(e is reason for e in errors)
        await assert_closed(conn, broker)


# ---------------------------------------------------------------------------
# 9. backoff_delay


def test_backoff_delay_zero_failures() -> None:
    assert backoff_delay(100, 1000, 0) == 0
    assert backoff_delay(100, 1000, -3) == 0


@pytest.mark.parametrize(("base", "cap"), [(50, 1000), (100, 10_000), (1, 1)])
def test_backoff_delay_grows_twice_per_failure_up_to_the_cap(base: int, cap: int) -> None:
    random.seed(1234)
    for failures_ in range(1, 40):
        nominal = min(base * 2 ** (failures_ - 1), cap) / 1000
        samples = [backoff_delay(base, cap, failures_) for _ in range(300)]
        assert all(0.8 * nominal <= s <= 1.2 * nominal for s in samples), failures_
        # jitter is really applied, in both directions
        assert min(samples) < 0.9 * nominal
        assert max(samples) > 1.1 * nominal
        mean = sum(samples) / len(samples)
        assert 0.95 * nominal <= mean <= 1.05 * nominal


@pytest.mark.parametrize("failures_", [1023, 1024, 1025, 1100, 10_000, 10**9])
def test_backoff_delay_stays_capped_after_very_many_failures(failures_: int) -> None:
    # A broker that is down for a long while keeps counting reconnect failures
    # (one per reconnect_backoff_max_ms): the delay must stay at the cap, not blow up.
    for _ in range(20):
        assert 0.8 <= backoff_delay(50, 1000, failures_) <= 1.2


# ---------------------------------------------------------------------------
# 10. NetworkClient against the scripted broker


def metadata_script(port_of: Callable[[], int]) -> Callable[[ReceivedRequest], bytes | None]:
    def script(req: ReceivedRequest) -> bytes | None:
        if req.api_key != METADATA:
            return None
        resp = MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=port_of())],
            cluster_id="scripted-cluster",
            controller_id=1,
            topics=[
                MetadataResponseTopic(
                    name="scripted",
                    partitions=[
                        MetadataResponsePartition(
                            partition_index=p, leader_id=1, replica_nodes=[1], isr_nodes=[1]
                        )
                        for p in range(2)
                    ],
                )
            ],
        )
        return answer(req, resp)

    return script


@pytest.mark.parametrize(
    ("metadata_range", "expected"), [((0, 12), 12), ((0, 8), 8), ((1, 9), 9), ((0, 4), 4)]
)
async def test_client_bootstrap_from_scripted_broker(
    metadata_range: tuple[int, int], expected: int
) -> None:
    holder: list[ScriptedBroker] = []
    versions = {18: (0, 4), 0: (3, 11), 3: metadata_range}
    async with scripted(metadata_script(lambda: holder[0].port), api_versions=versions) as broker:
        holder.append(broker)
        config = ProducerConfig(bootstrap_servers=broker.address, client_id=CLIENT_ID)
        client = NetworkClient(config, wakeup=lambda: None)
        try:
            async with asyncio.timeout(STEP):
                await client.bootstrap(STEP)
            (req,) = broker.requests_for(METADATA)
            assert req.api_version == expected
            assert req.client_id == CLIENT_ID
            assert req.decode().topics == []  # bootstrap asks about no topic
            cluster = client.metadata.cluster
            assert cluster.nodes == {1: Node(1, "127.0.0.1", broker.port, None)}
            assert cluster.partition_count("scripted") == 2
            assert cluster.leader_for("scripted", 0) == 1
            assert cluster.leader_for("scripted", 1) == 1
            assert cluster.available_partitions_by_topic["scripted"] == (0, 1)
            if expected >= 2:
                assert cluster.cluster_id == "scripted-cluster"
            assert client.metadata.version == 1
        finally:
            await client.close()


def _unused_port() -> socket.socket:
    """A bound but not listening socket: connecting to its port is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


async def test_client_bootstrap_nothing_listening() -> None:
    with _unused_port() as sock:
        port = sock.getsockname()[1]
        config = ProducerConfig(bootstrap_servers=f"127.0.0.1:{port}")
        client = NetworkClient(config, wakeup=lambda: None)
        try:
            async with asyncio.timeout(STEP):
                with pytest.raises(KafkaConnectionError) as info:
                    await client.bootstrap(2.0)
            text = str(info.value)
            assert "unable to bootstrap" in text
            assert f"127.0.0.1:{port}" in text
        finally:
            await client.close()


async def test_client_reconnect_failures_keep_raising_connection_errors() -> None:
    """Over a thousand failed connects to a dead broker: each one a KafkaConnectionError.

    (The failure count feeds backoff_delay; zero backoff makes the count cheap to reach.)
    """
    with _unused_port() as sock:
        port = sock.getsockname()[1]
        config = ProducerConfig(
            bootstrap_servers=f"127.0.0.1:{port}",
            reconnect_backoff_ms=0,
            reconnect_backoff_max_ms=0,
        )
        client = NetworkClient(config, wakeup=lambda: None)
        try:
            async with asyncio.timeout(20):
                for attempt in range(1, 1100):
                    try:
                        await client.connect(-1)
                    except KafkaConnectionError:
                        continue
                    except Exception as e:
                        pytest.fail(f"connect attempt {attempt} raised {e!r}")
                    pytest.fail("connected to a port with nothing listening")
        finally:
            await client.close()


async def test_client_bootstrap_skips_a_dead_server() -> None:
    holder: list[ScriptedBroker] = []
    with _unused_port() as sock:
        dead = sock.getsockname()[1]
        async with scripted(metadata_script(lambda: holder[0].port)) as broker:
            holder.append(broker)
            config = ProducerConfig(bootstrap_servers=f"127.0.0.1:{dead},{broker.address}")
            client = NetworkClient(config, wakeup=lambda: None)
            try:
                async with asyncio.timeout(STEP):
                    await client.bootstrap(STEP)
                assert client.metadata.cluster.partition_count("scripted") == 2
            finally:
                await client.close()


async def test_client_bootstrap_broker_that_never_answers_metadata() -> None:
    async with scripted(lambda req: None) as broker:
        config = ProducerConfig(bootstrap_servers=broker.address)
        client = NetworkClient(config, wakeup=lambda: None)
        try:
            async with asyncio.timeout(STEP):
                with pytest.raises(KafkaConnectionError) as info:
                    await client.bootstrap(0.3)
            assert "unable to bootstrap" in str(info.value)
            assert broker.address in str(info.value)
        finally:
            await client.close()


async def test_an_unnamed_producer_sends_its_own_client_id() -> None:
    # As Java's producer-N: broker logs and quotas can tell producers apart.
    first, second = AIOKafkaProducer(), AIOKafkaProducer()
    named = AIOKafkaProducer(client_id="billing")
    transactional = AIOKafkaProducer(transactional_id="orders-1")
    ids = [p.config.client_id for p in (first, second, named, transactional)]
    assert ids[0] is not None and re.fullmatch(r"aiokafka-lite-producer-\d+", ids[0])
    assert ids[1] == f"aiokafka-lite-producer-{int(ids[0].rsplit('-', 1)[1]) + 1}"
    assert ids[2:] == ["billing", "aiokafka-lite-producer-orders-1"]
    holder: list[ScriptedBroker] = []
    async with scripted(metadata_script(lambda: holder[0].port)) as broker:
        holder.append(broker)
        config = msgspec.structs.replace(first.config, bootstrap_servers=broker.address)
        client = NetworkClient(config, wakeup=lambda: None)
        try:
            async with asyncio.timeout(STEP):
                await client.bootstrap(STEP)
            assert broker.requests
            assert {r.client_id for r in broker.requests} == {ids[0]}
        finally:
            await client.close()
