# cython: language_level=3
"""Compiled twin of :mod:`aiokafka_lite.delivery`: per-record futures resolved per batch.

:class:`RecordFuture` is an asyncio-compatible future (``asyncio.isfuture`` is true; it
has ``_asyncio_future_blocking``, ``get_loop``, ``__await__`` and the Future methods), so
Tasks, ``gather``, ``wait``, ``shield``, ``as_completed``, ``wait_for`` and
``asyncio.timeout`` treat it as they treat :class:`asyncio.Future`. The semantics follow
asyncio's Future method by method; the differences are in cost only (see delivery.py):

* ``RecordFutures.complete``/``fail`` mark every future of the batch done at once, then
  schedule ONE loop callback that runs all their done callbacks in order, each in the
  context captured by ``add_done_callback``; asyncio would ``call_soon`` each callback.
  A callback that raises goes to the loop's exception handler and the others still run.
  On asyncio's own loops, callbacks scheduled one after the other (e.g. ``gather`` adding
  its callback to futures already done) share one loop callback as long as nothing else
  was scheduled in between: the order they run in is asyncio's.
* ``add_done_callback`` without a context captures the current one as asyncio does, but
  callbacks added while the context's variables stay the same share one snapshot, and
  each runs in a fresh copy of it (so a callback that sets a variable affects no other):
  what each callback sees is asyncio's, without a Context object per callback. (Where
  the interpreter's context layout is not known, one copy per callback, as asyncio.)
* A finished future keeps a reference to the batch's shared outcome plus its own offset
  delta and timestamp (C fields); its RecordMetadata is built on the first ``result()``.
* A future is untracked by the cyclic GC while it can be part of no cycle (no callbacks,
  no exception): tracked objects cost the collector a visit on every pass, and a producer
  may hold millions of futures. It is tracked again as soon as a callback is added.
* Futures are reused through a free list (see RecordFuture): one made and dropped per
  record would otherwise be an allocation, and a count towards the collector's next pass.
"""

cimport cython
from libc.stdint cimport int64_t

import asyncio
import contextvars
from types import GenericAlias

from aiokafka_lite.structs import RecordMetadata

cdef object _copy_context = contextvars.copy_context
cdef object _CancelledError = asyncio.CancelledError
cdef object _InvalidStateError = asyncio.InvalidStateError
cdef object _RecordMetadata = RecordMetadata

# Bytes one pending record's delivery holds (see delivery.RECORD_MEMORY; measured by
# benchmarks/record_memory.py): its RecordFuture (136, GC header included: delta and
# timestamp are C fields), its slot in the batch's list (8, and 4 as the list grows ahead
# of use) and the Context of one done callback (64: an ``await``, ``gather`` or
# ``add_done_callback``).
RECORD_MEMORY = 136 + 8 + 4 + 64
# Bytes a batch's RecordFutures holds besides its records': the object (64), its list (56).
FUTURES_MEMORY = 64 + 56


cdef extern from "Python.h":
    void PyObject_GC_Track(void* op)
    void PyObject_GC_UnTrack(void* op)
    int PyObject_GC_IsTracked(object op)


cdef enum:
    PENDING = 0
    CANCELLED = 1
    FINISHED = 2  # _outcome is the result
    FAILED = 3  # _outcome is the exception
    BATCH = 4  # finished; _outcome is the batch's _BatchResult: metadata built on demand

cdef enum:
    TIMESTAMP_CREATE_TIME = 0
    TIMESTAMP_LOG_APPEND_TIME = 1


cdef inline void _track(object obj):
    if not PyObject_GC_IsTracked(obj):
        PyObject_GC_Track(<void*>obj)


cdef inline void _untrack(object obj):
    PyObject_GC_UnTrack(<void*>obj)  # (a no-op on an untracked object)


# -- the contexts callbacks run in -----------------------------------------------------

cdef extern from "Python.h":
    object PyContext_Copy(object ctx)
    int PyContext_Enter(object ctx) except -1
    int PyContext_Exit(object ctx) except -1

