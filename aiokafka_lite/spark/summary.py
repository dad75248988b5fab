"""What a write did: each Spark task's report, and their sum on the driver.

Spark keeps the result of one attempt per task: the one that succeeded. A task
whose earlier attempt failed mid-write (an executor lost, an upstream error) was
run again from its first row, and Kafka keeps what the failed attempt had
already delivered. The surviving report carries its attempt numbers, so the
summary can say how many tasks were retried and how many rows that may have
duplicated; it cannot say which rows (the failed attempts' reports are lost).

What the attempt number does not show: a task run again in a new attempt of its
stage (Spark resubmits a stage after a shuffle fetch failure; PySpark's
``TaskContext`` has no stage attempt number) starts again at attempt 0, and a
speculative copy that lost the race reports nothing. Both can duplicate rows
unseen (speculation is off by default).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import KafkaError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "KafkaWriteError",
    "TaskReport",
    "WriteSummary",
    "append_summary",
    "read_summaries",
    "summarize",
]

_FIRST_ERRORS_SHOWN = 3
_TOPICS_KEPT = 16  # per task: a topic column may name many; the summary shows a few


@dataclass
class TaskReport:
    """One Spark task's counts; the data source returns it as its commit message."""

    partition_id: int
    #: ``TaskContext.attemptNumber()``: 0 unless an earlier attempt of this task failed
    attempt: int = 0
    rows: int = 0
    rows_sent: int = 0
    rows_failed: int = 0
    first_error: str | None = None
    topics: list[str] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    finished_at: float = 0.0
    #: exactly-once from the executors: the task wrote its rows in one transaction
    transactional: bool = False
    #: ... or found its part of the micro-batch committed before and sent nothing
    skipped: bool = False

    @classmethod
    def for_this_task(cls) -> TaskReport:
        """A report naming the running Spark task (partition -1 outside of a task)."""
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is None:
            return cls(partition_id=-1)
        return cls(partition_id=ctx.partitionId(), attempt=ctx.attemptNumber())

    def fail(self, count: int, message: str) -> None:
        self.rows_failed += count
        if self.first_error is None:
            self.first_error = message

    def wrote_to(self, topic: str) -> None:
        if topic not in self.topics and len(self.topics) < _TOPICS_KEPT:
            self.topics.append(topic)

    # The mapInArrow path returns the report as a one-row Arrow batch.
    ARROW_SCHEMA = (
        "partition_id int, attempt int, rows long, rows_sent long, "
        "rows_failed long, first_error string, topics array<string>, started_at double, "
        "finished_at double, transactional boolean, skipped boolean"
    )

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
                ("topics", pa.list_(pa.string())),
                ("started_at", pa.float64()),
                ("finished_at", pa.float64()),
                ("transactional", pa.bool_()),
                ("skipped", pa.bool_()),
            ]
        )
        return pa.RecordBatch.from_pydict({k: [v] for k, v in asdict(self).items()}, schema=schema)

    @classmethod
    def from_row(cls, row: Any) -> TaskReport:
        """From a collected report row (a ``pyspark.sql.Row``)."""
        values = row.asDict()
        values["topics"] = list(values["topics"] or ())
        return cls(**values)


