"""Which implementation of the hot path is in use: the compiled twins, or pure Python.

The record encoder (:mod:`aiokafka_lite._internal.records`), murmur2
(:mod:`aiokafka_lite._internal.partitioner`),
the per-record delivery futures (:mod:`aiokafka_lite._internal.delivery`), ``send()``'s fast path
(:mod:`aiokafka_lite._internal.send_path`), the accumulator's append core
(:mod:`aiokafka_lite._internal.append_core`), ``create_batch()``'s builder
(:mod:`aiokafka_lite._internal.batch_builder`) and the Spark tasks' rows
(:mod:`aiokafka_lite.spark.arrow_rows`: appended from Arrow buffers) each have a compiled
twin (Cython, built by ``pip install``) with the same API and the same bytes on the wire.
The twins are used when they were built; setting the environment variable
``AIOKAFKA_LITE_NO_EXTENSIONS=1`` before the first ``import aiokafka_lite`` forces the
pure-Python modules. ::

    >>> import aiokafka_lite.speedups
    >>> aiokafka_lite.speedups.COMPILED   # True: the compiled twins are in use
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType

__all__ = ["COMPILED", "ENV_VAR", "REASON", "TWINS", "Twin", "compiled_module"]

#: Set (to anything but "" or "0") to use the pure-Python modules even where compiled.
ENV_VAR = "AIOKAFKA_LITE_NO_EXTENSIONS"
#: The package, inside aiokafka_lite, that holds the twins (read by setup.py too).
TWIN_PACKAGE = "_internal"
_FORCED_PURE = os.environ.get(ENV_VAR, "") not in ("", "0")


@dataclass(frozen=True)
class Twin:
    """A compiled module and the pure module it stands in for, declared once here (for
    ``setup.py``, the loader below and the twin tests).

    ``names``: each name the pure module takes from the compiled one when it is built,
    mapped to the pure module's own implementation of it, which it keeps under that
    second name in both builds (so tests run both side by side). What each name must be
    (constructor, members, parameters) is its contract in
    :mod:`aiokafka_lite._internal._twin_contracts`, which mypy checks the pure side against
    and the tests the compiled side.
    ``pure`` is None for a twin with no pure module of the same shape (the pure build
    takes another path: :mod:`aiokafka_lite.spark.arrow_rows` says which).
    """

    compiled: str
    pure: str | None
    names: Mapping[str, str] = field(default_factory=dict)


TWINS: tuple[Twin, ...] = (
    Twin("_crecords", "records", {"RecordBatchBuilder": "PyRecordBatchBuilder"}),
    Twin(
        "_cpartitioner",
        "partitioner",
        {
            "murmur2": "py_murmur2",
            "murmur2_u32": "py_murmur2_u32",
            "default_partition": "py_default_partition",
            "place_plain": "py_place_plain",
            "sticky_moves_on": "py_sticky_moves_on",
        },
    ),
    Twin(
        "_cdelivery",
        "delivery",
        {
            "RecordFutures": "PyRecordFutures",
            "RECORD_MEMORY": "PY_RECORD_MEMORY",
            "FUTURES_MEMORY": "PY_FUTURES_MEMORY",
        },
    ),
    Twin(
        "_csend_path",
        "send_path",
        {
            "SendPath": "PySendPath",
            "ProducerBatchBase": "PyProducerBatchBase",
            "MemoryBudget": "PyMemoryBudget",
        },
    ),
    Twin(
        "_cappend_core",  # (after _csend_path, whose batch and budget it cimports)
        "append_core",
        {
            "append_record": "py_append_record",
            "append_run": "py_append_run",
            "sticky_partition": "py_sticky_partition",
        },
    ),
    Twin("_cbatch_builder", "batch_builder", {"BatchBuilder": "PyBatchBuilder"}),
    Twin("_carrow_rows", None),
)


def _load() -> tuple[dict[str, ModuleType], str]:
    if _FORCED_PURE:
        return {}, f"{ENV_VAR} is set"
    modules: dict[str, ModuleType] = {}
    for twin in TWINS:
        name = twin.compiled
        try:
            module = importlib.import_module(f"{__package__}.{TWIN_PACKAGE}.{name}")
        except (ImportError, ValueError) as e:
            # All or none: a partial build would mix implementations in one batch.
            # (ValueError: a twin built against another build of the ones it cimports.)
            return {}, f"the compiled module {name} is not available ({e})"
        # A twin built from older sources (a checkout updated without rebuilding) lacks
        # names of the contract: the pure modules would fail importing them.
        missing = [n for n in twin.names if not hasattr(module, n)]
        if missing:
            return {}, (
                f"the compiled module {name} is out of date (no {', '.join(missing)}): "
                "rebuild it (pip install -e ., or python setup.py build_ext --inplace)"
            )
        modules[name] = module
    return modules, "compiled"


_MODULES, REASON = _load()  # REASON: why pure Python is in use, or "compiled"
#: True when the compiled twins are in use; False when the pure-Python modules are.
COMPILED: bool = bool(_MODULES)


def compiled_module(name: str) -> ModuleType | None:
    """The compiled twin ``name`` (e.g. ``"_crecords"``), or None when pure Python is in use."""
    return _MODULES.get(name)
