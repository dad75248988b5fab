# cython: language_level=3
"""Compiled twin of :mod:`aiokafka_lite._internal.append_core`: the accumulator's append core.

Same names, same steps, same results as the pure functions (see their docstrings). The
batch is the cimported ``ProducerBatchBase`` and the budget the cimported
``MemoryBudget``: their fields are C fields and a record's encoding is a C call
(``batch._append``), as in ``_csend_path.pyx``. The queues, the new batches and the
partitioner's sticky state stay Python objects, reached as the pure module reaches them.
"""

from aiokafka_lite._internal._csend_path cimport MemoryBudget, ProducerBatchBase

from aiokafka_lite._internal.hand_over import filled

# buffer_pool's and records' constants and record_size, loaded at the first call:
# buffer_pool imports send_path, which loads the twins (this module among them).
cdef bint _loaded = False
cdef Py_ssize_t BATCH_MEMORY = 0
cdef Py_ssize_t BULK_RECORD_MEMORY = 0
cdef object record_size = None


cdef int _load() except -1:
    global _loaded, BATCH_MEMORY, BULK_RECORD_MEMORY, record_size
    from aiokafka_lite._internal import buffer_pool, records

    BATCH_MEMORY = buffer_pool.BATCH_MEMORY
    BULK_RECORD_MEMORY = buffer_pool.BULK_RECORD_MEMORY
    record_size = records.record_size
    _loaded = True
    return 0


def append_record(
    acc,
    topic,
    partition,
    timestamp,
    key,
    value,
    headers,
    keyless,
    Py_ssize_t need,
    Py_ssize_t room,
    Py_ssize_t held,
):
    """The one way a record goes into a batch of ``acc`` (see append_core.append_record)."""
    cdef Py_ssize_t added = 0, appended, limit, n
    cdef ProducerBatchBase batch = None
    cdef MemoryBudget budget
    if not _loaded:
        _load()
    queues = acc.queues
    while True:
        if keyless is not None:
            partition = _sticky_partition(acc, keyless, topic)
        try:
            q = queues[topic][partition]
        except KeyError:
            q = acc.queue_for(topic, partition)
        batches = q.batches
        n = len(batches)
        if n:
            batch = <ProducerBatchBase?>batches[n - 1]  # (built without wraparound)
            if not batch.full:
                if need > room:
                    return None
                added = batch._append(timestamp, key, value, headers, q.batch_limit)
                if not added:
                    batch.full = True
                    filled(acc)
                    if keyless is not None:
                        continue  # the closed batch may move the topic on: place again
        break
    if added:
        appended = added
    else:
        if need + BATCH_MEMORY > room:
            return None
        batch = <ProducerBatchBase?>acc.new_batch(q, timestamp)
        try:
            added = BATCH_MEMORY + batch._append(timestamp, key, value, headers, q.batch_limit)
        except BaseException:
            acc.discard_empty(batch)  # never leave an empty batch in the queue
            raise
        appended = len(batch.buf)  # (Java counts a new batch's header too)
    added += held
    batch.memory += added
    budget = <MemoryBudget?>acc.budget
    budget.used += added  # (nothing above changed it: no await, no callback)
    if keyless is not None:
        limit = q.batch_limit
        keyless.update(topic, partition, appended, limit, len(batch.buf) >= limit)
    return batch


def sticky_partition(acc, keyless, topic):
    """The topic's sticky partition for its next keyless record (see
    append_core.sticky_partition)."""
    return _sticky_partition(acc, keyless, topic)


cdef object _sticky_partition(acc, keyless, topic):
    partition = keyless.peek(topic)
    if keyless.produced.get(topic):
        q = acc.queues.get(topic, {}).get(partition)
        if q is None or not q.batches or q.batches[len(q.batches) - 1].full:
            limit = acc.batch_size if q is None else q.batch_limit
            partition = keyless.update(topic, partition, 0, limit, True)
    return partition


def append_run(
    acc,
    ProducerBatchBase batch not None,
    timestamp,
    keys,
    values,
    Py_ssize_t base,
    order,
    Py_ssize_t pos,
    Py_ssize_t budget,
):
    """Encode ``order[pos:]`` (record ``i`` at ``keys[i - base]``, ``values[i - base]``) into
    ``batch`` up to its limit or ``budget`` bytes (see append_core.append_run); returns the
    position it stopped at."""
    cdef Py_ssize_t limit, before, count, added, end, size
    cdef MemoryBudget used
    if not _loaded:
        _load()
    limit = (<object>batch).queue.batch_limit
    before, count = len(batch.buf), batch.count
    end = batch.append_many(
        timestamp, keys, values, order, pos, limit, budget, BULK_RECORD_MEMORY, base
    )
    added = len(batch.buf) - before + (batch.count - count) * BULK_RECORD_MEMORY
    batch.memory += added
    used = <MemoryBudget?>acc.budget
    used.used += added
    if end < len(order):
        i = order[end] - base  # (append_many checked it is in keys/values)
        size = record_size(keys[i], values[i], None)  # (an upper bound)
        # Full only if the limit stopped the run (see append_core.append_run).
        if len(batch.buf) + size > limit and added + size + BULK_RECORD_MEMORY <= budget:
            batch.full = True
    return end
