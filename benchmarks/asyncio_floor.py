"""The floor of W1's shape in asyncio itself: no Kafka, no encoding, no network.

W1 is ``fut = await send(...)`` per record, then ``gather`` of every future. Any
asyncio client pays, per record, at least: one coroutine call, one Future, and
for gather one done-callback registered and one ``call_soon`` + handle run when
the future resolves. This script does exactly that and nothing else: ``send()``
only creates and returns a future, and a resolver sets results in batches of
140 (about a 16 KiB batch of 100-byte records), yielding between batches as a
sender would. Its records/s is an upper bound for a producer whose futures are
``asyncio.Future`` objects resolved one by one; futures resolved per batch (the
compiled ``aiokafka_lite.delivery`` twin) go further: ``benchmarks/micro.py``
measures both side by side.

    python benchmarks/asyncio_floor.py [--uvloop] [--records N]
"""

from __future__ import annotations

import argparse
import asyncio
import time

BATCH = 140


async def floor(records: int) -> tuple[float, float]:
    loop = asyncio.get_running_loop()
    pending: list[asyncio.Future[int]] = []

    async def send() -> asyncio.Future[int]:
        fut: asyncio.Future[int] = loop.create_future()
        pending.append(fut)
        return fut

    async def resolve() -> None:
        for lo in range(0, records, BATCH):
            for fut in pending[lo : lo + BATCH]:
                fut.set_result(lo)
            await asyncio.sleep(0)

    start = time.perf_counter()
    futures = [await send() for _ in range(records)]
    sent = time.perf_counter()
    resolver = asyncio.ensure_future(resolve())
    await asyncio.gather(*futures)
    await resolver
    done = time.perf_counter()
    return (sent - start) / records * 1e6, records / (done - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    runner = asyncio.run
    if args.uvloop:
        import uvloop

        runner = uvloop.run
    rates = []
    for _ in range(args.repeat):
        per_send, rate = runner(floor(args.records))
        rates.append(rate)
        print(f"send() {per_send:.2f} µs/record; whole W1 shape {rate:,.0f} records/s")
    rates.sort()
    loop_name = "uvloop" if args.uvloop else "asyncio"
    print(f"best of {args.repeat} ({loop_name}): {rates[-1]:,.0f} records/s")


if __name__ == "__main__":
    main()
