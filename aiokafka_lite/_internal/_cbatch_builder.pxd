# The compiled BatchBuilder's layout, for the modules that cimport it (_carrow_rows).
from libc.stdint cimport int64_t

from aiokafka_lite._internal._crecords cimport RecordBatchBuilder


cdef class BatchBuilder:
    cdef Py_ssize_t _limit
    cdef object _compress
    cdef int _codec_id
    cdef object _key_serializer
    cdef object _value_serializer
    cdef bint _plain
    cdef RecordBatchBuilder _builder
    cdef bint _closed

    cdef Py_ssize_t _append_raw(
        self, int64_t ts, const char* kdata, Py_ssize_t ksize,
        const char* vdata, Py_ssize_t vsize, const char* hdata, Py_ssize_t hsize,
    ) except -1
