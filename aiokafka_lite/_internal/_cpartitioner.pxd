# The compiled murmur2, for the modules that cimport it (_csend_path).
from libc.stdint cimport uint32_t


cdef uint32_t _hash(const unsigned char* data, Py_ssize_t n) noexcept nogil


# Java's sticky switch (partitioner.sticky_moves_on), for the modules that cimport it
# (_csend_path, _carrow_rows): the one decision, compiled once for all of them.
cdef inline bint moves_on(Py_ssize_t produced, Py_ssize_t limit, bint batch_full) noexcept nogil:
    return produced >= 2 * limit or (batch_full and produced >= limit)
