"""What code written for aiokafka needs to run on aiokafka_lite unchanged.

* :func:`patch_aiokafka` puts :class:`~aiokafka_lite.AIOKafkaProducer` in the
  place of ``aiokafka.AIOKafkaProducer``, so frameworks that build aiokafka's
  producer themselves (FastStream's ``KafkaBroker``) build ours; aiokafka's
  consumer and admin client stay as they are.
* The constructor takes aiokafka's arguments that mean nothing here
  (``loop``, ``api_version``, the Kerberos names) and aiokafka's "not given"
  sentinel for ``acks``, and warns as aiokafka does.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from types import TracebackType
from typing import Any

__all__ = ["AiokafkaPatch", "patch_aiokafka"]

# Where aiokafka exposes its producer class; code imports it from any of them.
_PRODUCER_HOMES = ("aiokafka", "aiokafka.producer", "aiokafka.producer.producer")


class AiokafkaPatch:
    """Undoes :func:`patch_aiokafka` on :meth:`undo` (or when used as a context manager)."""

    def __init__(self, saved: dict[str, Any]) -> None:
        self._saved = saved

    def undo(self) -> None:
        for module_name, original in self._saved.items():
            module = sys.modules.get(module_name)
            if module is not None:
                module.AIOKafkaProducer = original  # type: ignore[attr-defined]
        self._saved = {}

    def __enter__(self) -> AiokafkaPatch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.undo()


def patch_aiokafka() -> AiokafkaPatch:
    """Make ``aiokafka.AIOKafkaProducer`` (and its other import paths) aiokafka_lite's producer.

    Call it once at start-up, before the code that builds producers runs (for
    FastStream: before ``broker.start()``, e.g. at import time of the app
    module). Code that imported the class by name before the call keeps
    aiokafka's; frameworks that look it up as ``aiokafka.AIOKafkaProducer``
    when they connect (FastStream does) get ours. Returns a handle whose
    ``undo()`` restores aiokafka's class. Needs aiokafka installed.
    """
    from .producer import AIOKafkaProducer

    saved: dict[str, Any] = {}
    for module_name in _PRODUCER_HOMES:
        module = importlib.import_module(module_name)
        current = getattr(module, "AIOKafkaProducer", None)
        if current is not AIOKafkaProducer:
            saved[module_name] = current
            module.AIOKafkaProducer = AIOKafkaProducer  # type: ignore[attr-defined]
    return AiokafkaPatch(saved)


def warn_deprecated(loop: object, api_version: object) -> None:
    """aiokafka's DeprecationWarnings for its no-op arguments, with its wording."""
    if loop is not None:
        warnings.warn(
            "The `loop` parameter has been deprecated since 0.7.1 and will be removed in a "
            "future release (aiokafka_lite ignores it: the loop that runs start() is used).",
            DeprecationWarning,
            stacklevel=3,
        )
    if api_version is not None:
        warnings.warn(
            "The `api_version` parameter has been deprecated since 0.13.0. It is a no-op "
            "(aiokafka_lite negotiates each API's version with each broker).",
            DeprecationWarning,
            stacklevel=3,
        )


def drop_acks_sentinel(config: dict[str, Any]) -> None:
    """Treat ``acks=<aiokafka's "not given" sentinel>`` as acks not given at all.

    Frameworks (FastStream) forward aiokafka's private sentinel object as the
    default of their own ``acks`` parameter. It is recognised by identity, read
    from aiokafka if aiokafka is loaded (it must be, for code to hold it).
    """
    if "acks" not in config:
        return
    module = sys.modules.get("aiokafka.producer.producer")
    sentinel = getattr(module, "_missing", None) if module is not None else None
    if sentinel is not None and config["acks"] is sentinel:
        del config["acks"]


def is_aiokafka_default_partitioner(partitioner: object) -> bool:
    """aiokafka's own default (FastStream passes it explicitly) is our built-in one:
    murmur2 for keys, any available partition for keyless records."""
    cls = type(partitioner)
    return cls.__name__ == "DefaultPartitioner" and cls.__module__ == "aiokafka.partitioner"
