# The compiled RecordBatchBuilder's layout, for the modules that cimport it (_csend_path, _cbatch_builder, _carrow_rows).
from libc.stdint cimport int64_t


cdef class RecordBatchBuilder:
    cdef public bytearray buf
    cdef public Py_ssize_t count
    cdef public int64_t base_timestamp
    cdef public int64_t max_timestamp
    cdef public object compress
    cdef public int codec_id

    cdef Py_ssize_t _append(
        self, int64_t timestamp, object key, object value, object headers, Py_ssize_t limit
    ) except -1
    cdef Py_ssize_t _append_raw(
        self, int64_t timestamp, const char* kdata, Py_ssize_t ksize,
        const char* vdata, Py_ssize_t vsize, const char* hdata, Py_ssize_t hsize,
        Py_ssize_t limit,
    ) except -1
