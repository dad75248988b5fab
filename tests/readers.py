"""Independent readers used by the tests to verify what a producer wrote.

These use OTHER clients only (confluent-kafka / librdkafka and aiokafka), never ours, so a
bug in our encoder cannot be masked by the same bug in our decoder.

Both readers return :class:`ReadRecord` lists sorted by ``(partition, offset)`` and
normalise the clients' representations so their results compare equal:

* ``timestamp_type`` follows the Kafka record-batch attribute convention:
  ``0`` = CreateTime, ``1`` = LogAppendTime, ``-1`` = not available.
  (confluent-kafka reports ``(type, ms)`` with 0 = not available, 1 = CreateTime,
  2 = LogAppendTime; aiokafka already uses 0/1.)
* ``headers`` is a list of ``(key, value)`` in wire order, duplicates kept; a null header
  value stays ``None`` (Kafka allows it, so do not hide it).

Tansu notes (see ``aiokafka_lite/embedded.py``): its high watermark is wrong (last batch
base offset + 1), so the readers poll until ``expected`` records have arrived instead of
reading up to the watermark; consumer groups are avoided (manual ``assign`` from offset 0).
Both readers read every codec: aiokafka decodes gzip itself and snappy, lz4 and zstd
through cramjam, which the ``dev`` extra installs (``test_compression_e2e.py`` reads each
codec with both).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped]
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition

__all__ = [
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "TIMESTAMP_NOT_AVAILABLE",
    "ReadRecord",
    "read_all_aiokafka",
    "read_all_confluent",
]

TIMESTAMP_NOT_AVAILABLE = -1
TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1

# confluent_kafka.TIMESTAMP_* (0 not available, 1 create, 2 log append) -> Kafka convention
_CONFLUENT_TS_TYPE = {
    0: TIMESTAMP_NOT_AVAILABLE,
    1: TIMESTAMP_CREATE_TIME,
    2: TIMESTAMP_LOG_APPEND_TIME,
}


@dataclass(frozen=True, slots=True)
class ReadRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp: int
    timestamp_type: int  # 0 = CreateTime, 1 = LogAppendTime, -1 = not available


def _as_bytes(value: str | bytes | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def _sorted(records: list[ReadRecord]) -> list[ReadRecord]:
    return sorted(records, key=lambda r: (r.partition, r.offset))


def read_all_confluent(
    bootstrap: str,
    topic: str,
    expected: int,
    timeout: float = 30.0,
    extra_config: dict[str, str] | None = None,
    *,
    idle: float | None = None,
    at_least: int = 0,
) -> list[ReadRecord]:
    """Read ``topic`` from offset 0 of every partition with confluent-kafka (blocking).

    Polls until ``expected`` records were read or ``timeout`` s passed and returns what was
    read (possibly fewer: assert on the length). With ``idle``, it also stops once at least
    ``at_least`` records were read and none arrived for ``idle`` s: a caller can then ask
    for more than must be there (e.g. one more, so that a duplicate or an extra record is
    seen, not cut off) without always waiting out ``timeout``; below ``at_least`` only
    ``timeout`` ends the wait, so a slow start is no false failure. Consumer errors (e.g. a
    CRC mismatch, as ``check.crcs`` is on) raise ``RuntimeError``. Note: on Tansu, fetching
    metadata of a topic that does not exist auto-creates it (with 4 empty partitions).
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            # required by the client, but unused: partitions are assigned manually
            "group.id": f"readers-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "check.crcs": True,
            "enable.partition.eof": False,
            "log_level": 3,
            **(extra_config or {}),  # e.g. security.protocol and ssl.ca.location
        }
    )
    records: list[ReadRecord] = []
    try:
        metadata = consumer.list_topics(topic, timeout=min(timeout, 10.0))
        topic_md = metadata.topics.get(topic)
        if topic_md is None or topic_md.error is not None:
            err = topic_md.error if topic_md is not None else "missing"
            raise RuntimeError(f"cannot read metadata of topic {topic!r}: {err}")
        consumer.assign(
            [CkTopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(topic_md.partitions)]
        )
        deadline = time.monotonic() + timeout
        last_arrival = time.monotonic()
        while len(records) < expected:
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                break
            if idle is not None and len(records) >= at_least and now - last_arrival >= idle:
                break
            msgs = consumer.consume(num_messages=1000, timeout=min(remaining, 0.2))
            if msgs:
                last_arrival = time.monotonic()
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    raise RuntimeError(f"confluent consumer error on {topic!r}: {err}")
                ts_type, ts = msg.timestamp()
                msg_topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
                assert msg_topic is not None
                assert partition is not None
                assert offset is not None
                raw_headers = msg.headers() or []  # a list from consumers (dict is producer-only)
                header_items = raw_headers.items() if isinstance(raw_headers, dict) else raw_headers
                records.append(
                    ReadRecord(
                        topic=msg_topic,
                        partition=partition,
                        offset=offset,
                        key=_as_bytes(msg.key()),
                        value=_as_bytes(msg.value()),
                        headers=[(k, _as_bytes(v)) for k, v in header_items],
                        timestamp=ts,
                        timestamp_type=_CONFLUENT_TS_TYPE[ts_type],
                    )
                )
    except KafkaException as exc:
        raise RuntimeError(f"confluent reader failed on {topic!r}: {exc}") from exc
    finally:
        consumer.close()
    return _sorted(records)


async def read_all_aiokafka(
    bootstrap: str,
    topic: str,
    expected: int,
    timeout: float = 30.0,
) -> list[ReadRecord]:
    """Read ``topic`` from the beginning of every partition with aiokafka.

    Same contract as :func:`read_all_confluent` (returns what was read by the deadline).
    The topic must already exist: its partitions come from aiokafka's metadata.
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        check_crcs=True,
    )
    await consumer.start()
    records: list[ReadRecord] = []
    try:
        # aiokafka bug: stop() right after start() can raise CancelledError; let the
        # coordinator's background task begin first.
        await asyncio.sleep(0)
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            # aiokafka bootstraps with a Metadata request for no topics: Tansu answers it
            # with every topic, Apache Kafka with none. Ask for this one.
            await asyncio.wait_for(consumer._client.add_topic(topic), timeout)
            partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise RuntimeError(f"aiokafka reader: topic {topic!r} not found in metadata")
        tps = [AioTopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        while len(records) < expected:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            batches = await consumer.getmany(timeout_ms=int(min(remaining, 0.2) * 1000) or 1)
            for msgs in batches.values():
                for m in msgs:
                    records.append(
                        ReadRecord(
                            topic=m.topic,
                            partition=m.partition,
                            offset=m.offset,
                            key=m.key,
                            value=m.value,
                            headers=[(k, v) for k, v in m.headers],
                            timestamp=m.timestamp if m.timestamp is not None else -1,
                            timestamp_type=(
                                m.timestamp_type
                                if m.timestamp_type is not None
                                else TIMESTAMP_NOT_AVAILABLE
                            ),
                        )
                    )
    finally:
        await consumer.stop()
    return _sorted(records)
