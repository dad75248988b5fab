"""The compiled build's write path: Arrow buffers straight into record batches.

Where the pure path (:meth:`~.task.TaskWriter.write`) turns each column into a
Python list and appends row by row, :class:`ArrowPath` hands one Arrow batch's
buffers (validity bitmaps, offsets, data) to the compiled ``ArrowRows``
(``_carrow_rows.pyx``), which places and encodes every row in C into the same
``create_batch`` batches, with the same placement (explicit partition, murmur2 of
the key, sticky for keyless rows) and the same size rules, and stops for what
needs Python: a topic to look up, a batch to create or send, or a row that fails,
which goes through the pure path alone so that its error names it as always. It
serves plain bytes values (``value_format="bytes"``) with the producer's own
partitioner; anything else, and the pure build, keep the pure path.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from .. import speedups

if TYPE_CHECKING:
    import pyarrow as pa

    from ..producer import BatchBuilder
    from .arrow import Converter
    from .summary import TaskReport
    from .task import TaskWriter, _Topic

__all__ = ["ArrowPath"]

# ArrowRows.run's events (the enum in _carrow_rows.pyx).
DONE, NEED_TOPIC, SLOW, NEW_BATCH, SEND_CAP, FULL, MOVE_ON = range(7)
# Column kinds ArrowRows reads.
BINARY, LARGE_BINARY, INT32, INT64, VALIDITY = 1, 2, 3, 4, 5

#: A column as ArrowRows takes it: (kind, offset, length, validity, main, data).
Spec = tuple[int, int, int, Any, Any, Any]


class Rows(Protocol):
    """The compiled ``ArrowRows``: one Arrow batch's columns, read in place."""

    pos: int

    @property
    def partition(self) -> int: ...  # the event's partition

    @property
    def topic_index(self) -> int: ...  # NEED_TOPIC: the topic's index in ``states``

    @property
    def keyless(self) -> bool: ...  # the event's row is keyless (sticky placement)

    def run(self, states: list[_Topic | None], cap: int, now: int, report: TaskReport) -> int: ...

    def append_at(self, i: int, batch: BatchBuilder, now: int) -> int: ...


class RowsFactory(Protocol):
    def __call__(
        self,
        length: int,
        key: Spec | None,
        value: Spec,
        partition: Spec | None = None,
        timestamp: Spec | None = None,
        topic: Spec | None = None,
        headers: tuple[Spec, Spec, Spec, Spec] | None = None,
    ) -> Rows: ...


def _compiled() -> RowsFactory | None:
    module = speedups.compiled_module("_carrow_rows")
    return None if module is None else module.ArrowRows


