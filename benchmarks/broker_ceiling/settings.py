"""What every part of the ceiling benchmark shares: the workload, the producers'
defaults, the clients it can run beside the replay, the names it runs its processes under."""

from __future__ import annotations

from aiokafka_lite.config import ProducerConfig

from ..bench.workloads import JAVA, WORKLOADS

__all__ = ["CLIENTS", "DEFAULTS", "JAVA", "LIBRDKAFKA", "MODULE", "W3", "W3_IDEM"]

MODULE = "benchmarks.broker_ceiling"  # the replay worker runs as ``-m MODULE --replay-worker``
DEFAULTS = ProducerConfig()  # the producers' batch_size, max_request_size, request_timeout_ms
W3 = WORKLOADS["W3"]
W3_IDEM = WORKLOADS["W3/idem"]  # W3 with idempotence on (aiokafka_lite's default)
LIBRDKAFKA = "confluent"  # benchmarks/bench's name for confluent-kafka's sync Producer
# W3's clients, by benchmarks/bench's names. Java's ProducerPerformance cannot send keys:
# its records are keyless (sticky partitioner), read back without a key check.
CLIENTS = W3.clients