cdef extern from *:
    """
    /* CPython 3.11-3.13: a Context keeps its variables in an immutable mapping that
       ContextVar.set() replaces, so the same mapping means the same variables. */
    #if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
    #define AKL_CONTEXT_PEEK 1
    typedef struct { PyObject_HEAD PyObject *prev; PyObject *vars; } akl_context;
    static inline void *akl_current_vars(void) {
        PyObject *ctx = PyThreadState_Get()->context;
        return ctx == NULL ? NULL : (void *)((akl_context *)ctx)->vars;
    }
    #else
    #define AKL_CONTEXT_PEEK 0
    static inline void *akl_current_vars(void) { return NULL; }
    #endif
    """
    bint AKL_CONTEXT_PEEK
    void* akl_current_vars()


@cython.final
cdef class _Snapshot:
    """A copy of the context at ``add_done_callback``, shared by the callbacks added while
    its variables stayed the same; each callback runs in a copy of it."""

    cdef object ctx


cdef _Snapshot _last_snapshot = None
cdef void* _last_vars = NULL  # the variables of _last_snapshot (kept alive by it)


cdef object _callback_context():
    """What ``add_done_callback(fn)`` (no context given) captures: asyncio copies the
    current context for each callback; a shared snapshot is the same for the callback."""
    global _last_snapshot, _last_vars
    cdef void* current
    cdef _Snapshot snapshot
    if AKL_CONTEXT_PEEK:
        current = akl_current_vars()
        if current != NULL and current == _last_vars:
            return _last_snapshot
    ctx = _copy_context()
    if not AKL_CONTEXT_PEEK:
        return ctx
    snapshot = _Snapshot.__new__(_Snapshot)
    snapshot.ctx = ctx
    _last_snapshot = snapshot
    _last_vars = akl_current_vars()  # the copy shares the mapping, so it stays alive
    return snapshot


cdef inline void _call_in(object ctx, object fn, object fut) except *:
    """``ctx.run(fn, fut)``; a shared snapshot is copied first (see _Snapshot)."""
    if type(ctx) is _Snapshot:
        ctx = PyContext_Copy((<_Snapshot>ctx).ctx)
    PyContext_Enter(ctx)
    try:
        fn(fut)
    finally:
        PyContext_Exit(ctx)


# -- scheduling done callbacks ---------------------------------------------------------

cdef object _BaseEventLoop = asyncio.BaseEventLoop
# The loop callback scheduled last on an asyncio loop, and its list of callbacks to run:
# callbacks scheduled while it is still the last entry of the loop's ready queue join it.
cdef object _open_loop = None
cdef object _open_handle = None
cdef list _open_items = None


cdef void _schedule(object loop, list items) except *:
    """Run ``items`` (four per future, see _run_callbacks) from the loop, soon.

    As if each callback were ``loop.call_soon``-ed in order, but in one loop callback:
    joining the one scheduled last when nothing was scheduled after it keeps asyncio's
    order exactly (asyncio's loops run their ready queue first in, first out).
    """
    global _open_loop, _open_handle, _open_items
    if loop is _open_loop:
        ready = loop._ready
        if ready and ready[len(ready) - 1] is _open_handle:
            _open_items.extend(items)
            return
    handle = loop.call_soon(_run_callbacks_handle, loop, items)
    if isinstance(loop, _BaseEventLoop):
        _open_loop, _open_handle, _open_items = loop, handle, items
    elif _open_loop is not None:
        _open_loop = _open_handle = _open_items = None


@cython.no_gc
@cython.final
cdef class _BatchResult:
    """What the broker said about one batch, shared by its records' futures."""

    cdef object topic  # (a str, or a subclass of str: as the caller named the topic)
    cdef object partition
    cdef object tp
    cdef int64_t base_offset
    cdef int64_t log_append_time
    cdef int64_t log_start_offset


cdef str _state_name(int state):
    if state == PENDING:
        return "pending"
    if state == CANCELLED:
        return "cancelled"
    return "finished"


