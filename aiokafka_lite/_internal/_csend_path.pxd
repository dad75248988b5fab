# The compiled batch base and budget's layout, for the modules that cimport them
# (_cappend_core): their fields as C fields.
from aiokafka_lite._internal._cdelivery cimport RecordFutures
from aiokafka_lite._internal._crecords cimport RecordBatchBuilder


cdef class ProducerBatchBase(RecordBatchBuilder):
    cdef public bint full
    cdef public Py_ssize_t memory
    cdef public RecordFutures records


cdef class MemoryBudget:
    cdef public Py_ssize_t used
