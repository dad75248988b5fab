"""Every message declaration matches Apache Kafka's JSON schema, field by field.

The schemas are copied into tests/data/kafka-protocol (Apache Kafka's own
message definitions: facts about the wire format, not code).
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from aiokafka_lite.protocol import codec, messages
from aiokafka_lite.protocol.codec import F, Message

DATA = Path(__file__).parent / "data" / "kafka-protocol"


def load_schema(name: str) -> dict[str, Any]:
    text = (DATA / f"{name}.json").read_text()
    text = re.sub(r"^\s*//.*$", "", text, flags=re.M)  # the schemas carry // comments
    return json.loads(text)


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def version_range(spec: str | None) -> tuple[int, int]:
    return F("int8", "0+", nullable=spec).nullable  # reuse the same parser on purpose


def check_fields(cls: type[Message], fields: list[dict[str, Any]]) -> None:
    hints = typing.get_type_hints(cls, include_extras=True)
    names = [snake(f["name"]) for f in fields]
    assert list(cls.__struct_fields__) == names, cls.__name__
    for field in fields:
        name = snake(field["name"])
        spec = next(m for m in hints[name].__metadata__ if isinstance(m, F))
        where = f"{cls.__name__}.{name}"
        assert spec.type == field["type"], where
        assert spec.versions == version_range(field["versions"]), where
        assert spec.nullable == version_range(field.get("nullableVersions")), where
        assert spec.tag == field.get("tag"), where
        if "fields" in field:
            inner = field["type"].removeprefix("[]")
            check_fields(getattr(messages, inner), field["fields"])


PAIRS = [
    ("ApiVersionsRequest", "ApiVersionsResponse"),
    ("MetadataRequest", "MetadataResponse"),
    ("ProduceRequest", "ProduceResponse"),
    ("CreateTopicsRequest", "CreateTopicsResponse"),
    ("InitProducerIdRequest", "InitProducerIdResponse"),
    ("FindCoordinatorRequest", "FindCoordinatorResponse"),
    ("AddPartitionsToTxnRequest", "AddPartitionsToTxnResponse"),
    ("AddOffsetsToTxnRequest", "AddOffsetsToTxnResponse"),
    ("EndTxnRequest", "EndTxnResponse"),
    ("TxnOffsetCommitRequest", "TxnOffsetCommitResponse"),
]
# Requests we deliberately stop short of the schema's newest version (every field
# is still declared): AddPartitionsToTxn v4+ is broker-to-broker, EndTxn v5 is
# KIP-890's transactions v2.
CAPPED = {"AddPartitionsToTxnRequest": 3, "EndTxnRequest": 4}
PAIRS += [
    ("SaslHandshakeRequest", "SaslHandshakeResponse"),
    ("SaslAuthenticateRequest", "SaslAuthenticateResponse"),
]


@pytest.mark.parametrize("name", [n for pair in PAIRS for n in pair])
def test_declaration_matches_schema(name: str) -> None:
    schema = load_schema(name)
    cls = getattr(messages, name)
    assert schema["apiKey"] == cls.API_KEY
    if schema["flexibleVersions"] == "none":
        assert cls.FLEXIBLE_SINCE > 0x7FFE  # never flexible
    else:
        assert version_range(schema["flexibleVersions"])[0] == cls.FLEXIBLE_SINCE
    if schema["type"] == "request":
        lo, hi = version_range(schema["validVersions"])
        assert lo <= cls.MIN_VERSION <= cls.MAX_VERSION == CAPPED.get(name, hi)
    check_fields(cls, schema["fields"])


@pytest.mark.parametrize(("req", "resp"), PAIRS)
def test_every_version_round_trips(req: str, resp: str) -> None:
    """Default-valued messages encode and decode back to themselves at every version."""
    req_cls = getattr(messages, req)
    for version in range(req_cls.MIN_VERSION, req_cls.MAX_VERSION + 1):
        for cls in (req_cls, getattr(messages, resp)):
            msg = cls()
            data = bytes(codec.encode(msg, version))
            decoded, end = codec.decode(cls, version, data)
            assert end == len(data)
            assert decoded == msg
