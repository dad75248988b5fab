"""Spark's own Kafka sink and ours, the same DataFrame, the same records.

One DataFrame (keyed rows, keyless rows, rows with an explicit ``partition``, null
values, headers, a ``topic`` column) is written by ``format("kafka")`` (Spark's JVM
connector, spark-sql-kafka-0-10 from Maven) and by ``format("aiokafka_lite")`` into
two topics of the same shape, on the standalone cluster of tests/spark_cluster.py.
confluent-kafka reads both back: the same multiset of (key, value, headers) lands, and
every keyed or explicitly placed row lands in the same partition (keyless rows go
where each producer's sticky partitioner puts them: only their contents are compared).
Runs on both session brokers (tests/conftest.py). Marked ``spark``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
import spark_connector
from conftest import create_topic
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf
from readers import ReadRecord, read_all_confluent

from aiokafka_lite.spark import KafkaDataSource

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

PARTITIONS = 6
ROWS = 3_000


@pytest.fixture(scope="session")
def spark(spark: SparkSession) -> SparkSession:
    """conftest's session, with the ``kafka`` data source registered."""
    reason = spark_connector.missing_reason()
    if reason is not None:
        pytest.skip(reason)
    spark.dataSource.register(KafkaDataSource)
    return spark


def frame(spark: SparkSession) -> DataFrame:
    """ROWS rows: a third keyed, a third keyless, a third placed by ``partition``."""
    n = sf.col("id")
    kind = n % 3
    return spark.range(ROWS, numPartitions=4).select(
        sf.when(kind == 1, sf.lit(None).cast("binary"))
        .otherwise(sf.concat(sf.lit("key-"), (n % 97).cast("string")).cast("binary"))
        .alias("key"),
        sf.when(n % 50 == 0, sf.lit(None).cast("binary"))
        .otherwise(sf.concat(sf.lit("value-"), n.cast("string")).cast("binary"))
        .alias("value"),
        sf.when(kind == 2, (n % PARTITIONS).cast("int")).alias("partition"),
        sf.array(
            sf.struct(sf.lit("row").alias("key"), n.cast("string").cast("binary").alias("value")),
            sf.struct(sf.lit("empty").alias("key"), sf.lit(None).cast("binary").alias("value")),
        ).alias("headers"),
    )


def write(df: DataFrame, fmt: str, bootstrap: str, topic: str) -> None:
    (
        df.withColumn("topic", sf.lit(topic))
        .write.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.acks", "all")
        .option("kafka.linger.ms", "5")
        .mode("append")
        .save()
    )


def landed(records: list[ReadRecord]) -> tuple[Counter[Any], Counter[Any]]:
    """What every record carried, and where the placed ones went (by row number)."""
    contents: Counter[Any] = Counter()
    placed: Counter[Any] = Counter()
    for r in records:
        headers = tuple(r.headers)
        contents[(r.key, r.value, headers)] += 1
        row = int(dict(r.headers)["row"] or b"-1")
        if row % 3 != 1:  # keyed or explicitly placed
            placed[(row, r.partition)] += 1
    return contents, placed


def test_spark_kafka_sink_and_ours_land_the_same_records(
    spark: SparkSession, bootstrap: str
) -> None:
    df = frame(spark).cache()
    assert df.count() == ROWS
    theirs = create_topic(bootstrap, PARTITIONS, prefix="spark-kafka")
    ours = create_topic(bootstrap, PARTITIONS, prefix="aiokafka-lite")
    write(df, "kafka", bootstrap, theirs)
    write(df, "aiokafka_lite", bootstrap, ours)
    read_theirs = read_all_confluent(bootstrap, theirs, ROWS, timeout=60, idle=3, at_least=ROWS)
    read_ours = read_all_confluent(bootstrap, ours, ROWS + 1, timeout=60, idle=3, at_least=ROWS)
    assert len(read_theirs) == ROWS, f"Spark's sink landed {len(read_theirs)} of {ROWS}"
    assert len(read_ours) == ROWS, f"ours landed {len(read_ours)} of {ROWS}"
    contents_theirs, placed_theirs = landed(read_theirs)
    contents_ours, placed_ours = landed(read_ours)
    assert contents_ours == contents_theirs
    assert placed_ours == placed_theirs
    # the placed rows really are two thirds of the frame, each in exactly one partition
    assert sum(placed_ours.values()) == ROWS - len(range(1, ROWS, 3))
