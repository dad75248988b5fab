"""A live progress bar (rich) fed by a counter the caller owns, refreshed from the loop.

The bar reads the counter ten times a second from its own task instead of being told
about each record, so that counting costs the hot path nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from ._common import rich_module

__all__ = ["progress_bar"]

_REFRESH_S = 0.1


@contextlib.asynccontextmanager
async def progress_bar(
    label: str, total: int | None, done: Callable[[], int], *, enabled: bool = True
) -> AsyncIterator[None]:
    """Show ``done()`` of ``total`` records (a pulsing bar when ``total`` is None) with
    the rate, on stderr, while the body runs."""
    if not enabled:
        yield
        return
    progress_mod = rich_module("progress")
    console = rich_module("console").Console(stderr=True)
    columns: list[Any] = [
        progress_mod.TextColumn("{task.description}"),
        progress_mod.BarColumn(),
        progress_mod.TextColumn("{task.fields[count]}"),
        progress_mod.TextColumn("{task.fields[rate]}"),
        progress_mod.TimeElapsedColumn(),
    ]
    bar = progress_mod.Progress(*columns, console=console, auto_refresh=False)
    task = bar.add_task(label, total=total, count="", rate="")
    start = time.perf_counter()

    def refresh() -> None:
        n = done()
        elapsed = max(time.perf_counter() - start, 1e-9)
        count = f"{n:,}" if total is None else f"{n:,}/{total:,}"
        bar.update(task, completed=n, count=count, rate=f"{n / elapsed:,.0f} rec/s")
        bar.refresh()

    async def keep_refreshing() -> None:
        while True:
            refresh()
            await asyncio.sleep(_REFRESH_S)

    with bar:
        refresher = asyncio.create_task(keep_refreshing())
        try:
            yield
        finally:
            refresher.cancel()
            # Not suppress(CancelledError): that would also swallow a cancellation
            # of this task arriving meanwhile (Ctrl-C).
            await asyncio.wait([refresher])
            refresh()
