# The compiled RecordFutures' layout, for the modules that cimport it (_csend_path).
cimport cython
from libc.stdint cimport int64_t


@cython.final
cdef class RecordFutures:
    cdef readonly object loop
    cdef list futures
    cdef public bint settled
    cdef bint _direct  # asyncio.Future(loop=...) instead of loop.create_future()
    cdef int64_t* _slots  # per future: its offset delta, then its timestamp
    cdef Py_ssize_t _capacity  # futures _slots has room for

    cdef object _add(self, Py_ssize_t offset_delta, int64_t timestamp)
    cdef void _release(self)
    cdef void _release_all(self)
