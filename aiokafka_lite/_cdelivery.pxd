# The compiled RecordFutures' layout, for the modules that cimport it (_csend_path).
cimport cython
from libc.stdint cimport int64_t


@cython.final
cdef class RecordFutures:
    cdef readonly object loop
    cdef list futures
    cdef public bint settled

    cdef object _add(self, Py_ssize_t offset_delta, int64_t timestamp)
    cdef void _settle(self, int state, object outcome) except *
