"""What the subcommands share: exit codes, option parsing, the embedded broker, rich,
and the one way a cluster that cannot be used is reported."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

from ..admin import NewTopic, create_topics, describe_topics
from ..config import ProducerConfig
from ..errors import (
    AuthenticationFailedError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)
from ..producer import AIOKafkaProducer

# The exit codes, one convention for every subcommand (EXIT_CODES says it to users).
EXIT_OK = 0  # everything asked for was done
EXIT_FAILED = 1  # the command ran and some or all of its work failed
EXIT_USAGE = 2  # nothing was done (argparse uses 2 for usage errors too)
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT

EXIT_CODES = f"""\
exit codes (every command):
  {EXIT_OK}    done: everything asked for was done
  {EXIT_FAILED}    failed: the command ran and some or all of its work failed (records not
       delivered or malformed input lines; a topic the broker refused to create; a
       broker that exited on its own)
  {EXIT_USAGE}    nothing done: bad usage, unreadable input, a missing optional extra, an
       unreachable cluster, or a named topic not in the state the command needs (unknown
       to produce --no-auto-create and topics describe, existing for topics create)
  {EXIT_INTERRUPTED}  interrupted by Ctrl-C (but Ctrl-C is how `broker` stops: 0 there)
"""

_RICH_HINT = (
    'the command line needs rich: pip install "aiokafka-lite[cli]" '
    '(or, in a clone of the repository, pip install -e ".[cli]")'
)


def add_command(sub: Any, name: str, help: str, description: str) -> argparse.ArgumentParser:
    """Subcommand ``name``'s parser: its ``--help`` shows ``description`` as written (line
    breaks kept), then the exit codes every command shares."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=description,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


class CliError(Exception):
    """An error to print as one line, exiting with ``exit_code``."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def rich_module(name: str) -> ModuleType:
    """Import ``rich.<name>``, or say which extra installs it."""
    try:
        return importlib.import_module(f"rich.{name}")
    except ImportError as e:
        raise ImportError(_RICH_HINT) from e


def key_value(text: str) -> tuple[str, str]:
    """argparse type for ``k=v``."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


NO_CLUSTER = (
    "{command} needs a cluster: pass -b HOST:PORT. For a local one, run "
    "`aiokafka-lite broker` in another terminal and pass the address it prints "
    "({command} starts no broker of its own: what it sent there would be lost when it exits)"
)


def add_bootstrap(
    parser: argparse.ArgumentParser, *, required: bool = False, embedded: bool = False
) -> None:
    """``-b``: the cluster. ``required``: argparse enforces it; ``embedded``: an embedded
    broker stands in for it; neither: the command checks it with :func:`need_bootstrap`."""
    help_text = "host:port[,host:port...] of the cluster"
    if embedded:
        help_text += "; without it an embedded broker is started for this run"
    elif not required:
        help_text += " (required; `aiokafka-lite broker` runs a local one)"
    parser.add_argument(
        "-b", "--bootstrap-server", metavar="SERVERS", required=required, help=help_text
    )


def need_bootstrap(command: str, bootstrap: str | None) -> str:
    """The -b address, or a CliError saying how to get a cluster (exit 2)."""
    if not bootstrap:
        raise CliError(NO_CLUSTER.format(command=command))
    return bootstrap


def add_producer_options(parser: argparse.ArgumentParser) -> None:
    """Options that map onto ProducerConfig (``--producer-property`` for any other)."""
    group = parser.add_argument_group("producer options")
    group.add_argument(
        "--acks",
        choices=["0", "1", "all", "-1"],
        help="acknowledgement a record waits for: 0 none, 1 the leader's, all (or -1) every "
        "in-sync replica's (default: all)",
    )
    group.add_argument(
        "--linger-ms",
        type=float,
        help="how long a batch may wait for more records before it is sent (default: 5)",
    )
    group.add_argument(
        "--batch-size",
        type=int,
        help="bytes per partition batch before it is sent (default: 16384)",
    )
    group.add_argument(
        "--compression-type",
        choices=["none", "gzip", "snappy", "lz4", "zstd"],
        help="codec of each batch; snappy, lz4 and zstd need the compression extra (default: none)",
    )
    group.add_argument(
        "--max-block-ms",
        type=int,
        default=10_000,
        help="longest wait for a topic's metadata or for buffer space (default: 10000, "
        "shorter than the library's 60000 so that a wrong topic fails quickly)",
    )
    group.add_argument(
        "--producer-property",
        "-X",
        dest="producer_properties",
        action="append",
        type=key_value,
        default=[],
        metavar="KEY=VALUE",
        help="any producer option, by our name or Java's/librdkafka's dotted name "
        "(e.g. -X enable.idempotence=false); repeatable",
    )