cdef extern from *:
    """
    /* A RecordFuture from the free list keeps, in its GC header, the "finalized" mark its
       __del__ left in its previous life, and CPython never finalizes an object twice:
       cleared, so that __del__ runs again (asyncio's "exception was never retrieved").
       CPython 3.11-3.13 (GIL builds): bit 0 of _gc_prev, the word before the object (what
       3.13's internal _PyGC_CLEAR_FINALIZED clears). Elsewhere the mark cannot be cleared,
       so this module is built without free lists: nothing is ever recycled. (Cython's
       free lists are first used further down the generated C than this block.) */
    #if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 \
        && !defined(Py_GIL_DISABLED) && !defined(Py_LIMITED_API)
    static inline void akl_gc_unfinalize(PyObject *o) { ((uintptr_t *)o)[-1] &= ~(uintptr_t)1; }
    #else
    #undef CYTHON_USE_FREELISTS
    #define CYTHON_USE_FREELISTS 0
    static inline void akl_gc_unfinalize(PyObject *o) { (void)o; }
    #endif
    """
    void akl_gc_unfinalize(object o)


# Reused through a free list: a producer makes and drops one per record, and a recycled
# object costs no allocation, nor a count towards the garbage collector's next pass
# (with a thousand records in flight, most of the collector's passes).
@cython.freelist(1024)
@cython.final
cdef class RecordFuture:
    """The delivery future of one record (asyncio-compatible; see the module docstring)."""

    cdef readonly object _loop
    cdef public bint _asyncio_future_blocking
    cdef int _state
    cdef bint _log_traceback
    cdef object _outcome
    # The first done callback inline (as asyncio's C Future keeps it): most futures get
    # exactly one (a Task's wakeup, gather's), and a list and a tuple per future would be
    # two more objects for the collector to visit.
    cdef object _cb0
    cdef object _ctx0
    cdef object _callbacks  # None, or a list of (fn, context) after the first
    # Read by asyncio.gather (as asyncio.Future's) when a child was cancelled.
    cdef readonly object _cancel_message
    # A failed batch shares one exception among its futures (and stop() among batches):
    # each raise starts again from the traceback it had when it was set, as asyncio's
    # futures do, instead of growing it by every awaiter's frames.
    cdef object _tb
    cdef object __weakref__  # weak references work, as on asyncio.Future
    cdef Py_ssize_t _index
    cdef int64_t _timestamp

    def __cinit__(self):
        akl_gc_unfinalize(self)
        # Nothing to collect until a callback or an exception is attached.
        _untrack(self)

    def __init__(self, loop=None):
        if loop is None:
            loop = asyncio.get_event_loop()
        self._loop = loop

    __class_getitem__ = classmethod(GenericAlias)

    # -- reading ---------------------------------------------------------------------

    def get_loop(self):
        return self._loop

    def done(self):
        return self._state != PENDING

    def cancelled(self):
        return self._state == CANCELLED

    def result(self):
        cdef int state = self._state
        if state == BATCH:
            return self._metadata()
        if state == FINISHED:
            return self._outcome
        if state == FAILED:
            self._log_traceback = False
            raise self._outcome.with_traceback(self._tb)
        if state == CANCELLED:
            raise self._cancelled_error()
        raise _InvalidStateError("Result is not set.")

    def exception(self):
        cdef int state = self._state
        if state == FAILED:
            self._log_traceback = False
            return self._outcome
        if state == BATCH or state == FINISHED:
            return None
        if state == CANCELLED:
            raise self._cancelled_error()
        raise _InvalidStateError("Exception is not set.")

    cdef object _metadata(self):
        cdef _BatchResult r = <_BatchResult>self._outcome
        cdef int64_t offset = r.base_offset + self._index if r.base_offset >= 0 else -1
        if r.log_append_time != -1:
            md = _RecordMetadata(
                r.topic, r.partition, r.tp, offset, r.log_append_time,
                TIMESTAMP_LOG_APPEND_TIME, r.log_start_offset,
            )
        else:
            md = _RecordMetadata(
                r.topic, r.partition, r.tp, offset, self._timestamp,
                TIMESTAMP_CREATE_TIME, r.log_start_offset,
            )
        # Built once: result() returns the same object every time, as asyncio's does.
        self._outcome = md
        self._state = FINISHED
        return md

    cdef object _cancelled_error(self):
        if self._cancel_message is None:
            return _CancelledError()
        return _CancelledError(self._cancel_message)

    def _make_cancelled_error(self):
        """The CancelledError to raise (asyncio.gather calls it on a cancelled child)."""
        return self._cancelled_error()

    # -- callbacks -------------------------------------------------------------------

    def add_done_callback(self, fn, *, context=None):
        if context is None:
            context = _callback_context()
        if self._state != PENDING:
            _schedule(self._loop, [self, fn, context, None])
        elif self._cb0 is None:
            self._cb0 = fn
            self._ctx0 = context
            _track(self)  # a callback may refer back to this future
        elif self._callbacks is None:
            self._callbacks = [(fn, context)]
        else:
            self._callbacks.append((fn, context))

    def remove_done_callback(self, fn):
        cdef Py_ssize_t removed = 0
        if self._cb0 is not None and self._cb0 == fn:
            self._cb0 = self._ctx0 = None
            removed = 1
        if self._callbacks is not None:
            kept = [(f, ctx) for (f, ctx) in self._callbacks if f != fn]
            removed += len(self._callbacks) - len(kept)
            self._callbacks = kept or None
        if self._cb0 is None and self._callbacks is not None:  # keep the first one inline
            (self._cb0, self._ctx0), *rest = self._callbacks
            self._callbacks = rest or None
        return removed

    cdef void _schedule_callbacks(self) except *:
        # The path of cancel() and set_result(): the callbacks in order, as asyncio.
        if self._cb0 is None:
            return
        _schedule(self._loop, [self, self._cb0, self._ctx0, self._callbacks])
        self._cb0 = self._ctx0 = self._callbacks = None

    # -- changing state (the producer resolves through RecordFutures) ---------------

    def cancel(self, msg=None):
        if self._state != PENDING:
            return False
        self._state = CANCELLED
        self._cancel_message = msg
        self._log_traceback = False
        self._schedule_callbacks()
        return True

    def set_result(self, result):
        if self._state != PENDING:
            raise _InvalidStateError(f"{_state_name(self._state)}: {self!r}")
        self._outcome = result
        self._state = FINISHED
        _track(self)  # any object: it may refer back
        self._schedule_callbacks()

    def set_exception(self, exception):
        if self._state != PENDING:
            raise _InvalidStateError(f"{_state_name(self._state)}: {self!r}")
        if isinstance(exception, type):
            exception = exception()
        if type(exception) is StopIteration:
            raise TypeError(
                "StopIteration interacts badly with generators and cannot be raised into a Future"
            )
        self._outcome = exception
        self._tb = exception.__traceback__
        self._state = FAILED
        self._log_traceback = True
        _track(self)
        self._schedule_callbacks()

    # -- awaiting --------------------------------------------------------------------

    def __await__(self):
        if self._state == PENDING:
            self._asyncio_future_blocking = True
            yield self  # a Task adds its wakeup as a done callback
        if self._state == PENDING:
            raise RuntimeError("await wasn't used with future")
        return self.result()

    def __iter__(self):
        return self.__await__()

    def __del__(self):
        if not self._log_traceback:
            return
        # As asyncio: an exception nobody looked at is reported when the future goes.
        exc = self._outcome
        self._loop.call_exception_handler(
            {
                "message": f"{type(self).__name__} exception was never retrieved",
                "exception": exc,
                "future": self,
            }
        )

    def __repr__(self):
        state = _state_name(self._state)
        if self._state == FAILED:
            return f"<{type(self).__name__} {state} exception={self._outcome!r}>"
        if self._state in (FINISHED, BATCH):
            return f"<{type(self).__name__} {state} result={self.result()!r}>"
        return f"<{type(self).__name__} {state}>"


