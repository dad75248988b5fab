"""A small Spark pipeline that ends in Kafka: raw purchase events in, clean facts out.

    pip install -e ".[spark,broker]"     # or: pip install "aiokafka-lite[spark,broker]"
    python examples/spark_pipeline.py     # local[*] Spark + an embedded broker; nothing else

What it does:

1. reads a CSV of purchase events (generated here, 200,000 rows by default, with the
   usual dirt: duplicated events, missing users, unparsable amounts, lower-case or
   unknown country codes; or your own with ``--input events.csv``),
2. cleans it (drops what cannot be used, de-duplicates by ``event_id``), enriches it
   (joins a country table: region and an EUR exchange rate) and aggregates it
   (spend per user and hour, and per region),
3. writes the results: with :func:`aiokafka_lite.spark.write_to_kafka`,
   ``purchases-clean`` (every clean event, msgpack, keyed by user) and
   ``user-hourly-spend`` (JSON objects, keyed by user, with a header naming the run);
   with the data source ``format("aiokafka_lite")`` (Spark's own Kafka sink columns
   and options), ``region-spend`` (JSON, keyed by region); and prints each write's
   summary.

On a cluster, install ``aiokafka-lite[spark]`` on every node (or ship a packed
virtualenv with ``--archives``) and submit it; the topics are created if missing::

    spark-submit --master spark://spark-master:7077 examples/spark_pipeline.py \\
        --bootstrap-server kafka-1:9092,kafka-2:9092 --input hdfs:///data/events.csv

(``--master`` here is only for running it with ``python`` against a cluster; under
``spark-submit`` the master comes from spark-submit.)
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from aiokafka_lite import NewTopic, create_topics
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.spark import (
    KafkaDataSource,
    ensure_local_python,
    local_session,
    read_summaries,
    write_to_kafka,
)

TOPICS = {"purchases-clean": 6, "user-hourly-spend": 6, "region-spend": 1}
COUNTRIES = [  # code, region, EUR per unit of the local currency
    ("DE", "EU", 1.0),
    ("FR", "EU", 1.0),
    ("PL", "EU", 0.23),
    ("GB", "UK", 1.17),
    ("US", "NA", 0.92),
    ("CA", "NA", 0.68),
    ("JP", "APAC", 0.0062),
    ("AU", "APAC", 0.61),
]
EVENT_TYPES = ["view", "cart", "purchase", "refund"]


def generate_events(path: Path, rows: int, seed: int = 7) -> None:
    """A CSV of purchase events with realistic mistakes in it."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    codes = [c for c, _, _ in COUNTRIES]
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["event_id", "user_id", "event_type", "amount", "country", "ts"])
        previous: list[str] | None = None
        for _ in range(rows):
            if previous is not None and rng.random() < 0.02:  # a duplicated delivery
                out.writerow(previous)
                continue
            user = f"user-{rng.randrange(2_000):04d}" if rng.random() > 0.01 else ""
            amount = f"{rng.lognormvariate(3, 1):.2f}" if rng.random() > 0.01 else "n/a"
            country = rng.choice(codes)
            if rng.random() < 0.05:
                country = country.lower()
            elif rng.random() < 0.01:
                country = "XX"
            ts = start + timedelta(seconds=rng.randrange(3 * 24 * 3600))
            row = [
                uuid.UUID(int=rng.getrandbits(128)).hex,
                user,
                rng.choice(EVENT_TYPES),
                amount,
                country,
                ts.isoformat(),
            ]
            out.writerow(row)
            previous = row


