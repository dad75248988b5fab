"""Exactly-once ``foreachBatch``: each micro-batch written by the driver in one transaction.

The transaction also commits the batch id, as the offset of consumer group
``SINK_GROUP_PREFIX + transactional_id`` on partition 0 of the topic; a batch id
not above the committed one is skipped, so a micro-batch Spark replays after a
crash is not written twice. The rows go through the same conversion and write
path as every other mode (:func:`~.task.write_batches`), fed with the batch
collected to the driver as Arrow.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..producer import AIOKafkaProducer
from .columns import prepare
from .contract import Plan, ValueFormat, sink_config
from .summary import KafkaWriteError, TaskReport, WriteSummary
from .task import producer_options, run, topic_partitions, write_batches

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ..structs import TopicPartition

__all__ = ["SINK_GROUP_PREFIX", "SINK_METADATA", "write_exactly_once"]

# The Spark sink logs as one documented logger, the package's (docs/logging.md).
_log = logging.getLogger("aiokafka_lite.spark")

#: the consumer group whose committed offset records a writer's last committed batch id
SINK_GROUP_PREFIX = "aiokafka-lite-sink."
SINK_METADATA = "aiokafka-lite spark sink"
DEFAULT_TOPIC_TIMEOUT_MS = 10_000


class _RowsFailedError(Exception):
    """Some row of the micro-batch could not be written: the transaction is aborted."""


def write_exactly_once(
    df: DataFrame,
    topic: str,
    batch_id: int,
    transactional_id: str,
    *,
    bootstrap_servers: str | list[str],
    key_col: str | None = None,
    value_col: str | Sequence[str] = "value",
    headers_col: str | None = None,
    partition_col: str | None = None,
    value_format: ValueFormat = "bytes",
    timestamp_col: str | None = None,
    topic_timeout_ms: int = DEFAULT_TOPIC_TIMEOUT_MS,
    **producer_config: Any,
) -> WriteSummary:
    """Write micro-batch ``batch_id`` from the driver in one transaction, unless a
    transaction of ``transactional_id`` already committed it (or a later batch)."""
    start = time.monotonic()
    config = sink_config(bootstrap_servers, producer_config, transactional_id)
    prepared, plan = prepare(
        df,
        topic,
        key_col,
        value_col,
        headers_col,
        partition_col,
        value_format,
        config,
        timestamp_col,
    )
    # Fails fast, on the driver, for an unknown topic or an unreachable cluster.
    run(topic_partitions(config, topic, topic_timeout_ms))
    report = TaskReport(partition_id=-1)
    committed = run(_transaction(plan, prepared, batch_id, report))
    elapsed = time.monotonic() - start
    if not committed:
        return WriteSummary(
            topic, 0, 0, 0, elapsed, batch_id=batch_id, replay_skipped=True, transactional=True
        )
    if report.rows_failed:
        # The transaction was aborted: none of the batch's rows is committed.
        error = f"{report.first_error}; the transaction was aborted, no row was committed"
        summary = WriteSummary(
            topic,
            0,
            report.rows,
            0,
            elapsed,
            (f"micro-batch {batch_id}: {error}",),
            batch_id,
            transactional=True,
        )
        raise KafkaWriteError(summary)
    return WriteSummary(
        topic, report.rows_sent, 0, 0, elapsed, batch_id=batch_id, transactional=True
    )


async def _transaction(plan: Plan, prepared: DataFrame, batch_id: int, report: TaskReport) -> bool:
    """Write ``prepared`` and commit ``batch_id`` in one transaction; ``False`` if the batch
    had been committed already (a replay). Rows that fail abort it (``report`` says why)."""
    from ..structs import OffsetAndMetadata, TopicPartition

    assert plan.topic is not None
    transactional_id = plan.config["transactional_id"]
    group_id = SINK_GROUP_PREFIX + transactional_id
    marker = TopicPartition(plan.topic, 0)  # the sink topic's partition 0 always exists
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(**producer_options(plan.config))
    # InitProducerId first: it completes or aborts a transaction an earlier attempt of
    # this id left open and fences an older driver, so the offset read next is final.
    await producer.start()
    try:
        next_batch = await next_batch_id(plan, group_id, marker, producer.config.max_block_ms)
        if next_batch > batch_id:
            _log_skip(batch_id, transactional_id, next_batch)
            return False
        # The Spark job runs in a thread: the producer's loop stays free meanwhile.
        table = await asyncio.to_thread(prepared.toArrow)
        try:
            async with producer.transaction():
                await write_batches(producer, plan, iter(table.to_batches()), report)
                if report.rows_failed:
                    raise _RowsFailedError
                offset = OffsetAndMetadata(batch_id + 1, SINK_METADATA)
                await producer.send_offsets_to_transaction({marker: offset}, group_id)
        except _RowsFailedError:
            pass  # aborted; the caller raises KafkaWriteError from the report
        return True
    finally:
        await producer.stop()
        await asyncio.sleep(0)


async def next_batch_id(plan: Plan, group_id: str, marker: TopicPartition, timeout_ms: int) -> int:
    """The batch id after the last one a writer committed: the marker offset of ``group_id``
    (-1 if none). Read after the writer's producer started, so that the InitProducerId
    that ended an earlier attempt's transaction makes it final."""
    from ..admin import fetch_committed_offsets

    options = {k: v for k, v in plan.config.items() if k != "bootstrap_servers"}
    offsets = await fetch_committed_offsets(
        plan.config["bootstrap_servers"], group_id, [marker], timeout_ms=timeout_ms, **options
    )
    return offsets[marker].offset


def _log_skip(batch_id: int, transactional_id: str, next_batch: int) -> None:
    if next_batch > batch_id + 1:
        _log.warning(
            "micro-batch %d of %r is older than the last one committed (%d): skipped. "
            "If the query's checkpoint was reset, give the writer a new transactional_id",
            batch_id,
            transactional_id,
            next_batch - 1,
        )
    else:
        _log.info(
            "micro-batch %d of %r was committed before: skipped (a replay)",
            batch_id,
            transactional_id,
        )
