"""Write PySpark DataFrames and streams to Kafka from the executors, with no JVM jars.

Two ways in, one write path (each Spark task converts its Arrow batches column by
column and writes them with one producer):

* :class:`KafkaDataSource`: Spark's own Kafka sink contract (columns ``key``,
  ``value``, ``headers``, ``topic``, ``partition``; ``kafka.``-prefixed options) as
  the Python data source ``format("aiokafka_lite")``, batch and streaming.
* :func:`write_to_kafka` and :func:`kafka_batch_writer`: functions with column
  options (JSON/msgpack values, map headers, timestamps), and an exactly-once
  ``foreachBatch`` mode.

Delivery is at-least-once, as with Spark's own sink: a task Spark re-runs writes
its rows again, and every summary says when that happened. The exactly-once
``foreachBatch`` mode writes each micro-batch in one Kafka transaction instead.
Needs the ``spark`` extra (``pyspark>=4``, ``pyarrow``, and pandas < 3, which
``mapInArrow`` still imports). See docs/spark.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .cluster import StandaloneCluster
from .exactly_once import SINK_GROUP_PREFIX
from .functions import KafkaBatchWriter, kafka_batch_writer, write_to_kafka
from .session import ensure_local_python, local_session, set_active_session
from .summary import KafkaWriteError, TaskReport, WriteSummary, read_summaries

if TYPE_CHECKING:
    from .datasource import KafkaDataSource

#: the Spark sink's logger (its modules log through it)
log = logging.getLogger(__name__)

__all__ = [
    "SINK_GROUP_PREFIX",
    "KafkaBatchWriter",
    "KafkaDataSource",
    "KafkaWriteError",
    "StandaloneCluster",
    "TaskReport",
    "WriteSummary",
    "ensure_local_python",
    "kafka_batch_writer",
    "local_session",
    "read_summaries",
    "set_active_session",
    "write_to_kafka",
]


def __getattr__(name: str) -> Any:
    # The data source subclasses pyspark's classes: import pyspark only when asked for it.
    if name == "KafkaDataSource":
        from .datasource import KafkaDataSource

        return KafkaDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
