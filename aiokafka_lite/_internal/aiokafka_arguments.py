"""aiokafka's constructor arguments that need a word of their own here.

The producer (and :class:`~aiokafka_lite.testing.MockProducer`) take aiokafka's
arguments that mean nothing here (``loop``, ``api_version``) and warn as aiokafka
does; aiokafka's "not given" sentinel for ``acks`` means not given; aiokafka's own
default partitioner (FastStream passes it explicitly) means ours. The patcher that
puts our producer in aiokafka's place is :mod:`aiokafka_lite.compat`.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

__all__ = ["drop_acks_sentinel", "is_aiokafka_default_partitioner", "warn_deprecated"]


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