def read_events(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.csv(
        path,
        header=True,
        schema="event_id string, user_id string, event_type string, amount string, "
        "country string, ts timestamp",
    )


def clean(events: DataFrame) -> DataFrame:
    return (
        events.withColumn("amount", sf.expr("try_cast(amount as decimal(12, 2))"))
        .withColumn("country", sf.upper(sf.trim("country")))
        .where("user_id is not null and user_id != '' and amount is not null and ts is not null")
        .dropDuplicates(["event_id"])
    )


def enrich(events: DataFrame, countries: DataFrame) -> DataFrame:
    signed = sf.when(sf.col("event_type") == "refund", -sf.col("amount")).otherwise(
        sf.col("amount")
    )
    return (
        events.join(sf.broadcast(countries), "country")  # unknown countries drop out here
        .withColumn("amount_eur", sf.round(signed * sf.col("eur_rate"), 2).cast("double"))
        .withColumn("hour", sf.date_trunc("hour", "ts"))
    )


def per_user_hour(events: DataFrame) -> DataFrame:
    money = events.where(sf.col("event_type").isin("purchase", "refund"))
    return money.groupBy("user_id", "hour").agg(
        sf.count("*").alias("events"),
        sf.round(sf.sum("amount_eur"), 2).alias("spend_eur"),
        sf.sort_array(sf.collect_set("country")).alias("countries"),
    )


def per_region(events: DataFrame) -> DataFrame:
    return events.groupBy("region").agg(
        sf.count("*").alias("events"),
        sf.countDistinct("user_id").alias("users"),
        sf.round(
            sf.sum(sf.when(sf.col("event_type") == "purchase", sf.col("amount_eur"))), 2
        ).alias("purchases_eur"),
    )


def run(spark: SparkSession, bootstrap: str, input_path: str) -> Iterator[str]:
    import asyncio

    asyncio.run(
        create_topics(bootstrap, [NewTopic(t, num_partitions=n) for t, n in TOPICS.items()])
    )
    countries = spark.createDataFrame(COUNTRIES, "country string, region string, eur_rate double")
    raw = read_events(spark, input_path)
    events = enrich(clean(raw), countries).cache()
    yield f"read {raw.count():,} raw events, kept {events.count():,} after cleaning"

    run_id = uuid.uuid4().hex[:8]
    clean_summary = write_to_kafka(
        events.select(
            "user_id", sf.struct("event_id", "event_type", "amount_eur", "country", "ts").alias("e")
        ),
        "purchases-clean",
        bootstrap_servers=bootstrap,
        key_col="user_id",
        value_col="e",
        value_format="msgpack",
        compression_type="lz4" if _has("lz4") else None,
    )
    yield f"purchases-clean:   {clean_summary}"

    hourly = per_user_hour(events).withColumn(
        "headers", sf.create_map(sf.lit("pipeline-run"), sf.lit(run_id))
    )
    hourly_summary = write_to_kafka(
        hourly,
        "user-hourly-spend",
        bootstrap_servers=bootstrap,
        key_col="user_id",
        value_col=["user_id", "hour", "events", "spend_eur", "countries"],
        value_format="json",
        headers_col="headers",
    )
    yield f"user-hourly-spend: {hourly_summary}"

    # The data source: the columns and options of Spark's own Kafka sink, no JVM jars.
    spark.dataSource.register(KafkaDataSource)
    regions = per_region(events)
    with tempfile.TemporaryDirectory() as folder:
        summaries = Path(folder) / "summaries.jsonl"  # the driver appends each write's summary
        (
            regions.select(
                sf.col("region").alias("key"),
                sf.to_json(sf.struct("region", "events", "users", "purchases_eur")).alias("value"),
            )
            .write.format("aiokafka_lite")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", "region-spend")
            .option("summaryPath", str(summaries))
            .mode("append")
            .save()
        )
        region_summary = read_summaries(summaries)[-1]
    yield f"region-spend:      {region_summary}"
    for row in regions.orderBy("region").collect():
        yield (
            f"  {row.region:<5} {row.events:>8,} events {row.users:>6,} users "
            f"{row.purchases_eur:>14,.2f} EUR purchases"
        )


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", help="a Kafka cluster (default: embedded broker)")
    parser.add_argument("--input", help="a CSV of events (default: generate one)")
    parser.add_argument("--events", type=int, default=200_000, help="rows to generate")
    parser.add_argument("--master", help="Spark master (default: local[*], or spark-submit's)")
    args = parser.parse_args()

    with ExitStack() as stack:
        if args.master is None and "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit
            spark = SparkSession.builder.appName("aiokafka-lite-pipeline").getOrCreate()
            ensure_local_python(spark)
        else:
            conf = {"spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "8"}
            spark = local_session(args.master or "local[*]", "aiokafka-lite-pipeline", **conf)
        stack.callback(spark.stop)
        spark.sparkContext.setLogLevel("ERROR")

        input_path = args.input
        if input_path is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            input_path = str(folder / "events.csv")
            generate_events(Path(input_path), args.events)
            print(f"generated {args.events:,} events in {input_path}")

        bootstrap = args.bootstrap_server
        if bootstrap is None:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
            print(f"embedded broker at {bootstrap}")
        for line in run(spark, bootstrap, input_path):
            print(line, flush=True)


if __name__ == "__main__":
    main()
