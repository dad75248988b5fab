"""Where records should land, computed independently of the producer under test.

* :func:`java_partition`: the partition Java's default partitioner picks for a key, from
  kafka-python's murmur2 (another client's, so that a bug in ours cannot agree with itself);
* :func:`run_lengths`: the runs of consecutive records on one partition, which is what
  the sticky (keyless) partitioner decides.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from kafka.partitioner.default import (  # type: ignore[import-untyped]
    murmur2 as kafka_python_murmur2,
)

__all__ = ["java_partition", "run_lengths"]


def java_partition(key: bytes, partitions: int) -> int:
    """The partition of ``key`` among ``partitions`` by Java's default partitioner."""
    return (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions


def run_lengths(partitions: Iterable[int]) -> list[int]:
    """The lengths of the runs of equal partitions, in order: ``[0, 0, 1, 0]`` -> ``[2, 1, 1]``."""
    return [len(list(run)) for _, run in itertools.groupby(partitions)]
