"""aiokafka_lite.errors against the Kafka error table (tests/data/error-codes.tsv)."""

from __future__ import annotations

import csv
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from aiokafka_lite import errors
from aiokafka_lite.errors import (
    BrokerResponseError,
    BufferFullError,
    ConfigError,
    IllegalStateError,
    IncompatibleBrokerVersionError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    MessageTooLargeError,
    NotLeaderOrFollowerError,
    ProducerClosedError,
    ProducerNotStartedError,
    ProtocolError,
    RecordTooLargeError,
    RequestEncodingError,
    SerializationError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UnsupportedCodecError,
    error_from_response,
    for_code,
)

TABLE = Path(__file__).parent / "data" / "error-codes.tsv"

# Codes whose Java exception extends InvalidMetadataException.
INVALID_METADATA = {3, 5, 6, 9, 13, 56, 72, 74, 80, 83, 100, 103}


class Row(NamedTuple):
    code: int
    name: str
    exception: str
    retriable: bool


def _rows() -> list[Row]:
    with TABLE.open(newline="") as f:
        return [
            Row(int(r["code"]), r["name"], r["exception"], r["retriable"] == "True")
            for r in csv.DictReader(f, delimiter="\t")
        ]


ROWS = _rows()
ERROR_ROWS = [r for r in ROWS if r.code != 0]


def class_name(kafka_name: str) -> str:
    for suffix in ("_ERROR", "_EXCEPTION"):
        kafka_name = kafka_name.removesuffix(suffix)
    return "".join(part.capitalize() for part in kafka_name.split("_")) + "Error"


def test_table_is_sane() -> None:
    assert len(ERROR_ROWS) > 100
    assert len({r.code for r in ROWS}) == len(ROWS)
    assert Row(0, "NONE", "", False) in ROWS


@pytest.mark.parametrize("row", ERROR_ROWS, ids=lambda r: r.name)
def test_every_code_has_a_class(row: Row) -> None:
    cls = for_code(row.code)
    assert cls.errno == row.code
    assert cls.name == row.name
    assert cls.retriable is row.retriable
    assert cls.invalid_metadata is (row.code in INVALID_METADATA)
    assert cls.__name__ == class_name(row.name)
    assert getattr(errors, cls.__name__) is cls
    assert cls.__name__ in errors.__all__
    assert cls.__module__ == "aiokafka_lite.errors"
    assert issubclass(cls, BrokerResponseError)
    assert issubclass(cls, KafkaError)
    assert row.exception in (cls.__doc__ or "")


def test_no_other_broker_classes() -> None:
    """Every BrokerResponseError subclass in the module is a row of the table."""
    codes = {r.code for r in ERROR_ROWS}
    found = {
        obj.errno
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, BrokerResponseError)
        if obj is not BrokerResponseError
    }
    assert found == codes


def test_class_names() -> None:
    assert class_name("NOT_LEADER_OR_FOLLOWER") == "NotLeaderOrFollowerError"
    assert for_code(6) is NotLeaderOrFollowerError
    assert for_code(3) is UnknownTopicOrPartitionError
    assert for_code(10) is MessageTooLargeError
    assert for_code(-1) is UnknownServerError
    assert for_code(56) is errors.KafkaStorageError
    assert for_code(13) is errors.NetworkError
    assert for_code(17) is errors.InvalidTopicError
    assert for_code(7) is errors.RequestTimedOutError
    assert for_code(35) is errors.UnsupportedVersionError
    assert not any(name.endswith("ErrorError") for name in dir(errors))


def test_unknown_code() -> None:
    cls = for_code(9999)
    assert issubclass(cls, UnknownServerError)
    assert cls.errno == 9999
    assert cls.name == "UNKNOWN_ERROR_CODE_9999"
    assert cls.__name__ == "UnknownErrorCode9999Error"
    assert cls.retriable is False
    assert cls.invalid_metadata is False
    assert for_code(9999) is cls  # cached
    assert for_code(-42).__name__ == "UnknownErrorCodeMinus42Error"
    err = error_from_response(9999, topic="t", partition=1, message="huh")
    assert type(err) is cls
    assert isinstance(err, UnknownServerError)
    assert str(err) == "UNKNOWN_ERROR_CODE_9999 (9999) for t[1]: huh"


def test_code_zero_is_not_an_error() -> None:
    with pytest.raises(ValueError, match="NONE"):
        for_code(0)
    with pytest.raises(ValueError, match="NONE"):
        error_from_response(0)


