"""The command line: the options, and the interleaved rounds they ask for."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence

from ..bench.brokers import add_broker_option, open_broker
from .prebuild import REQUEST_OVERHEAD, Shape
from .replay import replay_worker
from .report import Summary, comparison, footer, render
from .runner import log, run_round
from .settings import CLIENTS, DEFAULTS, LIBRDKAFKA, MODULE, W3, W3_IDEM

IDEMPOTENCE_MODES = {"off": (False,), "on": (True,), "both": (False, True)}
IDEMPOTENCE = tuple(IDEMPOTENCE_MODES)


def parse_ints(option: str, text: str, lo: int, hi: int) -> list[int]:
    """A comma-separated list of integers in [lo, hi], duplicates dropped."""
    try:
        values = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise SystemExit(f"{option}: integers expected, got {text!r}") from None
    if not values or min(values) < lo or max(values) > hi:
        raise SystemExit(f"{option}: values from {lo} to {hi} expected, got {text!r}")
    return list(dict.fromkeys(values))


def parse_clients(text: str) -> list[str]:
    """W3 clients to run beside the replay (benchmarks.bench's names), duplicates dropped."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in CLIENTS]
    if unknown:
        raise SystemExit(f"--clients: unknown {', '.join(unknown)} (choose from {CLIENTS})")
    return list(dict.fromkeys(names))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m " + MODULE,
        description="W3's records replayed as pre-built Produce requests: the broker's "
        "ceiling, side by side with W3's clients.",
    )
    parser.add_argument("--records", type=int, default=W3.records, help="default %(default)s")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repeats (default 3)")
    parser.add_argument(
        "--in-flight", default="5", help="unanswered requests allowed; a list runs each (5,32)"
    )
    parser.add_argument(
        "--batch-size",
        default=str(DEFAULTS.batch_size),
        help="bytes per replayed batch; a list runs each (default: the producers' %(default)s)",
    )
    parser.add_argument(
        "--clients",
        default=LIBRDKAFKA,
        help="W3 clients run beside the replay, benchmarks.bench's names "
        f"(default %(default)s = librdkafka; any of {', '.join(CLIENTS)})",
    )
    parser.add_argument(
        "--idempotence",
        choices=IDEMPOTENCE,
        default="off",
        help="off (default): W3 and plain batches; on: W3/idem (idempotent clients) and a "
        "replay of batches with a producer id and sequence numbers; both: each",
    )
    add_broker_option(parser)
    parser.add_argument(
        "--shared-broker",
        action="store_true",
        help="one broker for every run (as benchmarks.bench runs); default: one per run",
    )
    parser.add_argument(
        "--deadline", type=float, default=120.0, help="seconds a timed run may take"
    )
    parser.add_argument("--replay-worker", metavar="JSON", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.records < 1 or args.repeat < 1:
        raise SystemExit("--records and --repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replay_worker is not None:
        return replay_worker(args.replay_worker)
    windows = parse_ints("--in-flight", args.in_flight, 1, 1 << 20)
    largest = DEFAULTS.max_request_size - REQUEST_OVERHEAD  # what one request can carry
    sizes = parse_ints("--batch-size", args.batch_size, 1, largest)
    modes = IDEMPOTENCE_MODES[args.idempotence]
    shapes = [Shape(size, window, idem) for idem in modes for size in sizes for window in windows]
    ceilings = [Summary(shape.label, shape) for shape in shapes]
    names = parse_clients(args.clients)
    clients = [
        Summary(f"{workload}: {c}", None, c, workload=workload)
        for workload in (W3_IDEM.id if idem else W3.id for idem in modes)
        for c in names
    ]
    every = [*ceilings, *clients]
    description = ""
    with contextlib.ExitStack() as stack:
        shared = None
        if args.shared_broker:
            shared = stack.enter_context(open_broker(args.broker, log))
            description = shared.description
        for round_no in range(1, args.repeat + 1):
            order = every if round_no % 2 else every[::-1]  # alternate who goes first
            description = run_round(round_no, order, args, shared) or description
    print(render(every))
    print("\n".join(comparison(ceilings, clients)))
    print(footer(args, description, sys.argv[1:]))
    return 0 if all(r.ok for s in every for r in s.runs) else 1
