"""What the tasks are told to do, and Spark's Kafka sink contract that the data source keeps.

:class:`Plan` is the one description both write paths hand to their tasks: which
Arrow column is the key, the value, the headers, the topic and the partition,
and the producer's options. :func:`datasource_plan` builds it from a DataFrame
schema and the options of ``df.write.format("aiokafka_lite")``, with the rules of
Spark's own Kafka sink (see :data:`SPARK_KAFKA_SINK_GUIDE`): columns found by
exact name, exact types, the ``topic`` option over the ``topic`` column, and every
``kafka.X`` option the producer setting ``X``. Everything here runs on the driver,
before any task starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..config import ProducerConfig
from ..errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructField, StructType

__all__ = [
    "FORMATS",
    "SPARK_KAFKA_SINK_GUIDE",
    "Plan",
    "ValueFormat",
    "datasource_plan",
    "sink_config",
]

#: Where Spark documents the DataFrame its Kafka sink writes.
SPARK_KAFKA_SINK_GUIDE = (
    "https://spark.apache.org/docs/latest/streaming/"
    "structured-streaming-kafka-integration.html#writing-data-to-kafka"
)

ValueFormat = Literal["bytes", "json", "msgpack"]
FORMATS = ("bytes", "json", "msgpack")
# Producer options with no meaning in a sink: the columns already are the bytes.
REFUSED_OPTIONS = ("key_serializer", "value_serializer", "interceptors", "interceptor_classes")
_PARTITIONER_OPTIONS = ("partitioner", "partitioner_class")
#: options of the data source itself (Spark lower-cases option names)
SUMMARY_PATH_OPTION = "summarypath"
EXACTLY_ONCE_OPTION = "exactlyonce"
PREFIX_OPTION = "transactionalidprefix"


@dataclass(frozen=True)
class Plan:
    """What the tasks need to know, shipped to them with the write function."""

    #: every row's topic, or None: each row's from the ``topic_at`` column
    topic: str | None
    config: dict[str, Any]
    value_format: ValueFormat = "bytes"
    #: user-facing names, for error messages
    key_name: str | None = None
    partition_name: str | None = None
    headers_name: str | None = None
    topic_name: str | None = None
    #: a single value column, or the (JSON/msgpack) object's fields and their columns
    value_name: str | None = None
    value_fields: tuple[str, ...] = ()
    value_field_names: tuple[str, ...] = ()
    #: the value column is a struct whose fields make the object (null struct: null value)
    value_struct: bool = False
    headers_as_pairs: bool = False  # array<struct<key, value>> rather than map<string, _>
    #: column positions in the Arrow batches the tasks receive
    key_at: int | None = None
    partition_at: int | None = None
    headers_at: int | None = None
    topic_at: int | None = None
    timestamp_at: int | None = None  # record timestamps in ms (null: the write's time)
    value_at: tuple[int, ...] = ()
    #: the data source's exactlyOnce option: one transaction per task and micro-batch
    exactly_once: bool = False
    #: its transactionalIdPrefix option (None: derived from the streaming query's id)
    transactional_id_prefix: str | None = None


# -- producer options ----------------------------------------------------------------


def sink_config(
    bootstrap_servers: str | list[str],
    options: Mapping[str, Any],
    transactional_id: str | None = None,
    *,
    auto_create: bool = False,
    named: str = "{}",
) -> dict[str, Any]:
    """The producer options of a sink, checked here (on the driver) by ProducerConfig.

    ``auto_create`` False turns topic auto-creation off unless the options set it;
    ``named`` formats an option's name for messages (the data source: ``"kafka.{}"``).
    """
    for key in options:
        name = key.replace(".", "_")
        if name in REFUSED_OPTIONS:
            raise ValueError(
                f"option {named.format(key)!r} is not used by the Spark sink: keys and values "
                "are the bytes of their columns"
            )
    config: dict[str, Any] = {"bootstrap_servers": bootstrap_servers}
    if not auto_create:
        # A sink writing into a topic that does not exist is most often a typo.
        config["allow_auto_create_topics"] = False
    config.update(options)
    if transactional_id is not None:
        config["transactional_id"] = transactional_id
    try:
        checked = ProducerConfig.from_kwargs(**config)  # fails naming the bad option
    except ConfigError as e:
        if named == "{}":
            raise
        raise ConfigError(f"{e} (options are given as {named.format('<name>')!r})") from None
    if checked.transactional_id != transactional_id:
        # Every task would start a producer with the same id, each fencing the last.
        raise ValueError(
            "transactional_id is not a producer option of the Spark sink: use "
            "kafka_batch_writer(..., exactly_once=True, transactional_id=...)"
        )
    return config


def _typed(name: str, value: Any) -> Any:
    """Spark passes every option as a string; ProducerConfig converts those of dotted
    (Java) names itself, so do the same for the one-word ones (``acks``, ``retries``)."""
    if "." in name or not isinstance(value, str):
        return value
    if value.lstrip("-").isdigit():
        return int(value)
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def _producer_options(options: Mapping[str, str]) -> dict[str, Any]:
    """The ``kafka.X`` options as producer settings ``X``."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if not key.startswith("kafka."):
            continue  # Spark's Kafka sink ignores options it does not know, so do we
        name = key[len("kafka.") :]
        if name.replace(".", "_") in _PARTITIONER_OPTIONS:
            raise ValueError(
                f"option {key!r} names a Java class, which a Python sink cannot load: rows "
                "without a partition are placed as by Java's default partitioner (murmur2 of "
                "the key; keyless rows spread over the partitions)"
            )
        out[name] = _typed(name, value)
    return out


