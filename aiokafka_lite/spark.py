"""A PySpark sink: write a DataFrame (or each micro-batch of a stream) to Kafka.

Spark's own Kafka sink needs the JVM connector jars; this one runs aiokafka_lite
inside the Python workers. The DataFrame is handed to them as Arrow record batches
(``mapInArrow``); each task starts one producer on a private event loop, turns
every Arrow batch into keys, values, headers and partitions column by column
(``to_pylist`` per column, values encoded with msgspec), fills one record batch
per partition itself (``create_batch``/``send_batch``: one future per batch, not
per row), awaits every delivery and returns a one-row report. The driver
collects the reports into a :class:`WriteSummary` and raises
:class:`KafkaWriteError`, naming the first failures, if any row was not written.

Delivery: at-least-once. Within a task the producer is idempotent (retries do
not duplicate), but Spark re-runs a failed task, and Structured Streaming
replays a micro-batch after a crash; rows a previous attempt already wrote are
then written again. ``kafka_batch_writer(..., exactly_once=True,
transactional_id=...)`` instead writes each micro-batch from the driver in one
transaction that also commits the batch id (as a consumer-group offset), and
skips a batch id already committed: a replayed batch is not written twice.

Needs the ``spark`` extra (``pyspark>=4``, ``pyarrow``, and pandas < 3, which
``mapInArrow`` still imports).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from .errors import KafkaError
from .partitioner import KeyHashCache
from .producer import AIOKafkaProducer, BatchBuilder
from .structs import RecordMetadata

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

__all__ = [
    "SINK_GROUP_PREFIX",
    "KafkaBatchWriter",
    "KafkaWriteError",
    "WriteSummary",
    "ensure_local_python",
    "kafka_batch_writer",
    "local_session",
    "write_to_kafka",
]

log = logging.getLogger("aiokafka_lite.spark")

ValueFormat = Literal["bytes", "json", "msgpack"]
_FORMATS = ("bytes", "json", "msgpack")
# Producer options that have no meaning here: the columns already are the bytes.
_REFUSED_OPTIONS = ("key_serializer", "value_serializer", "interceptors")
# How long the driver waits for the topic's metadata before failing the write.
DEFAULT_TOPIC_TIMEOUT_MS = 10_000
_REPORT_SCHEMA = (
    "partition_id int, attempt int, rows long, rows_sent long, rows_failed long, first_error string"
)
_FIRST_ERRORS_SHOWN = 3
_T = TypeVar("_T")


# -- results ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteSummary:
    """What one ``write_to_kafka`` call did, summed over its Spark tasks.

    ``elapsed_s`` is the whole call: the Spark job computes the DataFrame while it
    writes it, so for a DataFrame with heavy transformations it is their time too.
    """

    topic: str
    rows_sent: int
    rows_failed: int
    tasks: int
    elapsed_s: float
    #: the first error of each task that had one, as ``"partition N: ..."``
    errors: tuple[str, ...] = ()
    #: exactly-once mode: the micro-batch (``tasks`` is 0 there: the driver wrote it)
    batch_id: int | None = None
    #: exactly-once mode: the batch had been committed before, nothing was written
    replay_skipped: bool = False

    @property
    def rows(self) -> int:
        return self.rows_sent + self.rows_failed

    @property
    def rows_per_s(self) -> float:
        return self.rows_sent / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def __str__(self) -> str:
        if self.replay_skipped:
            return (
                f"micro-batch {self.batch_id} skipped: committed to {self.topic!r} before "
                "(a replay), 0 rows sent"
            )
        if self.batch_id is not None:
            return (
                f"{self.rows_sent:,} rows sent to {self.topic!r} in one transaction "
                f"(micro-batch {self.batch_id}), {self.rows_failed:,} failed, "
                f"{self.elapsed_s:.2f}s ({self.rows_per_s:,.0f} rows/s)"
            )
        return (
            f"{self.rows_sent:,} rows sent to {self.topic!r}, {self.rows_failed:,} failed, "
            f"{self.tasks} tasks, {self.elapsed_s:.2f}s ({self.rows_per_s:,.0f} rows/s)"
        )


class KafkaWriteError(KafkaError):
    """Some rows were not written; ``summary`` says how many, ``errors`` the first causes."""

    def __init__(self, summary: WriteSummary) -> None:
        self.summary = summary
        shown = "; ".join(summary.errors[:_FIRST_ERRORS_SHOWN])
        more = len(summary.errors) - _FIRST_ERRORS_SHOWN
        if more > 0:
            shown += f"; and {more} more task(s) with errors"
        super().__init__(
            f"{summary.rows_failed:,} of {summary.rows:,} rows were not written to "
            f"{summary.topic!r}: {shown}"
        )


# -- the Python interpreter of local workers ---------------------------------------


def ensure_local_python(spark: SparkSession) -> None:
    """Make a ``local[...]`` session start its Python workers with this interpreter.

    Without ``PYSPARK_PYTHON`` Spark runs ``python3`` from ``PATH``, which may be
    another Python without pyarrow or aiokafka_lite. On a cluster the executors'
    Python is the cluster's business (``spark.pyspark.python``), so nothing changes
    there, nor when ``PYSPARK_PYTHON`` is set.
    """
    if "PYSPARK_PYTHON" in os.environ:
        return
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: no context here, the server starts the workers
        return
    if not str(sc.master).startswith("local"):
        return
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The context read the variable when it started; the functions it ships to the
    # workers from now on carry this attribute.
    sc.pythonExec = sys.executable


def local_session(
    master: str = "local[2]", app_name: str = "aiokafka-lite", **conf: str
) -> SparkSession:
    """A ``SparkSession`` for local runs whose Python workers use this interpreter."""
    from pyspark.sql import SparkSession

    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    builder = builder.config("spark.ui.enabled", "false")
    for name, value in conf.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    ensure_local_python(spark)
    return spark


# -- the plan: which prepared column is what ---------------------------------------


@dataclass(frozen=True)
class _Plan:
    """What the tasks need to know, shipped to them inside the mapped function."""

    topic: str
    config: dict[str, Any]
    value_format: ValueFormat
    #: user-facing names, for error messages
    key_name: str | None
    partition_name: str | None
    headers_name: str | None
    #: a single value column, or the (JSON/msgpack) object's fields and their columns
    value_name: str | None
    value_fields: tuple[str, ...] = ()
    value_field_names: tuple[str, ...] = ()
    #: the value column is a struct whose fields make the object (null struct: null value)
    value_struct: bool = False
    headers_as_pairs: bool = False  # array<struct<key, value>> rather than map<string, _>
    timestamp_at: int | None = None  # record timestamps in ms (null: the write's time)
    #: column positions in the prepared DataFrame
    key_at: int | None = None
    partition_at: int | None = None
    headers_at: int | None = None
    value_at: tuple[int, ...] = ()


def _prepare(
    df: DataFrame,
    topic: str,
    key_col: str | None,
    value_col: str | Sequence[str] | None,
    headers_col: str | None,
    partition_col: str | None,
    value_format: ValueFormat,
    config: dict[str, Any],
    timestamp_col: str | None = None,
) -> tuple[DataFrame, _Plan]:
    """Check the columns on the driver and select them in the form the tasks read."""
    from pyspark.sql import functions as sf
    from pyspark.sql import types as st

    if value_format not in _FORMATS:
        raise ValueError(f"value_format must be one of {_FORMATS}, got {value_format!r}")
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

    plan = _Plan(
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


# -- per task: Arrow columns to records ----------------------------------------------


class _Skip:
    """Marks a row that could not be converted (its error is in ``_Columns.errors``)."""


_SKIP = _Skip()


@dataclass
class _Columns:
    """One Arrow batch as Python lists, plus the rows that could not be converted."""

    values: list[Any]
    keys: list[bytes | None] | None = None
    partitions: list[int | None] | None = None
    headers: list[Any] | None = None
    timestamps: list[int | None] | None = None
    #: row index in this batch -> why it cannot be sent
    errors: dict[int, str] = field(default_factory=dict)

    def fail(self, row: int, message: str) -> None:
        self.errors.setdefault(row, message)


class _Converter:
    """Turns Arrow record batches into :class:`_Columns` for one task."""

    def __init__(self, plan: _Plan, num_partitions: int) -> None:
        self.plan = plan
        self.num_partitions = num_partitions
        self.row_base = 0  # rows of this task before the current batch
        fmt = plan.value_format
        self.encode: Callable[[Any], bytes] | None = None
        if fmt == "json":
            self.encode = msgspec.json.Encoder().encode
        elif fmt == "msgpack":
            self.encode = msgspec.msgpack.Encoder().encode
        self.record_type: type[msgspec.Struct] | None = None
        if plan.value_fields:
            # A Struct type with the value's fields encodes about twice as fast as a
            # dict per row; positional names plus rename allow any column name.
            slots = [f"f{i}" for i in range(len(plan.value_fields))]
            self.record_type = msgspec.defstruct(
                "Row",
                [(s, Any) for s in slots],
                rename=dict(zip(slots, plan.value_fields, strict=True)),
            )

    def convert(self, batch: pa.RecordBatch) -> _Columns:
        plan = self.plan
        out = _Columns(values=[])
        out.values = self._values(batch, out)
        if plan.key_at is not None:
            out.keys = self._pylist(batch.column(plan.key_at), f"{plan.key_name!r} (key)", out)
        if plan.partition_at is not None:
            out.partitions = self._partitions(batch.column(plan.partition_at), out)
        if plan.headers_at is not None:
            out.headers = self._headers(batch.column(plan.headers_at), out)
        if plan.timestamp_at is not None:
            out.timestamps = batch.column(plan.timestamp_at).to_pylist()
        self.row_base += batch.num_rows
        return out

    def _message(self, row: int, what: str, exc: BaseException) -> str:
        return (
            f"cannot serialize column {what} of row {self.row_base + row}: "
            f"{type(exc).__name__}: {exc}"
        )

    def _pylist(self, array: pa.Array, what: str, out: _Columns) -> list[Any]:
        """``array.to_pylist()``; a row whose value Python cannot hold becomes ``_SKIP``."""
        try:
            values: list[Any] = array.to_pylist(maps_as_pydicts="strict")
            return values
        except Exception:
            values = []
            for i in range(len(array)):
                try:
                    values.append(array[i].as_py(maps_as_pydicts="strict"))
                except Exception as e:
                    out.fail(i, self._message(i, what, e))
                    values.append(_SKIP)
            return values

    def _values(self, batch: pa.RecordBatch, out: _Columns) -> list[Any]:
        plan = self.plan
        fmt = plan.value_format
        if self.record_type is None:
            what = f"{plan.value_name!r} (value as {fmt})"
            values = self._pylist(batch.column(plan.value_at[0]), what, out)
            if self.encode is None:
                return values
            return self._encode_each(values, what, out)
        if plan.value_struct:
            struct = batch.column(plan.value_at[0])
            columns = struct.flatten()
            present = None if struct.null_count == 0 else struct.is_valid().to_pylist()
        else:
            columns = [batch.column(i) for i in plan.value_at]
            present = None
        lists = [
            self._pylist(c, f"{n!r} (value as {fmt})", out)
            for c, n in zip(columns, plan.value_field_names, strict=True)
        ]
        rows: list[Any] = list(map(self.record_type, *lists))
        if present is not None:  # a null struct is a null value
            rows = [r if ok else None for r, ok in zip(rows, present, strict=True)]
        return self._encode_each(rows, f"{plan.value_name or plan.value_fields!r} (value)", out)

    def _encode_each(self, values: list[Any], what: str, out: _Columns) -> list[Any]:
        encode = self.encode
        assert encode is not None
        try:
            return [None if v is None else encode(v) for v in values]
        except Exception:
            pass
        # Some row failed: find it (and any other) without giving up on the rest.
        encoded: list[Any] = []
        for i, v in enumerate(values):
            if v is None or i in out.errors:
                encoded.append(None)
                continue
            try:
                encoded.append(encode(v))
            except Exception as e:
                out.fail(i, self._message(i, self._culprit(v) or what, e))
                encoded.append(None)
        return encoded

    def _culprit(self, row: Any) -> str | None:
        """The field of an object row that does not encode alone, if one does not."""
        if not isinstance(row, msgspec.Struct) or self.encode is None:
            return None
        for slot, name in zip(row.__struct_fields__, self.plan.value_field_names, strict=True):
            try:
                self.encode(getattr(row, slot))
            except Exception:
                return f"{name!r} (value as {self.plan.value_format})"
        return None

    def _partitions(self, array: pa.Array, out: _Columns) -> list[int | None]:
        parts: list[int | None] = array.to_pylist()
        n = self.num_partitions
        for i, p in enumerate(parts):
            if p is not None and not 0 <= p < n:
                out.fail(
                    i,
                    f"column {self.plan.partition_name!r} (partition) of row "
                    f"{self.row_base + i}: partition {p} is out of range for "
                    f"{self.plan.topic!r}, which has {n} partition(s)",
                )
        return parts

    def _headers(self, array: pa.Array, out: _Columns) -> list[Any]:
        what = f"{self.plan.headers_name!r} (headers)"
        rows: list[Any] = array.to_pylist()  # map: [(k, v), ...]; pairs: [{key, value}]
        if self.plan.headers_as_pairs:
            rows = [None if r is None else [(h["key"], h["value"]) for h in r] for r in rows]
        for i, r in enumerate(rows):
            if r and any(k is None for k, _ in r):
                out.fail(i, f"column {what} of row {self.row_base + i}: a header key is null")
        return rows


# -- per task: records to batches to the broker --------------------------------------


@dataclass
class _Report:
    partition_id: int
    attempt: int
    rows: int = 0
    rows_sent: int = 0
    rows_failed: int = 0
    first_error: str | None = None

    def fail(self, count: int, message: str) -> None:
        self.rows_failed += count
        if self.first_error is None:
            self.first_error = message

    def to_arrow(self) -> pa.RecordBatch:
        import pyarrow as pa

        schema = pa.schema(
            [
                ("partition_id", pa.int32()),
                ("attempt", pa.int32()),
                ("rows", pa.int64()),
                ("rows_sent", pa.int64()),
                ("rows_failed", pa.int64()),
                ("first_error", pa.string()),
            ]
        )
        row = {k: [v] for k, v in vars(self).items()}
        return pa.RecordBatch.from_pydict(row, schema=schema)


class _TaskWriter:
    """One task's producer: an open batch per partition, one future per sent batch."""

    def __init__(
        self, producer: AIOKafkaProducer[Any, Any], plan: _Plan, n: int, report: _Report
    ) -> None:
        self.producer = producer
        self.report = report
        self.hashes = KeyHashCache()
        self.topic = plan.topic
        self.n = n
        self.partitioner = plan.config.get("partitioner")
        self.open: list[BatchBuilder | None] = [None] * n
        self.pending: set[asyncio.Future[RecordMetadata]] = set()
        self.sticky = random.randrange(n)  # keyless rows fill one partition's batch at a time

    async def write(self, cols: _Columns) -> None:
        """Append every row of one Arrow batch; send the batches that fill up."""
        hashes = self.hashes
        keys, values, parts, headers, times, errors = (
            cols.keys,
            cols.values,
            cols.partitions,
            cols.headers,
            cols.timestamps,
            cols.errors,
        )
        now = ts = int(time.time() * 1000)
        n = self.n
        open_ = self.open
        create = self.producer.create_batch
        custom = self.partitioner
        for i, value in enumerate(values):
            if errors and i in errors:
                self.report.fail(1, errors[i])
                continue
            key = None if keys is None else keys[i]
            p = None if parts is None else parts[i]
            if p is None:
                if key is None:
                    p = self.sticky
                elif custom is None:
                    p = hashes.hash(key) % n
                else:
                    p = int(custom(key, list(range(n)), list(range(n))))
                    if not 0 <= p < n:
                        self.report.fail(1, f"the partitioner returned {p} for {n} partitions")
                        continue
            h = None if headers is None else headers[i]
            if times is not None:
                t = times[i]
                ts = now if t is None else t
            b = open_[p]
            if b is None:
                b = open_[p] = create()
            if b.append(key=key, value=value, timestamp=ts, headers=h) is None:
                await self._send(p, b)
                b = open_[p] = create()
                b.append(key=key, value=value, timestamp=ts, headers=h)
                if p == self.sticky and n > 1:
                    self.sticky = (p + 1 + random.randrange(n - 1)) % n

    async def _send(self, p: int, b: BatchBuilder) -> None:
        count = b.record_count()
        try:
            fut = await self.producer.send_batch(b, self.topic, partition=p)
        except KafkaError as e:  # e.g. the producer failed fatally: these rows are lost
            self.report.fail(count, f"partition {p}: {type(e).__name__}: {e}")
            return
        self.pending.add(fut)
        fut.add_done_callback(partial(self._delivered, count, p))

    def _delivered(self, count: int, p: int, fut: asyncio.Future[RecordMetadata]) -> None:
        self.pending.discard(fut)
        exc = fut.exception() if not fut.cancelled() else asyncio.CancelledError()
        if exc is None:
            self.report.rows_sent += count
        else:
            self.report.fail(count, f"partition {p}: {type(exc).__name__}: {exc}")

    async def finish(self, timeout: float) -> None:
        """Send the partly filled batches and wait for every delivery."""
        for p, b in enumerate(self.open):
            if b is not None and b.record_count():
                await self._send(p, b)
        self.open = [None] * self.n
        if self.pending:
            await asyncio.wait(set(self.pending), timeout=timeout)
        # A future not done by now is counted by stop(), which fails it.


