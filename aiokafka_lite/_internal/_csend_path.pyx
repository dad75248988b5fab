# cython: language_level=3
"""Compiled twin of :mod:`aiokafka_lite._internal.send_path`: ``send()``'s fast path in C.

Same case, same steps, same result as the pure ``SendPath.append`` (see its docstring);
the record's timestamp is ``int(time.time() * 1000)``, as on the general path.
The batch's fields, its encoder and its futures are reached as C (``ProducerBatchBase``
and the cimported twins), not as Python attributes: on this path attribute lookups would cost
more than the record's encoding.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.object cimport PyObject
from libc.stdint cimport int64_t

from aiokafka_lite._internal._cdelivery cimport RecordFutures
from aiokafka_lite._internal._cpartitioner cimport _hash as murmur2_hash
from aiokafka_lite._internal._cpartitioner cimport moves_on
from aiokafka_lite._internal._crecords cimport RecordBatchBuilder

from aiokafka_lite._internal.hand_over import FILLED as _FILLED, NOT_PLAIN as _NOT_PLAIN

# send_path's answers when nothing was appended (held as C globals: no lookup per record)
cdef object NOT_PLAIN = _NOT_PLAIN
cdef object FILLED = _FILLED


# Keys up to this many bytes are hashed on every record: murmur2 over them costs no more
# than the hash cache's lookup (and nothing is stored for keys that never come back).
cdef Py_ssize_t DIRECT_HASH_MAX = 64

import time as _time  # (time.time looked up per record, as the general path does)


cdef class ProducerBatchBase(RecordBatchBuilder):
    """The base class of a ProducerBatch: what the fast path reads and writes of it (see
    send_path.ProducerBatchBase; its fields are declared in _csend_path.pxd)."""


cdef class MemoryBudget:
    """The buffer_memory budget's count of bytes taken (see send_path.MemoryBudget; its
    field is declared in _csend_path.pxd)."""



@cython.final
cdef class SendPath:
    """The fast path of one producer's ``send()`` (see aiokafka_lite._internal.send_path)."""

    cdef object _metadata
    cdef dict _cache  # the KeyHashCache's dict (never replaced)
    cdef Py_ssize_t _capacity  # ... and its bound
    cdef MemoryBudget _budget  # the accumulator's buffer_memory budget
    cdef dict _queues  # the accumulator's topic -> partition -> PartitionQueue
    cdef object _waiters  # the budget's deque of callers waiting for memory
    cdef Py_ssize_t _limit  # buffer_memory
    cdef Py_ssize_t _max_size
    cdef Py_ssize_t _overhead
    cdef Py_ssize_t _record_memory
    cdef Py_ssize_t _bound
    cdef dict _sticky  # keyless records: the partitioner's sticky partition per topic
    cdef dict _sticky_bytes  # ... the bytes its keyless records added there
    cdef object _move_on  # ... and what moves the topic on

    def __init__(self, acc, partitioner, Py_ssize_t max_request_size):
        # (imported here: buffer_pool imports send_path, which loads this module)
        from aiokafka_lite._internal.buffer_pool import SEND_BOUND, SEND_RECORD_MEMORY
        from aiokafka_lite._internal.records import MAX_RECORD_OVERHEAD

        hashes = partitioner.hashes
        self._metadata = partitioner.metadata
        self._cache = hashes.table
        self._capacity = hashes.capacity
        self._sticky = partitioner.current
        self._sticky_bytes = partitioner.produced
        self._move_on = partitioner.move_on
        self._budget = acc.budget
        self._queues = acc.queues
        self._waiters = acc.waiters
        self._limit = acc.limit
        self._max_size = max_request_size
        self._overhead = MAX_RECORD_OVERHEAD
        self._record_memory = SEND_RECORD_MEMORY
        self._bound = SEND_BOUND

    cdef long _hash(self, bytes key):
        """``to_positive(murmur2(key))``: computed for a short key (as cheap as looking it
        up), from the KeyHashCache for a longer one, remembered there on a miss."""
        cdef Py_ssize_t n = PyBytes_GET_SIZE(key)
        cdef long h
        if n <= DIRECT_HASH_MAX:
            return murmur2_hash(<const unsigned char*>PyBytes_AS_STRING(key), n) & 0x7FFFFFFF
        found = PyDict_GetItem(self._cache, key)
        if found != NULL:
            return <long><object>found
        h = murmur2_hash(<const unsigned char*>PyBytes_AS_STRING(key), n) & 0x7FFFFFFF
        if len(self._cache) >= self._capacity:
            self._cache.clear()  # (as KeyHashCache: dropping entries never changes a result)
        PyDict_SetItem(self._cache, key, h)
        return h

    def append(self, topic, key, value):
        """The record appended: its future; FILLED if it did not fit the open batch (now
        marked full); NOT_PLAIN if it is not the plain case (see send_path.SendPath.append:
        the appender's routine for one record on an open batch, its twin by design)."""
        cdef Py_ssize_t size, n, added, appended, nparts, partition, limit
        cdef Py_ssize_t produced = 0
        cdef PyObject* found
        cdef int64_t timestamp
        cdef double ms
        cdef ProducerBatchBase batch
        cdef bint keyless = key is None
        if not keyless and type(key) is not bytes:
            return NOT_PLAIN
        # Held in a local: the topic's __eq__ may run Python code that replaces the
        # metadata's dict, and ``found`` is a borrowed reference into it.
        partitions_by_topic = self._metadata.partitions_by_topic
        found = PyDict_GetItem(partitions_by_topic, topic)
        if found == NULL:  # (also when unhashable: the general path names the problem)
            return NOT_PLAIN
        nparts = len(<object>found)
        if nparts == 0:
            return NOT_PLAIN
        if keyless:
            if type(value) is not bytes:
                return NOT_PLAIN
            size = self._overhead + len(<bytes>value)
        elif type(value) is bytes:
            size = self._overhead + len(<bytes>key) + len(<bytes>value)
        elif value is None:
            size = self._overhead + len(<bytes>key)
        else:
            return NOT_PLAIN
        if size > self._max_size or self._waiters:
            return NOT_PLAIN
        if size + self._bound > self._limit - self._budget.used:  # (so that nothing overflows)
            return NOT_PLAIN
        if keyless:  # the topic's sticky partition (its open batch: no move before)
            if type(topic) is not str:  # (a str subclass could run code in the dict lookups)
                return NOT_PLAIN
            found = PyDict_GetItem(self._sticky, topic)
            if found == NULL:
                return NOT_PLAIN
            partition = <object>found
            if partition >= nparts:
                return NOT_PLAIN
        else:
            partition = self._hash(<bytes>key) % nparts
        found = PyDict_GetItem(self._queues, topic)
        if found == NULL:
            return NOT_PLAIN
        found = PyDict_GetItem(<dict>found, partition)
        if found == NULL:
            return NOT_PLAIN
        q = <object>found
        batches = q.batches
        n = len(batches)
        if n == 0:
            return NOT_PLAIN
        # (built without wraparound: no negative indices)
        batch = <ProducerBatchBase?>batches[n - 1]
        if batch.full:
            return NOT_PLAIN
        ms = <double>_time.time() * 1000.0
        if not (-9.2e18 < ms < 9.2e18):  # NaN, infinite or past int64: the general path
            return NOT_PLAIN  # raises as int(time.time() * 1000) does
        timestamp = <int64_t>ms  # int(time.time() * 1000)
        added = batch._append(timestamp, key, value, None, q.batch_limit)
        if added == 0:
            batch.full = True  # as append would mark it; the general path starts the next
            return FILLED  # (the task filled a batch: see aiokafka_lite._internal.hand_over)
        appended = added
        added += self._record_memory
        batch.memory += added
        self._budget.used += added
        fut = batch.records._add(batch.count - 1, timestamp)
        if keyless:  # as RecordPartitioner.update
            found = PyDict_GetItem(self._sticky_bytes, topic)
            produced = appended + (0 if found == NULL else <Py_ssize_t><object>found)
            limit = q.batch_limit
            if moves_on(produced, limit, len(batch.buf) >= limit):
                self._move_on(topic)
            else:
                PyDict_SetItem(self._sticky_bytes, topic, produced)
        return fut
