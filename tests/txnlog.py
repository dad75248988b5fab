"""Read a partition's raw log, control batches included, with aiokafka's client and parser.

Neither broker used in the tests filters aborted transactions for a
``read_committed`` consumer: Tansu and librdkafka's mock cluster both write the
commit/abort markers (control batches) but answer every Fetch with an empty
``aborted_transactions`` list, so confluent-kafka and aiokafka consumers show
aborted records too (confluent-kafka's own transactional producer gives the
same picture). What the brokers do store is what Kafka's read_committed rule is
computed from: each transactional batch, and later a control batch from the same
producer id saying COMMIT or ABORT. :func:`read_log` fetches those bytes with
aiokafka (not our code) and :func:`committed_view` applies the rule.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiokafka.client import AIOKafkaClient  # type: ignore[import-untyped]
from aiokafka.protocol.fetch import FetchRequest  # type: ignore[import-untyped]
from aiokafka.record.memory_records import MemoryRecords  # type: ignore[import-untyped]
from aiokafka.structs import TopicPartition as AioTopicPartition  # type: ignore[import-untyped]
from readers import read_all_confluent

__all__ = ["Batch", "LogView", "committed_view", "read_confluent", "read_log", "read_log_async"]

READ_UNCOMMITTED = 0
ABORT, COMMIT = 0, 1  # control record types (the key's second int16)


@dataclass(frozen=True)
class Batch:
    partition: int
    base_offset: int
    producer_id: int
    producer_epoch: int
    transactional: bool
    control: int | None  # ABORT / COMMIT for a marker, None for data
    values: tuple[bytes, ...]


@dataclass
class LogView:
    committed: list[bytes] = field(default_factory=list)
    aborted: list[bytes] = field(default_factory=list)
    open: list[bytes] = field(default_factory=list)  # no marker yet
    markers: list[tuple[int, int]] = field(default_factory=list)  # (producer id, type)


async def _read_partition(client: AIOKafkaClient, topic: str, partition: int) -> list[Batch]:
    await client.force_metadata_update()
    leader = client.cluster.leader_for_partition(AioTopicPartition(topic, partition))
    out: list[Batch] = []
    offset = 0
    empty = 0
    # Until two Fetches in a row (each waiting 100 ms) find nothing more: the
    # tests read after the producer is done. The mock answers one batch per Fetch.
    while empty < 2:
        request = FetchRequest(
            100, 1, 1 << 20, READ_UNCOMMITTED, [(topic, [(partition, offset, 1 << 20)])]
        )
        response = await client.send(leader, request)
        data = response.topics[0][1][0][-1]
        records = MemoryRecords(data)
        got = False
        while (batch := records.next_batch()) is not None:
            got = True
            records_ = list(batch)  # the batch is its own (one-shot) iterator
            values = tuple(r.value or b"" for r in records_)  # the tests send no nulls
            control = None
            if batch.is_control_batch:
                control = int.from_bytes(records_[0].key[2:4], "big")
            out.append(
                Batch(
                    partition,
                    batch.base_offset,
                    batch.producer_id,
                    batch.producer_epoch,
                    batch.is_transactional,
                    control,
                    () if control is not None else values,
                )
            )
            offset = batch.next_offset
        empty = 0 if got else empty + 1
    return out


async def read_log_async(bootstrap: str, topic: str, partitions: int) -> list[Batch]:
    """Every batch of ``topic`` (partitions ``0..partitions-1``), markers included."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        client.add_topic(topic)
        batches: list[Batch] = []
        for p in range(partitions):
            batches += await _read_partition(client, topic, p)
        return batches
    finally:
        await client.close()


def read_log(bootstrap: str, topic: str, partitions: int) -> list[Batch]:
    """Blocking :func:`read_log_async` (run it in a thread from async tests)."""
    return asyncio.run(read_log_async(bootstrap, topic, partitions))


def committed_view(batches: list[Batch]) -> LogView:
    """Kafka's read_committed rule: a transaction's records count once its COMMIT is written."""
    view = LogView()
    pending: dict[tuple[int, int], list[bytes]] = {}
    for b in sorted(batches, key=lambda b: (b.partition, b.base_offset)):
        key = (b.partition, b.producer_id)
        if b.control is not None:
            view.markers.append((b.producer_id, b.control))
            done = pending.pop(key, [])
            (view.committed if b.control == COMMIT else view.aborted).extend(done)
        elif b.transactional:
            pending.setdefault(key, []).extend(b.values)
        else:
            view.committed.extend(b.values)
    for values in pending.values():
        view.open.extend(values)
    return view


def read_confluent(
    bootstrap: str, topic: str, isolation: str, expected: int, timeout: float = 20.0
) -> list[bytes]:
    """Values read by a confluent-kafka consumer with ``isolation.level=isolation``
    (:func:`readers.read_all_confluent`'s), by partition and offset.

    Reads until ``expected`` values arrived, then on until none arrives for half a
    second (or one more did), so that duplicates would show.
    """
    records = read_all_confluent(
        bootstrap,
        topic,
        expected + 1,
        timeout,
        idle=0.5,
        at_least=expected,
        # (librdkafka's mock cluster writes its COMMIT/ABORT markers with a CRC of 0.)
        extra_config={"isolation.level": isolation, "check.crcs": "false"},
    )
    return [r.value or b"" for r in records]
