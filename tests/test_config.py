"""aiokafka_lite.config: defaults, aliases, validation messages and bootstrap parsing."""

from __future__ import annotations

import inspect
import pydoc
import typing
from typing import Any

import msgspec
import pytest

import aiokafka_lite
from aiokafka_lite.config import ProducerConfig, parse_bootstrap
from aiokafka_lite.errors import ConfigError, KafkaError


def test_defaults() -> None:
    cfg = ProducerConfig.from_kwargs()
    assert cfg.acks == "all"
    assert cfg.acks_value == -1
    assert cfg.linger_ms == 5
    assert cfg.batch_size == 16384
    assert cfg.buffer_memory == 32 * 1024 * 1024
    assert cfg.delivery_timeout_ms == 120_000
    assert cfg.request_timeout_ms == 30_000
    assert cfg.max_block_ms == 60_000
    assert cfg.max_in_flight_requests_per_connection == 5
    assert cfg.bootstrap_servers == "localhost:9092"
    assert cfg.enable_idempotence is True  # as current Java clients
    assert cfg.key_serializer is None
    assert cfg.value_serializer is None
    # the direct constructor has the same defaults
    assert ProducerConfig() == cfg


def test_config_is_frozen() -> None:
    cfg = ProducerConfig.from_kwargs()
    with pytest.raises(AttributeError):
        cfg.linger_ms = 10  # type: ignore[misc]


def test_max_batch_size_alias_maps_to_batch_size() -> None:
    assert ProducerConfig.from_kwargs(max_batch_size=1000).batch_size == 1000
    assert ProducerConfig.from_kwargs(batch_size=2000).batch_size == 2000
    with pytest.raises(ConfigError, match="batch_size"):
        ProducerConfig.from_kwargs(max_batch_size=0)


@pytest.mark.parametrize(
    ("acks", "wire"),
    [(0, 0), (1, 1), (-1, -1), ("all", -1), ("-1", -1)],
)
def test_acks_values(acks: Any, wire: int) -> None:
    assert ProducerConfig.from_kwargs(acks=acks).acks_value == wire


def test_other_values_accepted() -> None:
    cfg = ProducerConfig.from_kwargs(
        bootstrap_servers=["a:1", "b:2"],
        client_id="me",
        linger_ms=0,
        batch_size=1,
        request_timeout_ms=1000,
        delivery_timeout_ms=1000,  # == linger_ms + request_timeout_ms: allowed
        key_serializer=str.encode,
        value_serializer=lambda v: v,
        partitioner=lambda key, partitions, available: 0,
    )
    assert cfg.linger_ms == 0
    assert cfg.delivery_timeout_ms == 1000
    assert cfg.key_serializer is str.encode
    assert ProducerConfig.from_kwargs(linger_ms=2.5).linger_ms == 2.5  # float accepted


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"linger_ms": -1}, "linger_ms"),
        ({"linger_ms": -0.5}, "linger_ms"),
        ({"linger_ms": "5"}, "linger_ms"),
        ({"linger_ms": None}, "linger_ms"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": -1}, "batch_size"),
        ({"batch_size": 16384.0}, "batch_size"),
        ({"batch_size": True}, "batch_size"),
        ({"buffer_memory": 10}, "buffer_memory"),
        ({"request_timeout_ms": 0}, "request_timeout_ms"),
        ({"max_block_ms": -1}, "max_block_ms"),
        ({"max_in_flight_requests_per_connection": 0}, "max_in_flight_requests_per_connection"),
        ({"acks": 2}, "acks"),
        ({"acks": "2"}, "acks"),
        ({"acks": "none"}, "acks"),
        ({"acks": True}, "acks"),
        ({"client_id": 5}, "client_id"),
        ({"retries": -1}, "retries"),
        ({"key_serializer": 5}, "key_serializer"),
        ({"value_serializer": "yaml"}, "value_serializer"),
        ({"partitioner": 3}, "partitioner"),
        ({"delivery_timeout_ms": 30_000}, "delivery_timeout_ms"),
        ({"delivery_timeout_ms": 30_004, "linger_ms": 5}, "delivery_timeout_ms"),
        ({"delivery_timeout_ms": 1000, "request_timeout_ms": 1000, "linger_ms": 1}, "delivery"),
        ({"bootstrap_servers": "host:notaport"}, "bootstrap_servers"),
        ({"bootstrap_servers": ""}, "bootstrap_servers"),
        ({"bootstrap_servers": ":9092"}, "bootstrap_servers"),
        ({"bootstrap_servers": 9092}, "bootstrap_servers"),
        ({"bootstrap_servers": ["ok:1", "bad:port"]}, "bootstrap_servers"),
        ({"compression_type": "gzip-ish"}, "compression_type"),
        ({"security_protocol": "TLS"}, "security_protocol"),
        ({"enable_idempotence": True, "acks": 1}, "enable_idempotence"),
        ({"enable_idempotence": True, "retries": 0}, "retries"),
        ({"enable_idempotence": True, "max_in_flight_requests_per_connection": 6}, "in_flight"),
    ],
)
def test_bad_values_raise_config_error_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        ProducerConfig.from_kwargs(**kwargs)
    assert field in str(info.value)


