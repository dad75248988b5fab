"""BackgroundTasks.spawn from a callback, where no task runs (a protocol's data_received).

A connection starts KIP-368 re-authentication when a response arrives and requests wait
for it: that is ``data_received``, a callback, where anyio cannot start a task. Against
Apache Kafka this broke the connection (test_security_kafka's re-authentication tests
found it); these tests pin the fix without a broker.
"""

from __future__ import annotations

import asyncio

import pytest

from aiokafka_lite._internal.tasks import BackgroundTasks, Handle
from aiokafka_lite.errors import ProducerClosedError


async def test_spawn_from_a_callback_runs_in_the_group() -> None:
    tasks = BackgroundTasks("t")
    await tasks.open()
    loop = asyncio.get_running_loop()
    spawned: asyncio.Future[Handle[int]] = loop.create_future()

    async def work() -> int:
        await asyncio.sleep(0)
        return 42

    loop.call_soon(lambda: spawned.set_result(tasks.spawn(work, name="from-callback")))
    handle = await spawned
    assert await asyncio.wait_for(handle, 5) == 42
    await tasks.close()
    assert not [t for t in asyncio.all_tasks() if "from-callback" in t.get_name()]


async def test_spawn_from_a_callback_then_close_fails_the_handle() -> None:
    """Closed right after a callback spawned: whether its task had started or not, the
    handle fails with ProducerClosedError and no task is left behind."""
    tasks = BackgroundTasks("t")
    await tasks.open()
    loop = asyncio.get_running_loop()

    async def work() -> None:
        await asyncio.Event().wait()

    holder: list[Handle[None]] = []
    loop.call_soon(lambda: holder.append(tasks.spawn(work, name="late")))
    await asyncio.sleep(0)  # the callback ran; the starting task has not yet
    await tasks.close()
    with pytest.raises(ProducerClosedError):
        await asyncio.wait_for(holder[0], 5)
    assert not [t for t in asyncio.all_tasks() if "late" in t.get_name()]