@dataclass(frozen=True)
class WriteSummary:
    """What one write did, summed over its Spark tasks.

    ``elapsed_s``: for :func:`~aiokafka_lite.spark.write_to_kafka` the whole call
    (the Spark job computes the DataFrame while it writes it); for the data source,
    from the first task's start to the last task's end.
    """

    topic: str
    rows_sent: int
    rows_failed: int
    tasks: int
    elapsed_s: float
    #: the first error of each task that had one, as ``"partition N: ..."``
    errors: tuple[str, ...] = ()
    #: streaming: the micro-batch (exactly-once mode: ``tasks`` is 0, the driver wrote it)
    batch_id: int | None = None
    #: exactly-once mode: the batch had been committed before, nothing was written
    replay_skipped: bool = False
    #: exactly-once mode: the driver wrote the micro-batch in one transaction
    transactional: bool = False
    #: tasks that succeeded only after an earlier attempt of theirs failed
    tasks_retried: int = 0
    #: the earlier attempts of those tasks (each may have written some of their rows)
    attempts_retried: int = 0
    #: rows of the retried tasks: an earlier attempt may have written them already, so
    #: each may be in Kafka more than once (at most once per attempt)
    rows_maybe_duplicated: int = 0
    #: the data source's job failed: Spark called ``abort``; finished tasks' rows stay written
    aborted: bool = False
    #: exactly-once from the executors: tasks whose part of the micro-batch was committed
    #: before (a replay), which sent nothing
    tasks_skipped: int = 0

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
        batch = "" if self.batch_id is None else f"micro-batch {self.batch_id}: "
        if self.transactional and self.tasks:
            text = (
                f"{batch}{self.rows_sent:,} rows sent to {self.topic!r} in one transaction "
                f"per task, {self.rows_failed:,} failed, {self.tasks} tasks, "
                f"{self.elapsed_s:.2f}s ({self.rows_per_s:,.0f} rows/s)"
            )
            if self.tasks_skipped:
                text += (
                    f"; {self.tasks_skipped} task(s) found their rows committed before (a "
                    "replay) and sent none"
                )
            if self.tasks_retried:
                text += (
                    f"; {self.tasks_retried} task(s) ran again after "
                    f"{self.attempts_retried} failed attempt(s), whose transactions were "
                    "aborted: read_committed readers see each row once"
                )
            return text
        if self.transactional:
            return (
                f"{self.rows_sent:,} rows sent to {self.topic!r} in one transaction "
                f"(micro-batch {self.batch_id}), {self.rows_failed:,} failed, "
                f"{self.elapsed_s:.2f}s ({self.rows_per_s:,.0f} rows/s)"
            )
        head = "write aborted: " if self.aborted else ""
        text = (
            f"{batch}{head}{self.rows_sent:,} rows sent to {self.topic!r}, "
            f"{self.rows_failed:,} failed, {self.tasks} tasks, {self.elapsed_s:.2f}s "
            f"({self.rows_per_s:,.0f} rows/s)"
        )
        if self.tasks_retried:
            text += (
                f"; {self.tasks_retried} task(s) ran again after {self.attempts_retried} "
                f"failed attempt(s): up to {self.rows_maybe_duplicated:,} of their rows may "
                "have been written more than once (at-least-once)"
            )
        return text

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WriteSummary:
        values = json.loads(text)
        values["errors"] = tuple(values.get("errors") or ())
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


class KafkaWriteError(KafkaError):
    """Some rows were not written; ``summary`` says how many, ``errors`` the first causes."""

    def __init__(self, summary: WriteSummary) -> None:
        self.summary = summary
        shown = "; ".join(summary.errors[:_FIRST_ERRORS_SHOWN])
        more = len(summary.errors) - _FIRST_ERRORS_SHOWN
        if more > 0:
            shown += f"; and {more} more task(s) with errors"
        batch = "" if summary.batch_id is None else f" (micro-batch {summary.batch_id})"
        super().__init__(
            f"{summary.rows_failed:,} of {summary.rows:,} rows were not written to "
            f"{summary.topic!r}{batch}: {shown}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Spark pickles exceptions raised in its Python workers.
        return (type(self), (self.summary,))


def summarize(
    topic: str,
    reports: list[TaskReport],
    elapsed_s: float | None = None,
    *,
    batch_id: int | None = None,
    aborted: bool = False,
) -> WriteSummary:
    """Sum the tasks' reports; ``elapsed_s`` None: the span of the tasks' own clocks."""
    reports = sorted(reports, key=lambda r: (r.partition_id, r.attempt))
    if elapsed_s is None:
        starts = [r.started_at for r in reports]
        ends = [r.finished_at for r in reports]
        elapsed_s = max(ends) - min(starts) if reports else 0.0
    retried = [r for r in reports if r.attempt]
    transactional = bool(reports) and all(r.transactional for r in reports)
    return WriteSummary(
        topic=topic,
        rows_sent=sum(r.rows_sent for r in reports),
        rows_failed=sum(r.rows_failed for r in reports),
        tasks=len(reports),
        elapsed_s=max(elapsed_s, 0.0),
        errors=tuple(
            f"partition {r.partition_id}: {r.first_error}" for r in reports if r.first_error
        ),
        batch_id=batch_id,
        tasks_retried=len(retried),
        attempts_retried=sum(r.attempt for r in retried),
        # a retried task's earlier attempts were aborted when it was transactional
        rows_maybe_duplicated=0 if transactional else sum(r.rows for r in retried),
        aborted=aborted,
        transactional=transactional,
        tasks_skipped=sum(1 for r in reports if r.skipped),
    )


def topics_label(fixed: str | None, reports: list[TaskReport]) -> str:
    """The topic a summary names: the fixed one, or those the rows named."""
    if fixed is not None:
        return fixed
    seen = sorted({t for r in reports for t in r.topics})
    return ", ".join(seen) if seen else "(no topic)"


def append_summary(path: str, summary: WriteSummary) -> None:
    """Append ``summary`` to the JSON-lines file ``path`` (one ``write`` call: one line)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="utf-8") as f:
        f.write(summary.to_json() + "\n")


def read_summaries(path: str | Path) -> list[WriteSummary]:
    """The summaries the data source's ``summaryPath`` option collected, oldest first."""
    target = Path(path)
    if not target.exists():
        return []
    lines = target.read_text(encoding="utf-8").splitlines()
    return [WriteSummary.from_json(line) for line in lines if line.strip()]
