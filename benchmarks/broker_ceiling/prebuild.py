"""Before the clock: W3's records as framed Produce requests, as a producer's sender
would drain them for one broker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from aiokafka_lite._internal import protocol as kp
from aiokafka_lite._internal.partitioner import default_partition
from aiokafka_lite._internal.protocol.frames import encode_client_id, request_header, seal_frame
from aiokafka_lite._internal.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RecordBatchBuilder,
)

from .settings import DEFAULTS

CLIENT_ID = encode_client_id("broker-ceiling")
# Correlation ids: ApiVersions 0, Metadata 1, InitProducerId 2 (idempotent replays), then
# the Produce requests in order.
INIT_PRODUCER_ID = 2
FIRST_PRODUCE_ID = 3
REQUEST_OVERHEAD = 100  # a batch this much under max_request_size fits a request (accumulator)


class Shape(NamedTuple):
    """How the replay sends W3's records: bytes per batch, requests unanswered at most,
    and whether the batches carry a producer id and sequence numbers (idempotent)."""

    batch_size: int
    in_flight: int
    idempotent: bool = False

    @property
    def label(self) -> str:
        idem = ", idempotent" if self.idempotent else ""
        return f"ceiling: {self.batch_size / 1024:g} KiB batches, {self.in_flight} in flight{idem}"


class Producer(NamedTuple):
    """The producer id and epoch an idempotent replay stamps on its batches
    (from InitProducerId); ``NO_PRODUCER``: a plain, non-idempotent replay."""

    producer_id: int
    epoch: int


NO_PRODUCER = Producer(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)


class Prebuilt(NamedTuple):
    """One framed Produce request, and what its response must acknowledge."""

    frame: bytes
    correlation_id: int
    records: int
    partitions: frozenset[int]


def partition_order(keys: Sequence[bytes], partitions: int) -> list[list[int]]:
    """Record indices per partition, in send order: murmur2 of the key, as producers do."""
    part_of = {key: default_partition(key, partitions) for key in set(keys)}
    order: list[list[int]] = [[] for _ in range(partitions)]
    for i, key in enumerate(keys):
        order[part_of[key]].append(i)
    return order


def build_batches(
    keys: Sequence[bytes],
    values: Sequence[bytes],
    order: Sequence[int],
    timestamp: int,
    batch_size: int,
    producer: Producer = NO_PRODUCER,
) -> list[tuple[bytes, int]]:
    """One partition's records as closed v2 batches of at most ``batch_size`` bytes
    (a producer closes a batch when the next record would not fit): (bytes, count).
    With a producer id, each batch's base sequence is the count of the partition's
    records before it, as an idempotent producer numbers them."""
    batches: list[tuple[bytes, int]] = []
    idempotent = producer.producer_id != NO_PRODUCER_ID
    sequence = 0
    pos = 0
    while pos < len(order):
        builder = RecordBatchBuilder(timestamp)
        # The budget (bytes the buffer may still take) only has to exceed the batch limit.
        budget = 2 * batch_size
        end = builder.append_many(timestamp, keys, values, order, pos, batch_size, budget)
        if end <= pos:
            raise RuntimeError(f"no record of {len(order) - pos} fitted a new batch")
        pos = end
        closed = builder.close(
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch,
            base_sequence=sequence if idempotent else NO_SEQUENCE,
        )
        batches.append((bytes(closed), builder.count))
        sequence += builder.count
    return batches


def build_requests(
    topic: str, batches: list[list[tuple[bytes, int]]], version: int
) -> list[Prebuilt]:
    """Framed Produce requests: round j carries batch j of every partition that has one,
    up to ``max_request_size`` (one drain per request, as a producer's sender makes)."""
    requests: list[Prebuilt] = []
    rounds = max(len(b) for b in batches)
    for j in range(rounds):
        parts = [(p, b[j]) for p, b in enumerate(batches) if j < len(b)]
        chunk: list[tuple[int, tuple[bytes, int]]] = []
        size = 0
        for part in parts:
            if chunk and size + len(part[1][0]) > DEFAULTS.max_request_size:
                requests.append(
                    frame_request(topic, chunk, version, FIRST_PRODUCE_ID + len(requests))
                )
                chunk, size = [], 0
            chunk.append(part)
            size += len(part[1][0])
        requests.append(frame_request(topic, chunk, version, FIRST_PRODUCE_ID + len(requests)))
    return requests


def frame_request(
    topic: str, chunk: list[tuple[int, tuple[bytes, int]]], version: int, correlation_id: int
) -> Prebuilt:
    request = kp.ProduceRequest(
        transactional_id=None,
        acks=-1,  # acks=all
        timeout_ms=DEFAULTS.request_timeout_ms,
        topic_data=[
            kp.TopicProduceData(
                name=topic,
                partition_data=[
                    kp.PartitionProduceData(index=p, records=batch) for p, (batch, _) in chunk
                ],
            )
        ],
    )
    frame = frame_of(request, version, correlation_id)
    records = sum(count for _, (_, count) in chunk)
    return Prebuilt(bytes(frame), correlation_id, records, frozenset(p for p, _ in chunk))


def frame_of(request: kp.Request, version: int, correlation_id: int) -> bytearray:
    """Size prefix, request header and body: the bytes a producer's connection writes."""
    cls = type(request)
    flexible = version >= cls.FLEXIBLE_SINCE
    frame = request_header(cls.API_KEY, version, correlation_id, CLIENT_ID, flexible)
    frame += kp.encode(request, version)
    return seal_frame(frame)
