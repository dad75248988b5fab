"""Each record's own copy of the exception its batch failed with.

A batch fails all its records with one error; handing every record's future the same
object would let what one caller does to it reach all the others: ``add_note`` on one
record's exception would show on every record's, and awaiting one inside an ``except``
block would set ``__context__`` on all of them. aiokafka gives each future
``copy.copy(exception)``; so does this module, keeping the cause chain (``__cause__``,
``__context__``, ``__suppress_context__``), the traceback and a copy of the notes, which
``copy.copy`` alone would drop or share.
"""

from __future__ import annotations

import copy

__all__ = ["own_copy"]


def own_copy(exc: BaseException) -> BaseException:
    """A copy of ``exc`` for one record (``exc`` itself if it cannot be copied)."""
    cls = type(exc)
    try:
        if _ONLY_ARGS_AND_DICT.get(cls) or _only_args_and_dict(cls):
            # What copy.copy rebuilds (the args and the __dict__), without re-running
            # __init__ and copy's generic machinery: many times cheaper, and a stop()
            # may fail a million records at once.
            new = cls.__new__(cls, *exc.args)
            new.__dict__.update(exc.__dict__)
        else:
            new = copy.copy(exc)
    except Exception:  # an exception class copy cannot rebuild: shared, as it is
        return exc
    if new is exc or not isinstance(new, BaseException):
        return exc
    new.__cause__ = exc.__cause__
    new.__context__ = exc.__context__
    new.__suppress_context__ = exc.__suppress_context__
    new.__traceback__ = exc.__traceback__
    notes = exc.__dict__.get("__notes__")
    if isinstance(notes, list):
        new.__notes__ = list(notes)
    return new


# Exception classes whose whole state is their args and __dict__: Python classes whose
# only C bases are these (no C-level fields that __init__ fills in), and that define no
# copying of their own.
_PLAIN_C_BASES = frozenset(
    {object, BaseException, Exception, RuntimeError, ValueError, TypeError, LookupError}
)
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: set for classes made by a class statement
_OWN_COPYING = ("__reduce__", "__reduce_ex__", "__copy__", "__setstate__")
_ONLY_ARGS_AND_DICT: dict[type, bool] = {}


def _only_args_and_dict(cls: type) -> bool:
    plain = all(
        base in _PLAIN_C_BASES
        or (base.__flags__ & _HEAPTYPE and not any(n in vars(base) for n in _OWN_COPYING))
        for base in cls.__mro__
    )
    _ONLY_ARGS_AND_DICT[cls] = plain
    return plain
