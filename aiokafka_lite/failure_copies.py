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
    try:
        new = copy.copy(exc)
    except Exception:  # an exception class copy cannot rebuild: shared, as it is
        return exc
    if new is exc or not isinstance(new, BaseException):
        return exc
    new.__cause__ = exc.__cause__
    new.__context__ = exc.__context__
    new.__suppress_context__ = exc.__suppress_context__
    new.__traceback__ = exc.__traceback__
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        new.__notes__ = list(notes)
    return new
