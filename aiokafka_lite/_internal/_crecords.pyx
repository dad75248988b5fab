# cython: language_level=3
"""Compiled twin of :class:`aiokafka_lite._internal.records.RecordBatchBuilder` (same API, same bytes).

Records are encoded straight into the batch's ``bytearray``: its size is grown once per
record (CPython over-allocates, so growth is amortized) and the varints and payloads are
written in place, instead of joining Python ``bytes`` parts. The header, CRC and
compression at ``close()`` run once per batch and are the pure module's code, so the
errors they raise are the same too. Layout: see ``records.py``.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

import struct

import crc32c

cdef enum:
    BATCH_HEADER_SIZE = 61
    MAGIC = 2
    ATTR_TRANSACTIONAL = 0x10

_HEADER_AFTER_OFFSET = struct.Struct(">iib")
_HEADER_AFTER_CRC = struct.Struct(">hiqqqhii")
_CRC = struct.Struct(">I")


cdef inline uint64_t zigzag(int64_t n) noexcept:
    return (<uint64_t>n << 1) ^ <uint64_t>(n >> 63)


cdef inline Py_ssize_t varint_size(uint64_t z) noexcept:
    cdef Py_ssize_t n = 1
    while z > 0x7F:
        z >>= 7
        n += 1
    return n


cdef inline char* put_varint(char* p, uint64_t z) noexcept:
    while z > 0x7F:
        p[0] = <char>((z & 0x7F) | 0x80)
        p += 1
        z >>= 7
    p[0] = <char>z
    return p + 1


cdef bytes _varint(Py_ssize_t n):
    cdef char tmp[10]
    cdef char* end = put_varint(tmp, zigzag(n))
    return tmp[:end - tmp]


cdef bytes _encode_headers(object headers):
    # Rare path (records with headers): Python-level, exactly as records._encode_headers.
    out = bytearray(_varint(len(headers)))
    for hkey, hval in headers:
        kb = hkey.encode()
        out += _varint(len(kb))
        out += kb
        if hval is None:
            out += b"\x01"
        else:
            out += _varint(len(hval))
            out += hval
    return bytes(out)


cdef struct Payload:
    const char* data
    Py_ssize_t size  # -1: null
    bint view  # a buffer was acquired and must be released


cdef inline int payload_get(object obj, Py_buffer* view, Payload* out) except -1:
    out.view = False
    if obj is None:
        out.data = NULL
        out.size = -1
    elif type(obj) is bytes:
        out.data = PyBytes_AS_STRING(obj)
        out.size = PyBytes_GET_SIZE(obj)
    else:  # bytearray, memoryview: any contiguous buffer, as b"".join takes
        PyObject_GetBuffer(obj, view, PyBUF_SIMPLE)
        out.data = <const char*>view.buf
        out.size = view.len
        out.view = True
    return 0


cdef inline char* put_payload(char* p, Payload* pl) noexcept:
    if pl.size < 0:
        p[0] = 1  # zigzag(-1)
        return p + 1
    p = put_varint(p, zigzag(pl.size))
    if pl.size:
        memcpy(p, pl.data, pl.size)
    return p + pl.size


cdef inline Py_ssize_t payload_bytes(Payload* pl) noexcept:
    if pl.size < 0:
        return 1
    return varint_size(zigzag(pl.size)) + pl.size


cdef inline int64_t checked_delta(int64_t timestamp, int64_t base) except? -1:
    # Wrapping subtraction, then the usual signed-overflow test: the operands' signs
    # differ and the result's sign is not the minuend's.
    cdef int64_t d = <int64_t>(<uint64_t>timestamp - <uint64_t>base)
    if ((timestamp ^ base) & (timestamp ^ d)) < 0:
        raise OverflowError(
            f"timestamp {timestamp} is too far from the batch's base timestamp {base}"
        )
    return d


cdef class RecordBatchBuilder:
    """Encodes one Kafka record batch (v2): appends records to its buffer and writes its
    header when closed. Java's ``MemoryRecordsBuilder``."""

    # (its fields are declared in _crecords.pxd)

    def __init__(self, int64_t base_timestamp, compress=None, int codec_id=0):
        self.buf = bytearray(BATCH_HEADER_SIZE)
        self.count = 0
        self.base_timestamp = base_timestamp
        self.max_timestamp = base_timestamp
        self.compress = compress
        self.codec_id = codec_id

    def append(
        self,
        int64_t timestamp,
        key,
        value,
        headers,
        Py_ssize_t limit,
    ):
        """Encode one record into the buffer; return the bytes added (0: over ``limit``)."""
        return self._append(timestamp, key, value, headers, limit)

    cdef Py_ssize_t _append(
        self, int64_t timestamp, object key, object value, object headers, Py_ssize_t limit
    ) except -1:
        cdef Py_buffer kview, vview
        cdef Payload k, v
        cdef const char* hdata = NULL
        cdef bytes hbytes = None
        cdef Py_ssize_t hsize = 0
        if headers:
            hbytes = _encode_headers(headers)
            hdata = PyBytes_AS_STRING(hbytes)
            hsize = PyBytes_GET_SIZE(hbytes)
        payload_get(key, &kview, &k)
        try:
            payload_get(value, &vview, &v)
            try:
                return self._append_raw(
                    timestamp, k.data, k.size, v.data, v.size, hdata, hsize, limit
                )
            finally:
                if v.view:
                    PyBuffer_Release(&vview)
        finally:
            if k.view:
                PyBuffer_Release(&kview)

    cdef Py_ssize_t _append_raw(
        self, int64_t timestamp, const char* kdata, Py_ssize_t ksize,
        const char* vdata, Py_ssize_t vsize, const char* hdata, Py_ssize_t hsize,
        Py_ssize_t limit,
    ) except -1:
        # ``_append`` from C memory: key and value (size -1: null) and the encoded
        # headers (NULL: none); the Arrow write path appends rows with no Python object.
        cdef Payload k, v
        cdef Py_ssize_t od = self.count, body, added, old
        cdef uint64_t z_ts = zigzag(checked_delta(timestamp, self.base_timestamp))
        cdef uint64_t z_od = zigzag(od), z_body
        cdef char* p
        cdef bytearray buf = self.buf
        if buf is None:  # (C reads it below: a buffer set to None must raise, not crash)
            raise TypeError("the batch's buffer is None")
        if hdata == NULL:
            hsize = 1
        k.data, k.size, k.view = kdata, ksize, False
        v.data, v.size, v.view = vdata, vsize, False
        body = (
            1 + varint_size(z_ts) + varint_size(z_od)
            + payload_bytes(&k) + payload_bytes(&v) + hsize
        )
        z_body = zigzag(body)
        added = varint_size(z_body) + body
        old = PyByteArray_GET_SIZE(buf)
        if od and old + added > limit:
            return 0
        PyByteArray_Resize(buf, old + added)
        p = PyByteArray_AS_STRING(buf) + old
        p = put_varint(p, z_body)
        p[0] = 0  # attributes
        p = put_varint(p + 1, z_ts)
        p = put_varint(p, z_od)
        p = put_payload(p, &k)
        p = put_payload(p, &v)
        if hdata != NULL:
            memcpy(p, hdata, hsize)
        else:
            p[0] = 0  # no headers
        self.count = od + 1
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        return added

    def append_many(
        self,
        int64_t timestamp,
        keys,
        values,
        order,
        Py_ssize_t start,
        Py_ssize_t limit,
        Py_ssize_t budget,
        Py_ssize_t per_record=0,
        Py_ssize_t base=0,
    ):
        """Encode records ``order[start:]``, all stamped ``timestamp``: record ``i``'s key and
        value are ``keys[i - base]`` and ``values[i - base]``.

        Stops before the record that would take the buffer past ``limit`` (unless the
        batch is still empty) or make the bytes added, plus ``per_record`` for each
        record (memory held for it elsewhere), exceed ``budget``; returns the position
        in ``order`` it stopped at.
        """
        cdef Py_buffer kview, vview
        cdef Payload k, v
        cdef uint64_t z_ts = zigzag(checked_delta(timestamp, self.base_timestamp))
        cdef Py_ssize_t ts_size = varint_size(z_ts)
        cdef Py_ssize_t od = self.count, first = self.count
        cdef bytearray buf = self.buf
        if buf is None:  # (as in _append)
            raise TypeError("the batch's buffer is None")
        cdef Py_ssize_t end = PyByteArray_GET_SIZE(buf)
        # Where the budget ends; a budget beyond the address space is no bound (and must
        # not overflow into a negative one).
        cdef Py_ssize_t hard = end + budget if budget <= PY_SSIZE_T_MAX - end else PY_SSIZE_T_MAX
        cdef Py_ssize_t total = len(order), pos, i, body, added
        # (built without boundscheck: each index is checked against both lists here)
        cdef Py_ssize_t slots = min(len(keys), len(values))
        cdef uint64_t z_od, z_body
        cdef char* p
        pos = total
        for pos in range(start, total):
            i = order[pos] - base
            if i < 0 or i >= slots:
                raise IndexError(f"record {i + base} is not in keys/values from {base}")
            key = keys[i]
            value = values[i]
            payload_get(key, &kview, &k)
            try:
                payload_get(value, &vview, &v)
                try:
                    z_od = zigzag(od)
                    body = (
                        1 + ts_size + varint_size(z_od)
                        + payload_bytes(&k) + payload_bytes(&v) + 1
                    )
                    z_body = zigzag(body)
                    added = varint_size(z_body) + body
                    hard -= per_record
                    if end + added > hard or (od and end + added > limit):
                        break
                    PyByteArray_Resize(buf, end + added)
                    p = PyByteArray_AS_STRING(buf) + end
                    p = put_varint(p, z_body)
                    p[0] = 0
                    p = put_varint(p + 1, z_ts)
                    p = put_varint(p, z_od)
                    p = put_payload(p, &k)
                    p = put_payload(p, &v)
                    p[0] = 0
                    end += added
                    od += 1
                finally:
                    if v.view:
                        PyBuffer_Release(&vview)
            finally:
                if k.view:
                    PyBuffer_Release(&kview)
        else:
            pos = total
        if od > first and timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        self.count = od
        return pos

    @property
    def size(self):
        return len(self.buf)

    def close(
        self,
        *,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        transactional=False,
    ):
        """Write the batch header (and CRC) and return the finished batch bytes.

        May be called again, e.g. to stamp a new producer epoch on a retry.
        """
        buf = self.buf
        if self.compress is not None:
            compress, self.compress = self.compress, None  # never twice (retries re-close)
            with memoryview(buf) as whole, whole[BATCH_HEADER_SIZE:] as section:
                blob = compress(section)
            del buf[BATCH_HEADER_SIZE:]
            buf += blob
        attributes = self.codec_id | (ATTR_TRANSACTIONAL if transactional else 0)
        _HEADER_AFTER_OFFSET.pack_into(buf, 8, len(buf) - 12, -1, MAGIC)
        _HEADER_AFTER_CRC.pack_into(
            buf,
            21,
            attributes,
            self.count - 1,
            self.base_timestamp,
            self.max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            self.count,
        )
        _CRC.pack_into(buf, 17, crc32c.crc32c(memoryview(buf)[21:]))
        return buf

    def __repr__(self):
        return f"<{type(self).__name__} records={self.count} bytes={len(self.buf)}>"
