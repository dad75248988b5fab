# cython: language_level=3
"""Compiled twin of :mod:`aiokafka_lite._internal.batch_builder`: aiokafka's ``create_batch`` API.

Same methods, same checks, same errors and the same bytes as the pure ``BatchBuilder``
(see its docstring): a plain record (bytes or None key and value, no serializers) goes
from ``append`` to its encoder and its metadata without interpreted code; anything else
takes the pure module's checks (``checks.serialize``, ``check_headers``).
"""

cimport cython
from libc.stdint cimport int64_t

from aiokafka_lite._internal._crecords cimport RecordBatchBuilder

import time as _time  # (time.time looked up per record, as the pure twin does)

# The package's modules, bound when the first BatchBuilder is made: this module is
# imported (by aiokafka_lite.speedups) while those modules are still being imported.
cdef object checks = None
cdef object BatchRecordMetadata = None
cdef object check_request_size = None  # the pure module's, shared by both twins
cdef object _TIMESTAMP_LIMIT = None


cdef int _bind() except -1:
    global checks, BatchRecordMetadata, check_request_size, _TIMESTAMP_LIMIT
    from aiokafka_lite._internal import checks as _checks
    from aiokafka_lite._internal.batch_builder import check_request_size as _check_size
    from aiokafka_lite.structs import BatchRecordMetadata as _metadata
    checks, check_request_size, BatchRecordMetadata = _checks, _check_size, _metadata
    _TIMESTAMP_LIMIT = _checks.TIMESTAMP_LIMIT
    return 0


@cython.auto_pickle(False)  # (as aiokafka's, which cannot be pickled either)
cdef class BatchBuilder:
    """Records for one partition built ahead of time (see aiokafka_lite._internal.batch_builder)."""

    # (its fields are declared in _cbatch_builder.pxd)

    def __cinit__(self, *args, **kwargs):
        if checks is None:
            _bind()

    def __init__(
        self,
        Py_ssize_t batch_size,
        compress=None,
        int codec_id=0,
        *,
        key_serializer=None,
        value_serializer=None,
    ):
        self._limit = batch_size
        self._compress = compress
        self._codec_id = codec_id
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._plain = key_serializer is None and value_serializer is None
        self._builder = None
        self._closed = False

    def append(self, *, key=None, value=None, timestamp=None, headers=None):
        """Add a record; None (nothing added) when the batch is full or closed."""
        cdef int64_t ts
        cdef double ms
        cdef Py_ssize_t offset, added
        if self._closed:
            return None
        if not (
            self._plain
            and (key is None or type(key) is bytes)
            and (value is None or type(value) is bytes)
        ):  # serializers to run, or types to check and convert
            key, value = checks.serialize(
                self._key_serializer, self._value_serializer, key, value, "batch"
            )
        if headers is not None:
            headers = checks.check_headers(headers, "batch")
        if timestamp is None:
            now = _time.time()
            ms = <double>now * 1000.0
            if -9.2e18 < ms < 9.2e18:
                ts = <int64_t>ms  # int(time.time() * 1000)
            else:  # NaN, infinite or past int64: raises as the pure twin does
                ts = int(now * 1000)
        elif type(timestamp) is int and 0 <= timestamp < _TIMESTAMP_LIMIT:
            ts = timestamp
        else:
            raise checks.bad_timestamp(timestamp, "batch")
        builder = self._builder
        if builder is None:
            builder = self._builder = RecordBatchBuilder(ts, self._compress, self._codec_id)
        offset = builder.count
        added = builder._append(ts, key, value, headers, self._limit)
        if added == 0:
            self._closed = True  # as aiokafka: a full batch takes no more records
            return None
        return BatchRecordMetadata(offset, added, ts)

    cdef Py_ssize_t _append_raw(
        self, int64_t ts, const char* kdata, Py_ssize_t ksize,
        const char* vdata, Py_ssize_t vsize, const char* hdata, Py_ssize_t hsize,
    ) except -1:
        # ``append`` of a plain record from C memory (size -1: null; hdata NULL: no
        # headers), for the Arrow write path (_carrow_rows), which checked the timestamp
        # and that this batch has no serializers. 0: full or closed (nothing added).
        cdef Py_ssize_t added
        if self._closed:
            return 0
        builder = self._builder
        if builder is None:
            builder = self._builder = RecordBatchBuilder(ts, self._compress, self._codec_id)
        added = builder._append_raw(ts, kdata, ksize, vdata, vsize, hdata, hsize, self._limit)
        if added == 0:
            self._closed = True  # as append: a full batch takes no more records
        return added

    def close(self):
        """Take no more records (``append`` returns None from now on)."""
        self._closed = True

    def closed(self):
        return self._closed

    def size(self):
        return 0 if self._builder is None else len(self._builder.buf)

    def record_count(self):
        return 0 if self._builder is None else self._builder.count

    def _take(self, topic, Py_ssize_t max_request_size):
        """For ``send_batch``: the records, closing this batch; None when it holds none."""
        builder = self._builder
        if builder is None or not builder.count:
            self._closed = True  # nothing to send (send_batch resolves it at once)
            return None
        check_request_size(builder, topic, max_request_size)
        self._builder = None
        self._closed = True
        return builder