def test_wrong_type_message_is_helpful() -> None:
    with pytest.raises(ConfigError) as info:
        ProducerConfig.from_kwargs(linger_ms="5")
    text = str(info.value)
    assert text.startswith("linger_ms")
    assert "str" in text


@pytest.mark.parametrize(
    ("kwargs", "valid"),
    [
        ({"security_protocol": "SOME"}, "'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'"),
        (
            {"sasl_mechanism": "DIGEST-MD5"},
            "'PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'",
        ),
        ({"acks": 2}, "0, 1, -1, 'all'"),
    ],
)
def test_a_bad_choice_names_the_valid_ones(kwargs: dict[str, Any], valid: str) -> None:
    """As aiokafka's "`security_protocol` should be SSL or PLAINTEXT": the error lists what
    the option takes (aiokafka's own test_producer_arguments asks the same)."""
    with pytest.raises(ConfigError, match=f"^{next(iter(kwargs))}: ") as info:
        ProducerConfig.from_kwargs(**kwargs)
    assert isinstance(info.value, ValueError)
    assert str(info.value).endswith(f"(valid: {valid})")


def test_unknown_option_suggests_the_close_name() -> None:
    with pytest.raises(ConfigError) as info:
        ProducerConfig.from_kwargs(linger=5)
    text = str(info.value)
    assert "'linger'" in text
    assert "did you mean" in text
    assert "'linger_ms'" in text


def test_unknown_option_suggests_the_alias() -> None:
    with pytest.raises(ConfigError, match="did you mean 'max_batch_size'"):
        ProducerConfig.from_kwargs(max_batch_sise=5)


def test_unknown_option_without_a_close_name() -> None:
    with pytest.raises(ConfigError) as info:
        ProducerConfig.from_kwargs(zzzzqqq=1)
    assert "'zzzzqqq'" in str(info.value)
    assert "did you mean" not in str(info.value)


def test_delivery_timeout_message_shows_the_numbers() -> None:
    with pytest.raises(ConfigError) as info:
        ProducerConfig.from_kwargs(delivery_timeout_ms=1000, linger_ms=5, request_timeout_ms=2000)
    text = str(info.value)
    assert "delivery_timeout_ms" in text
    assert "linger_ms" in text
    assert "request_timeout_ms" in text
    assert "1000" in text


def test_config_error_is_a_value_error_and_kafka_error() -> None:
    assert issubclass(ConfigError, ValueError)
    assert issubclass(ConfigError, KafkaError)
    with pytest.raises(ValueError, match="linger_ms"):
        ProducerConfig.from_kwargs(linger_ms=-1)


def test_producer_constructor_validates_without_a_loop() -> None:
    with pytest.raises(ConfigError, match="linger_ms"):
        aiokafka_lite.AIOKafkaProducer(linger_ms=-1)
    with pytest.raises(ConfigError, match="did you mean 'linger_ms'"):
        aiokafka_lite.AIOKafkaProducer(linger=5)


# ---------------------------------------------------------------------------
# the constructor's signature: every option, typed, with its default

# aiokafka's arguments that are no options here (accepted, and change nothing).
AIOKAFKA_NO_OPS = ("loop", "api_version", "sasl_kerberos_service_name", "sasl_kerberos_domain_name")
# Defaults that depend on other options (as Java's do): None in the signature means
# "not given", and the config derives the value.
DERIVED = {"enable_idempotence": True, "delivery_timeout_ms": 120_000}


def _config_defaults() -> dict[str, Any]:
    return {
        f.name: f.default_factory() if f.default is msgspec.NODEFAULT else f.default
        for f in msgspec.structs.fields(ProducerConfig)
    }


def test_constructor_signature_lists_every_option_with_its_default() -> None:
    params = inspect.signature(aiokafka_lite.AIOKafkaProducer).parameters
    *named, rest = params.values()
    assert rest.kind is inspect.Parameter.VAR_KEYWORD  # aliases and dotted names
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in named)
    options = [p.name for p in named if p.name not in AIOKAFKA_NO_OPS]
    # Every option of config.py, in its order (help() reads as the config does).
    assert options == list(ProducerConfig.__struct_fields__)
    defaults = _config_defaults()
    for name in options:
        default = params[name].default
        if name in DERIVED:
            assert default is None, name
            assert defaults[name] == DERIVED[name], name
        elif name == "interceptors":
            assert default == () and defaults[name] == []  # an immutable empty default
        else:
            assert default == defaults[name], (name, default, defaults[name])
            assert type(default) is type(defaults[name]), name


