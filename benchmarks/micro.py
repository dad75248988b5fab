"""Microbenchmarks of the hot path's pieces, pure Python against the compiled twins.

No broker, no network: each piece alone, with the garbage collector on (as in a real
program). Every measurement runs ``--repeat`` times, interleaved across variants, and the
table gives the median and the range (min-max) of the repeats.

* ``future floor``: W1's shape (``fut = await send()`` per record, then ``gather``) where
  ``send()`` only hands out a future from the current batch of 140 records (about a 16 KiB
  batch of 100-byte records) and a resolver completes the batches one per loop iteration,
  as a sender would. Variants: ``asyncio.Future`` resolved one by one (what an asyncio
  producer does without batching its futures), ``RecordFutures`` pure and compiled (both
  hand out asyncio.Future objects, resolved per batch; the compiled twin's loop over the
  batch runs in C). No Kafka work at all: the ceiling of W1 for each on this interpreter
  and machine.
* ``encode``: ``RecordBatchBuilder.append`` of W1's records (8-byte key, 100-byte value)
  into 16 KiB batches, closed with their CRC; ``append_many``: the same via send_many's path.
* ``murmur2``: a distinct 16-byte key per call (what the hash cache cannot hide).
* ``loop check``: what send() may call per record to refuse a wrong event loop.

    python benchmarks/micro.py [--repeat 5] [--records 200000] [--uvloop]

(from the repository root, with the package installed, or PYTHONPATH=.)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from aiokafka_lite._internal import delivery, partitioner, records
from aiokafka_lite.structs import RecordMetadata, TopicPartition

BATCH = 140
BATCH_BYTES = 16 * 1024
TP = TopicPartition("t", 0)


def compiled(name: str) -> Any:
    try:
        return importlib.import_module(f"aiokafka_lite._internal.{name}")
    except ImportError:
        return None


# -- the future floor --------------------------------------------------------------------


async def _time_floor(
    n: int,
    send: Callable[[int], Awaitable[Any]],
    resolve: Callable[[], Coroutine[Any, Any, None]],
) -> float:
    """Seconds to take ``n`` futures from ``send`` and see each resolved by ``resolve``
    (run as a task once all are taken, as the sender resolves a producer's)."""
    start = time.perf_counter()
    futures = [await send(i) for i in range(n)]
    resolver = asyncio.ensure_future(resolve())
    await asyncio.gather(*futures)
    await resolver
    return time.perf_counter() - start


async def floor_asyncio(n: int) -> float:
    """asyncio.Future per record, each resolved with its own set_result."""
    loop = asyncio.get_running_loop()
    batches: list[list[asyncio.Future[Any]]] = []

    async def send(i: int) -> asyncio.Future[Any]:
        if i % BATCH == 0:
            batches.append([])
        fut: asyncio.Future[Any] = loop.create_future()
        batches[-1].append(fut)
        return fut

    async def resolve() -> None:
        offset = 0
        for batch in batches:
            for fut in batch:
                fut.set_result(RecordMetadata(TP.topic, 0, TP, offset, 0, 0, 0))
                offset += 1
            await asyncio.sleep(0)

    return await _time_floor(n, send, resolve)


def floor_batched(cls: Any) -> Callable[[int], Any]:
    async def run(n: int) -> float:
        loop = asyncio.get_running_loop()
        batches: list[Any] = []

        async def send(i: int) -> Any:
            if i % BATCH == 0:
                batches.append(cls(loop))
            return batches[-1].add(i % BATCH, 1_700_000_000_000)

        async def resolve() -> None:
            for i, batch in enumerate(batches):
                batch.complete(TP, i * BATCH, -1, 0)
                await asyncio.sleep(0)

        return await _time_floor(n, send, resolve)

    return run


# -- encoding, murmur2, loop check -------------------------------------------------------


def encode(cls: Any, n: int) -> float:
    keys = [b"key-%04d" % (i % 1000) for i in range(n)]
    value = bytes(100)
    ts = 1_700_000_000_000
    start = time.perf_counter()
    b = cls(ts)
    for key in keys:
        if not b.append(ts, key, value, None, BATCH_BYTES):
            b.close()
            b = cls(ts)
            b.append(ts, key, value, None, BATCH_BYTES)
    b.close()
    return time.perf_counter() - start


def encode_many(cls: Any, n: int) -> float:
    keys: list[bytes | None] = [b"key-%04d" % (i % 1000) for i in range(n)]
    values: list[bytes | None] = [bytes(100)] * n
    order = list(range(n))
    ts = 1_700_000_000_000
    start = time.perf_counter()
    pos = 0
    while pos < n:
        b = cls(ts)
        pos = b.append_many(ts, keys, values, order, pos, BATCH_BYTES, 1 << 30)
        b.close()
    return time.perf_counter() - start


def hash_keys(fn: Callable[[bytes, int], int], n: int) -> float:
    keys = [b"%016d" % i for i in range(n)]
    start = time.perf_counter()
    for key in keys:
        fn(key, 4)
    return time.perf_counter() - start


async def loop_checks(n: int) -> dict[str, float]:
    """Seconds for n calls of each way send() could check it runs in the right loop."""
    loop = asyncio.get_running_loop()
    running = asyncio.get_running_loop
    private = asyncio.events._get_running_loop
    get_ident = threading.get_ident
    ident = get_ident()
    out = {}
    rng = range(n)
    start = time.perf_counter()
    for _ in rng:
        running() is loop  # noqa: B015
    out["asyncio.get_running_loop() is loop"] = time.perf_counter() - start
    start = time.perf_counter()
    for _ in rng:
        private() is loop  # noqa: B015
    out["asyncio.events._get_running_loop() is loop"] = time.perf_counter() - start
    start = time.perf_counter()
    for _ in rng:
        get_ident() == ident  # noqa: B015
    out["threading.get_ident() == cached"] = time.perf_counter() - start
    if hasattr(loop, "_thread_id"):  # asyncio's loops: the thread running them, else None
        start = time.perf_counter()
        for _ in rng:
            loop._thread_id == get_ident()  # noqa: B015
        out["loop._thread_id == threading.get_ident()"] = time.perf_counter() - start
    start = time.perf_counter()
    for _ in rng:
        pass
    out["(empty loop)"] = time.perf_counter() - start
    return out


# -- driver ------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--uvloop", action="store_true")
    args = parser.parse_args()
    runner: Callable[[Any], Any] = asyncio.run
    if args.uvloop:
        runner = importlib.import_module("uvloop").run
    n = args.records
    crecords, cpart, cdelivery = (
        compiled("_crecords"),
        compiled("_cpartitioner"),
        compiled("_cdelivery"),
    )
    cases: dict[str, Callable[[], float]] = {
        "future floor: asyncio.Future, set_result each": lambda: runner(floor_asyncio(n)),
        "future floor: RecordFutures pure": lambda: runner(
            floor_batched(delivery.PyRecordFutures)(n)
        ),
        "encode append: pure": lambda: encode(records.PyRecordBatchBuilder, n),
        "encode append_many: pure": lambda: encode_many(records.PyRecordBatchBuilder, n),
        "murmur2 unique 16 B keys: pure": lambda: hash_keys(partitioner.py_default_partition, n),
    }
    if cdelivery is not None:
        cases["future floor: RecordFutures compiled"] = lambda: runner(
            floor_batched(cdelivery.RecordFutures)(n)
        )
    if crecords is not None:
        cases["encode append: compiled"] = lambda: encode(crecords.RecordBatchBuilder, n)
        cases["encode append_many: compiled"] = lambda: encode_many(crecords.RecordBatchBuilder, n)
    if cpart is not None:
        cases["murmur2 unique 16 B keys: compiled"] = lambda: hash_keys(cpart.default_partition, n)
    times: dict[str, list[float]] = {name: [] for name in cases}
    checks: dict[str, list[float]] = {}
    for r in range(args.repeat):
        for name, case in cases.items():  # interleaved: every case once per round
            gc.collect()
            times[name].append(case())
        for name, seconds in runner(loop_checks(1_000_000)).items():
            checks.setdefault(name, []).append(seconds)
        print(f"round {r + 1}/{args.repeat} done", file=sys.stderr)
    loop_name = "uvloop" if args.uvloop else "asyncio"
    print(f"{n:,} records per case, median of {args.repeat} interleaved rounds (range); "
          f"GC on; loop {loop_name}; Python {sys.version.split()[0]}")  # fmt: skip
    print(f"{'case':<48} {'records/s':>12} {'range':>23} {'µs/record':>10}")
    for name, samples in times.items():
        rates = sorted(n / s for s in samples)
        med = statistics.median(rates)
        print(f"{name:<48} {med:>12,.0f} {rates[0]:>11,.0f}-{rates[-1]:<11,.0f} {1e6 / med:>10.3f}")
    print(f"\n{'loop check (1,000,000 calls)':<48} {'ns/call':>12} {'range':>23}")
    for name, samples in checks.items():
        ns = sorted(s * 1e3 for s in samples)  # seconds per 1e6 calls -> ns per call
        print(f"{name:<48} {statistics.median(ns):>12.1f} {ns[0]:>11.1f}-{ns[-1]:<11.1f}")


if __name__ == "__main__":
    main()
