# cython: language_level=3
"""Compiled twin of :mod:`aiokafka_lite._internal.delivery`: a batch's futures, resolved from C.

The futures are :class:`asyncio.Future` objects, made as the pure twin makes them
(``asyncio.Future(loop=loop)`` on asyncio's own loops, ``loop.create_future()`` on
others). Each record's offset delta and timestamp are kept as C integers (not two int
objects and two list slots), and the batch's futures are resolved, with their
RecordMetadata built, without interpreting a Python loop.

``complete`` and ``fail`` also save asyncio's per-callback scheduling. asyncio's ``set_result``
hands each done callback to ``loop.call_soon`` (a Handle, a ready-queue entry and a
loop turn each, in Python); here the batch's callbacks are taken off their futures
(``_callbacks``, ``remove_done_callback``), every future is set, and ONE loop callback
runs them all, in the order and each in the context asyncio would have run them. Seen
from the loop nothing differs: asyncio would have queued exactly these callbacks,
consecutively, at this moment, and runs a ready queue first in, first out; a callback
that raises is reported with asyncio's context (``message``, ``exception``, ``handle``).
Only plain functions and methods are taken (their ``==`` is identity); in debug mode, or
for any other callable, asyncio schedules them itself.
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.stdint cimport int64_t

import asyncio
import types
from asyncio import events

from aiokafka_lite._internal.failure_copies import own_copy
from aiokafka_lite.structs import RecordMetadata

cdef object _Future = asyncio.Future
cdef object _BASE_CREATE_FUTURE = asyncio.BaseEventLoop.create_future
cdef object _RecordMetadata = RecordMetadata
cdef object _own_copy = own_copy
# asyncio.Future's own methods, called directly on asyncio.Future objects (a loop's
# create_future may return anything future-like: those get their methods looked up).
cdef object _done = _Future.done
cdef object _set_result = _Future.set_result
cdef object _set_exception = _Future.set_exception
cdef object _get_callbacks = _Future.__dict__["_callbacks"].__get__
cdef object _remove_done_callback = _Future.remove_done_callback
cdef object _Handle = events.Handle
# Callables whose == is identity (so removing one removes exactly it) and cannot run code.
cdef frozenset _PLAIN = frozenset(
    {types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.BuiltinMethodType}
)

# Bytes one pending record's delivery holds (see delivery.RECORD_MEMORY; measured by
# benchmarks/record_memory.py): its asyncio.Future (144, GC header included), the
# Context of one done callback (64: an ``await``, ``gather`` or ``add_done_callback``),
# its slot in the batch's list (8, and 4 as the list grows ahead of use) and its offset
# delta and timestamp (2 x 8, and 8 as the array grows ahead of use).
RECORD_MEMORY = 144 + 64 + 8 + 4 + 16 + 8
# Bytes a batch's RecordFutures holds besides its records': the object (80, GC header
# included), its list (56).
FUTURES_MEMORY = 80 + 56

cdef enum:
    TIMESTAMP_CREATE_TIME = 0
    TIMESTAMP_LOG_APPEND_TIME = 1


@cython.final
cdef class RecordFutures:
    """The futures of one batch's records, by offset delta, resolved in one call."""

    # (its fields are declared in _cdelivery.pxd)

    def __cinit__(self):
        self._slots = NULL
        self._capacity = 0

    def __dealloc__(self):
        PyMem_Free(self._slots)

    def __init__(self, loop):
        self.loop = loop
        # asyncio's loop.create_future is a Python-level wrapper around the C Future:
        # calling the class directly halves the cost. Other loops (uvloop) keep their own.
        self._direct = type(loop).create_future is _BASE_CREATE_FUTURE
        self.futures = []
        self.settled = False

    def add(self, Py_ssize_t offset_delta, int64_t timestamp):
        """A new future for the record at ``offset_delta`` in the batch, stamped ``timestamp``."""
        return self._add(offset_delta, timestamp)

    cdef object _add(self, Py_ssize_t offset_delta, int64_t timestamp):
        cdef Py_ssize_t n = len(self.futures)
        cdef Py_ssize_t capacity
        cdef int64_t* slots
        if n == self._capacity:
            capacity = 16 if n < 8 else 2 * n
            slots = <int64_t*>PyMem_Realloc(self._slots, 2 * capacity * sizeof(int64_t))
            if slots == NULL:
                raise MemoryError()
            self._slots = slots
            self._capacity = capacity
        fut = _Future(loop=self.loop) if self._direct else self.loop.create_future()
        self.futures.append(fut)
        self._slots[2 * n] = offset_delta
        self._slots[2 * n + 1] = timestamp
        return fut

    def __len__(self):
        return len(self.futures)

    def complete(self, tp, int64_t base_offset, int64_t log_append_time, int64_t log_start_offset):
        """Resolve every future with its record's metadata (``base_offset`` -1: acks=0)."""
        if self.settled:
            return
        topic, partition = tp
        self.settled = True  # (only now: should the above raise, fail() still settles)
        cdef list futures = self.futures
        cdef int64_t* slots = self._slots
        cdef Py_ssize_t i
        cdef int64_t offset, ts
        cdef int ts_type = (
            TIMESTAMP_CREATE_TIME if log_append_time == -1 else TIMESTAMP_LOG_APPEND_TIME
        )
        cdef list ready = None
        cdef bint batched = not self.loop.get_debug()
        self._release()  # (the batch may be kept a while: not its records' futures)
        try:
            for i in range(len(futures)):
                fut = futures[i]
                exact = type(fut) is _Future
                if _done(fut) if exact else fut.done():  # the caller cancelled it
                    continue
                offset = base_offset + slots[2 * i] if base_offset >= 0 else -1
                ts = log_append_time if ts_type == TIMESTAMP_LOG_APPEND_TIME else slots[2 * i + 1]
                md = _RecordMetadata(topic, partition, tp, offset, ts, ts_type, log_start_offset)
                if exact:
                    if batched:
                        callbacks = _take_callbacks(fut)
                        if callbacks is not None:
                            if ready is None:
                                ready = []
                            ready.append(fut)
                            ready.append(callbacks)
                    _set_result(fut, md)
                else:
                    fut.set_result(md)
        finally:
            PyMem_Free(slots)
            if ready is not None:  # (also if something above raised: none is lost)
                self.loop.call_soon(_run_callbacks, self.loop, ready)

    def complete_none(self):
        """Resolve every future to None (acks=0: the broker says nothing about the batch)."""
        if self.settled:
            return
        self.settled = True
        cdef list futures = self.futures
        self._release_all()
        for fut in futures:
            if type(fut) is _Future:
                if not _done(fut):
                    _set_result(fut, None)
            elif not fut.done():
                fut.set_result(None)

    def fail(self, exc):
        """Fail every future not done yet with its own copy of ``exc`` (see failure_copies)."""
        if self.settled:
            return
        self.settled = True
        cdef list futures = self.futures
        cdef list ready = None
        cdef bint batched = not self.loop.get_debug()
        self._release_all()
        try:
            for fut in futures:
                if type(fut) is _Future:
                    if not _done(fut):
                        if batched:
                            callbacks = _take_callbacks(fut)
                            if callbacks is not None:
                                if ready is None:
                                    ready = []
                                ready.append(fut)
                                ready.append(callbacks)
                        _set_exception(fut, _own_copy(exc))
                elif not fut.done():
                    fut.set_exception(_own_copy(exc))
        finally:
            if ready is not None:  # (as complete: one loop callback runs them all)
                self.loop.call_soon(_run_callbacks, self.loop, ready)

    cdef void _release(self):
        # The futures and the slots pass to the caller, which frees the slots.
        self.futures = []
        self._slots = NULL
        self._capacity = 0

    cdef void _release_all(self):
        PyMem_Free(self._slots)
        self._release()


