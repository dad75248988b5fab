"""Exponential backoff with jitter, as Java's ``ExponentialBackoff``.

Every retry loop in the producer (reconnects, metadata refreshes, coordinator
lookups, retried batches) waits ``base * 2**(failures - 1)`` capped at the
configured maximum, +-20% so that many clients do not retry in step.
"""

from __future__ import annotations

import random

__all__ = ["backoff_delay"]


def backoff_delay(base_ms: float, max_ms: float, failures: int) -> float:
    """The wait after ``failures`` consecutive failures, in seconds (0 before any)."""
    if failures <= 0:
        return 0.0
    # Cap the exponent: 2.0 ** 1024 overflows, and a broker can stay down that long.
    delay: float = min(base_ms * 2.0 ** min(failures - 1, 62), max_ms)
    return delay * random.uniform(0.8, 1.2) / 1000