async def _produce(plan: _Plan, batches: Iterator[pa.RecordBatch], report: _Report) -> None:
    """One Spark task: its own producer writes the task's Arrow batches."""
    first = next(batches, None)
    if first is None:
        return  # an empty partition: no connection at all
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(**_producer_options(plan.config))
    await producer.start()
    try:
        await _write_batches(producer, plan, itertools.chain([first], batches), report)
    finally:
        await producer.stop()
        await asyncio.sleep(0)  # let the last delivery callbacks run


def _producer_options(config: dict[str, Any]) -> dict[str, Any]:
    cfg = dict(config)
    cfg.pop("partitioner", None)  # applied by _TaskWriter, which places every row
    return cfg


async def _write_batches(
    producer: AIOKafkaProducer[Any, Any],
    plan: _Plan,
    batches: Iterable[pa.RecordBatch],
    report: _Report,
) -> None:
    """Convert and send every Arrow batch, then wait for every delivery (into ``report``).

    The one conversion/produce path: a task's producer, or the driver's transactional one.
    """
    n = len(await producer.partitions_for(plan.topic))
    writer = _TaskWriter(producer, plan, n, report)
    converter = _Converter(plan, n)
    for batch in batches:
        report.rows += batch.num_rows
        await writer.write(converter.convert(batch))
        # Let the sender write what filled up while the next batch is read.
        await asyncio.sleep(0)
    await writer.finish(producer.config.delivery_timeout_ms / 1000)


