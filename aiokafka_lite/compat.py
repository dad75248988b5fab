"""What code written for aiokafka needs to run on aiokafka_lite unchanged.

* :func:`patch_aiokafka` puts :class:`~aiokafka_lite.AIOKafkaProducer` in the
  place of ``aiokafka.AIOKafkaProducer``, so frameworks that build aiokafka's
  producer themselves (FastStream's ``KafkaBroker``, Faust) build ours; aiokafka's
  consumer and admin client stay as they are. Code imported before the call that
  kept aiokafka's class (``from aiokafka import AIOKafkaProducer``, a subclass)
  is named in an :class:`AiokafkaPatchWarning`, and aiokafka's producer warns
  when it is still built while the patch is on.

What aiokafka's constructor arguments mean here is
:mod:`aiokafka_lite._internal.aiokafka_arguments`.
"""

from __future__ import annotations

import functools
import importlib
import sys
import warnings
from typing import Any

__all__ = ["AiokafkaPatch", "AiokafkaPatchWarning", "patch_aiokafka"]

# Where aiokafka exposes its producer class; code imports it from any of them.
_PRODUCER_HOMES = ("aiokafka", "aiokafka.producer", "aiokafka.producer.producer")


_FIX = (
    "call aiokafka_lite.patch_aiokafka() before importing that code "
    "(first thing in the program's entry point)"
)


class AiokafkaPatchWarning(UserWarning):
    """Code still holds aiokafka's own producer class after :func:`patch_aiokafka`."""


class AiokafkaPatch:
    """Undoes :func:`patch_aiokafka` on :meth:`undo` (or when used as a context manager)."""

    def __init__(self, saved: dict[str, Any], original: Any = None) -> None:
        self._saved = saved
        self._original = original  # aiokafka's class, whose __init__ now warns

    def undo(self) -> None:
        for module_name, original in self._saved.items():
            module = sys.modules.get(module_name)
            if module is not None:
                module.AIOKafkaProducer = original  # type: ignore[attr-defined]
        self._saved = {}
        original, self._original = self._original, None
        if original is not None and "__init__" in vars(original):
            init = vars(original)["__init__"]
            if getattr(init, "_aiokafka_lite_original", None) is not None:
                original.__init__ = init._aiokafka_lite_original

    def __enter__(self) -> AiokafkaPatch:
        return self

    def __exit__(self, *exc: object) -> None:
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
    original = saved.get("aiokafka")
    if original is None:  # patched already: the first patch's handle watches the class
        return AiokafkaPatch(saved)
    holders = stale_references(original)
    if holders:
        warnings.warn(
            "aiokafka_lite.patch_aiokafka(): these were imported before the patch and keep "
            f"aiokafka's own producer class: {', '.join(holders)}; {_FIX}",
            AiokafkaPatchWarning,
            stacklevel=2,
        )
    _warn_on_construction(original)
    return AiokafkaPatch(saved, original)


def stale_references(original: type) -> list[str]:
    """Where code outside aiokafka holds ``original`` (aiokafka's producer class).

    ``module.name`` for each module-level name bound to it (``from aiokafka import
    AIOKafkaProducer``), and ``module.Class`` for each subclass defined outside
    aiokafka (a framework's own producer class, e.g. kstreams' ``Producer``).
    """
    found: list[str] = []
    for module_name, module in list(sys.modules.items()):
        if module is None or module_name.partition(".")[0] in ("aiokafka", "aiokafka_lite"):
            continue
        try:
            names = [n for n, v in list(vars(module).items()) if v is original]
        except TypeError:  # a module object without a __dict__
            continue
        found.extend(f"{module_name}.{n}" for n in names)
    pending: list[type] = list(original.__subclasses__())
    while pending:
        sub = pending.pop()
        pending.extend(sub.__subclasses__())
        if sub.__module__.partition(".")[0] != "aiokafka":
            found.append(f"{sub.__module__}.{sub.__qualname__} (a subclass)")
    return sorted(set(found))


def _warn_on_construction(original: Any) -> None:
    """While patched, building aiokafka's producer (or a subclass of it) warns: the
    code doing so kept a reference from before the patch."""
    init = original.__init__
    if getattr(init, "_aiokafka_lite_original", None) is not None:
        return

    @functools.wraps(init)
    def warning_init(self: Any, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            f"{type(self).__module__}.{type(self).__qualname__} is built on aiokafka's own "
            "producer although aiokafka_lite.patch_aiokafka() was called: the code that "
            f"builds it imported aiokafka's class before the patch; {_FIX}",
            AiokafkaPatchWarning,
            stacklevel=2,
        )
        init(self, *args, **kwargs)

    warning_init._aiokafka_lite_original = init  # type: ignore[attr-defined]
    original.__init__ = warning_init
