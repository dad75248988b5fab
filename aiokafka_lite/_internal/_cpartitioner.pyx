# cython: language_level=3
"""Compiled twin of murmur2 in :mod:`aiokafka_lite._internal.partitioner` (Java's ``Utils.murmur2``).

Unsigned 32-bit C arithmetic wraps exactly as Java's ``int`` does, and ``>>`` on an
unsigned value is Java's ``>>>``. Blocks are read little-endian byte by byte, so the
result does not depend on the machine's byte order or alignment.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int32_t, uint32_t

cdef uint32_t SEED = 0x9747B28C
cdef uint32_t M = 0x5BD1E995


cdef uint32_t _hash(const unsigned char* data, Py_ssize_t n) noexcept nogil:
    cdef uint32_t h = SEED ^ <uint32_t>n
    cdef uint32_t k
    cdef Py_ssize_t i = 0, blocks = n & ~3
    while i < blocks:
        k = (
            <uint32_t>data[i]
            | (<uint32_t>data[i + 1] << 8)
            | (<uint32_t>data[i + 2] << 16)
            | (<uint32_t>data[i + 3] << 24)
        )
        k *= M
        k ^= k >> 24
        k *= M
        h *= M
        h ^= k
        i += 4
    cdef Py_ssize_t tail = n & 3
    if tail == 3:
        h ^= <uint32_t>data[blocks + 2] << 16
    if tail >= 2:
        h ^= <uint32_t>data[blocks + 1] << 8
    if tail >= 1:
        h ^= <uint32_t>data[blocks]
        h *= M
    h ^= h >> 13
    h *= M
    h ^= h >> 15
    return h


cdef uint32_t hash_u32(object data) except? 0xFFFFFFFF:
    cdef Py_buffer view
    cdef uint32_t h
    if type(data) is bytes:
        return _hash(<const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        h = _hash(<const unsigned char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return h


def murmur2_u32(data):
    """Java's murmur2 as an unsigned 32-bit int."""
    return hash_u32(data)


def murmur2(data):
    """Kafka's murmur2 hash of ``data``, as the signed 32-bit int Java's ``Utils.murmur2``
    returns."""
    return <int32_t>hash_u32(data)


def default_partition(key, Py_ssize_t num_partitions):
    """The Java client's partition for a keyed record: ``toPositive(murmur2(key)) % n``."""
    cdef Py_ssize_t h = hash_u32(key) & 0x7FFFFFFF
    if num_partitions <= 0:  # Python's semantics (and error) for what cannot be a count
        return (<object>h) % num_partitions
    return h % num_partitions


def place_plain(
    list items,
    Py_ssize_t lo,
    Py_ssize_t hi,
    list keys not None,
    list values not None,
    Py_ssize_t base,
    object partition,
    Py_ssize_t num_partitions,
    Py_ssize_t max_size,
    object hashes,
    dict by_partition,
):
    """Place ``send_many()``'s plain records from ``items[lo]`` on: return where it stopped.

    The twin of :func:`aiokafka_lite._internal.partitioner.place_plain` (see there). It hashes each
    key itself: the compiled murmur2 of a short key costs less than the pure twin's cache
    lookup, so ``hashes`` is not consulted (murmur2 is pure: the partitions are the same).
    """
    cdef Py_ssize_t i, size, p = 0
    cdef object item, k, v, order, key
    cdef bint fixed = partition is not None
    if fixed:
        p = partition
    hi = min(hi, len(items))
    # (built without boundscheck: the slots written must exist)
    if lo < base or hi - base > min(len(keys), len(values)):
        raise IndexError(f"records {lo}..{hi} do not fit keys/values from {base}")
    for i in range(lo, hi):
        item = items[i]
        if type(item) is not tuple or PyTuple_GET_SIZE(item) != 2:
            return i
        k = <object>PyTuple_GET_ITEM(item, 0)
        v = <object>PyTuple_GET_ITEM(item, 1)
        if type(k) is not bytes:
            return i
        size = PyBytes_GET_SIZE(k)
        if v is not None:
            if type(v) is not bytes:
                return i
            size += PyBytes_GET_SIZE(v)
        if size > max_size:
            return i
        if not fixed:
            p = (hash_u32(k) & 0x7FFFFFFF) % num_partitions
        keys[i - base] = k
        values[i - base] = v
        key = p
        order = by_partition.get(key)
        if order is None:
            by_partition[key] = [i]
        else:
            (<list>order).append(i)
    return hi


def sticky_moves_on(Py_ssize_t produced, Py_ssize_t limit, bint batch_full):
    """partitioner.sticky_moves_on: the .pxd's inline one, which the compiled paths use."""
    return moves_on(produced, limit, batch_full)
