"""``topics list|create|describe``: the cluster's topics, from its metadata."""

from __future__ import annotations

import argparse
from typing import Any

from .._internal.cluster import Node
from ..admin import NewTopic, TopicDescription, create_topics, describe_topics, list_topics
from ..errors import BrokerResponseError, KafkaError, TopicAlreadyExistsError
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_bootstrap,
    add_command,
    cluster_failure,
    key_value,
    rich_module,
    say,
)

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "topics",
        "list, create or describe topics",
        "List, create or describe the cluster's topics.",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, help_text in (
        ("list", "topic names and partition counts"),
        ("create", "create topics"),
        ("describe", "partitions, leaders, replicas and in-sync replicas"),
    ):
        a = add_command(actions, name, help_text, help_text[0].upper() + help_text[1:] + ".")
        add_bootstrap(a, required=True)
        a.add_argument(
            "--timeout-ms",
            type=int,
            default=10_000,
            help="how long to wait for the cluster's answers (default: 10000)",
        )
        if name == "create":
            a.add_argument("names", nargs="+", metavar="TOPIC", help="names of the topics")
            a.add_argument(
                "--partitions", type=int, default=1, help="partitions per topic (default: 1)"
            )
            a.add_argument(
                "--replication-factor",
                type=int,
                default=1,
                help="copies of each partition, on as many brokers (default: 1)",
            )
            a.add_argument(
                "--config",
                action="append",
                type=key_value,
                default=[],
                metavar="KEY=VALUE",
                help="a topic config for every topic (e.g. retention.ms=60000); repeatable",
            )
            a.add_argument(
                "--if-not-exists",
                action="store_true",
                help="a topic that exists already is left as it is, and not an error",
            )
        elif name == "describe":
            a.add_argument(
                "names",
                nargs="*",
                metavar="TOPIC",
                help="topics to describe (default: every topic)",
            )
    p.set_defaults(handler=run)


async def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "create":
            return await _create(args)
        if args.action == "list" or not args.names:
            nodes, topics = await list_topics(args.bootstrap_server, timeout_ms=args.timeout_ms)
        else:
            nodes, topics = await describe_topics(
                args.bootstrap_server, args.names, timeout_ms=args.timeout_ms
            )
    except KafkaError as e:
        raise CliError(cluster_failure(args.bootstrap_server, e)) from e
    if args.action == "list":
        _list(topics)
    else:
        _describe(nodes, topics)
    failed = [t for t in topics if t.error]
    if not failed:
        return EXIT_OK
    # Describing only topics that are not there did nothing; some of them, partly.
    nothing = args.action == "describe" and args.names and len(failed) == len(topics)
    return EXIT_USAGE if nothing else EXIT_FAILED


async def _create(args: argparse.Namespace) -> int:
    """Create each topic on its own, so that the exit code can say what was done."""
    created: list[str] = []
    existing: list[str] = []
    refused: list[str] = []
    for name in args.names:
        topic = NewTopic(name, args.partitions, args.replication_factor, dict(args.config))
        try:
            await create_topics(
                args.bootstrap_server, [topic], timeout_ms=args.timeout_ms, exist_ok=False
            )
        except TopicAlreadyExistsError as e:
            existing.append(name)
            if args.if_not_exists:
                say(f"{name} exists already: left as it is")
            else:
                say(f"cannot create {name}: {e}")
        except BrokerResponseError as e:  # this topic refused (bad config, policy...)
            refused.append(name)
            say(f"cannot create {name}: {e}")
        except KafkaError as e:  # the cluster itself failed us: the rest would fail too
            done = f" (created: {', '.join(created)})" if created else ""
            code = EXIT_FAILED if created else EXIT_USAGE
            failure = cluster_failure(args.bootstrap_server, e)
            raise CliError(f"cannot create {name}: {failure}{done}", code) from e
        else:
            created.append(name)
            say(f"created {name} ({args.partitions} partition(s))")
    if refused:
        return EXIT_FAILED
    if existing and not args.if_not_exists:
        return EXIT_FAILED if created else EXIT_USAGE
    return EXIT_OK


def _list(topics: list[TopicDescription]) -> None:
    for t in topics:
        print(f"{t.name}\t{len(t.partitions)}" + (f"\t{t.error}" if t.error else ""))


def _describe(nodes: dict[int, Node], topics: list[TopicDescription]) -> None:
    table = rich_module("table").Table()
    for column in ("topic", "partition", "leader", "replicas", "isr"):
        table.add_column(column)
    for t in topics:
        if t.error:
            table.add_row(t.name, "-", t.error, "", "")
        for p in t.partitions:
            leader = nodes.get(p.leader)
            where = f"{p.leader} ({leader.host}:{leader.port})" if leader else str(p.leader)
            table.add_row(
                t.name,
                str(p.partition),
                where,
                ",".join(map(str, p.replicas)),
                ",".join(map(str, p.isr)),
            )
    rich_module("console").Console(width=200).print(table)
