"""``benchmarks.broker_ceiling`` on each broker: the replayed Produce requests are accepted
and every record is read back where it belongs, and a W3 client run beside it is checked
the same way (the runs the benchmark's figures come from)."""

from __future__ import annotations

import argparse
import struct

import pytest

from benchmarks.bench.brokers import Broker
from benchmarks.broker_ceiling.prebuild import Producer, Shape, build_batches
from benchmarks.broker_ceiling.report import Summary, comparison
from benchmarks.broker_ceiling.runner import ReadBack, run_entry

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


def test_read_back_accepts_keyless_records_only_from_a_keyless_client() -> None:
    """Java's ProducerPerformance sends no keys: its records are counted by offset; a
    keyed client's record without a key is a problem."""
    keyless = ReadBack(murmur2=False, keyless=True)
    keyless.see(0, 0, None)
    keyless.see(0, 1, None)
    assert keyless.counts[0] == 2 and not keyless.problems
    keyed = ReadBack(murmur2=True)
    keyed.see(0, 0, None)
    assert keyed.problems == ["partition 0: a record without a key at offset 0"]


def test_idempotent_batches_carry_the_producer_id_and_per_partition_sequences() -> None:
    """The idempotent replay's batches: producer id and epoch from InitProducerId, each
    batch's base sequence the count of its partition's records before it."""
    keys = [b"k"] * 1000
    values = [b"v" * 100] * 1000
    batches = build_batches(keys, values, list(range(1000)), 0, 16384, Producer(42, 3))
    assert len(batches) > 1
    sequence = 0
    for raw, count in batches:
        producer_id, epoch, base_sequence = struct.unpack_from(">qhi", raw, 43)
        assert (producer_id, epoch, base_sequence) == (42, 3, sequence)
        sequence += count
    assert sequence == 1000


def test_idempotent_replay_is_accepted_and_read_back(bootstrap: str) -> None:
    """With a producer id from InitProducerId and sequences per partition, the broker
    accepts every request (an out-of-order or duplicate sequence would be an error code)
    and the topic holds each record once; a W3/idem client beside it is read back too."""
    ceiling = Summary("ceiling", Shape(16384, 5, idempotent=True))
    client = Summary("W3/idem: aiokafka_lite", None, "aiokafka_lite", workload="W3/idem")
    run(bootstrap, ceiling)
    run(bootstrap, client)
    for summary in (ceiling, client):
        (result,) = summary.runs
        assert result.ok, result.errors
        assert result.extra["read_back"] == RECORDS
    assert ceiling.runs[0].extra["idempotent"] is True
    assert any(line.startswith("of the ceiling") for line in comparison([ceiling], [client]))
