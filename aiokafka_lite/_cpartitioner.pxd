# The compiled murmur2, for the modules that cimport it (_csend_path).
from libc.stdint cimport uint32_t


cdef uint32_t _hash(const unsigned char* data, Py_ssize_t n) noexcept nogil
