"""``format("aiokafka_lite")``: Spark's Kafka sink contract as a Python data source.

Register it once per session, then switch ``format("kafka")`` for it::

    from aiokafka_lite.spark import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
    (df.write.format("aiokafka_lite")
       .option("kafka.bootstrap.servers", "kafka:9092")
       .option("topic", "orders")
       .mode("append")
       .save())

Spark calls :meth:`KafkaDataSource.writer` (or ``streamWriter``) on the driver,
where the schema and options are checked (:func:`~.contract.datasource_plan`),
then each task's ``write`` with the task's Arrow batches: one producer per task
(:func:`~.task.run_task`), whose report is the commit message. The driver's
``commit`` / ``abort`` sum the reports, per micro-batch when streaming, log the
summary, append it to the ``summaryPath`` file if that option is set, and raise
:class:`~.summary.KafkaWriteError` if any row was not written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from .contract import Plan, datasource_plan, summary_path
from .summary import (
    KafkaWriteError,
    TaskReport,
    WriteSummary,
    append_summary,
    summarize,
    topics_label,
)
from .task import run_task
from .task_transaction import run_task_in_transaction

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ["KafkaArrowWriter", "KafkaCommitMessage", "KafkaDataSource", "KafkaStreamArrowWriter"]

# The Spark sink logs as one documented logger, the package's (docs/logging.md).
_log = logging.getLogger("aiokafka_lite.spark")


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one task sends back to the driver: its counts and attempt numbers."""

    report: TaskReport


class KafkaDataSource(DataSource):
    """Writes a DataFrame to Kafka as Spark's Kafka sink does, without its JVM jars.

    Columns, as Spark's Kafka sink takes them (others are ignored): ``value``
    (string or binary, required; null writes a null value), ``key`` (string or
    binary; null or absent: no key), ``headers`` (``array<struct<key:string,
    value:binary>>``), ``topic`` (string; required unless the ``topic`` option is
    set, which then wins over the column), ``partition`` (int; null or absent: the
    producer's partitioner). Options: ``kafka.bootstrap.servers`` (required), any
    other ``kafka.X`` as the producer setting ``X``, ``topic``, and ``summaryPath``
    (a file on the driver's host to which each write's summary is appended as a
    JSON line: :func:`~aiokafka_lite.spark.read_summaries`). At-least-once; for a
    streaming write, ``exactlyOnce`` (``true``) writes each task's part of every
    micro-batch in one transaction, with ``transactionalIdPrefix`` (default: derived
    from the query's id) naming the tasks' producers (docs/spark.md, exactly-once).
    """

    @classmethod
    def name(cls) -> str:
        return "aiokafka_lite"

    def writer(self, schema: StructType, overwrite: bool) -> KafkaArrowWriter:
        if overwrite:
            raise ValueError(
                "save mode overwrite is not allowed for Kafka, which cannot be truncated "
                "(Spark's Kafka sink refuses it too): use .mode('append')"
            )
        plan = datasource_plan(schema, self.options)
        if plan.exactly_once:
            raise ValueError(
                "option 'exactlyOnce' applies to streaming writes (writeStream), whose "
                "micro-batches Spark can replay; a batch write is at-least-once"
            )
        return KafkaArrowWriter(plan, summary_path(self.options))

    def streamWriter(  # noqa: N802 (pyspark's name)
        self, schema: StructType, overwrite: bool
    ) -> KafkaStreamArrowWriter:
        # overwrite is the complete output mode: each micro-batch's rows are written, as
        # by Spark's Kafka sink. Also called for every micro-batch's commit: stay cheap.
        plan = datasource_plan(schema, self.options)
        return KafkaStreamArrowWriter(plan, summary_path(self.options))


class _Reporter:
    """The driver's side of a write: the tasks' reports summed, logged and recorded."""

    def __init__(self, plan: Plan, path: str | None) -> None:
        self.plan = plan
        self.summary_path = path

    def _write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return KafkaCommitMessage(run_task(self.plan, iterator))

    def _finish(
        self, messages: list[WriterCommitMessage | None], batch_id: int | None, aborted: bool
    ) -> WriteSummary:
        reports = [m.report for m in messages if isinstance(m, KafkaCommitMessage)]
        topic = topics_label(self.plan.topic, reports)
        summary = summarize(topic, reports, batch_id=batch_id, aborted=aborted)
        if self.plan.exactly_once and not summary.transactional:  # no task reported
            summary = replace(summary, transactional=True, rows_maybe_duplicated=0)
        unfinished = len(messages) - len(reports)
        if aborted and not unfinished and summary.rows_failed:
            # Spark aborts after our commit raised for failed rows: that commit has
            # recorded and reported the write already.
            return summary
        if self.summary_path is not None:
            append_summary(self.summary_path, summary)
        if aborted:
            _log.error(
                "aiokafka_lite: %s; %d task(s) failed, Spark gave up the write: rows already "
                "sent stay in Kafka",
                summary,
                unfinished,
            )
        elif summary.rows_failed:
            _log.error("aiokafka_lite: %s", summary)
            raise KafkaWriteError(summary)
        elif summary.tasks_retried:
            _log.warning("aiokafka_lite: %s", summary)
        else:
            _log.info("aiokafka_lite: %s", summary)
        return summary


class KafkaArrowWriter(_Reporter, DataSourceArrowWriter):
    """The batch writer: ``df.write.format("aiokafka_lite")...save()``."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._finish(messages, None, aborted=False)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._finish(messages, None, aborted=True)


class KafkaStreamArrowWriter(_Reporter, DataSourceStreamArrowWriter):
    """The streaming writer: ``df.writeStream.format("aiokafka_lite")...start()``.

    A micro-batch with a row not written raises in ``commit``: the query stops
    before Spark records the batch as done, and a restart writes it again. With
    ``exactlyOnce``, each task writes its rows in one transaction
    (:mod:`~.task_transaction`).
    """

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        if self.plan.exactly_once:
            return KafkaCommitMessage(run_task_in_transaction(self.plan, iterator))
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        self._finish(messages, batchId, aborted=False)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        self._finish(messages, batchId, aborted=True)