cdef object _take_callbacks(object fut):
    """The done callbacks of a pending asyncio.Future, taken off it (None: it has none,
    or one that is not a plain function or method, and asyncio runs them as usual)."""
    callbacks = _get_callbacks(fut)
    if not callbacks:
        return None
    for fn, ctx in callbacks:
        if type(fn) not in _PLAIN:
            return None
    for fn, ctx in callbacks:
        _remove_done_callback(fut, fn)
    return callbacks


def _run_callbacks(loop, list ready):
    """Run the callbacks taken by complete(): ``ready`` is future, [(fn, context), ...]
    pairs; each runs as an asyncio Handle would run it."""
    cdef Py_ssize_t i, j, n = len(ready)
    cdef list callbacks
    for i in range(0, n, 2):
        fut = ready[i]
        callbacks = ready[i + 1]
        for j in range(len(callbacks)):
            fn, ctx = callbacks[j]
            try:
                ctx.run(fn, fut)
            except (SystemExit, KeyboardInterrupt):
                # As from a Handle, they stop the loop; what is left runs after.
                rest = [fut, callbacks[j + 1:]] + ready[i + 2:]
                loop.call_soon(_run_callbacks, loop, rest)
                raise
            except BaseException as exc:
                handle = _Handle(fn, (fut,), loop, ctx)
                loop.call_exception_handler(
                    {
                        "message": f"Exception in callback {_format_callback(fn, fut)}",
                        "exception": exc,
                        "handle": handle,
                    }
                )


cdef str _format_callback(object fn, object fut):
    try:
        from asyncio.format_helpers import _format_callback_source

        return _format_callback_source(fn, (fut,))
    except Exception:  # (a private helper of asyncio's: its message if it is there)
        return repr(fn)