def _task_function(plan: _Plan) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        report = _Report(
            partition_id=ctx.partitionId() if ctx else -1,
            attempt=ctx.attemptNumber() if ctx else 0,
        )
        _run(_produce(plan, iter(batches), report))
        yield report.to_arrow()

    return run


def _run(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` on a private event loop (in a thread if this one already has a loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            return runner.run(coro)
    result: list[_T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(_run(coro))
        except BaseException as e:
            failure.append(e)

    thread = threading.Thread(target=target, name="aiokafka-lite-spark")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


# -- the driver ----------------------------------------------------------------------------


async def _topic_partitions(config: dict[str, Any], topic: str, timeout_ms: int) -> int:
    # A plain producer: with the transactional id it would fence the one that writes.
    cfg = {k: v for k, v in config.items() if k not in ("partitioner", "transactional_id")}
    cfg["max_block_ms"] = timeout_ms
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(**cfg)
    async with producer:
        return len(await producer.partitions_for(topic))


def _sink_config(
    bootstrap_servers: str | list[str],
    options: dict[str, Any],
    transactional_id: str | None = None,
) -> dict[str, Any]:
    for name in _REFUSED_OPTIONS:
        if name in options:
            raise ValueError(
                f"{name} is not used by the Spark sink: keys and values come from the "
                "columns (choose value_format='bytes', 'json' or 'msgpack')"
            )
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers,
        # A sink writing into a topic that does not exist is most often a typo.
        "allow_auto_create_topics": False,
    }
    config.update(options)
    if transactional_id is not None:
        config["transactional_id"] = transactional_id
    from .config import ProducerConfig

    checked = ProducerConfig.from_kwargs(**config)  # fail on the driver, naming the bad option
    if checked.transactional_id != transactional_id:
        # Every task would start a producer with the same id, each fencing the last.
        raise ValueError(
            "transactional_id is not a producer option of the Spark sink: use "
            "kafka_batch_writer(..., exactly_once=True, transactional_id=...)"
        )
    return config


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
    the others were written.
    """
    start = time.monotonic()
    config = _sink_config(bootstrap_servers, producer_config)
    ensure_local_python(df.sparkSession)
    prepared, plan = _prepare(
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
    _run(_topic_partitions(config, topic, topic_timeout_ms))
    reports = prepared.mapInArrow(_task_function(plan), _REPORT_SCHEMA).collect()
    summary = _summarize(topic, reports, time.monotonic() - start)
    if summary.rows_failed:
        raise KafkaWriteError(summary)
    return summary


def _summarize(topic: str, reports: Iterable[Any], elapsed: float) -> WriteSummary:
    rows = sorted(reports, key=lambda r: (r.partition_id, r.attempt))
    return WriteSummary(
        topic=topic,
        rows_sent=sum(r.rows_sent for r in rows),
        rows_failed=sum(r.rows_failed for r in rows),
        tasks=len(rows),
        elapsed_s=elapsed,
        errors=tuple(f"partition {r.partition_id}: {r.first_error}" for r in rows if r.first_error),
    )


# -- Structured Streaming -------------------------------------------------------------

#: the consumer group whose committed offset records a writer's last committed batch id
SINK_GROUP_PREFIX = "aiokafka-lite-sink."
_SINK_METADATA = "aiokafka-lite spark sink"


class _RowsFailedError(Exception):
    """Some row of the micro-batch could not be written: the transaction is aborted."""


def _write_exactly_once(
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
    config = _sink_config(bootstrap_servers, producer_config, transactional_id)
    prepared, plan = _prepare(
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
    _run(_topic_partitions(config, topic, topic_timeout_ms))
    report = _Report(partition_id=-1, attempt=0)
    committed = _run(_transaction(plan, prepared, batch_id, report))
    elapsed = time.monotonic() - start
    if not committed:
        return WriteSummary(topic, 0, 0, 0, elapsed, batch_id=batch_id, replay_skipped=True)
    if report.rows_failed:
        # The transaction was aborted: none of the batch's rows is committed.
        error = f"{report.first_error}; the transaction was aborted, no row was committed"
        summary = WriteSummary(
            topic, 0, report.rows, 0, elapsed, (f"micro-batch {batch_id}: {error}",), batch_id
        )
        raise KafkaWriteError(summary)
    return WriteSummary(topic, report.rows_sent, 0, 0, elapsed, batch_id=batch_id)


async def _transaction(plan: _Plan, prepared: DataFrame, batch_id: int, report: _Report) -> bool:
    """Write ``prepared`` and commit ``batch_id`` in one transaction; ``False`` if the batch
    had been committed already (a replay). Rows that fail abort it (``report`` says why)."""
    from .admin import fetch_committed_offsets
    from .structs import OffsetAndMetadata, TopicPartition

    transactional_id = plan.config["transactional_id"]
    group_id = SINK_GROUP_PREFIX + transactional_id
    marker = TopicPartition(plan.topic, 0)  # the sink topic's partition 0 always exists
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(**_producer_options(plan.config))
    # InitProducerId first: it completes or aborts a transaction an earlier attempt of
    # this id left open and fences an older driver, so the offset read next is final.
    await producer.start()
    try:
        options = {k: v for k, v in plan.config.items() if k != "bootstrap_servers"}
        offsets = await fetch_committed_offsets(
            plan.config["bootstrap_servers"],
            group_id,
            [marker],
            timeout_ms=producer.config.max_block_ms,
            **options,
        )
        next_batch = offsets[marker].offset
        if next_batch > batch_id:
            if next_batch > batch_id + 1:
                log.warning(
                    "micro-batch %d of %r is older than the last one committed (%d): skipped. "
                    "If the query's checkpoint was reset, give the writer a new "
                    "transactional_id",
                    batch_id,
                    transactional_id,
                    next_batch - 1,
                )
            else:
                log.info(
                    "micro-batch %d of %r was committed before: skipped (a replay)",
                    batch_id,
                    transactional_id,
                )
            return False
        # The Spark job runs in a thread: the producer's loop stays free meanwhile.
        table = await asyncio.to_thread(prepared.toArrow)
        try:
            async with producer.transaction():
                await _write_batches(producer, plan, table.to_batches(), report)
                if report.rows_failed:
                    raise _RowsFailedError
                offset = OffsetAndMetadata(batch_id + 1, _SINK_METADATA)
                await producer.send_offsets_to_transaction({marker: offset}, group_id)
        except _RowsFailedError:
            pass  # aborted; the caller raises KafkaWriteError from the report
        return True
    finally:
        await producer.stop()
        await asyncio.sleep(0)


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

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        if self.transactional_id is None:
            summary = write_to_kafka(batch_df, self.topic, **self.options)
        else:
            summary = _write_exactly_once(
                batch_df, self.topic, batch_id, self.transactional_id, **self.options
            )
        self.last_summary = summary
        self.batches += 1
        self.rows_sent += summary.rows_sent
        self.replays_skipped += summary.replay_skipped
        log.info("micro-batch %d: %s", batch_id, summary)


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
    # names) is refused by _sink_config's ProducerConfig check below.
    if exactly_once:
        if not transactional_id:
            raise ValueError(
                "exactly_once=True needs transactional_id: a non-empty string that stays the "
                "same across restarts of the query (e.g. the query's name)"
            )
    elif transactional_id is not None:
        raise ValueError("transactional_id is only used with exactly_once=True")
    _sink_config(bootstrap_servers, producer_config, transactional_id)
    if value_format not in _FORMATS:
        raise ValueError(f"value_format must be one of {_FORMATS}, got {value_format!r}")
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
