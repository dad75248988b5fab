"""``produce``: records from stdin or a file to a topic, as lines or as JSON lines.

Input formats (``--format``)::

    lines  each line is a record value (UTF-8 bytes as read, without the line break);
           with --key-separator SEP the line is split at the first SEP into key and value
           (a line without SEP is an error for that line)
    json   one JSON object per line:
           {"value": ..., "key": ..., "headers": {"k": "v"} | [["k", "v"], ...],
            "partition": 0, "timestamp": 1700000000000}
           every field is optional; a string is sent as its UTF-8 bytes, null as null
           (a tombstone value), any other JSON (object, array, number) as its compact
           JSON text. Blank lines are skipped; an unknown field is an error.

A malformed line is reported with its line number and skipped: THE REST IS STILL SENT,
and the exit code is 1. ``--header k=v`` headers are added to every record.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import concurrent.futures
import os
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

import msgspec

from .._internal.records import Header
from ..errors import KafkaError
from ..producer import AIOKafkaProducer
from ..structs import RecordMetadata
from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    CliError,
    add_bootstrap,
    add_command,
    add_producer_options,
    key_value,
    need_bootstrap,
    producer_options,
    require_topic,
    say,
    started_producer,
)
from ._progress import progress_bar

__all__ = ["Record", "add_parser", "parse_json_line", "run"]

_CHUNK = 1 << 16
_YIELD_EVERY = 1000  # records between yields to the loop, so the sender runs meanwhile
_JSON_FIELDS = frozenset({"value", "key", "headers", "partition", "timestamp"})
_json_decode = msgspec.json.Decoder().decode
_json_encode = msgspec.json.Encoder().encode


class MalformedLineError(ValueError):
    pass


@dataclass(slots=True)
class Record:
    value: bytes | None
    key: bytes | None = None
    headers: list[Header] = field(default_factory=list)
    partition: int | None = None
    timestamp: int | None = None


@dataclass
class Outcome:
    """Tally of what happened, with the first few errors kept to show.

    Delivery futures wait in send order in ``pending`` and are tallied by
    :meth:`collect` (from the progress bar and the send loop) once done: no callback
    per record.
    """

    show: int
    sent: int = 0
    failed: int = 0
    interrupted: bool = False
    errors: list[str] = field(default_factory=list)
    pending: collections.deque[tuple[int, asyncio.Future[RecordMetadata]]] = field(
        default_factory=collections.deque
    )

    def error(self, line: int, message: str) -> None:
        self.failed += 1
        if len(self.errors) < self.show:
            self.errors.append(f"line {line}: {message}")

    def collect(self) -> int:
        """Tally the finished deliveries at the head of ``pending``; return the total done."""
        pending = self.pending
        while pending and pending[0][1].done():
            line, fut = pending.popleft()
            exc = fut.exception()
            if exc is None:
                self.sent += 1
            else:
                self.error(line, f"not delivered: {exc}")
        return self.sent + self.failed


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "produce",
        "send lines or JSON records from stdin or a file to a topic",
        (__doc__ or "").replace("``", ""),
    )
    p.add_argument("topic", help="the topic to send to")
    add_bootstrap(p)
    p.add_argument("-f", "--file", default="-", help="input file ('-', the default: stdin)")
    p.add_argument(
        "--format",
        choices=["lines", "json"],
        default="lines",
        help="a record per line, or a JSON object per line (default: lines; see above)",
    )
    p.add_argument(
        "--key-separator", metavar="SEP", help="lines: split each line into key SEP value"
    )
    p.add_argument(
        "-H",
        "--header",
        dest="headers",
        action="append",
        type=key_value,
        default=[],
        metavar="KEY=VALUE",
        help="a header for every record; repeatable",
    )
    p.add_argument("--partition", type=int, help="send every record to this partition")
    p.add_argument(
        "--no-auto-create",
        action="store_true",
        help="fail at once if the topic does not exist, instead of letting the broker create it",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--show-errors", type=int, default=5, help="failed records to list (default: 5)")
    add_producer_options(p)
    p.set_defaults(handler=run)


async def run(args: argparse.Namespace) -> int:
    bootstrap = need_bootstrap("produce", args.bootstrap_server)
    source = _open(args.file)
    try:
        outcome = await _produce(args, bootstrap, source)
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    _summarize(outcome, args.topic)
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if outcome.failed else EXIT_OK


def _open(path: str) -> IO[bytes]:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # closed by run()
    except OSError as e:
        raise CliError(f"cannot read {path!r}: {e.strerror or e}") from e


async def _produce(args: argparse.Namespace, bootstrap: str, source: IO[bytes]) -> Outcome:
    options = producer_options(args, bootstrap, allow_auto_create_topics=not args.no_auto_create)
    if args.no_auto_create:
        await require_topic(bootstrap, args.topic, args.max_block_ms)
    common = [(k, v.encode()) for k, v in args.headers]
    outcome = Outcome(show=args.show_errors)
    async with (
        started_producer(options, args.topic) as producer,
        progress_bar(
            f"producing to {args.topic}", None, outcome.collect, enabled=not args.no_progress
        ),
    ):
        try:
            await _send_all(producer, args, source, common, outcome)
            await producer.flush(timeout=None)
        except asyncio.CancelledError:
            # Ctrl-C (asyncio.run cancels this task): stop reading, let the producer
            # deliver what it holds as it stops, and still print the summary.
            task = asyncio.current_task()
            if task is None or task.uncancel() > 0:
                raise  # cancelled for another reason too
            outcome.interrupted = True
    outcome.collect()  # stop() resolved every future
    return outcome


async def _send_all(
    producer: AIOKafkaProducer[bytes, bytes],
    args: argparse.Namespace,
    source: IO[bytes],
    common: list[Header],
    outcome: Outcome,
) -> None:
    parse = parse_json_line if args.format == "json" else partial(_parse_line, args.key_separator)
    n = 0
    async for number, line in _lines(source):
        try:
            record = parse(line)
        except MalformedLineError as e:
            outcome.error(number, f"malformed: {e}")
            continue
        if record is None:
            continue
        partition = record.partition if record.partition is not None else args.partition
        try:
            fut = await producer.send(
                args.topic,
                record.value,
                record.key,
                partition=partition,
                timestamp_ms=record.timestamp,
                headers=common + record.headers or None,
            )
        except (KafkaError, ValueError, TypeError) as e:
            outcome.error(number, f"not sent: {e}")
            continue
        outcome.pending.append((number, fut))
        n += 1
        if n % _YIELD_EVERY == 0:
            await asyncio.sleep(0)
            outcome.collect()


async def _lines(source: IO[bytes]) -> AsyncIterator[tuple[int, bytes]]:
    """(line number, line without its break)."""
    rest = b""
    number = 0
    async for chunk in _chunks(source):
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            number += 1
            yield number, line.removesuffix(b"\r")
    if rest:
        yield number + 1, rest.removesuffix(b"\r")


async def _chunks(source: IO[bytes]) -> AsyncIterator[bytes]:
    """What ``source`` has to read, as it comes.

    A file named with ``-f`` is read on the loop (reading a regular file does not wait).
    Reading stdin blocks (a terminal waits for typing), so a daemon thread reads it; not
    the loop's executor, whose thread asyncio.run waits for at exit: Ctrl-C would then
    hang until the next line. A daemon thread is simply abandoned.
    """
    if source is not sys.stdin.buffer:
        try:
            while chunk := source.read(_CHUNK):
                yield chunk
        except OSError as e:  # e.g. a directory, or an I/O error mid-file
            raise CliError(f"cannot read the input: {e.strerror or e}") from e
        return
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | OSError] = asyncio.Queue(maxsize=8)  # bounds what is read ahead
    # os.read on the descriptor, not the file object: a daemon thread blocked inside a
    # buffered reader holds its lock, and interpreter shutdown then aborts on it.
    fd = source.fileno()

    def pump() -> None:
        while True:
            item: bytes | OSError
            try:
                item = os.read(fd, _CHUNK)
            except (OSError, ValueError) as e:  # ValueError: closed under us
                item = e if isinstance(e, OSError) else OSError(str(e))
            try:
                asyncio.run_coroutine_threadsafe(queue.put(item), loop).result()
            except (RuntimeError, concurrent.futures.CancelledError):
                return  # the loop is gone: nobody wants more input
            if not item or isinstance(item, OSError):
                return

    threading.Thread(target=pump, name="aiokafka-lite-input", daemon=True).start()
    while True:
        item = await queue.get()
        if isinstance(item, OSError):
            raise CliError(f"cannot read the input: {item.strerror or item}")
        if not item:
            return
        yield item


def _parse_line(separator: str | None, line: bytes) -> Record:
    if separator is None:
        return Record(line)
    key, sep, value = line.partition(separator.encode())
    if not sep:
        raise MalformedLineError(f"no key separator {separator!r} in the line")
    return Record(value, key)


def parse_json_line(line: bytes) -> Record | None:
    """One JSON-lines record (None for a blank line); MalformedLineError says what is wrong."""
    if not line.strip():
        return None
    try:
        obj = _json_decode(line)
    except msgspec.DecodeError as e:
        raise MalformedLineError(f"invalid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise MalformedLineError(f"expected a JSON object, got {type(obj).__name__}")
    unknown = set(obj) - _JSON_FIELDS
    if unknown:
        known = sorted(_JSON_FIELDS)
        raise MalformedLineError(f"unknown field(s) {sorted(unknown)}; known: {known}")
    partition = obj.get("partition")
    timestamp = obj.get("timestamp")
    for name, number in (("partition", partition), ("timestamp", timestamp)):
        if number is not None and (type(number) is not int or number < 0):
            raise MalformedLineError(f"{name} must be a non-negative integer, got {number!r}")
    return Record(
        _as_bytes(obj.get("value")),
        _as_bytes(obj.get("key")),
        list(_headers(obj.get("headers"))),
        partition,
        timestamp,
    )


def _as_bytes(data: object) -> bytes | None:
    if data is None:
        return None
    if isinstance(data, str):
        return data.encode()
    return _json_encode(data)


def _headers(raw: object) -> Iterator[Header]:
    if raw is None:
        return
    items: Any
    if isinstance(raw, dict):
        items = raw.items()
    elif isinstance(raw, list) and all(isinstance(h, list) and len(h) == 2 for h in raw):
        items = raw
    else:
        raise MalformedLineError('headers must be {"key": "value", ...} or [["key", "value"], ...]')
    for k, v in items:
        if not isinstance(k, str) or not (v is None or isinstance(v, str)):
            raise MalformedLineError(f"header {k!r}: key and value must be strings (or value null)")
        yield k, None if v is None else v.encode()


def _summarize(outcome: Outcome, topic: str) -> None:
    if outcome.interrupted:
        say("interrupted: the input was not read to its end")
    say(f"{outcome.sent:,} record(s) sent to {topic}, {outcome.failed:,} failed")
    for message in outcome.errors:
        say(f"  {message}")
    if outcome.failed > len(outcome.errors):
        say(f"  ... and {outcome.failed - len(outcome.errors):,} more")