cdef void _run_callbacks(object loop, list ready) except *:
    """Run the done callbacks of a batch's futures, in order.

    ``ready`` holds (future, first callback, its context, further callbacks or None),
    flattened, four items per future.
    """
    cdef Py_ssize_t i, j, n = len(ready)
    for i in range(0, n, 4):
        fut = ready[i]
        _run_one(loop, fut, ready[i + 1], ready[i + 2], ready, i, -1)
        rest = ready[i + 3]
        if rest is not None:
            for j in range(len(<list>rest)):
                fn, ctx = (<list>rest)[j]
                _run_one(loop, fut, fn, ctx, ready, i, j)


cdef inline void _run_one(
    object loop, object fut, object fn, object ctx, list ready, Py_ssize_t i, Py_ssize_t j
) except *:
    try:
        _call_in(ctx, fn, fut)
    except (SystemExit, KeyboardInterrupt):
        # As a Handle: these stop the loop; the callbacks after this one still run, later.
        remaining = []
        rest = ready[i + 3]
        if rest is not None:
            for fn, ctx in (<list>rest)[j + 1:]:
                remaining += [fut, fn, ctx, None]
        remaining += ready[i + 4:]
        if remaining:
            loop.call_soon(_run_callbacks_handle, loop, remaining)
        raise
    except BaseException as exc:
        loop.call_exception_handler(
            {
                "message": f"Exception in callback {fn!r} of {fut!r}",
                "exception": exc,
                "future": fut,
            }
        )


