"""``broker``: the embedded Tansu broker in the foreground, until Ctrl-C (or SIGTERM)."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import Any

from ._common import EXIT_OK, CliError, add_command, say

__all__ = ["add_parser", "run"]

BROKER_DESCRIPTION = """\
Run an embedded Tansu broker (in-memory storage) in the foreground until Ctrl-C or
SIGTERM. Its address (host:port) is the one line on stdout. Everything sent to it is
gone when it stops.

Two traps of this broker (not of a Kafka cluster):
  * aiokafka's own idempotent or transactional producer (enable_idempotence=True or a
    transactional_id) fails at start() with "[Error -1] UnknownError"; aiokafka_lite's
    idempotent and transactional producers work.
  * end offsets under-report, whoever wrote the records: end_offsets(), watermarks and
    lag tools get the last batch's first offset + 1 (e.g. 8,906 for 10,000 records in
    one partition). Count what a consumer reads instead.
"""


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "broker",
        "run an embedded (in-memory) broker for local development",
        BROKER_DESCRIPTION,
    )
    p.add_argument("--host", default="127.0.0.1", help="listen address (default: 127.0.0.1)")
    p.add_argument("--port", type=int, help="listen port (default: a free one)")
    p.add_argument("--log-file", help="append the broker's own log here")


def run(args: argparse.Namespace) -> int:
    from ..embedded import EmbeddedBroker  # the broker extra is optional

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    broker = EmbeddedBroker(port=args.port, host=args.host, log_path=args.log_file)
    try:
        try:
            broker.start()
        except RuntimeError as e:
            raise CliError(str(e)) from e
        # The one line on stdout: scripts read the address from it.
        print(broker.bootstrap_servers, flush=True)
        say("(in-memory storage; Ctrl-C stops it)")
        while not stop.wait(0.5):
            if not broker.is_running:
                raise CliError("the broker exited on its own", 1)
    finally:
        broker.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return EXIT_OK
