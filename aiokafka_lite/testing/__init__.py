"""Testing helpers: a producer that needs no broker, and a pytest plugin.

:class:`MockProducer` has :class:`~aiokafka_lite.AIOKafkaProducer`'s API and records what
it is given (Java's ``MockProducer``); :mod:`aiokafka_lite.testing.pytest_plugin` gives
tests an embedded broker, a started producer and a mock producer as fixtures. Names are
imported on first use, so that loading the pytest plugin imports nothing more.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .mock_parts import MockTransaction, SentRecord
    from .mock_producer import MockProducer

__all__ = ["MockProducer", "MockTransaction", "SentRecord"]

_WHERE = {
    "MockProducer": ".mock_producer",
    "MockTransaction": ".mock_parts",
    "SentRecord": ".mock_parts",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(where, __name__), name)