def producer_options(args: argparse.Namespace, bootstrap: str, **extra: Any) -> dict[str, Any]:
    """The producer keyword arguments the options describe (checked: a bad one is a
    CliError naming it)."""
    options: dict[str, Any] = {"bootstrap_servers": bootstrap, "max_block_ms": args.max_block_ms}
    if args.acks is not None:
        options["acks"] = "all" if args.acks == "all" else int(args.acks)
    for name in ("linger_ms", "batch_size", "compression_type"):
        value = getattr(args, name)
        if value is not None:
            options[name] = value
    options.update(extra)
    for key, value in args.producer_properties:
        name = key.replace(".", "_")
        options.pop(name, None)  # an explicit property wins over the option above
        options[key] = value if "." in key else _guess_type(value)
    try:
        ProducerConfig.from_kwargs(**options)
    except (KafkaError, ValueError, TypeError) as e:
        raise CliError(f"bad producer option: {e}") from e
    return options


def _guess_type(value: str) -> Any:
    # Underscore names take typed values; property strings are converted as a file would be.
    if value.lstrip("-").isdigit():
        return int(value)
    if value in ("true", "false"):
        return value == "true"
    try:
        return float(value)
    except ValueError:
        return value


def say(message: str) -> None:
    """A status line on stderr (stdout is kept for results)."""
    print(message, file=sys.stderr, flush=True)


@contextlib.asynccontextmanager
async def cluster(
    bootstrap: str | None, topic: str | None = None, partitions: int = 1
) -> AsyncIterator[str]:
    """Yield the bootstrap address: the given one, or an embedded broker's for this run
    (``perf`` only: its records are a measurement; ``produce`` refuses to run without -b).

    On an embedded broker, ``topic`` is created first (with ``partitions``).
    """
    if bootstrap is not None:
        yield bootstrap
        return
    from ..embedded import EmbeddedBroker  # the broker extra is optional

    broker = EmbeddedBroker()
    await broker.astart()
    try:
        say(
            f"started an embedded broker at {broker.bootstrap_servers} "
            "(in memory: what is sent to it is gone when this command exits)"
        )
        if topic is not None:
            await create_topics(
                broker.bootstrap_servers, [NewTopic(topic, num_partitions=partitions)]
            )
        yield broker.bootstrap_servers
    finally:
        await broker.astop()


def cluster_failure(bootstrap: str, error: KafkaError) -> str:
    """What every command says when the cluster cannot be used at all (exit code 2).

    One wording for all of them: ``cannot reach the cluster at ...`` (no connection, or
    no Kafka answer), ``cannot log in to the cluster at ...`` (SASL or TLS refused), or
    ``cannot use the cluster at ...`` (any other error before anything was done).
    """
    if isinstance(error, AuthenticationFailedError):
        what = "cannot log in to"
    elif isinstance(error, KafkaConnectionError | KafkaTimeoutError):
        what = "cannot reach"
    else:
        what = "cannot use"
    return f"{what} the cluster at {bootstrap}: {error}"


@contextlib.contextmanager
def reaching(bootstrap: str) -> Iterator[None]:
    """Turn a KafkaError raised inside into :func:`cluster_failure`'s CliError (exit 2)."""
    try:
        yield
    except KafkaError as e:
        raise CliError(cluster_failure(bootstrap, e)) from e


@contextlib.asynccontextmanager
async def started_producer(
    options: dict[str, Any], topic: str
) -> AsyncIterator[AIOKafkaProducer[bytes, bytes]]:
    """A started producer whose ``topic`` is known, stopped on the way out.

    A cluster that cannot be reached (or refuses the login), a topic name Kafka refuses
    and a topic whose metadata does not come are CliErrors (exit 2: nothing was sent),
    never a traceback.
    """
    bootstrap = str(options["bootstrap_servers"])
    producer = AIOKafkaProducer[bytes, bytes](**options)
    with reaching(bootstrap):
        await producer.start()  # a failed start() leaves nothing to stop
    try:
        try:
            await producer.partitions_for(topic)
        except ValueError as e:  # a name Kafka refuses, checked before any request
            raise CliError(str(e)) from e
        except KafkaError as e:  # no metadata in time, not authorized, ...
            raise CliError(f"topic {topic!r} is not available: {e}") from e
        yield producer
    finally:
        await producer.stop()


async def require_topic(bootstrap: str, topic: str, timeout_ms: int) -> None:
    """Fail at once, naming the topic, when it does not exist (auto-creation is off)."""
    with reaching(bootstrap):
        _, found = await describe_topics(bootstrap, [topic], timeout_ms=timeout_ms)
    for t in found:
        if t.name == topic and t.error is None and t.partitions:
            return
        if t.name == topic and t.error not in (None, "UNKNOWN_TOPIC_OR_PARTITION"):
            raise CliError(f"topic {topic!r} is not available on {bootstrap}: {t.error}")
    raise CliError(
        f"topic {topic!r} does not exist on {bootstrap} and auto-creation is off "
        "(create it with: aiokafka-lite topics create)"
    )
