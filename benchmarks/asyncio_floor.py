"""The floor of W1's shape in asyncio itself: no Kafka, no encoding, no network.

W1 is ``fut = await send(...)`` per record, then ``gather`` of every future. Any
asyncio client pays, per record, at least: one coroutine call, one Future, and
for gather one done-callback registered and one ``call_soon`` + handle run when
the future resolves. This script does exactly that and nothing else: ``send()``
only creates and returns a future, and a resolver sets results in batches of
140 (about a 16 KiB batch of 100-byte records).

Two shapes, which cost asyncio very different amounts:

* default: every future is still pending when ``gather`` runs; the resolver then
  sets them, yielding between batches. ``gather``'s callback waits on each pending
  future (one Context each), and each batch's callbacks run as it resolves.
* ``--lag N``: delivery overlaps the sends, as in a producer: ``send()`` yields once
  per batch, and the resolver completes every batch more than N records behind the
  newest, so that all but about N futures are done when ``gather`` runs. On a done
  future, asyncio's ``add_done_callback`` schedules the callback at once: a Handle,
  its arguments tuple and a Context per future, all waiting in the loop's ready
  queue until ``gather`` returns: three more objects per record for the garbage
  collector to pass over while 400k futures are alive.

The time the garbage collector took (``gc.callbacks``) is shown beside each run.

    python benchmarks/asyncio_floor.py [--uvloop] [--records N] [--lag N] [--no-gc]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from typing import Any

BATCH = 140


class GcClock:
    """The collector's time and passes, read from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.passes = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.passes[info["generation"]] += 1


async def floor(records: int, lag: int | None) -> tuple[float, float, int]:
    """Per-send µs, records/s, and how many futures were done when gather began."""
    loop = asyncio.get_running_loop()
    pending: list[asyncio.Future[int]] = []
    sending = True

    async def send() -> asyncio.Future[int]:
        fut: asyncio.Future[int] = loop.create_future()
        pending.append(fut)
        if lag is not None and len(pending) % BATCH == 0:
            await asyncio.sleep(0)  # a producer's hand-over: the sender gets a turn
        return fut

    async def resolve() -> None:
        done = 0
        while done < records:
            limit = records if lag is None or not sending else len(pending) - lag
            while done < limit and (done + BATCH <= limit or not sending):
                for fut in pending[done : done + BATCH]:
                    fut.set_result(done)
                done = min(done + BATCH, records)
                if lag is None:
                    break  # one batch per loop turn, as a sender answers them
            await asyncio.sleep(0)

    start = time.perf_counter()
    resolver = asyncio.ensure_future(resolve()) if lag is not None else None
    futures = [await send() for _ in range(records)]
    sending = False
    sent = time.perf_counter()
    done_at_gather = sum(1 for f in futures if f.done())
    if resolver is None:
        resolver = asyncio.ensure_future(resolve())
    await asyncio.gather(*futures)
    await resolver
    end = time.perf_counter()
    return (sent - start) / records * 1e6, records / (end - start), done_at_gather


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--lag",
        type=int,
        default=None,
        help="deliver while sending, all but about this many records (default: none before gather)",
    )
    parser.add_argument("--no-gc", action="store_true", help="with the garbage collector off")
    args = parser.parse_args()
    runner = asyncio.run
    if args.uvloop:
        import uvloop

        runner = uvloop.run
    rates, cpus = [], []
    for _ in range(args.repeat):
        gc.collect()
        clock = GcClock()
        gc.callbacks.append(clock)
        if args.no_gc:
            gc.disable()
        cpu = time.process_time()
        try:
            per_send, rate, done = runner(floor(args.records, args.lag))
        finally:
            cpu = (time.process_time() - cpu) / args.records * 1e6
            gc.enable()
            gc.callbacks.remove(clock)
        rates.append(rate)
        cpus.append(cpu)
        wall = args.records / rate
        print(
            f"send() {per_send:.2f} µs/record; whole W1 shape {rate:,.0f} records/s, "
            f"{cpu:.2f} CPU µs/record; {done:,} done at gather; garbage collector "
            f"{clock.seconds:.2f} s ({clock.seconds / wall:.0%} of the run), passes {clock.passes}"
        )
    loop_name = "uvloop" if args.uvloop else "asyncio"
    print(
        f"median of {args.repeat} ({loop_name}): {statistics.median(rates):,.0f} records/s, "
        f"{statistics.median(cpus):.2f} CPU µs/record (best {max(rates):,.0f})"
    )


if __name__ == "__main__":
    main()