def test_constructor_signature_types_match_the_config() -> None:
    hints = typing.get_type_hints(aiokafka_lite.AIOKafkaProducer.__init__)
    declared = typing.get_type_hints(ProducerConfig)  # without Annotated's bounds
    for name, config_type in declared.items():
        if config_type is Any or typing.get_args(config_type) == (Any,):
            # msgspec has no callable type; the signature says what is taken.
            assert hints[name] is not Any or name == "sasl_oauth_token_provider", name
            continue
        expected = config_type | None if name in DERIVED else config_type
        assert hints[name] == expected, (name, hints[name], expected)


def test_help_shows_the_arguments() -> None:
    text = pydoc.render_doc(aiokafka_lite.AIOKafkaProducer, renderer=pydoc.plaintext)
    # (The annotations are strings: the module has `from __future__ import annotations`.)
    for shown in ("linger_ms: 'float' = 5", """acks: "Literal[0, 1, -1, 'all']" = 'all'""",
                  "enable_idempotence: 'bool | None' = None", "**config: 'Any'"):  # fmt: skip
        assert shown in text, shown


def test_producer_left_at_its_defaults_has_the_config_defaults() -> None:
    cfg = aiokafka_lite.AIOKafkaProducer().config
    assert cfg == msgspec.structs.replace(ProducerConfig(), client_id=cfg.client_id)


def test_constructor_keeps_the_configs_own_rules() -> None:
    producer = aiokafka_lite.AIOKafkaProducer
    # Derived defaults: idempotence turns itself off unless asked for explicitly...
    assert producer(acks=1).config.enable_idempotence is False
    with pytest.raises(ConfigError, match="enable_idempotence=True conflicts with acks=1"):
        producer(acks=1, enable_idempotence=True)
    # ...and delivery_timeout_ms grows to fit, unless given.
    assert producer(request_timeout_ms=200_000).config.delivery_timeout_ms == 200_005
    with pytest.raises(ConfigError, match="delivery_timeout_ms must be >="):
        producer(request_timeout_ms=200_000, delivery_timeout_ms=120_000)
    # An alias sets an option left at its default; both set is an error.
    assert producer(max_batch_size=100).config.batch_size == 100
    with pytest.raises(ConfigError, match="given twice"):
        producer(batch_size=10, max_batch_size=100)
    assert producer(**{"enable.idempotence": False}).config.enable_idempotence is False
    assert producer(interceptors=[Tagger()]).config.interceptors[0].__class__ is Tagger
    assert producer(interceptors=(Tagger(),)).config.interceptors[0].__class__ is Tagger
    for bad in (None, 5):  # still the config's own check, naming the option
        with pytest.raises(ConfigError, match="interceptors"):
            producer(interceptors=bad)  # type: ignore[arg-type]


class Tagger:
    def on_send(self, record: Any) -> Any:
        return record

    def on_acknowledgement(self, metadata: Any, exception: BaseException | None) -> None:
        pass


# ---------------------------------------------------------------------------
# bootstrap parsing


@pytest.mark.parametrize(
    ("servers", "expected"),
    [
        ("localhost:9092", [("localhost", 9092)]),
        ("host", [("host", 9092)]),
        ("a:1,b:2", [("a", 1), ("b", 2)]),
        (" a:1 , b ", [("a", 1), ("b", 9092)]),
        ("a:1,,b:2,", [("a", 1), ("b", 2)]),
        ("[::1]:9092", [("::1", 9092)]),
        ("[fe80::1%eth0]:19092,h:1", [("fe80::1%eth0", 19092), ("h", 1)]),
        ("10.0.0.1:65535", [("10.0.0.1", 65535)]),
        (["a:1", "b"], [("a", 1), ("b", 9092)]),
    ],
)
def test_parse_bootstrap(servers: str | list[str], expected: list[tuple[str, int]]) -> None:
    assert parse_bootstrap(servers) == expected


def test_bracketed_ipv6_without_port_defaults_to_9092() -> None:
    # "a host without port defaults to 9092" holds for an IPv6 literal too
    assert parse_bootstrap("[::1]") == [("::1", 9092)]


@pytest.mark.parametrize(
    "servers",
    [
        "host:notaport",
        "",
        " , ",
        ":9092",
        "host:",
        "host:0",
        "host:65536",
        "host:-1",
        "[]:9092",
        [],
        ["a:1", "b:x"],
    ],
)
def test_parse_bootstrap_rejects(servers: str | list[str]) -> None:
    with pytest.raises(ConfigError, match="bootstrap_servers"):
        parse_bootstrap(servers)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"acks": 1}, "acks"),
        ({"acks": 0}, "acks"),
        ({"retries": 0}, "retries"),
        ({"max_in_flight_requests_per_connection": 10}, "max_in_flight"),
    ],
)
def test_idempotence_turns_itself_off_when_not_asked_for_explicitly(
    kwargs: dict[str, Any], reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("INFO", logger="aiokafka_lite.config"):
        cfg = ProducerConfig.from_kwargs(**kwargs)
    assert cfg.enable_idempotence is False
    assert reason in caplog.text
