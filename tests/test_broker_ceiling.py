"""``benchmarks.broker_ceiling`` on each broker: the replayed Produce requests are accepted
and every record is read back where it belongs, and a W3 client run beside it is checked
the same way (the runs the benchmark's figures come from)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.bench.brokers import Broker
from benchmarks.broker_ceiling.prebuild import Shape
from benchmarks.broker_ceiling.report import Summary, comparison
from benchmarks.broker_ceiling.runner import run_entry

RECORDS = 20_000


def run(bootstrap: str, entry: Summary) -> None:
    args = argparse.Namespace(records=RECORDS, deadline=60.0, repeat=1)
    broker = Broker("session", bootstrap, None, "the session broker")
    entry.runs.append(run_entry(entry, 1, args, broker))


def test_replay_is_accepted_and_read_back(bootstrap: str) -> None:
    """The replay negotiates a Produce version the broker speaks, every partition's
    answer is error-free, and the topic holds each record once, on murmur2's partition
    (read back with confluent-kafka's consumer, CRCs checked)."""
    ceiling = Summary("ceiling", Shape(16384, 5))
    run(bootstrap, ceiling)
    (result,) = ceiling.runs
    assert result.ok, result.errors
    assert result.delivered == result.extra["read_back"] == RECORDS
    assert 3 <= result.extra["produce_version"] <= 12
    # batches of at most 16 KiB (the values alone are 100 bytes a record), one batch per
    # partition per request: the replay sends what a 16 KiB producer would
    assert result.extra["requests"] >= RECORDS * 100 / 16384 / 4


@pytest.mark.parametrize("client", ["aiokafka_lite", "confluent"])
def test_clients_beside_the_replay(bootstrap: str, client: str) -> None:
    """A W3 client's run is read back too, and the comparison puts it against the
    ceiling of the same session."""
    ceiling, other = Summary("ceiling", Shape(16384, 5)), Summary(f"W3: {client}", None, client)
    run(bootstrap, ceiling)
    run(bootstrap, other)
    assert other.runs[0].ok, other.runs[0].errors
    assert other.runs[0].extra["read_back"] == RECORDS
    lines = comparison([ceiling], [other])
    fraction = other.median() / ceiling.median()
    assert f"  {client}: {fraction:.2f}" in "\n".join(lines)