class ArrowPath:
    """Writes one task's Arrow batches through ``ArrowRows`` (see the module doc)."""

    def __init__(self, writer: TaskWriter, converter: Converter, rows: RowsFactory) -> None:
        self.writer = writer
        self.converter = converter
        self.rows = rows

    @classmethod
    def for_task(cls, writer: TaskWriter, converter: Converter) -> ArrowPath | None:
        """The path for this task, or None: the pure build, or a plan it does not serve."""
        rows = _compiled()
        plan = writer.plan
        placement = writer.producer._placement
        if (
            rows is None
            or plan.value_format != "bytes"
            or len(plan.value_at) != 1
            or writer.partitioner is not None
            or placement.key_serializer is not None
            or placement.value_serializer is not None
        ):
            return None
        return cls(writer, converter, rows)

    def columns(self, batch: pa.RecordBatch) -> dict[str, Any] | None:
        """The batch's columns as ArrowRows takes them; None if one has another type."""
        import pyarrow as pa

        plan = self.writer.plan
        out: dict[str, Any] = {}
        value = _binary(batch.column(plan.value_at[0]))
        if value is None:
            return None
        out["value"] = value
        for name, at, kinds in (
            ("key", plan.key_at, None),
            ("partition", plan.partition_at, (pa.int32(), INT32)),
            ("timestamp", plan.timestamp_at, (pa.int64(), INT64)),
        ):
            if at is None:
                continue
            column = batch.column(at)
            spec = _binary(column) if kinds is None else _fixed(column, *kinds)
            if spec is None:
                return None
            out[name] = spec
        if plan.headers_at is not None:
            headers = _headers(batch.column(plan.headers_at))
            if headers is None:
                return None
            out["headers"] = headers
        if plan.topic_at is not None:
            column = batch.column(plan.topic_at)
            if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
                return None
            encoded = column.dictionary_encode()  # first-seen order, as rows reach topics
            out["topic"] = _fixed(encoded.indices, pa.int32(), INT32)
            out["names"] = encoded.dictionary.to_pylist()  # one name per topic, not per row
        return out

    async def write(self, batch: pa.RecordBatch) -> bool:
        """Append every row of one Arrow batch; False (nothing done): the pure path's."""
        cols = self.columns(batch)
        if cols is None:
            return False
        writer, plan, report = self.writer, self.writer.plan, self.writer.report
        names: list[str] | None = cols.pop("names", None)
        rows = self.rows(batch.num_rows, cols.pop("key", None), cols.pop("value"), **cols)
        default = None if plan.topic is None else await writer.topic(plan.topic)
        states: list[_Topic | None] = [None] * len(names) if names is not None else [default]
        now = int(time.time() * 1000)
        cap = writer.size_cap or 0
        create = writer.producer.create_batch
        while (event := rows.run(states, cap, now, report)) != DONE:
            i = rows.pos
            if event == NEED_TOPIC:
                assert names is not None
                j = rows.topic_index
                states[j] = writer.topics.get(names[j]) or await writer.topic(names[j])
                continue
            if event == SLOW:
                await self._alone(batch, i, now)
                rows.pos = i + 1
                continue
            t = states[rows.topic_index]
            assert t is not None
            if event == MOVE_ON:  # (run() left pos at the row to place next)
                t.move_on()
                continue
            p = rows.partition
            old = t.open[p]
            if event != NEW_BATCH:
                assert old is not None
                await writer._send(t, p, old)
                if rows.keyless:  # placed again, as TaskWriter._keyless does
                    t.open[p] = None
                    continue
            b = t.open[p] = create()
            rows.append_at(i, b, now)
            if rows.keyless:
                t.appended(b.size(), b)
            rows.pos = i + 1
        self.converter.row_base += batch.num_rows
        return True

    async def _alone(self, batch: pa.RecordBatch, i: int, now: int) -> None:
        """Row ``i`` through the pure path (its message names it as that path does)."""
        converter = self.converter
        base = converter.row_base
        converter.row_base = base + i
        try:
            cols = converter.convert(batch.slice(i, 1))
        finally:
            converter.row_base = base
        await self.writer.write(cols, now)


def _binary(array: pa.Array) -> Spec | None:
    import pyarrow as pa

    t = array.type
    if pa.types.is_binary(t) or pa.types.is_string(t):
        kind = BINARY
    elif pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        kind = LARGE_BINARY
    else:
        return None
    validity, offsets, data = array.buffers()
    return (kind, array.offset, len(array), _validity(array, validity), offsets, data)


def _fixed(array: pa.Array, arrow_type: pa.DataType, kind: int) -> Spec | None:
    if array.type != arrow_type:
        return None
    validity, values = array.buffers()
    return (kind, array.offset, len(array), _validity(array, validity), values, None)


def _validity(array: pa.Array, bitmap: Any) -> Any:
    return None if array.null_count == 0 else bitmap


def _headers(array: pa.Array) -> tuple[Spec, Spec, Spec, Spec] | None:
    """list<struct<name: string, value: binary>> or map<string, binary>: four columns."""
    import pyarrow as pa

    t = array.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t)):
        return None
    entries = array.values  # every list's entries (the offsets index into them)
    if not pa.types.is_struct(entries.type) or entries.type.num_fields != 2:
        return None
    if entries.null_count:
        return None  # a null entry: the pure path fails the batch as it always did
    name_type, value_type = entries.type.field(0).type, entries.type.field(1).type
    if not (pa.types.is_string(name_type) or pa.types.is_large_string(name_type)):
        return None
    if not (pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type)):
        return None  # (the pure path takes no other header values either)
    names, values = _binary(entries.field(0)), _binary(entries.field(1))
    assert names is not None
    assert values is not None
    kind = LARGE_BINARY if pa.types.is_large_list(t) else BINARY
    validity, offsets = array.buffers()[:2]
    lists = (kind, array.offset, len(array), _validity(array, validity), offsets, None)
    struct = (VALIDITY, entries.offset, len(entries), None, None, None)
    return lists, struct, names, values
