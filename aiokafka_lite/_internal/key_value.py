"""K and V, the type variables of a producer's keys and values, with PEP 696 defaults.

One pair for every generic producer class (``AIOKafkaProducer``, its batch API, the
blocking ``Producer``, ``MockProducer``): one built without typed serializers is
``AIOKafkaProducer[Any, Any]`` instead of a type checker's "need type annotation".
The defaults are only seen by type checkers (typing_extensions is not needed at run time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

__all__ = ["K", "V"]

if TYPE_CHECKING:
    from typing_extensions import TypeVar as _TypeVar

    K = _TypeVar("K", default=Any)
    V = _TypeVar("V", default=Any)
else:
    K = TypeVar("K")
    V = TypeVar("V")
