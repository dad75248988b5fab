"""The version tables of README.md and docs/index.md come from real brokers.

Each table says, per API, the versions the producer speaks ("ours") and the newest
version each broker agreed on. This test connects to each broker (Tansu and Apache Kafka
through the session ``broker``; librdkafka's mock cluster in process), reads what its
ApiVersions offers, negotiates as the producer does (``BrokerConnection.version_for``)
and compares every cell, so a table cannot drift from what a run shows. An API the
broker does not list reads "not offered"; one the table leaves out of a column reads
"none" (README's shorter form).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from kafka_cluster import KAFKA_VERSION, KafkaCluster
from mockcluster import MockCluster

from aiokafka_lite._internal.connection import BrokerConnection
from aiokafka_lite._internal.protocol.admin import CreateTopicsRequest, OffsetFetchRequest
from aiokafka_lite._internal.protocol.codec import Request
from aiokafka_lite._internal.protocol.handshake import (
    ApiVersionsRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from aiokafka_lite._internal.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from aiokafka_lite._internal.protocol.produce import ProduceRequest
from aiokafka_lite._internal.protocol.transactions import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)
from aiokafka_lite.embedded import EmbeddedBroker
from aiokafka_lite.errors import IncompatibleBrokerVersion

REPO_ROOT = Path(__file__).resolve().parent.parent
TABLES = [REPO_ROOT / "README.md", REPO_ROOT / "docs" / "index.md"]

REQUESTS: dict[str, type[Request]] = {
    cls.__name__.removesuffix("Request"): cls
    for cls in (
        ProduceRequest,
        MetadataRequest,
        ApiVersionsRequest,
        InitProducerIdRequest,
        FindCoordinatorRequest,
        AddPartitionsToTxnRequest,
        AddOffsetsToTxnRequest,
        EndTxnRequest,
        TxnOffsetCommitRequest,
        OffsetFetchRequest,
        CreateTopicsRequest,
        SaslHandshakeRequest,
        SaslAuthenticateRequest,
    )
}


def version_tables(path: Path) -> list[tuple[list[str], list[list[str]]]]:
    """Every markdown table of ``path`` whose first header cell is ``API``."""
    tables = []
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| API |"):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip("|").split("|")])
            tables.append((header, rows))
    return tables


def cells(path: Path, column: str) -> dict[str, str]:
    """API -> the cell of ``column`` (header starting with it), across the page's tables;
    a row naming several APIs ("A, B") has one comma-separated value per API."""
    found: dict[str, str] = {}
    tables = version_tables(path)
    assert tables, f"{path.name}: no version table"
    for header, rows in tables:
        matches = [i for i, h in enumerate(header) if h.startswith(column)]
        assert len(matches) == 1, f"{path.name}: columns {header}, wanted one {column!r}"
        for row in rows:
            apis = [a.strip() for a in row[0].split(",")]
            values = [v.strip() for v in row[matches[0]].split(",")]
            if len(values) == 1:
                values *= len(apis)
            assert len(values) == len(apis), f"{path.name}: row {row}"
            found.update(zip(apis, values, strict=True))
    assert set(found) <= set(REQUESTS), f"{path.name}: unknown APIs {set(found) - set(REQUESTS)}"
    return found


def ours(cls: type[Request]) -> str:
    lo, hi = cls.MIN_VERSION, cls.MAX_VERSION
    return f"v{lo}" if lo == hi else f"v{lo}-v{hi}"


async def agreed(bootstrap: str) -> dict[str, str]:
    """API -> the version the producer picks with the broker at ``bootstrap``."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    conn = BrokerConnection(
        -1, host, int(port), client_id="version-table", request_timeout_ms=10_000
    )
    await conn.open(10)
    try:
        out = {}
        for api, cls in REQUESTS.items():
            if cls.API_KEY not in conn.api_versions:
                out[api] = "not offered"
                continue
            try:
                out[api] = f"v{conn.version_for(cls)}"
            except IncompatibleBrokerVersion as e:  # e.g. below a KIP-896 floor
                out[api] = f"incompatible ({e})"
        return out
    finally:
        conn.close()
        await conn.wait_closed()


def check_column(column: str, got: dict[str, str]) -> None:
    for path in TABLES:
        table = cells(path, column)
        want = {api: got[api] for api in table}
        shown = {api: value for api, value in table.items() if value != "none"}
        assert shown == {api: want[api] for api in shown}, f"{path.name}, column {column!r}"


def test_ours_is_what_the_requests_declare() -> None:
    check_column("ours", {api: ours(cls) for api, cls in REQUESTS.items()})


def test_broker_column_is_what_the_broker_agrees_to(broker: EmbeddedBroker | KafkaCluster) -> None:
    if isinstance(broker, KafkaCluster):
        major_minor = ".".join(KAFKA_VERSION.split(".")[:2])
        column = f"Apache Kafka {major_minor}"
    else:
        column = "Tansu"
    got = asyncio.run(agreed(broker.bootstrap_servers))
    assert not [v for v in got.values() if v.startswith("incompatible")], got
    check_column(column, got)


def test_librdkafka_mock_column_is_what_the_mock_agrees_to() -> None:
    with MockCluster(brokers=1) as cluster:
        got = asyncio.run(agreed(cluster.bootstrap_servers))
    check_column("librdkafka", got)


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.name)
def test_every_table_has_every_broker_column(path: Path) -> None:
    for header, _ in version_tables(path):
        assert header[:2] == ["API", "ours"]
        assert [re.sub(r" [\d.]+.*$", "", h) for h in header[2:]] == [
            "Tansu",
            "Apache Kafka",
            "librdkafka",
        ], header