def _run_callbacks_handle(loop, ready):
    global _open_loop, _open_handle, _open_items
    if ready is _open_items:  # running: what is scheduled from now on runs after it
        _open_loop = _open_handle = _open_items = None
    _run_callbacks(loop, ready)


@cython.final
cdef class RecordFutures:
    """The futures of one batch's records, by offset delta, resolved in one call."""

    # (its fields are declared in _cdelivery.pxd)

    def __init__(self, loop):
        self.loop = loop
        self.futures = []
        self.settled = False

    def add(self, Py_ssize_t offset_delta, int64_t timestamp):
        """A new future for the record at ``offset_delta`` in the batch, stamped ``timestamp``."""
        return self._add(offset_delta, timestamp)

    cdef object _add(self, Py_ssize_t offset_delta, int64_t timestamp):
        cdef RecordFuture fut = RecordFuture.__new__(RecordFuture)
        fut._loop = self.loop
        fut._index = offset_delta
        fut._timestamp = timestamp
        self.futures.append(fut)
        return fut

    def __len__(self):
        return len(self.futures)

    def complete(self, tp, int64_t base_offset, int64_t log_append_time, int64_t log_start_offset):
        """Resolve every future with its record's metadata (``base_offset`` -1: acks=0)."""
        if self.settled:
            return
        cdef _BatchResult result = _BatchResult.__new__(_BatchResult)
        result.topic, result.partition = tp
        result.tp = tp
        result.base_offset = base_offset
        result.log_append_time = log_append_time
        result.log_start_offset = log_start_offset
        self.settled = True  # (only now: should the above raise, fail() still settles)
        self._settle(BATCH, result)

    def complete_none(self):
        """Resolve every future to None (acks=0: the broker says nothing about the batch)."""
        if self.settled:
            return
        self.settled = True
        self._settle(FINISHED, None)

    def fail(self, exc):
        """Fail every future not done yet with ``exc``."""
        if self.settled:
            return
        self.settled = True
        self._settle(FAILED, exc)

    cdef void _settle(self, int state, object outcome) except *:
        cdef RecordFuture fut
        cdef list ready = None
        cdef object tb = outcome.__traceback__ if state == FAILED else None
        for fut in self.futures:
            if fut._state != PENDING:  # the caller cancelled it
                continue
            fut._state = state
            fut._outcome = outcome
            if state == FAILED:
                fut._tb = tb
                fut._log_traceback = True
                _track(fut)  # the exception's traceback may lead back to it
            if fut._cb0 is not None:
                if ready is None:
                    ready = []
                ready.append(fut)
                ready.append(fut._cb0)
                ready.append(fut._ctx0)
                ready.append(fut._callbacks)
                fut._cb0 = fut._ctx0 = fut._callbacks = None
                if state != FAILED:
                    _untrack(fut)  # its callbacks are gone: nothing left to form a cycle
        self.futures = []  # the batch may be kept a while: not its records' futures
        if ready is not None:
            _schedule(self.loop, ready)
