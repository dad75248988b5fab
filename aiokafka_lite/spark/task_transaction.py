"""Exactly-once from the executors: each task writes its part of a micro-batch in one
Kafka transaction, and commits with it a marker naming the batch.

With the data source's ``exactlyOnce`` option, every task of a streaming query's
micro-batch ``B`` runs one transactional producer whose id is the query's prefix and
the task's Spark partition (``<prefix>-<partition>``: the same in every attempt and
every batch). In one transaction it writes the task's rows and commits, as the
offset of the consumer group ``SINK_GROUP_PREFIX + <transactional id>`` on partition
0 of the sink topic, ``B + 1``. So:

* a replayed ``(B, partition)`` (after an executor or the driver died between the
  Kafka commit and Spark's) finds ``B + 1`` committed and writes nothing;
* a later attempt of the task starts its producer with the same id: InitProducerId
  aborts what an earlier attempt left open and fences it, so a zombie attempt can
  neither commit nor write into the new transaction;
* rows that fail abort the task's transaction (none of its rows is committed), and
  the driver's commit raises naming them, so the batch is not marked done.

What makes it exactly-once for ``read_committed`` readers: a replayed micro-batch
gives each Spark partition the same rows (Spark's replayable sources, Kafka's and
files', do), and the prefix stays the query's across
restarts (by default it is derived from the query id, which the checkpoint keeps).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..producer import AIOKafkaProducer
from .exactly_once import SINK_GROUP_PREFIX, SINK_METADATA, next_batch_id
from .summary import TaskReport
from .task import BatchReader, producer_options, run, write_batches

if TYPE_CHECKING:
    import pyarrow as pa

    from .contract import Plan

__all__ = ["BATCH_ID_PROPERTY", "QUERY_ID_PROPERTY", "run_task_in_transaction"]

#: the local properties Spark's micro-batch execution sets on every task it runs
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
#: the transactional-id prefix when the writer names none: the query id follows it
DEFAULT_PREFIX = "aiokafka-lite-"


class _RowsFailedError(Exception):
    """A row of the task could not be written: its transaction is aborted."""


def task_transactional_id(prefix: str | None, query_id: str | None, partition: int) -> str:
    """The id of the task's producer: the same for every attempt and micro-batch."""
    if prefix is None:
        if not query_id:
            raise RuntimeError(
                "exactlyOnce: this task carries no streaming query id; the option applies "
                "to streaming writes (writeStream) only"
            )
        prefix = DEFAULT_PREFIX + query_id
    return f"{prefix}-{partition}"


def run_task_in_transaction(plan: Plan, batches: Iterable[pa.RecordBatch]) -> TaskReport:
    """Write this task's rows of the running micro-batch in one transaction, or skip them
    if an earlier attempt committed them; the report says which."""
    from pyspark import TaskContext

    report = TaskReport.for_this_task()
    report.transactional = True
    ctx = TaskContext.get()
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
    if ctx is None or batch is None:
        raise RuntimeError(
            "exactlyOnce: this task runs outside a streaming micro-batch (no "
            f"{BATCH_ID_PROPERTY!r}); the option applies to writeStream only"
        )
    transactional_id = task_transactional_id(
        plan.transactional_id_prefix, ctx.getLocalProperty(QUERY_ID_PROPERTY), ctx.partitionId()
    )
    run(_transaction(plan, iter(batches), int(batch), transactional_id, report))
    report.finished_at = time.time()
    return report


async def _transaction(
    plan: Plan,
    batches: Iterator[pa.RecordBatch],
    batch_id: int,
    transactional_id: str,
    report: TaskReport,
) -> None:
    from ..structs import OffsetAndMetadata, TopicPartition

    assert plan.topic is not None  # datasource_plan requires it with exactlyOnce
    group_id = SINK_GROUP_PREFIX + transactional_id
    marker = TopicPartition(plan.topic, 0)
    config: dict[str, Any] = {**producer_options(plan.config), "transactional_id": transactional_id}
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(**config)
    reader = BatchReader(batches)
    # Reading the task's rows writes nothing: the first batch streams in from the JVM
    # while the producer starts and the marker is read.
    reader.prefetch()
    try:
        # InitProducerId first: it ends what an earlier attempt left open and fences
        # it, so the marker read next is final.
        await producer.start()
        if await next_batch_id(plan, group_id, marker, producer.config.max_block_ms) > batch_id:
            report.skipped = True
            # Spark still streams the task's rows: read them, send none.
            while (batch := await reader.next()) is not None:
                report.rows += batch.num_rows
            return
        try:
            async with producer.transaction():
                # The marker goes into the transaction while the rows are written: it
                # commits with them or, if a row fails, is aborted with them.
                offset = OffsetAndMetadata(batch_id + 1, SINK_METADATA)
                marking = asyncio.ensure_future(
                    producer.send_offsets_to_transaction({marker: offset}, group_id)
                )
                try:
                    await write_batches(producer, plan, reader, report)
                finally:
                    await asyncio.wait([marking])
                marking.result()  # its error aborts the transaction
                if report.rows_failed:
                    raise _RowsFailedError
        except _RowsFailedError:
            # Aborted: none of the task's rows is committed. The driver's commit raises
            # KafkaWriteError naming them; the batch is not marked done, and a restart
            # writes it again (the tasks that committed skip it then).
            report.rows_failed += report.rows_sent
            report.rows_sent = 0
            report.first_error = f"{report.first_error}; the task's transaction was aborted"
    finally:
        await reader.close()
        await producer.stop()
        await asyncio.sleep(0)
