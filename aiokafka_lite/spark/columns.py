"""The column options of :func:`~aiokafka_lite.spark.write_to_kafka` and
:func:`~aiokafka_lite.spark.kafka_batch_writer`, turned into a :class:`~.contract.Plan`.

These functions take their columns by argument (``key_col=``, ``value_col=``,
...) and offer more than Spark's Kafka sink contract: JSON or msgpack values built
from several columns, map headers, any simple key type, record timestamps. The
driver checks the columns and selects them, cast by Spark, in the form the tasks
read; the tasks then run the same conversion and write path as the data source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .contract import FORMATS, Plan, ValueFormat

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

__all__ = ["prepare"]


def prepare(
    df: DataFrame,
    topic: str,
    key_col: str | None,
    value_col: str | Sequence[str] | None,
    headers_col: str | None,
    partition_col: str | None,
    value_format: ValueFormat,
    config: dict[str, Any],
    timestamp_col: str | None = None,
) -> tuple[DataFrame, Plan]:
    from pyspark.sql import functions as sf
    from pyspark.sql import types as st

    if value_format not in FORMATS:
        raise ValueError(f"value_format must be one of {FORMATS}, got {value_format!r}")
    schema = {f.name: f.dataType for f in df.schema.fields}

    def column_type(name: str, role: str) -> DataType:
        if name not in schema:
            raise ValueError(
                f"{role} column {name!r} is not in the DataFrame; its columns: {list(schema)}"
            )
        return schema[name]

    exprs: list[Column] = []
    at: dict[str, int] = {}

    def add(name: str, expr: Column) -> int:
        at[name] = len(exprs)
        exprs.append(expr.alias(f"_c{len(exprs)}"))
        return at[name]

    key_at = partition_at = headers_at = None
    if key_col is not None:
        key_at = add(
            "key", _as_binary(sf.col(key_col), column_type(key_col, "key"), key_col, "key")
        )
    if partition_col is not None:
        ptype = column_type(partition_col, "partition")
        if not isinstance(ptype, st.IntegralType):
            raise TypeError(
                f"partition column {partition_col!r} must be an integer column, got "
                f"{ptype.simpleString()}"
            )
        partition_at = add("partition", sf.col(partition_col).cast("int"))
    timestamp_at = None
    if timestamp_col is not None:
        timestamp_at = add("timestamp", _millis(timestamp_col, column_type(timestamp_col, "ts")))
    headers_as_pairs = False
    if headers_col is not None:
        expr, headers_as_pairs = _headers_expr(headers_col, column_type(headers_col, "headers"))
        headers_at = add("headers", expr)

    if isinstance(value_col, str):
        names = [value_col]
    elif value_col is None:
        raise ValueError("value_col is required (a column name, or a list of them for json)")
    else:
        names = list(value_col)
        if not names:
            raise ValueError("value_col: an empty list of columns")
    types = [column_type(n, "value") for n in names]
    value_struct = False
    fields: tuple[str, ...] = ()
    field_names: tuple[str, ...] = ()
    if value_format == "bytes":
        if len(names) != 1:
            raise ValueError(
                f"value_format='bytes' takes one value column, got {names}; "
                "use value_format='json' or 'msgpack' to encode several columns as one object"
            )
        value_at: tuple[int, ...] = (
            add("value", _as_binary(sf.col(names[0]), types[0], names[0], "value")),
        )
    elif len(names) == 1:
        value_at = (add("value", sf.col(names[0])),)
        if isinstance(types[0], st.StructType):
            value_struct = True
            fields = tuple(types[0].fieldNames())
            field_names = tuple(f"{names[0]}.{f}" for f in fields)
    else:
        value_at = tuple(add(f"value:{n}", sf.col(n)) for n in names)
        fields = field_names = tuple(names)

    plan = Plan(
        topic=topic,
        config=config,
        value_format=value_format,
        key_name=key_col,
        partition_name=partition_col,
        headers_name=headers_col,
        value_name=names[0] if len(names) == 1 else None,
        value_fields=fields,
        value_field_names=field_names,
        value_struct=value_struct,
        headers_as_pairs=headers_as_pairs,
        timestamp_at=timestamp_at,
        key_at=key_at,
        partition_at=partition_at,
        headers_at=headers_at,
        value_at=value_at,
    )
    return df.select(*exprs), plan


def _millis(name: str, dtype: DataType) -> Column:
    """Record timestamps: a timestamp column, or integers taken as ms since the epoch."""
    from pyspark.sql import functions as sf
    from pyspark.sql import types as st

    col = sf.col(name)
    if isinstance(dtype, st.TimestampType | st.TimestampNTZType):
        return sf.unix_millis(col.cast("timestamp"))
    if isinstance(dtype, st.IntegralType):
        return col.cast("long")
    raise TypeError(
        f"timestamp column {name!r} has type {dtype.simpleString()}: expected a timestamp "
        "or an integer (ms since the epoch)"
    )


def _as_binary(col: Column, dtype: DataType, name: str, role: str) -> Column:
    """Keys and bytes values: binary as is, strings as UTF-8 (cast by the JVM)."""
    from pyspark.sql import types as st

    if isinstance(dtype, st.BinaryType):
        return col
    if isinstance(dtype, st.StringType):
        return col.cast("binary")
    if role == "key" and isinstance(dtype, st.AtomicType):
        # Numbers, dates, ...: their string form, as Spark's own Kafka sink needs a cast for.
        return col.cast("string").cast("binary")
    hint = "" if role == "key" else "; use value_format='json' or 'msgpack' for other types"
    raise TypeError(
        f"{role} column {name!r} has type {dtype.simpleString()}: a {role} must be binary or "
        f"string{hint}"
    )


def _headers_expr(name: str, dtype: DataType) -> tuple[Column, bool]:
    """Headers as map<string, binary> or array<struct<key: string, value: binary>>."""
    from pyspark.sql import functions as sf
    from pyspark.sql import types as st

    def value_ok(t: DataType) -> bool:
        return isinstance(t, st.BinaryType | st.StringType)

    col = sf.col(name)
    if (
        isinstance(dtype, st.MapType)
        and isinstance(dtype.keyType, st.StringType)
        and value_ok(dtype.valueType)
    ):
        return sf.transform_values(col, lambda _k, v: v.cast("binary")), False
    if isinstance(dtype, st.ArrayType) and isinstance(dtype.elementType, st.StructType):
        element = dtype.elementType
        names = element.fieldNames()
        if (
            names == ["key", "value"]
            and isinstance(element["key"].dataType, st.StringType)
            and value_ok(element["value"].dataType)
        ):
            pairs = sf.transform(
                col,
                lambda e: sf.struct(
                    e["key"].alias("key"), e["value"].cast("binary").alias("value")
                ),
            )
            return pairs, True
    raise TypeError(
        f"headers column {name!r} has type {dtype.simpleString()}: expected "
        "map<string, binary|string> or array<struct<key: string, value: binary|string>>"
    )
