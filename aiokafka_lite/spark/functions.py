"""``write_to_kafka`` and ``kafka_batch_writer``: the sink as functions with column options.

``write_to_kafka`` maps the DataFrame with ``mapInArrow``: each task runs
:func:`~.task.run_task` (the data source's tasks run the same) and returns a
one-row report; the driver sums them into a :class:`~.summary.WriteSummary`.
``kafka_batch_writer`` makes a ``foreachBatch`` function of it, or of the
exactly-once mode (:mod:`.exactly_once`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .columns import prepare
from .contract import FORMATS, ValueFormat, sink_config
from .exactly_once import DEFAULT_TOPIC_TIMEOUT_MS, SINK_GROUP_PREFIX, write_exactly_once
from .session import ensure_local_python
from .summary import KafkaWriteError, TaskReport, WriteSummary, summarize
from .task import map_in_arrow_function, run, topic_partitions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["KafkaBatchWriter", "kafka_batch_writer", "write_to_kafka"]

# The Spark sink logs as one documented logger, the package's (docs/logging.md).
_log = logging.getLogger("aiokafka_lite.spark")


def write_to_kafka(
    df: DataFrame,
    topic: str,
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
    """Produce every row of ``df`` to ``topic`` from the Spark executors.

    * ``key_col``: binary or string (UTF-8) column; other simple types are written
      as their string form; ``None`` (or a null key): keyless. Keyed rows go where
      Java's partitioner puts them (murmur2).
    * ``value_col``: with ``value_format="bytes"`` one binary or string column.
      With ``"json"``/``"msgpack"``: one column (a struct becomes an object), or a
      list of columns, encoded as one object per row. A null value column gives a
      null value (a tombstone).
    * ``headers_col``: ``map<string, binary|string>`` or
      ``array<struct<key: string, value: binary|string>>`` (keeps order and duplicates).
    * ``partition_col``: an integer column; a null falls back to key placement.
    * ``timestamp_col``: the records' CreateTime: a timestamp column, or integers in
      ms since the epoch; without it (or where it is null) the time of the write.
    * ``producer_config``: :class:`~aiokafka_lite.AIOKafkaProducer` options
      (``acks``, ``compression_type``, ``batch_size``, ...). ``allow_auto_create_topics``
      is off unless given: the topic must exist; the driver waits for its metadata
      at most ``topic_timeout_ms`` and raises :class:`~aiokafka_lite.KafkaTimeoutError`.

    Returns a :class:`WriteSummary`; raises :class:`KafkaWriteError` (which carries it)
    if any row could not be serialized or delivered; the message names the column or
    the partition and error of the first failures. Rows that failed are not retried;
    the others were written. If Spark re-ran a task (its first attempt failed), the
    summary says so: the rows that attempt had written may be in Kafka twice.
    """
    start = time.monotonic()
    config = sink_config(bootstrap_servers, producer_config)
    ensure_local_python(df.sparkSession)
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
    rows = prepared.mapInArrow(map_in_arrow_function(plan), TaskReport.ARROW_SCHEMA).collect()
    reports = [TaskReport.from_row(r) for r in rows]
    summary = summarize(topic, reports, time.monotonic() - start)
    if summary.tasks_retried:
        _log.warning("%s", summary)
    if summary.rows_failed:
        raise KafkaWriteError(summary)
    return summary


class KafkaBatchWriter:
    """``foreachBatch`` function writing each micro-batch to Kafka.

    At-least-once (``transactional_id`` None): each micro-batch with
    :func:`write_to_kafka`, from the executors. A batch with a failed row raises,
    which stops the query; on restart Spark replays that batch, so rows it had
    written are written again.

    Exactly-once (``transactional_id`` set): each micro-batch is collected to the
    driver as Arrow and written there in one transaction, which also commits the
    batch id as the offset of consumer group ``SINK_GROUP_PREFIX + transactional_id``
    (partition 0 of the topic). A batch id not above the committed one is skipped.
    Each batch starts and stops its own transactional producer: InitProducerId then
    settles what an earlier attempt left open before the batch id is read, and no
    producer or event loop outlives the call.

    Keeps the summary of the last batch and running totals.
    """

    def __init__(
        self, topic: str, options: dict[str, Any], transactional_id: str | None = None
    ) -> None:
        self.topic = topic
        self.options = options
        self.transactional_id = transactional_id
        #: exactly-once mode: the group whose committed offset is the next batch id
        self.group_id = None if transactional_id is None else SINK_GROUP_PREFIX + transactional_id
        self.last_summary: WriteSummary | None = None
        self.batches = 0
        self.rows_sent = 0
        self.replays_skipped = 0
        #: at-least-once mode: tasks Spark re-ran, and the rows they may have duplicated
        self.tasks_retried = 0
        self.rows_maybe_duplicated = 0

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        if self.transactional_id is None:
            summary = write_to_kafka(batch_df, self.topic, **self.options)
        else:
            summary = write_exactly_once(
                batch_df, self.topic, batch_id, self.transactional_id, **self.options
            )
        self.last_summary = summary
        self.batches += 1
        self.rows_sent += summary.rows_sent
        self.replays_skipped += summary.replay_skipped
        self.tasks_retried += summary.tasks_retried
        self.rows_maybe_duplicated += summary.rows_maybe_duplicated
        _log.info("micro-batch %d: %s", batch_id, summary)


def kafka_batch_writer(
    topic: str,
    *,
    bootstrap_servers: str | list[str],
    key_col: str | None = None,
    value_col: str | Sequence[str] = "value",
    headers_col: str | None = None,
    partition_col: str | None = None,
    value_format: ValueFormat = "bytes",
    timestamp_col: str | None = None,
    topic_timeout_ms: int = DEFAULT_TOPIC_TIMEOUT_MS,
    exactly_once: bool = False,
    transactional_id: str | None = None,
    **producer_config: Any,
) -> KafkaBatchWriter:
    """A function for ``stream_df.writeStream.foreachBatch(...)``; options as
    :func:`write_to_kafka` (checked now, not at the first batch).

    ``exactly_once=True`` writes each micro-batch from the driver in one Kafka
    transaction that also records its batch id, so a replayed batch (Spark re-runs
    the last one after a crash) is skipped instead of written twice.
    ``transactional_id`` is then required: the same for every run of the query (e.g.
    its name), and a new one if the query's checkpoint is deleted (batch ids start
    again at 0 and would be skipped). Consumers must read with
    ``isolation.level=read_committed``.
    """
    # Anything else about the id (its type, idempotence turned off under any of its
    # names) is refused by sink_config's ProducerConfig check below.
    if exactly_once:
        if not transactional_id:
            raise ValueError(
                "exactly_once=True needs transactional_id: a non-empty string that stays the "
                "same across restarts of the query (e.g. the query's name)"
            )
    elif transactional_id is not None:
        raise ValueError("transactional_id is only used with exactly_once=True")
    sink_config(bootstrap_servers, producer_config, transactional_id)
    if value_format not in FORMATS:
        raise ValueError(f"value_format must be one of {FORMATS}, got {value_format!r}")
    options: dict[str, Any] = dict(
        bootstrap_servers=bootstrap_servers,
        key_col=key_col,
        value_col=value_col,
        headers_col=headers_col,
        partition_col=partition_col,
        value_format=value_format,
        timestamp_col=timestamp_col,
        topic_timeout_ms=topic_timeout_ms,
        **producer_config,
    )
    return KafkaBatchWriter(topic, options, transactional_id)
