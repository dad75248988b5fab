"""Kafka's default partitioning, for custom partitioners and tests: murmur2 of the key,
bit for bit Java's, and the partition it picks (``Partitioner`` is the type a custom
partitioner satisfies)."""

from ._internal.partitioner import Partitioner, default_partition, murmur2

__all__ = ["Partitioner", "default_partition", "murmur2"]
