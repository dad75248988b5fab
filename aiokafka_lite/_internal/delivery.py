"""The delivery futures of one batch's records, resolved together when the batch is done.

:class:`RecordFutures` hands out one future per record (``add``) and resolves all of them
in one call when the broker answers for the batch (``complete``) or the batch fails
(``fail``), or to None when the broker sends no answer (``complete_none``, acks=0).
The first of these wins; a future the caller cancelled stays cancelled.

The futures are :class:`asyncio.Future` objects in both twins (what asyncio, anyio,
uvloop, pydantic, type checkers and the garbage collector expect of them), made with
``asyncio.Future(loop=loop)`` on asyncio's own loops (its ``create_future`` is a
Python-level wrapper of that call) and ``loop.create_future()`` on others, and resolved
one by one with ``set_result``/``set_exception``, so asyncio runs their done callbacks
as it runs any future's. A failed batch gives each future its own copy of the exception
(see :mod:`aiokafka_lite._internal.failure_copies`), as aiokafka does.

This module is the pure-Python twin. The compiled twin (``_cdelivery.pyx``, used when it
was built, see :mod:`aiokafka_lite.speedups`) has the same API and gives the same
futures; it keeps each record's offset delta and timestamp as C integers and runs the
resolving loop in C (about 0.13 us less per record).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .. import speedups
from ..structs import RecordMetadata, TopicPartition
from .failure_copies import own_copy

__all__ = ["FUTURES_MEMORY", "RECORD_MEMORY", "PyRecordFutures", "RecordFutures"]

TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1

#: Bytes one pending record's delivery holds here (CPython 3.11; benchmarks/record_memory.py
#: measures ~298 with tracemalloc): its asyncio.Future (144) and the Context of one done
#: callback (64: an ``await``, ``gather`` or ``add_done_callback``), a slot in each of the
#: three lists (24, and 4 as the lists grow ahead of use), its timestamp (an int, 32) and
#: its offset delta (an int, 28-32).
#: The producer counts it in ``buffer_memory`` with the record's bytes.
RECORD_MEMORY = 144 + 64 + 24 + 4 + 32 + 32
#: Bytes a batch's :class:`RecordFutures` holds besides its records': the object (80)
#: and its three lists (3 x 56).
FUTURES_MEMORY = 80 + 3 * 56

_Future = asyncio.Future
_BASE_CREATE_FUTURE = asyncio.BaseEventLoop.create_future


class RecordFutures:
    """The futures of one batch's records, by offset delta, resolved in one call."""

    __slots__ = ("_deltas", "_direct", "_futures", "_timestamps", "loop", "settled")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        # asyncio's loop.create_future is a Python-level wrapper around the C Future:
        # calling the class directly halves the cost. Other loops (uvloop) keep their own.
        self._direct = type(loop).create_future is _BASE_CREATE_FUTURE
        self._futures: list[asyncio.Future[RecordMetadata]] = []
        self._deltas: list[int] = []
        self._timestamps: list[int] = []
        self.settled = False

    def add(self, offset_delta: int, timestamp: int) -> asyncio.Future[RecordMetadata]:
        """A new future for the record at ``offset_delta`` in the batch, stamped ``timestamp``."""
        fut: asyncio.Future[RecordMetadata] = (
            _Future(loop=self.loop) if self._direct else self.loop.create_future()
        )
        self._futures.append(fut)
        self._deltas.append(offset_delta)
        self._timestamps.append(timestamp)
        return fut

    def __len__(self) -> int:
        return len(self._futures)

    def complete(
        self, tp: TopicPartition, base_offset: int, log_append_time: int, log_start_offset: int
    ) -> None:
        """Resolve every future with its record's metadata (``base_offset`` -1: acks=0)."""
        if self.settled:
            return
        topic, partition = tp
        self.settled = True  # (only now: should the above raise, fail() still settles)
        ts_type = TIMESTAMP_CREATE_TIME if log_append_time == -1 else TIMESTAMP_LOG_APPEND_TIME
        for fut, delta, ts in zip(self._futures, self._deltas, self._timestamps, strict=True):
            if fut.done():  # the caller cancelled it
                continue
            offset = base_offset + delta if base_offset >= 0 else -1
            if ts_type == TIMESTAMP_LOG_APPEND_TIME:
                ts = log_append_time
            fut.set_result(
                RecordMetadata(topic, partition, tp, offset, ts, ts_type, log_start_offset)
            )
        self._release()

    def complete_none(self) -> None:
        """Resolve every future to None (acks=0: the broker says nothing about the batch)."""
        if self.settled:
            return
        self.settled = True
        for fut in self._futures:
            if not fut.done():
                fut.set_result(None)  # type: ignore[arg-type]
        self._release()

    def fail(self, exc: BaseException) -> None:
        """Fail every future not done yet with its own copy of ``exc`` (see failure_copies)."""
        if self.settled:
            return
        self.settled = True
        for fut in self._futures:
            if not fut.done():
                fut.set_exception(own_copy(exc))
        self._release()

    def _release(self) -> None:
        # The batch may be kept a while (retries, metrics): not its records' futures.
        self._futures, self._deltas, self._timestamps = [], [], []


PyRecordFutures = RecordFutures
PY_RECORD_MEMORY, PY_FUTURES_MEMORY = RECORD_MEMORY, FUTURES_MEMORY

_compiled = speedups.compiled_module("_cdelivery")
if _compiled is not None and not TYPE_CHECKING:
    RecordFutures = _compiled.RecordFutures
    RECORD_MEMORY = _compiled.RECORD_MEMORY
    FUTURES_MEMORY = _compiled.FUTURES_MEMORY
