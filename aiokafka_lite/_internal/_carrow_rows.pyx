# cython: language_level=3
"""Compiled Arrow write path of the Spark tasks: rows appended from Arrow buffers.

:class:`ArrowRows` reads one Arrow record batch's columns in place (validity bitmaps,
offsets and data through the buffer protocol) and appends each row's record straight
into its partition's open batch (the compiled ``BatchBuilder``), placing it as
``TaskWriter.write`` (``aiokafka_lite/spark/task.py``, the pure path, which the pure
build keeps) does: an explicit partition, else the compiled murmur2 of the key, else
the topic's sticky partition. No Python object is made per row. Whatever needs
Python (a topic to look up, a batch to create or send, a row to fail with today's
message) stops :meth:`ArrowRows.run` with an event that
:mod:`aiokafka_lite.spark.arrow_rows` handles before it runs again.
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from aiokafka_lite._internal._cbatch_builder cimport BatchBuilder
from aiokafka_lite._internal._cpartitioner cimport _hash, moves_on

# records.RECORD_OVERHEAD, what a record adds beyond key, value and headers at most (a
# constant here: records imports the compiled twins; tests/test_speedups.py compares them)
cdef enum:
    RECORD_OVERHEAD = 36
#: (for the test that it is records.RECORD_OVERHEAD)
SIZE_OVERHEAD = RECORD_OVERHEAD

# The events run() stops with (mirrored in aiokafka_lite/spark/arrow_rows.py).
cdef enum:
    DONE = 0
    NEED_TOPIC = 1  # row pos's topic (index topic_index) is not looked up yet
    SLOW = 2  # row pos goes through the pure path (it fails there, naming itself)
    NEW_BATCH = 3  # row pos's partition has no open batch: create one, append_at
    SEND_CAP = 4  # the row would take the batch past the size cap: send, create, append_at
    FULL = 5  # the batch is full: send, create, append_at (a keyless row: send, run again)
    MOVE_ON = 6  # the topic's keyless rows move to a new sticky partition; run again

# Column kinds, as arrow_rows.py describes each column.
cdef enum:
    BINARY = 1  # int32 offsets + data
    LARGE_BINARY = 2  # int64 offsets + data
    INT32 = 3
    INT64 = 4
    VALIDITY = 5  # a validity bitmap alone (the struct entries of headers)
    MAX_VIEWS = 24


cdef struct Column:
    bint present
    int kind
    Py_ssize_t offset  # the array's offset into its buffers
    Py_ssize_t length
    const uint8_t* valid  # NULL: no nulls
    const char* main  # offsets, or the fixed-width values
    const char* data  # variable-width data
    Py_ssize_t data_size


cdef inline bint is_null(Column* c, Py_ssize_t i) noexcept nogil:
    cdef Py_ssize_t j
    if c.valid == NULL:
        return False
    j = c.offset + i
    return not (c.valid[j >> 3] >> (j & 7)) & 1


cdef inline int64_t fixed(Column* c, Py_ssize_t i) noexcept nogil:
    if c.kind == INT32:
        return (<const int32_t*>c.main)[c.offset + i]
    return (<const int64_t*>c.main)[c.offset + i]


cdef inline int64_t start_of(Column* c, Py_ssize_t i) noexcept nogil:
    # offsets[i] (of a binary column, or of a list column's entries)
    if c.kind == BINARY:
        return (<const int32_t*>c.main)[c.offset + i]
    return (<const int64_t*>c.main)[c.offset + i]


cdef inline const char* slot(Column* c, Py_ssize_t i, Py_ssize_t* size) noexcept nogil:
    # row i of a binary column: its bytes and size (-1: null)
    cdef int64_t a
    if is_null(c, i):
        size[0] = -1
        return NULL
    a = start_of(c, i)
    size[0] = <Py_ssize_t>(start_of(c, i + 1) - a)
    return c.data + a


cdef inline uint64_t zigzag(int64_t n) noexcept nogil:
    return (<uint64_t>n << 1) ^ <uint64_t>(n >> 63)


cdef inline char* put_varint(char* p, uint64_t z) noexcept nogil:
    while z > 0x7F:
        p[0] = <char>((z & 0x7F) | 0x80)
        p += 1
        z >>= 7
    p[0] = <char>z
    return p + 1


@cython.auto_pickle(False)
cdef class ArrowRows:
    """One Arrow batch's columns, read in place; ``run`` appends rows until an event."""

    cdef Py_buffer views[MAX_VIEWS]
    cdef int nviews
    cdef Column key, value, part, stamp, topic, hlist, hentry, hkey, hvalue
    cdef char* scratch  # one row's encoded headers
    cdef Py_ssize_t scratch_size
    cdef readonly Py_ssize_t length
    #: the row run() stopped at (the next to append)
    cdef public Py_ssize_t pos
    #: the event's partition, and its row's topic (index in run()'s ``states``)
    cdef readonly Py_ssize_t partition
    cdef readonly Py_ssize_t topic_index
    #: whether the event's row is keyless (placed by the sticky partitioner)
    cdef readonly bint keyless
    # run()'s current topic (a _Topic) and its keyless bytes, written back when it stops
    cdef object _state
    cdef Py_ssize_t _produced
    cdef bint _dirty

    def __cinit__(self, *args, **kwargs):
        self.nviews = 0
        self.scratch = NULL
        self.scratch_size = 0

    def __init__(
        self,
        Py_ssize_t length,
        key,
        value,
        partition=None,
        timestamp=None,
        topic=None,
        headers=None,
    ):
        """Each column is None or ``(kind, offset, length, validity, main, data)``;
        ``headers`` is None or four: the lists, their struct entries, names, values."""
        self.length = length
        self.pos = 0
        if value is None:
            raise ValueError("the value column is required")
        self._column(&self.key, key, length, (BINARY, LARGE_BINARY))
        self._column(&self.value, value, length, (BINARY, LARGE_BINARY))
        self._column(&self.part, partition, length, (INT32,))
        self._column(&self.stamp, timestamp, length, (INT64,))
        self._column(&self.topic, topic, length, (INT32,))
        if headers is not None:
            lists, entries, names, values = headers
            self._column(&self.hlist, lists, length, (BINARY, LARGE_BINARY), False)
            n = start_of(&self.hlist, length) if length else 0
            if not self.hlist.present or entries is None or entries[2] < n:
                raise ValueError("the headers' entries are fewer than their lists say")
            self._column(&self.hentry, entries, entries[2], (VALIDITY,), False)
            self._column(&self.hkey, names, entries[2], (BINARY, LARGE_BINARY))
            self._column(&self.hvalue, values, entries[2], (BINARY, LARGE_BINARY))

    cdef const char* _view(self, obj, Py_ssize_t need, str what) except? NULL:
        cdef Py_buffer* view
        if obj is None:
            if need > 0:
                raise ValueError(f"an Arrow column has no {what} buffer")
            return NULL
        if self.nviews == MAX_VIEWS:
            raise ValueError("too many Arrow buffers")
        view = &self.views[self.nviews]
        PyObject_GetBuffer(obj, view, PyBUF_SIMPLE)
        self.nviews += 1
        if view.len < need:
            raise ValueError(f"an Arrow {what} buffer of {view.len} bytes, {need} needed")
        return <const char*>view.buf

    cdef int _column(
        self, Column* c, spec, Py_ssize_t rows, tuple kinds, bint data=True
    ) except -1:
        # Take one column's buffers, checking that they hold what its rows need, so that
        # run() reads no byte outside them.
        cdef Py_ssize_t width, last, first
        c.present = False
        c.valid = NULL
        c.data = NULL
        c.data_size = 0
        if spec is None:
            return 0
        kind, offset, length, validity, main, rest = spec
        if kind not in kinds:
            raise ValueError(f"an Arrow column of kind {kind}, expected one of {kinds}")
        if length < rows or offset < 0:
            raise ValueError(f"an Arrow column of {length} rows, {rows} needed")
        c.kind, c.offset, c.length = kind, offset, length
        if validity is not None:
            c.valid = <const uint8_t*>self._view(validity, (offset + length + 7) >> 3, "validity")
        width = 8 if kind == INT64 or kind == LARGE_BINARY else 4
        if kind == BINARY or kind == LARGE_BINARY:
            c.main = self._view(main, (offset + length + 1) * width, "offsets")
            c.present = True
            if length:
                first, last = start_of(c, 0), start_of(c, length)
                if first < 0 or last < first:
                    raise ValueError("an Arrow column's offsets are out of order")
                if data:
                    c.data = self._view(rest, last, "data")
                    c.data_size = last
        elif kind == VALIDITY:
            c.main = NULL
            c.present = True
        else:
            c.main = self._view(main, (offset + length) * width, "values")
            c.present = True
        return 0

    def __dealloc__(self):
        cdef int i
        for i in range(self.nviews):
            PyBuffer_Release(&self.views[i])
        self.nviews = 0
        PyMem_Free(self.scratch)

    cdef Py_ssize_t _headers(self, Py_ssize_t i) except -2:
        # Encode row i's headers into scratch (records._encode_headers' bytes); return
        # their size, 0 for none, -1 for a row the pure path must fail (a null name or
        # entry).
        cdef int64_t a, b, e
        cdef Py_ssize_t need, ksize, vsize
        cdef const char* kd
        cdef const char* vd
        cdef char* p
        if not self.hlist.present or is_null(&self.hlist, i):
            return 0
        a, b = start_of(&self.hlist, i), start_of(&self.hlist, i + 1)
        if a == b:
            return 0
        need = 10
        for e in range(a, b):
            if is_null(&self.hentry, e) or is_null(&self.hkey, e):
                return -1
            kd = slot(&self.hkey, e, &ksize)
            vd = slot(&self.hvalue, e, &vsize)
            need += 20 + ksize + (vsize if vsize > 0 else 0)
        if need > self.scratch_size:
            p = <char*>PyMem_Realloc(self.scratch, need)
            if p == NULL:
                raise MemoryError()
            self.scratch, self.scratch_size = p, need
        p = put_varint(self.scratch, zigzag(b - a))
        for e in range(a, b):
            kd = slot(&self.hkey, e, &ksize)
            p = put_varint(p, zigzag(ksize))
            memcpy(p, kd, ksize)
            p += ksize
            vd = slot(&self.hvalue, e, &vsize)
            p = put_varint(p, zigzag(vsize))  # -1 (null) is the byte 0x01
            if vsize > 0:
                memcpy(p, vd, vsize)
                p += vsize
        return p - self.scratch

    def append_at(self, Py_ssize_t i, BatchBuilder batch not None, int64_t now):
        """Append row ``i`` to ``batch`` (after an event: a new, empty batch)."""
        cdef Py_ssize_t ksize, vsize, hsize
        cdef const char* kd
        cdef const char* vd
        cdef int64_t ts = now
        if not 0 <= i < self.length:
            raise IndexError(f"row {i} of {self.length}")
        if not batch._plain:
            raise TypeError("the Arrow path writes bytes: a batch with serializers")
        kd = slot(&self.key, i, &ksize) if self.key.present else NULL
        if not self.key.present:
            ksize = -1
        vd = slot(&self.value, i, &vsize)
        hsize = self._headers(i)
        if hsize < 0:
            raise ValueError(f"row {i}: a null header name or entry")
        if self.stamp.present and not is_null(&self.stamp, i):
            ts = fixed(&self.stamp, i)
        return batch._append_raw(
            ts, kd, ksize, vd, vsize, self.scratch if hsize > 0 else NULL, hsize
        )

    def run(self, list states not None, Py_ssize_t cap, int64_t now, report):
        """Append rows from ``pos`` on; stop at the first event (``pos``: its row).

        ``states`` are the topics' ``_Topic`` (None: not looked up yet), indexed by
        the topic column's indices (or one, the default topic, without that column).
        Keyless rows are placed as ``TaskWriter._keyless`` places them (Java's sticky
        rule); what needs a random draw stops with MOVE_ON.
        """
        self._state = None
        self._dirty = False
        try:
            return self._run(states, cap, now, report)
        finally:
            self._write_back()

    cdef void _write_back(self) noexcept:
        # The topic's keyless bytes, back into its _Topic (one attribute per stop, not
        # one per row).
        if self._dirty:
            self._dirty = False
            try:
                self._state.produced = self._produced
            except BaseException:  # (a _Topic has the slot: cannot happen)
                pass

    cdef int _run(self, list states, Py_ssize_t cap, int64_t now, report) except -1:
        cdef Py_ssize_t i, j, cur = -1, n_states = PyList_GET_SIZE(states)
        cdef Py_ssize_t t_n = 0, t_sticky = 0, t_limit = 0, before
        cdef Py_ssize_t p, ksize, vsize, hsize, bound, size
        cdef bint keyless
        cdef const char* kd
        cdef const char* vd
        cdef int64_t ts
        cdef object t_error = None, t_open = None, st
        cdef BatchBuilder b
        cdef list open_list
        for i in range(self.pos, self.length):
            # a row the converter fails (a null header name) fails before any look-up
            hsize = self._headers(i)
            if hsize < 0:
                return self._stop(i, SLOW)
            # the topic (null, unknown or out of states: the pure path or a look-up)
            if self.topic.present:
                if is_null(&self.topic, i):
                    return self._stop(i, SLOW)
                j = fixed(&self.topic, i)
            else:
                j = 0
            self.topic_index = j
            if j != cur:
                if not 0 <= j < n_states:
                    raise IndexError(f"topic index {j} of {n_states}")
                st = <object>PyList_GET_ITEM(states, j)
                if st is None:
                    return self._stop(i, NEED_TOPIC)
                t_n, t_sticky, t_error, t_open = st.n, st.sticky, st.error, st.open
                if type(t_open) is not list or PyList_GET_SIZE(t_open) < t_n:
                    raise TypeError("a topic's open batches must be a list of n")
                self._write_back()
                self._state, self._produced, t_limit = st, st.produced, st.limit
                cur = j
            if t_error is not None:
                report.fail(1, t_error)
                continue
            if t_n <= 0:
                return self._stop(i, SLOW)
            # placement
            if self.key.present:
                kd = slot(&self.key, i, &ksize)
            else:
                kd, ksize = NULL, -1
            keyless = False
            if self.part.present and not is_null(&self.part, i):
                p = fixed(&self.part, i)
                if not 0 <= p < t_n:
                    return self._stop(i, SLOW)  # fails there, naming the row
            elif ksize < 0:
                p = t_sticky
                keyless = True
            else:
                p = <Py_ssize_t>(_hash(<const unsigned char*>kd, ksize) & 0x7FFFFFFF) % t_n
            self.partition = p
            self.keyless = keyless
            ts = now
            if self.stamp.present and not is_null(&self.stamp, i):
                ts = fixed(&self.stamp, i)
                if ts < 0:
                    return self._stop(i, SLOW)  # BatchBuilder.append refuses it there
            vd = slot(&self.value, i, &vsize)
            # the partition's open batch
            open_list = <list>t_open
            st = <object>PyList_GET_ITEM(open_list, p)
            if st is None:
                if keyless and moves_on(self._produced, t_limit, True):
                    return self._stop(i, MOVE_ON)  # no open batch, enough bytes: move first
                return self._stop(i, NEW_BATCH)
            if type(st) is not BatchBuilder:
                raise TypeError(f"not a compiled BatchBuilder: {type(st).__name__}")
            b = <BatchBuilder>st
            if not b._plain:
                raise TypeError("the Arrow path writes bytes: a batch with serializers")
            if cap and b._builder is not None and b._builder.count:
                size = len(b._builder.buf)
                # records.record_size: the one sizing rule (exact header bytes)
                bound = RECORD_OVERHEAD + (ksize if ksize > 0 else 0) + (vsize if vsize > 0 else 0)
                bound += hsize if hsize > 0 else 0
                if size + bound > cap:
                    return self._stop(i, SEND_CAP)
            before = 0 if b._builder is None else len(b._builder.buf)
            if b._append_raw(
                ts, kd, ksize, vd, vsize, self.scratch if hsize > 0 else NULL, hsize
            ) == 0:
                return self._stop(i, FULL)
            if keyless:  # as _Topic.appended
                size = len(b._builder.buf)
                self._produced += size - before
                self._dirty = True
                if moves_on(self._produced, t_limit, size >= t_limit):
                    return self._stop(i + 1, MOVE_ON)
        self.pos = self.length
        return DONE

    cdef int _stop(self, Py_ssize_t i, int event) noexcept:
        self.pos = i
        return event
