"""A fuzzer over the response path: mutated ApiVersions, Metadata, InitProducerId and
Produce answers, seen by the whole producer.

Each example takes the healthy answer the scripted one-broker cluster
(tests/scripted_cluster.py) would give to one API and mutates it byte-wise
(overwrite, insert, delete, cut), with the frame's size prefix kept consistent or
not; the mutated answer is given once or every time. Then a producer starts, sends
a few records, and stops. Whatever the bytes, the invariants hold
(tests/invariants.py): start() succeeds or raises a named error, every future
resolves (acked, or failed with a named error), no task is left, the event loop
saw no stray exception, the broker was not hammered, and what was acknowledged is
in the broker's log exactly once, in order (tests/test_faults_checks.py). A mutated
Produce answer may lie about what was written (an error for a batch the broker
wrote, another offset): then only "every acknowledged record is in the log" holds.

The default run tries a few dozen answers (a few seconds); ``-m fuzz`` runs the
larger budget (FUZZ_EXAMPLES).
"""

from __future__ import annotations

import asyncio
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from invariants import Watch, assert_bounded_attempts
from scripted_broker import ReceivedRequest
from scripted_cluster import API_VERSIONS, INIT_PRODUCER_ID, METADATA, PRODUCE, LogCluster
from test_faults_checks import check_log, settle, value

from aiokafka_lite import AIOKafkaProducer
from aiokafka_lite.errors import KafkaError

QUICK_EXAMPLES = 25
FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "400"))
RECORDS = 6
SCENARIO_LIMIT = 30.0  # a scenario that takes longer hangs somewhere: fail it

# (op, position, argument): positions are taken modulo the frame's length.
Op = tuple[str, int, Any]
ops = st.one_of(
    st.tuples(st.just("set"), st.integers(0, 1 << 16), st.integers(0, 255)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 16), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.integers(0, 1 << 16), st.integers(1, 8)),
    st.tuples(st.just("cut"), st.integers(0, 1 << 16), st.none()),
)


@dataclass(frozen=True)
class Case:
    api: int
    mutations: tuple[Op, ...]
    fix_size: bool  # rewrite the size prefix to the mutated length
    times: int  # answers mutated: the first `times` of that API


cases = st.builds(
    Case,
    api=st.sampled_from([API_VERSIONS, METADATA, INIT_PRODUCER_ID, PRODUCE]),
    mutations=st.lists(ops, min_size=1, max_size=4).map(tuple),
    fix_size=st.booleans(),
    times=st.sampled_from([1, 1000]),
)


def mutate(frame: bytes, mutations: tuple[Op, ...], fix_size: bool) -> bytes:
    out = bytearray(frame)
    for op, pos, arg in mutations:
        at = pos % (len(out) + 1)
        if op == "set" and out:
            out[at % len(out)] = arg
        elif op == "insert":
            out[at:at] = arg
        elif op == "delete":
            del out[at : at + arg]
        elif op == "cut":
            del out[at:]
    if fix_size and len(out) >= 4:
        struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


def mutating_hook(case: Case) -> Callable[[ReceivedRequest, Callable[[], bytes | None]], Any]:
    seen = 0

    def hook(req: ReceivedRequest, healthy: Callable[[], bytes | None]) -> Any:
        nonlocal seen
        ok = healthy()
        if ok is None:
            return None
        seen += 1
        return mutate(ok, case.mutations, case.fix_size) if seen <= case.times else ok

    return hook


async def scenario(case: Case) -> None:
    cluster = LogCluster(topics={"t": 2}, hooks={case.api: mutating_hook(case)})
    watch = Watch.begin()
    async with cluster.running(answer_api_versions=False) as broker:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.address,
            linger_ms=1,
            request_timeout_ms=300,
            delivery_timeout_ms=800,
            max_block_ms=800,
            socket_connection_setup_timeout_ms=500,
            retry_backoff_ms=20,
            reconnect_backoff_ms=20,
        )
        futures: list[asyncio.Future[Any]] = []
        refused: list[KafkaError] = []  # raised by start() or send(): named, or a finding
        try:
            await producer.start()
        except KafkaError as e:  # the bootstrap answers were unusable
            refused.append(e)
        else:
            for i in range(RECORDS):
                try:
                    futures.append(await producer.send("t", value(i), partition=i % 2))
                except KafkaError as e:
                    refused.append(e)
        outcome = await settle(futures, 5.0)
        await watch.stop_and_check(producer, futures, stop_timeout=1)
        assert_bounded_attempts(broker.connections, 60)
    assert all(type(e) is not KafkaError for e in refused), refused
    log = cluster.records()
    if case.api != PRODUCE:
        check_log(log, outcome)  # Produce answers were true: the full log checks apply
    else:
        # The broker wrote each batch, then may have answered with a lie (an error
        # code, another offset): only what was acknowledged must be there.
        written = {int(r.value or b"-1") for r in log}
        lost = sorted(set(outcome.acked) - written)
        assert not lost, f"acknowledged records not in the log: {lost}"


def run_case(case: Case) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(SCENARIO_LIMIT):
            await scenario(case)

    asyncio.run(bounded())


_SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow],
}


@settings(max_examples=QUICK_EXAMPLES, **_SETTINGS)
@given(case=cases)
# Every Metadata answer unparseable (a tagged field running past the frame): the
# refreshes must back off, not reconnect every retry_backoff_ms.
@example(case=Case(api=3, mutations=(("set", 161, 2),), fix_size=False, times=1000))
def test_mutated_answers_keep_the_invariants(case: Case) -> None:
    run_case(case)


@pytest.mark.fuzz
@pytest.mark.timeout(FUZZ_EXAMPLES * 10)
@settings(max_examples=FUZZ_EXAMPLES, **_SETTINGS)
@given(case=cases)
def test_mutated_answers_keep_the_invariants_many(case: Case) -> None:
    run_case(case)