# -- Spark's Kafka sink contract -----------------------------------------------------


def datasource_plan(schema: StructType, options: Mapping[str, str]) -> Plan:
    """Check ``schema`` and ``options`` as Spark's Kafka sink does; raise naming the column.

    Columns ``key``, ``value``, ``headers``, ``topic``, ``partition`` are found by their
    exact (case-sensitive) names; any other column is ignored.
    """
    opts = {k.lower(): v for k, v in options.items()}
    bootstrap = opts.pop("kafka.bootstrap.servers", None)
    if not bootstrap:
        raise ValueError(
            "option 'kafka.bootstrap.servers' is required: the brokers to connect to, "
            "as 'host:port,host:port'"
        )
    config = sink_config(bootstrap, _producer_options(opts), auto_create=True, named="kafka.{}")
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise ValueError("option 'topic' is empty: give a topic name, or leave it out")
    exactly_once, prefix = _exactly_once_options(opts, topic)

    columns = {f.name: (i, f) for i, f in enumerate(schema.fields)}
    names = [f.name for f in schema.fields]
    value = columns.get("value")
    if value is None:
        raise ValueError(
            f"the DataFrame has no 'value' column, which Spark's Kafka sink requires "
            f"(string or binary); its columns: {names}. See {SPARK_KAFKA_SINK_GUIDE}"
        )
    _check("value", value[1], _is_bytes_like, "string or binary", "e.g. to_json(struct(...))")
    key = columns.get("key")
    if key is not None:
        _check("key", key[1], _is_bytes_like, "string or binary", "e.g. cast('string')")
    headers = columns.get("headers")
    if headers is not None:
        _check(
            "headers",
            headers[1],
            _is_headers,
            "array<struct<key:string,value:binary>>",
            "header values are binary: cast them",
        )
    partition = columns.get("partition")
    if partition is not None:
        _check("partition", partition[1], _is_int, "int", "e.g. cast('int')")
    topic_column = None
    if topic is None:
        found = columns.get("topic")
        if found is None:
            raise ValueError(
                "the 'topic' option is required when the DataFrame has no 'topic' column: "
                f"set .option('topic', ...) or add a string column 'topic'; its columns: {names}"
            )
        _check("topic", found[1], _is_string, "string", "e.g. cast('string')")
        topic_column = found
    return Plan(
        topic=topic,
        config=config,
        key_name=None if key is None else "key",
        partition_name=None if partition is None else "partition",
        headers_name=None if headers is None else "headers",
        topic_name=None if topic_column is None else "topic",
        value_name="value",
        headers_as_pairs=True,
        exactly_once=exactly_once,
        transactional_id_prefix=prefix,
        key_at=None if key is None else key[0],
        partition_at=None if partition is None else partition[0],
        headers_at=None if headers is None else headers[0],
        topic_at=None if topic_column is None else topic_column[0],
        value_at=(value[0],),
    )


def _exactly_once_options(opts: Mapping[str, str], topic: str | None) -> tuple[bool, str | None]:
    """The ``exactlyOnce`` and ``transactionalIdPrefix`` options, checked."""
    flag = opts.get(EXACTLY_ONCE_OPTION, "false").strip().lower()
    if flag not in ("true", "false"):
        raise ValueError(f"option 'exactlyOnce' is {flag!r}: give true or false")
    prefix = opts.get(PREFIX_OPTION)
    if flag == "false":
        if prefix is not None:
            raise ValueError("option 'transactionalIdPrefix' needs .option('exactlyOnce', 'true')")
        return False, None
    if prefix is not None and not prefix.strip():
        raise ValueError("option 'transactionalIdPrefix' is empty: give a prefix, or leave it out")
    if topic is None:
        raise ValueError(
            "option 'exactlyOnce' needs the 'topic' option: each task commits the micro-batch "
            "it wrote as a marker on the topic's partition 0"
        )
    return True, prefix


def summary_path(options: Mapping[str, str]) -> str | None:
    """The data source's ``summaryPath`` option: where commit and abort append summaries."""
    opts = {k.lower(): v for k, v in options.items()}
    return opts.get(SUMMARY_PATH_OPTION) or None


def _check(name: str, field: StructField, ok: Any, expected: str, hint: str) -> None:
    if not ok(field.dataType):
        raise TypeError(
            f"column {name!r} has type {field.dataType.simpleString()}: Spark's Kafka sink "
            f"takes {expected} there ({hint}). See {SPARK_KAFKA_SINK_GUIDE}"
        )


def _is_string(t: DataType) -> bool:
    from pyspark.sql.types import StringType

    return isinstance(t, StringType)


def _is_bytes_like(t: DataType) -> bool:
    from pyspark.sql.types import BinaryType

    return _is_string(t) or isinstance(t, BinaryType)


def _is_int(t: DataType) -> bool:
    from pyspark.sql.types import IntegerType

    return isinstance(t, IntegerType)


def _is_headers(t: DataType) -> bool:
    from pyspark.sql.types import ArrayType, BinaryType, StructType

    if not isinstance(t, ArrayType) or not isinstance(t.elementType, StructType):
        return False
    fields = t.elementType.fields
    # Spark compares struct field names without case (spark.sql.caseSensitive=false).
    return (
        [f.name.lower() for f in fields] == ["key", "value"]
        and _is_string(fields[0].dataType)
        and isinstance(fields[1].dataType, BinaryType)
    )
