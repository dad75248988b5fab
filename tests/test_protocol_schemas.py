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

from aiokafka_lite._internal import protocol
from aiokafka_lite._internal.protocol import codec
from aiokafka_lite._internal.protocol.codec import F, Message

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
            check_fields(getattr(protocol, inner), field["fields"])


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
    ("OffsetFetchRequest", "OffsetFetchResponse"),
]
# Requests we deliberately stop short of the schema's newest version (every field
# is still declared): AddPartitionsToTxn v4+ is broker-to-broker, Produce v13 names
# topics by id, OffsetFetch v8+ is the multi-group form.
CAPPED = {"AddPartitionsToTxnRequest": 3, "ProduceRequest": 12, "OffsetFetchRequest": 7}
PAIRS += [
    ("SaslHandshakeRequest", "SaslHandshakeResponse"),
    ("SaslAuthenticateRequest", "SaslAuthenticateResponse"),
]


@pytest.mark.parametrize("name", [n for pair in PAIRS for n in pair])
def test_declaration_matches_schema(name: str) -> None:
    schema = load_schema(name)
    cls = getattr(protocol, name)
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
    req_cls = getattr(protocol, req)
    for version in range(req_cls.MIN_VERSION, req_cls.MAX_VERSION + 1):
        for cls in (req_cls, getattr(protocol, resp)):
            msg = cls()
            data = bytes(codec.encode(msg, version))
            decoded, end = codec.decode(cls, version, data)
            assert end == len(data)
            assert decoded == msg


def test_offset_fetch_wire_format() -> None:
    """OffsetFetch bytes assembled by hand from the schema, not by the codec under test.

    v1: classic strings and arrays (int16 / int32 lengths); v2+: topics may be null;
    v5: the committed leader epoch; v6+: compact lengths (uvarint n+1) and tag sections;
    v7: require_stable.
    """

    def i16(n: int) -> bytes:
        return n.to_bytes(2, "big", signed=True)

    def i32(n: int) -> bytes:
        return n.to_bytes(4, "big", signed=True)

    def i64(n: int) -> bytes:
        return n.to_bytes(8, "big", signed=True)

    topic = protocol.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 2])
    request = protocol.OffsetFetchRequest(group_id="g", topics=[topic], require_stable=True)
    v1 = i16(1) + b"g" + i32(1) + i16(1) + b"t" + i32(2) + i32(0) + i32(2)
    assert bytes(codec.encode(request, 1)) == v1  # require_stable is not in v1
    v7 = b"\x02g" + b"\x02" + b"\x02t" + b"\x03" + i32(0) + i32(2) + b"\x00" + b"\x01" + b"\x00"
    assert bytes(codec.encode(request, 7)) == v7
    all_topics = protocol.OffsetFetchRequest(group_id="g", topics=None)
    assert bytes(codec.encode(all_topics, 2)) == i16(1) + b"g" + i32(-1)
    assert bytes(codec.encode(all_topics, 7)) == b"\x02g" + b"\x00" + b"\x00" + b"\x00"

    # A response with one committed offset (metadata "m") and one partition with none.
    v5 = (
        i32(0)  # throttle_time_ms
        + i32(1)
        + i16(1)
        + b"t"
        + i32(2)
        + (i32(0) + i64(42) + i32(3) + i16(1) + b"m" + i16(0))
        + (i32(2) + i64(-1) + i32(-1) + i16(-1) + i16(0))  # null metadata
        + i16(0)  # top-level error_code
    )
    decoded, end = codec.decode(protocol.OffsetFetchResponse, 5, v5)
    assert end == len(v5)
    [t] = decoded.topics
    assert t.name == "t"
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in t.partitions] == [
        (0, 42, "m"),
        (2, -1, None),
    ]
    assert t.partitions[0].committed_leader_epoch == 3
    v7_response = (
        i32(0)
        + b"\x02"
        + b"\x02t"
        + b"\x02"
        + (i32(0) + i64(42) + i32(-1) + b"\x02m" + i16(88) + b"\x00")  # UNSTABLE_OFFSET_COMMIT
        + b"\x00"
        + i16(16)  # NOT_COORDINATOR
        + b"\x00"
    )
    decoded, end = codec.decode(protocol.OffsetFetchResponse, 7, v7_response)
    assert end == len(v7_response)
    assert decoded.error_code == 16
    assert decoded.topics[0].partitions[0].error_code == 88
    assert bytes(codec.encode(decoded, 7)) == v7_response