def test_str_and_attributes() -> None:
    err = error_from_response(6, topic="my-topic", partition=3, message="broker message")
    assert isinstance(err, NotLeaderOrFollowerError)
    assert (err.topic, err.partition, err.message) == ("my-topic", 3, "broker message")
    assert (err.errno, err.name, err.retriable, err.invalid_metadata) == (
        6,
        "NOT_LEADER_OR_FOLLOWER",
        True,
        True,
    )
    assert str(err) == "NOT_LEADER_OR_FOLLOWER (6) for my-topic[3]: broker message"
    assert repr(err) == (
        "NotLeaderOrFollowerError('broker message', topic='my-topic', partition=3)"
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "MESSAGE_TOO_LARGE (10)"),
        ({"message": ""}, "MESSAGE_TOO_LARGE (10)"),
        ({"topic": "t"}, "MESSAGE_TOO_LARGE (10) for t"),
        ({"topic": "t", "partition": 0}, "MESSAGE_TOO_LARGE (10) for t[0]"),
        ({"partition": 2}, "MESSAGE_TOO_LARGE (10) for partition 2"),
        ({"message": "too big"}, "MESSAGE_TOO_LARGE (10): too big"),
    ],
)
def test_str_variants(kwargs: dict[str, object], expected: str) -> None:
    assert str(error_from_response(10, **kwargs)) == expected  # type: ignore[arg-type]


def test_direct_construction() -> None:
    err = UnknownTopicOrPartitionError("gone", topic="t", partition=0)
    assert str(err) == "UNKNOWN_TOPIC_OR_PARTITION (3) for t[0]: gone"
    assert err.args == ("gone",)
    assert UnknownTopicOrPartitionError().args == ()
    with pytest.raises(TypeError):
        BrokerResponseError("no code")


def test_pickle_round_trip() -> None:
    for err in (
        error_from_response(6, topic="t", partition=3, message="m"),
        error_from_response(12345, topic="t", partition=3, message="m"),
        KafkaTimeoutError("slow"),
    ):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err)
        assert str(back) == str(err)


def test_invalid_metadata_classes() -> None:
    flagged = {r.code for r in ERROR_ROWS if for_code(r.code).invalid_metadata}
    assert flagged == INVALID_METADATA
    for code in INVALID_METADATA:
        assert for_code(code).retriable, code


ALIASES = {
    # client side
    "ProducerClosed": ProducerClosedError,
    "IllegalOperation": IllegalStateError,
    "IncompatibleBrokerVersion": IncompatibleBrokerVersionError,
    "KafkaConfigurationError": ConfigError,
    "KafkaProtocolError": ProtocolError,
    "CorruptResponseError": ProtocolError,
    # broker codes
    "UnknownError": UnknownServerError,
    "NotLeaderForPartitionError": NotLeaderOrFollowerError,
    "MessageSizeTooLargeError": MessageTooLargeError,
    "CorruptRecordException": errors.CorruptMessageError,
    "InvalidMessageError": errors.CorruptMessageError,
    "OutOfOrderSequenceNumber": errors.OutOfOrderSequenceNumberError,
    "DuplicateSequenceNumber": errors.DuplicateSequenceNumberError,
    "InvalidProducerEpoch": errors.InvalidProducerEpochError,
    "UnknownProducerId": errors.UnknownProducerIdError,
    "ProducerFenced": errors.ProducerFencedError,
    "InvalidConfigurationError": errors.InvalidConfigError,
}


@pytest.mark.parametrize(("alias", "cls"), ALIASES.items())
def test_aliases_are_the_same_objects(alias: str, cls: type[KafkaError]) -> None:
    assert getattr(errors, alias) is cls
    assert alias in errors.__all__


def test_aiokafka_names_importable() -> None:
    """Names a producer user catches from aiokafka.errors exist here with the same meaning."""
    ak = pytest.importorskip("aiokafka.errors")
    for name in dir(ak):
        obj = getattr(ak, name)
        if isinstance(obj, type) and issubclass(obj, ak.BrokerResponseError):
            if obj is ak.BrokerResponseError:
                assert errors.BrokerResponseError is BrokerResponseError
            else:
                theirs: Any = obj
                if theirs.errno != 0:
                    assert getattr(errors, name) is for_code(theirs.errno), name
    for name in (
        "KafkaError",
        "KafkaTimeoutError",
        "KafkaConnectionError",
        "KafkaProtocolError",
        "IllegalStateError",
        "IllegalOperation",
        "ProducerClosed",
        "ProducerFenced",
        "RecordTooLargeError",
        "IncompatibleBrokerVersion",
        "UnsupportedVersionError",
        "RequestTimedOutError",
        "KafkaConfigurationError",
        "UnsupportedCodecError",
    ):
        assert hasattr(ak, name), name
        assert isinstance(getattr(errors, name), type), name


