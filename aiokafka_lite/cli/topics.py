"""``topics list|create|describe``: the cluster's topics, from its metadata."""

from __future__ import annotations

import argparse
from typing import Any

from ..admin import NewTopic, TopicDescription, create_topics, describe_topics, list_topics
from ..cluster import Node
from ..errors import KafkaError
from ._common import EXIT_FAILED, EXIT_OK, CliError, key_value, rich_module, say

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("topics", help="list, create or describe topics")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, help_text in (
        ("list", "topic names and partition counts"),
        ("create", "create topics"),
        ("describe", "partitions, leaders, replicas and in-sync replicas"),
    ):
        a = actions.add_parser(name, help=help_text)
        a.add_argument("-b", "--bootstrap-server", required=True, metavar="SERVERS")
        a.add_argument("--timeout-ms", type=int, default=10_000, help="default: 10000")
        if name == "create":
            a.add_argument("names", nargs="+", metavar="TOPIC")
            a.add_argument("--partitions", type=int, default=1)
            a.add_argument("--replication-factor", type=int, default=1)
            a.add_argument(
                "--config", action="append", type=key_value, default=[], metavar="KEY=VALUE"
            )
            a.add_argument("--if-not-exists", action="store_true")
        elif name == "describe":
            a.add_argument("names", nargs="*", metavar="TOPIC", help="default: every topic")
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
        raise CliError(str(e)) from e
    if args.action == "list":
        _list(topics)
    else:
        _describe(nodes, topics)
    return EXIT_FAILED if any(t.error for t in topics) else EXIT_OK


async def _create(args: argparse.Namespace) -> int:
    topics = [
        NewTopic(name, args.partitions, args.replication_factor, dict(args.config))
        for name in args.names
    ]
    try:
        await create_topics(
            args.bootstrap_server,
            topics,
            timeout_ms=args.timeout_ms,
            exist_ok=args.if_not_exists,
        )
    except KafkaError as e:
        raise CliError(f"cannot create {', '.join(args.names)}: {e}", EXIT_FAILED) from e
    for name in args.names:
        say(f"created {name} ({args.partitions} partition(s))")
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
