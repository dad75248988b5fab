"""Arrow record batches to the columns of Kafka records, one column at a time.

Rows never become Python objects of their own (no ``Row``): each needed column
becomes a Python list (``to_pylist``; strings cast to binary by Arrow first),
values are encoded by msgspec where asked. A row whose value Python cannot hold,
or that does not encode, is marked failed with a message naming the column and
the row, and the others go on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from .contract import Plan

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Columns", "Converter"]


class _Skip:
    """Marks a row that could not be converted (its error is in ``Columns.errors``)."""


_SKIP = _Skip()


@dataclass
class Columns:
    """One Arrow batch as Python lists, plus the rows that could not be converted."""

    values: list[Any]
    #: index, within its task, of this batch's first row (for messages)
    row_base: int = 0
    keys: list[bytes | None] | None = None
    partitions: list[int | None] | None = None
    headers: list[Any] | None = None
    topics: list[str | None] | None = None
    timestamps: list[int | None] | None = None
    #: row index in this batch -> why it cannot be sent
    errors: dict[int, str] = field(default_factory=dict)

    def fail(self, row: int, message: str) -> None:
        self.errors.setdefault(row, message)


class Converter:
    """Turns one task's Arrow record batches into :class:`Columns`."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
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

    def convert(self, batch: pa.RecordBatch) -> Columns:
        plan = self.plan
        out = Columns(values=[], row_base=self.row_base)
        out.values = self._values(batch, out)
        if plan.key_at is not None:
            key = _as_binary(batch.column(plan.key_at))
            out.keys = self._pylist(key, f"{plan.key_name!r} (key)", out)
        if plan.partition_at is not None:
            out.partitions = batch.column(plan.partition_at).to_pylist()
        if plan.headers_at is not None:
            out.headers = self._headers(batch.column(plan.headers_at), out)
        if plan.topic_at is not None:
            out.topics = batch.column(plan.topic_at).to_pylist()
        if plan.timestamp_at is not None:
            out.timestamps = batch.column(plan.timestamp_at).to_pylist()
        self.row_base += batch.num_rows
        return out

    def _message(self, row: int, what: str, exc: BaseException) -> str:
        return (
            f"cannot serialize column {what} of row {self.row_base + row}: "
            f"{type(exc).__name__}: {exc}"
        )

    def _pylist(self, array: pa.Array, what: str, out: Columns) -> list[Any]:
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

    def _values(self, batch: pa.RecordBatch, out: Columns) -> list[Any]:
        plan = self.plan
        fmt = plan.value_format
        if self.record_type is None:
            what = f"{plan.value_name!r} (value as {fmt})"
            column = batch.column(plan.value_at[0])
            if self.encode is None:
                return self._pylist(_as_binary(column), what, out)
            return self._encode_each(self._pylist(column, what, out), what, out)
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

    def _encode_each(self, values: list[Any], what: str, out: Columns) -> list[Any]:
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

    def _headers(self, array: pa.Array, out: Columns) -> list[Any]:
        what = f"{self.plan.headers_name!r} (headers)"
        if self.plan.headers_as_pairs:
            # array<struct<key, value>>: order and duplicates kept; fields by position,
            # as Spark matches their names without case.
            key_name, value_name = (f.name for f in array.type.value_type)
            rows: list[Any] = [
                None if r is None else [(h[key_name], h[value_name]) for h in r]
                for r in array.to_pylist()
            ]
        else:
            rows = array.to_pylist()  # map<string, binary>: [(k, v), ...]
        for i, r in enumerate(rows):
            if r and any(k is None for k, _ in r):
                out.fail(i, f"column {what} of row {self.row_base + i}: a header key is null")
        return rows


def _as_binary(array: pa.Array) -> pa.Array:
    """Strings as their UTF-8 bytes (Arrow's cast copies no data); anything else as is."""
    import pyarrow as pa

    if pa.types.is_string(array.type):
        return array.cast(pa.binary())
    if pa.types.is_large_string(array.type):
        return array.cast(pa.large_binary())
    return array