@pytest.mark.parametrize(
    ("cls", "retriable", "invalid_metadata"),
    [
        (KafkaError, False, False),
        (KafkaTimeoutError, True, False),
        (KafkaConnectionError, True, True),
        (ProtocolError, True, False),
        (BufferFullError, True, False),
        (IllegalStateError, False, False),
        (ProducerClosedError, False, False),
        (ProducerNotStartedError, False, False),
        (SerializationError, False, False),
        (IncompatibleBrokerVersionError, False, False),
        (RequestEncodingError, False, False),
        (ConfigError, False, False),
        (UnsupportedCodecError, False, False),
    ],
)
def test_client_errors(cls: type[KafkaError], retriable: bool, invalid_metadata: bool) -> None:
    assert issubclass(cls, KafkaError)
    assert not issubclass(cls, BrokerResponseError)
    assert cls.retriable is retriable
    assert cls.invalid_metadata is invalid_metadata
    err = cls("something happened")  # the sender re-creates client errors from one string
    assert str(err) == "something happened"
    assert cls.__name__ in errors.__all__


def test_client_hierarchy() -> None:
    assert issubclass(ProducerClosedError, IllegalStateError)
    assert issubclass(ProducerNotStartedError, IllegalStateError)
    assert issubclass(UnsupportedCodecError, ConfigError)


def test_record_too_large_is_caught_as_message_too_large() -> None:
    """aiokafka raises MessageSizeTooLargeError (code 10's class) for a record over
    max_request_size; code written for it catches that name, so ours is a kind of it."""
    assert issubclass(RecordTooLargeError, MessageTooLargeError)
    assert errors.MessageSizeTooLargeError is MessageTooLargeError
    err = RecordTooLargeError("a record of 2000 bytes for 't' is larger than max_request_size")
    assert str(err) == "a record of 2000 bytes for 't' is larger than max_request_size"
    assert err.errno == 10 and not err.retriable


def test_config_error_is_value_error() -> None:
    assert issubclass(ConfigError, ValueError)
    with pytest.raises(ValueError, match="linger_ms"):
        raise ConfigError("linger_ms: expected >= 0")
    with pytest.raises(KafkaError):
        raise ConfigError("acks: expected one of 0, 1, -1, 'all'")


def test_all_names_exist() -> None:
    assert sorted(errors.__all__) == errors.__all__
    for name in errors.__all__:
        assert hasattr(errors, name), name


def test_no_runtime_file_reads() -> None:
    source = Path(errors.__file__).read_text()
    assert "/work/shared" not in source
    assert "open(" not in source


def test_aiokafka_except_clauses_catch_ours() -> None:
    """With aiokafka installed, each of our classes is also aiokafka's class of that name,
    so ``except aiokafka.errors.X`` around calls to our producer keeps working."""
    ak = pytest.importorskip("aiokafka.errors")
    shared = [
        name
        for name in dir(ak)
        if isinstance(getattr(ak, name), type)
        and issubclass(getattr(ak, name), BaseException)
        and hasattr(errors, name)
    ]
    assert len(shared) > 100
    for name in shared:
        ours, theirs = getattr(errors, name), getattr(ak, name)
        assert issubclass(ours, theirs), name
    for code in range(1, 80):  # every code aiokafka names, by code
        theirs = ak.for_code(code)
        if theirs is not ak.UnknownError:
            assert issubclass(for_code(code), theirs), code
    with pytest.raises(ak.MessageSizeTooLargeError):
        raise RecordTooLargeError("too large")
    with pytest.raises(ak.ProducerFenced):
        raise errors.InvalidProducerEpochError()


def test_without_aiokafka_the_hierarchy_stands_alone() -> None:
    script = (
        "import sys; sys.modules['aiokafka'] = None\n"
        "from aiokafka_lite import errors as e\n"
        "assert e.KafkaError.__mro__[1] is RuntimeError, e.KafkaError.__mro__\n"
        "assert issubclass(e.RecordTooLargeError, e.MessageSizeTooLargeError)\n"
        "assert str(e.KafkaTimeoutError('x')) == 'x'\n"
        "assert not any(c.__module__.startswith('aiokafka.') for c in e.ConfigError.__mro__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
