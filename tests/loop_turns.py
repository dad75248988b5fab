"""Counting the event loop's turns while a call runs: how often it let other tasks in."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass
class Turns:
    count: int = 0  # the loop's turns since the block began


@contextlib.asynccontextmanager
async def counting_turns() -> AsyncIterator[Turns]:
    """A task that counts one per turn of the loop, from the start of the block to its
    end (each time the code in the block yields, the task gets a turn)."""
    turns, done = Turns(), False

    async def ticker() -> None:
        while not done:
            turns.count += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)  # (the ticker's first turn)
    turns.count = 0
    try:
        yield turns
    finally:
        done = True
        await task
