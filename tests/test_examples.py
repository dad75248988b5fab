"""``examples/quickstart.py``, run as the docs tell users to: ``python examples/quickstart.py``.

What it wrote is read back with confluent-kafka (tests/readers.py), never our decoder.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections import Counter

import pytest
from checkout import REPO_ROOT, run_python
from partition_checks import java_partition
from readers import read_all_confluent

from aiokafka_lite.embedded import EmbeddedBroker

PARTITIONS = 4  # the example creates its topic with 4 partitions


def run_quickstart(*args: str) -> subprocess.CompletedProcess[str]:
    return run_python("examples/quickstart.py", *args, cwd=REPO_ROOT, timeout=180)


def expected_per_partition(count: int) -> dict[int, int]:
    """Where Java's partitioner puts the example's keys ``user-<i % 1000>``."""
    return dict(Counter(java_partition(b"user-%d" % (i % 1000), PARTITIONS) for i in range(count)))


def parse_output(out: str) -> tuple[int, dict[int, int]]:
    delivered = re.search(r"^delivered ([\d,]+) records in [\d.]+s \(([\d,]+)/s\)$", out, re.M)
    assert delivered is not None, out
    per_partition = re.search(r"^records per partition: (\{.*\})$", out, re.M)
    assert per_partition is not None, out
    counts = ast.literal_eval(per_partition[1])
    assert isinstance(counts, dict)
    return int(delivered[1].replace(",", "")), counts


def test_quickstart_runs_with_one_command() -> None:
    proc = run_quickstart()
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert re.search(r"^embedded broker at 127\.0\.0\.1:\d+$", out, re.M), out
    first = re.search(
        r"^first record: RecordMetadata\(topic='quickstart', partition=(\d+), "
        r"topic_partition=TopicPartition\(topic='quickstart', partition=\1\), offset=0, ",
        out,
        re.M,
    )
    assert first is not None, out
    # The first record's key alone decides its partition.
    assert int(first[1]) == java_partition(b"greeting", PARTITIONS)
    delivered, counts = parse_output(out)
    assert delivered == 100_000
    assert counts == expected_per_partition(100_000)


@pytest.mark.tansu_only(
    "the example writes fixed topic names, so it needs an empty broker of its own (fresh_broker)"
)
def test_quickstart_against_a_cluster_is_read_back(fresh_broker: EmbeddedBroker) -> None:
    bootstrap = fresh_broker.bootstrap_servers
    proc = run_quickstart("--bootstrap-server", bootstrap, "--count", "3000")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "embedded broker" not in proc.stdout  # it used the given cluster
    delivered, counts = parse_output(proc.stdout)
    assert delivered == 3000
    assert counts == expected_per_partition(3000)

    records = read_all_confluent(bootstrap, "quickstart", expected=3001)
    assert len(records) == 3001
    first = [r for r in records if r.key == b"greeting"]
    assert [(r.value, r.offset) for r in first] == [(b"hello", 0)]
    rest = [r for r in records if r.key != b"greeting"]
    assert all(r.value == b"x" * 100 for r in rest)
    assert dict(Counter(r.partition for r in rest)) == counts
    assert Counter(r.key for r in rest) == Counter(b"user-%d" % (i % 1000) for i in range(3000))
