"""The ``buffer_memory`` budget and the callers waiting for it (Java's ``BufferPool``).

``used`` counts the bytes held by batches not yet finished, plus memory granted to
waiters and not yet spent. A caller that finds too little free (or others already
waiting) queues FIFO in :meth:`BufferPool.reserve` and is granted its bytes, in order, as
batches finish and :meth:`BufferPool._release` gives theirs back. Unlike Java's pool it
counts the bytes actually buffered, not a whole ``batch_size`` per open batch, and it
counts what each buffered record and batch holds besides its encoded bytes (the
constants below), so that many small records cannot hold far more than the budget.

:class:`~aiokafka_lite._internal.appender.RecordAppender` (and so the accumulator) is a
:class:`BufferPool`: a base class rather than a member, so that the append hot path reads
its attributes with no extra lookup.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable

from ..errors import KafkaTimeoutError, RecordTooLargeError
from .delivery import FUTURES_MEMORY, RECORD_MEMORY
from .failure_copies import own_copy
from .records import BATCH_HEADER_SIZE
from .send_path import MemoryBudget

__all__ = [
    "BATCH_MEMORY",
    "BULK_RECORD_MEMORY",
    "RUN_MEMORY",
    "SEND_BOUND",
    "SEND_RECORD_MEMORY",
    "BufferPool",
    "too_large_for_buffer",
]

# What a buffered record holds beyond its encoded bytes, counted in buffer_memory
# with them (measured with tracemalloc on CPython 3.11; benchmarks/record_memory.py).
# A send() record: its future and one done callback on it (the caller's await or
# add_done_callback), its offset delta and timestamp: what the active twin of
# aiokafka_lite._internal.delivery says (the compiled one holds less). Without this a 10-byte
# record, ~20 bytes encoded, would be counted at a fraction of what it holds.
SEND_RECORD_MEMORY = RECORD_MEMORY
# A send_many() record has no future: its entry in the index list of its run (8 B, and
# an int of 32 B).
BULK_RECORD_MEMORY = 8 + 32
# A batch, besides its records: its header's bytes, the ProducerBatch (184 compiled, 176
# pure: the larger), its buffer object (56), its done future (144), its creation time (a
# float, 24), its entries in the accumulator's set and dict of batches and queues (104
# with their tables' growth) and the active twin's RecordFutures. Counted when the batch
# is made, so a record that may have to start one is checked against the budget with it
# (SEND_BOUND).
BATCH_MEMORY = BATCH_HEADER_SIZE + 184 + 56 + 144 + 24 + 104 + FUTURES_MEMORY
SEND_BOUND = SEND_RECORD_MEMORY + BATCH_MEMORY - BATCH_HEADER_SIZE  # (sizes include the header)
# A run of send_many() records in a batch: its (delta, timestamp, indices) tuple (64) and
# its entry in the batch's list of runs (32 as the list grows), the index list's object
# (56); the first run of a call in a batch also makes the list of runs (56) and its
# entry in the batch's dict of calls (224 with the dict).
RUN_MEMORY = 64 + 32 + 56 + 56 + 224


def too_large_for_buffer(size: int, topic: str, limit: int) -> RecordTooLargeError:
    return RecordTooLargeError(
        f"a record for {topic} needs about {size} bytes of buffer (its encoded size plus what"
        f" its delivery and a new batch hold while buffered): more than buffer_memory"
        f" ({limit} bytes)"
    )


class BufferPool:
    """``limit`` bytes of budget, ``used`` of them taken, and the FIFO line of waiters.

    ``used`` is kept in :attr:`budget`, a
    :class:`~aiokafka_lite._internal.send_path.MemoryBudget` that send()'s fast path
    changes too (a C field in the compiled build).
    """

    def __init__(self, buffer_memory: int, wakeup: Callable[[], None]) -> None:
        self._loop = asyncio.get_running_loop()
        # Wakes the sender: a waiter makes every batch sendable, to free memory quickly.
        self._wakeup = wakeup
        self.limit = buffer_memory
        self.budget = MemoryBudget()  # its ``used``: the bytes of the budget taken
        self._waiters: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()
        # Told how long each wait for buffer memory took (the producer's metrics).
        self.on_wait: Callable[[float], None] | None = None

    @property
    def used(self) -> int:
        """Bytes of the budget taken."""
        return self.budget.used

    @property
    def waiters(self) -> collections.deque[tuple[int, asyncio.Future[None]]]:
        """The callers waiting for budget, first in line first (the same deque always)."""
        return self._waiters

    async def reserve(self, size: int, topic: str, timeout: float) -> None:
        """Wait in line until ``size`` bytes of the budget are reserved for the caller."""
        if size > self.limit:
            raise too_large_for_buffer(size, topic, self.limit)
        grant: asyncio.Future[None] = self._loop.create_future()
        entry = (size, grant)
        self._waiters.append(entry)
        self._grant()
        self._wakeup()  # a waiter makes every batch sendable: free memory quickly
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                await grant
        except TimeoutError:
            self._abandon(entry)
            raise KafkaTimeoutError(
                f"buffer_memory ({self.limit} bytes) stayed full for max_block_ms "
                f"({timeout * 1000:.0f} ms) while sending to {topic}"
            ) from None
        except BaseException:
            self._abandon(entry)  # cancelled, or the producer is closing
            raise
        finally:
            if self.on_wait is not None:
                self.on_wait(time.monotonic() - started)

    def _abandon(self, entry: tuple[int, asyncio.Future[None]]) -> None:
        size, grant = entry
        if grant.done() and not grant.cancelled() and grant.exception() is None:
            self._release(size)  # reserved for us, but we will not use it
        else:
            if entry in self._waiters:
                self._waiters.remove(entry)
            self._grant()  # the waiter behind us may fit now

    def _grant(self) -> None:
        """Reserve memory for waiters at the head of the queue, in order."""
        waiters = self._waiters
        while waiters:
            size, grant = waiters[0]
            if self.budget.used + size > self.limit:
                return
            waiters.popleft()
            self.budget.used += size
            grant.set_result(None)

    def _release(self, n: int) -> None:
        self.budget.used -= n
        if self._waiters:
            self._grant()

    @property
    def waiting_for_memory(self) -> int:
        return len(self._waiters)

    def fail_waiters(self, exc: BaseException) -> None:
        """Fail every send() waiting for memory, each with its own copy of ``exc``."""
        while self._waiters:
            _, grant = self._waiters.popleft()
            if not grant.done():
                grant.set_exception(own_copy(exc))
