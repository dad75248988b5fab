"""The ``aiokafka-lite`` command line: ``produce``, ``perf``, ``topics`` and ``broker``.

Argument parsing is the standard library's ``argparse`` (no dependency, subcommands,
``--help`` for free); progress bars and tables come from ``rich``, installed with the
``cli`` extra. Each subcommand lives in its own module and returns the process exit code,
one convention for all of them (``EXIT_CODES``, shown by ``--help``):

* 0: everything asked for was done;
* 1: the command ran and some or all of its work failed (records not delivered, malformed
  input lines, a topic the broker refused to create, a broker that exited on its own);
* 2: nothing was done: bad usage, unreadable input, a missing extra, no cluster, or a
  named topic not in the state the command needs (unknown, or already existing);
* 130: interrupted by Ctrl-C (except ``broker``, which Ctrl-C stops normally: 0).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import platform
import sys
from collections.abc import Sequence

from .. import speedups
from .._version import __version__
from . import broker, perf, produce, topics
from ._common import EXIT_CODES, EXIT_INTERRUPTED, EXIT_USAGE, CliError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aiokafka-lite",
        description="Produce to Kafka, measure producer throughput, manage topics, "
        "or run an embedded broker.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=version_line(),
        help="show the version, which build runs (compiled or pure Python) and the Python",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log the library's loggers (aiokafka_lite.*) to stderr; -vv for DEBUG",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    produce.add_parser(sub)
    perf.add_parser(sub)
    topics.add_parser(sub)
    broker.add_parser(sub)
    return parser


def version_line() -> str:
    """``aiokafka-lite 0.1.0 (compiled build; CPython 3.12.4)``, or ``(pure-Python build:
    <why>; ...)``: which of the two builds answers matters for speed and for bug reports."""
    build = "compiled build" if speedups.COMPILED else f"pure-Python build: {speedups.REASON}"
    python = f"{platform.python_implementation()} {platform.python_version()}"
    return f"aiokafka-lite {__version__} ({build}; {python})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(
            level=logging.DEBUG if args.verbose > 1 else logging.INFO,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
    try:
        if args.command == "broker":
            return broker.run(args)
        code: int = asyncio.run(args.handler(args))
        return code
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ImportError as e:  # an optional extra is missing
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
