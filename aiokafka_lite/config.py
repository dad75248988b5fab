"""Producer configuration: one validated, immutable object.

Field names are aiokafka's constructor names; defaults follow the current Java
client where the two differ (see docs/migration.md). Validation is msgspec's:
each field's type and range is declared once here, and a bad value raises
:class:`~aiokafka_lite.errors.ConfigError` naming the field.
"""

from __future__ import annotations

import difflib
import itertools
import logging
import math
from typing import Annotated, Any, Literal, get_args, get_origin

import msgspec

from . import security, serializers
from ._internal.compression import get_codec
from .errors import ConfigError
from .interceptors import ProducerInterceptor

__all__ = ["ProducerConfig", "parse_bootstrap"]

log = logging.getLogger("aiokafka_lite.config")

# Numbers the producers of this process that were given no client_id (see named()).
_producer_ids = itertools.count(1)

# Bounds: a value carried by a protocol field is bounded by that field (int32
# timeouts, int16-length strings); the others as Java declares them: ``int``
# (delivery.timeout.ms, retries, in-flight) or ``long`` (the other durations,
# buffer.memory), so a Java config with Long.MAX_VALUE ("for ever") still works.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
STRING_MAX_BYTES = 2**15 - 1  # int16 length prefix
_Ms = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
_PositiveMs = Annotated[int, msgspec.Meta(ge=1, le=INT64_MAX)]
_Int32Ms = Annotated[int, msgspec.Meta(ge=1, le=INT32_MAX)]

# aiokafka accepts ``max_batch_size``; Java says ``batch.size``. Both map here.
# Dotted Java names map by replacing "." with "_"; these are the exceptions,
# mostly librdkafka's own names, so a confluent-kafka config can be pasted.
_ALIASES = {
    "max_batch_size": "batch_size",
    "queue_buffering_max_ms": "linger_ms",
    "message_max_bytes": "max_request_size",
    "message_timeout_ms": "delivery_timeout_ms",
    "compression_codec": "compression_type",
    "compression_gzip_level": "compression_level",
    "compression_lz4_level": "compression_level",
    "compression_zstd_level": "compression_level",
    "partitioner_class": "partitioner",
    # Security: librdkafka's names (Java's ssl.truststore/keystore are JKS/PKCS12
    # files, which Python's ssl module cannot load, so they have no alias).
    "ssl_ca_location": "ssl_cafile",
    "ssl_certificate_location": "ssl_certfile",
    "ssl_key_location": "ssl_keyfile",
    "ssl_key_password": "ssl_password",
    "sasl_mechanisms": "sasl_mechanism",
    "sasl_username": "sasl_plain_username",
    "sasl_password": "sasl_plain_password",
}
# Options whose value should never reach a log line.
SECRET_FIELDS: frozenset[str] = frozenset(
    {"ssl_password", "sasl_plain_password", "sasl_oauth_token_provider"}
)


class ProducerConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    bootstrap_servers: str | list[str] = "localhost:9092"
    client_id: str | None = None
    acks: Literal[0, 1, -1, "all"] = "all"
    linger_ms: Annotated[float, msgspec.Meta(ge=0, le=INT64_MAX)] = 5
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=1 << 30)] = 16384
    # A small record starting a batch counts ~1.4 KB in either build (its bytes, its
    # future, the batch's objects): 4096 leaves room for it and the next few.
    buffer_memory: Annotated[int, msgspec.Meta(ge=4096, le=INT64_MAX)] = 32 * 1024 * 1024
    # A request frame's size prefix is an int32.
    max_request_size: Annotated[int, msgspec.Meta(ge=1, le=INT32_MAX)] = 1024 * 1024
    max_block_ms: _Ms = 60000
    request_timeout_ms: _Int32Ms = 30000  # Produce's int32 timeout_ms
    delivery_timeout_ms: _Int32Ms = 120000
    retries: Annotated[int, msgspec.Meta(ge=0, le=INT32_MAX)] = INT32_MAX
    retry_backoff_ms: _Ms = 100
    retry_backoff_max_ms: _Ms = 1000
    reconnect_backoff_ms: _Ms = 50
    reconnect_backoff_max_ms: _Ms = 1000
    socket_connection_setup_timeout_ms: _PositiveMs = 10000
    metadata_max_age_ms: _PositiveMs = 300000
    metadata_max_idle_ms: _PositiveMs = 300000
    max_in_flight_requests_per_connection: Annotated[int, msgspec.Meta(ge=1, le=INT32_MAX)] = 5
    connections_max_idle_ms: _PositiveMs | None = 540000
    enable_idempotence: bool = True
    transactional_id: str | None = None
    transaction_timeout_ms: _Int32Ms = 60000  # InitProducerId's int32
    allow_auto_create_topics: bool = True
    fail_partition_on_error: bool = False
    # A plain str: get_codec() checks it and suggests the nearest codec name.
    compression_type: str | None = None
    compression_level: int | None = None
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    # Callables are checked by hand below: msgspec has no "callable" type.
    key_serializer: Any = None
    value_serializer: Any = None
    partitioner: Any = None
    interceptors: list[Any] = []
    ssl_context: Any = None  # an ssl.SSLContext; checked in security.check_config
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: str | None = None
    ssl_check_hostname: bool = True
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] = "PLAIN"
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = None
    sasl_oauth_token_provider: Any = None

    def __post_init__(self) -> None:
        for name in ("key_serializer", "value_serializer"):
            try:
                serializers.resolve(getattr(self, name))
            except KeyError:
                raise ConfigError(
                    f"{name}: expected a callable or 'bytes', 'str', 'json' or 'msgpack', "
                    f"got {getattr(self, name)!r}"
                ) from None
        for interceptor in self.interceptors:
            if not isinstance(interceptor, ProducerInterceptor):
                raise ConfigError(
                    f"interceptors: {interceptor!r} needs on_send(record) and "
                    "on_acknowledgement(metadata, exception) methods"
                )
        if self.partitioner is not None and not callable(self.partitioner):
            raise ConfigError(
                f"partitioner: expected a callable, got {type(self.partitioner).__name__}"
            )
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ConfigError(
                "delivery_timeout_ms must be >= linger_ms + request_timeout_ms "
                f"({self.delivery_timeout_ms} < {self.linger_ms} + {self.request_timeout_ms})"
            )
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigError("retry_backoff_max_ms must be >= retry_backoff_ms")
        if self.reconnect_backoff_max_ms < self.reconnect_backoff_ms:
            raise ConfigError("reconnect_backoff_max_ms must be >= reconnect_backoff_ms")
        if self.enable_idempotence:
            _check_idempotence(self)
        elif self.transactional_id is not None:
            raise ConfigError(
                "transactional_id requires enable_idempotence=True (transactions are built "
                "on the idempotent producer's id, epoch and sequence numbers)"
            )
        if self.transactional_id == "":
            raise ConfigError("transactional_id: must be a non-empty string (or None)")
        _check_wire_string("client_id", self.client_id)
        _check_wire_string("transactional_id", self.transactional_id)
        codec = get_codec(self.compression_type)  # raises naming the codec or its extra
        if codec is None:
            if self.compression_level is not None:
                raise ConfigError("compression_level is set but compression_type is not")
        else:
            codec.check_level(self.compression_level)
        parse_bootstrap(self.bootstrap_servers)
        security.check_config(self)

    def __repr__(self) -> str:
        # msgspec's default repr would show passwords.
        return f"ProducerConfig({self.describe()})"

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        # msgspec's would hand rich (pretty printers, rich logging) the passwords.
        return [
            (
                name,
                "[hidden]"
                if name in SECRET_FIELDS and getattr(self, name) is not None
                else getattr(self, name),
            )
            for name in self.__struct_fields__
        ]

    def describe(self) -> str:
        """The effective configuration, one ``name=value`` per option, secrets masked."""
        items = []
        for name in self.__struct_fields__:
            value = getattr(self, name)
            shown = "[hidden]" if name in SECRET_FIELDS and value is not None else repr(value)
            items.append(f"{name}={shown}")
        return ", ".join(items)

    @property
    def acks_value(self) -> int:
        """acks as the wire's int16: 0, 1, or -1 for "all"."""
        return -1 if self.acks == "all" else int(self.acks)

    def named(self) -> ProducerConfig:
        """This config with a ``client_id``: as Java, an unnamed producer still gets one, so
        that broker logs and quotas can tell producers apart (after its transactional id
        if any, else numbered as Java's producer-1, producer-2, ...)."""
        if self.client_id is not None:
            return self
        suffix = self.transactional_id or str(next(_producer_ids))
        return msgspec.structs.replace(self, client_id=f"aiokafka-lite-producer-{suffix}")

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> ProducerConfig:
        """Build from aiokafka-style keyword arguments, naming any bad field."""
        data: dict[str, Any] = {}
        given_as: dict[str, str] = {}
        for key, value in kwargs.items():
            name, value = _translate(key, value)
            if name not in cls.__struct_fields__:
                known = list(cls.__struct_fields__) + list(_ALIASES)
                hint = difflib.get_close_matches(key.replace(".", "_"), known, n=1)
                suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
                raise ConfigError(f"unknown producer option {key!r}{suggestion}")
            if name in data:
                raise ConfigError(
                    f"option {name!r} is given twice: as {given_as[name]!r} and as {key!r}"
                )
            data[name] = value
            given_as[name] = key
        _as_aiokafka_does(data, given_as)
        if "enable_idempotence" not in data and data.get("transactional_id") is None:
            # As Java: idempotence is the default, but options that rule it out
            # (set explicitly) turn it off instead of failing. A transactional
            # producer needs it, so there a conflict fails in _check_idempotence.
            conflict = _idempotence_conflict(data)
            if conflict:
                log.info("enable_idempotence is off because %s", conflict)
                data["enable_idempotence"] = False
        try:
            return msgspec.convert(data, cls, strict=True)
        except msgspec.ValidationError as e:
            # msgspec wraps what __post_init__ raised: keep our own, more precise class.
            original = e.__cause__ or e.__context__
            if isinstance(original, ConfigError):
                raise original from None
            raise ConfigError(_describe(e, cls)) from None


# One line per option for the configuration reference, generated from these at every docs
# build (docs/hooks/reference.py; tests/test_docs_reference.py checks it lists every option).
FIELD_DOCS: dict[str, str] = {
    "bootstrap_servers": "`host:port` list (string with commas, or a list) to bootstrap from",
    "client_id": (
        "sent in every request header; shows up in broker logs and quotas (unset: the "
        "producer calls itself `aiokafka-lite-producer-N`, or `-<transactional_id>`, as Java)"
    ),
    "acks": "`0`, `1`, or `all`/`-1`: replicas that must have the record before success",
    "linger_ms": "how long a batch may wait for more records before it is sent",
    "batch_size": "bytes per partition batch before it is sent (aiokafka: `max_batch_size`)",
    "buffer_memory": "bytes of records buffered in all (each counts its encoded size plus what"
    " its future and bookkeeping hold, 212 B with the compiled modules, 300 B without, and each"
    " batch ~1 KB); `send()` waits when it is used up; at least 4096",
    "max_request_size": "largest Produce request (and so largest record) in bytes",
    "max_block_ms": "longest `send()` waits for metadata or buffer space, then KafkaTimeoutError",
    "request_timeout_ms": "longest wait for a broker's answer before the connection is dropped",
    "delivery_timeout_ms": "upper bound from `send()` to the record's result, retries included",
    "retries": "retries of a retriable failure (bounded by `delivery_timeout_ms` anyway)",
    "retry_backoff_ms": "first backoff before a retry; doubles per attempt, with jitter",
    "retry_backoff_max_ms": "cap of the retry backoff",
    "reconnect_backoff_ms": "first backoff before reconnecting to a broker; doubles, with jitter",
    "reconnect_backoff_max_ms": "cap of the reconnect backoff",
    "socket_connection_setup_timeout_ms": "longest a TCP connect plus ApiVersions may take",
    "metadata_max_age_ms": "metadata is refreshed at least this often",
    "metadata_max_idle_ms": "a topic not sent to for this long is dropped from metadata requests",
    "max_in_flight_requests_per_connection": "pipelined requests per broker connection",
    "connections_max_idle_ms": "idle connections are closed after this long (`None`: never)",
    "enable_idempotence": "producer id + sequence numbers: no duplicates or reordering on"
    " retry (turned off by itself when `acks`, `retries` or in-flight settings rule it out)",
    "transactional_id": "enables transactions (`begin_transaction()` ... `commit_transaction()`);"
    " stable across restarts so the broker can fence older instances; needs idempotence",
    "transaction_timeout_ms": "the coordinator aborts a transaction left open longer than this",
    "allow_auto_create_topics": "let the broker create a topic on first metadata request",
    "fail_partition_on_error": "when a record fails for good, fail the records queued or in"
    " flight behind it in its partition too, so the partition has no gap",
    "compression_type": "`None`/`'none'`, `'gzip'`, `'snappy'`, `'lz4'` or `'zstd'` (codec"
    " libraries: extras `snappy`, `lz4`, `zstd`)",
    "compression_level": "codec level; `None` means the codec's documented default (gzip 6,"
    " lz4 9 = fast mode, zstd 3; snappy has none), as Java's",
    "security_protocol": "`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL`",
    "key_serializer": "callable turning a key into bytes, or `'str'`, `'json'`, `'msgpack'`,"
    " `'bytes'` (default: keys must be bytes)",
    "value_serializer": "callable turning a value into bytes, or a name as for `key_serializer`"
    " (default: values must be bytes)",
    "partitioner": "callable `(key_bytes, all_partitions, available) -> partition`",
    "interceptors": "objects with `on_send(record)` and `on_acknowledgement(metadata,"
    " exception)` (Java's ProducerInterceptor); their errors are logged, never raised",
    "ssl_context": "an `ssl.SSLContext` for `SSL`/`SASL_SSL` (else one is built from the"
    " `ssl_*` files, or the system's CAs)",
    "ssl_cafile": "PEM file of the CA(s) to trust (librdkafka: `ssl.ca.location`)",
    "ssl_certfile": "PEM client certificate, for brokers that require one",
    "ssl_keyfile": "PEM private key of `ssl_certfile`",
    "ssl_password": "password of `ssl_keyfile`; never logged",
    "ssl_check_hostname": "check that the broker's certificate names the host connected to",
    "sasl_mechanism": "`PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512` or `OAUTHBEARER`",
    "sasl_plain_username": "user name for PLAIN and SCRAM (librdkafka: `sasl.username`)",
    "sasl_plain_password": "password for PLAIN and SCRAM; never logged",
    "sasl_oauth_token_provider": "OAUTHBEARER token source: an object with a (sync or async)"
    " `token()` method, as aiokafka's, or a callable; returns a str or an `OAuthToken`",
}


def _translate(key: str, value: Any) -> tuple[str, Any]:
    """Map an aiokafka, Java (dotted) or librdkafka option name to ours."""
    name = key.replace(".", "_")
    if name == "queue_buffering_max_kbytes":  # librdkafka counts KiB
        return "buffer_memory", value * 1024 if isinstance(value, int) else value
    if name in ("bootstrap_servers", "metadata_broker_list"):
        return "bootstrap_servers", value
    if name == "acks" and value in ("0", "1", "-1"):  # as written in property files
        return "acks", int(value)
    if name == "security_protocol" and isinstance(value, str):  # librdkafka takes lower case
        return name, value.upper()
    if _ALIASES.get(name, name) == "sasl_mechanism" and value == "GSSAPI":
        raise ConfigError(
            f"{key}='GSSAPI': Kerberos is not supported by aiokafka_lite; use 'PLAIN', "
            "'SCRAM-SHA-256', 'SCRAM-SHA-512' or 'OAUTHBEARER'"
        )
    if name == "ssl_endpoint_identification_algorithm":
        if not isinstance(value, str) or value.lower() not in ("https", "none", ""):
            raise ConfigError(f"{key}: expected 'https' or 'none', got {value!r}")
        return "ssl_check_hostname", value.lower() == "https"
    if "." in key and isinstance(value, str):
        # Dotted configs often come from property files, where all values are strings.
        if value.lstrip("-").isdigit():
            value = int(value)
        elif value in ("true", "false"):
            value = value == "true"
    return _ALIASES.get(name, name), value


def _as_aiokafka_does(data: dict[str, Any], given_as: dict[str, str]) -> None:
    """Combinations aiokafka accepts and code written for it passes (FastStream does)."""
    if (
        data.get("transactional_id") is not None
        and data.get("enable_idempotence") is False
        and given_as.get("enable_idempotence") == "enable_idempotence"
    ):
        # aiokafka turns idempotence on for a transactional producer whatever was
        # asked; under Java's name (enable.idempotence) it is refused, as Java does.
        log.info("enable_idempotence is on: a transactional producer is idempotent")
        data["enable_idempotence"] = True
    timeout = data.get("request_timeout_ms")
    if "delivery_timeout_ms" not in data and isinstance(timeout, int):
        # delivery_timeout_ms is ours (not aiokafka's): when it is not given, it grows
        # to fit a long request_timeout_ms instead of refusing it.
        linger = data.get("linger_ms", 5)
        if isinstance(linger, int | float):
            grown = max(120_000, timeout + math.ceil(linger))
            data["delivery_timeout_ms"] = min(grown, INT32_MAX)  # never past its own bound


def _idempotence_conflict(data: dict[str, Any]) -> str | None:
    acks = data.get("acks", "all")
    if acks not in ("all", -1):
        return f"acks={acks!r} (it needs acks='all')"
    in_flight = data.get("max_in_flight_requests_per_connection", 5)
    if isinstance(in_flight, int) and in_flight > 5:
        return "max_in_flight_requests_per_connection > 5"
    if data.get("retries", 1) == 0:
        return "retries=0"
    return None


def _check_idempotence(cfg: ProducerConfig) -> None:
    problem = _idempotence_conflict(
        {
            "acks": cfg.acks,
            "max_in_flight_requests_per_connection": cfg.max_in_flight_requests_per_connection,
            "retries": cfg.retries,
        }
    )
    if problem:
        raise ConfigError(f"enable_idempotence=True conflicts with {problem}")


def _check_wire_string(name: str, value: str | None) -> None:
    """A protocol string: UTF-8 with an int16 length prefix."""
    if value is None:
        return
    try:
        size = len(value.encode())
    except UnicodeEncodeError as e:
        raise ConfigError(
            f"{name}: {value[:40]!r} cannot be encoded as UTF-8 ({e.reason})"
        ) from None
    if size > STRING_MAX_BYTES:
        raise ConfigError(
            f"{name}: {size} bytes of UTF-8; the protocol carries at most {STRING_MAX_BYTES}"
        )


def _describe(e: msgspec.ValidationError, cls: type[msgspec.Struct]) -> str:
    # msgspec says "Expected `int` >= 0, got -1 - at `$.linger_ms`"; lead with the field.
    # For a choice among values ("Invalid enum value 'SOME'") it does not say which are
    # valid: name them, as aiokafka does for security_protocol.
    text = str(e)
    if " - at `$." in text:
        message, _, path = text.rpartition(" - at `$.")
        field = path.rstrip("`")
        if message.startswith("Invalid enum value"):
            choices = _literal_choices(cls, field)
            if choices:
                message += f" (valid: {', '.join(repr(c) for c in choices)})"
        return f"{field}: {message}"
    return text


def _literal_choices(cls: type[msgspec.Struct], field: str) -> tuple[Any, ...]:
    """The values a ``Literal[...]`` field of ``cls`` takes (none for another type)."""
    for info in msgspec.structs.fields(cls):
        if info.name == field:
            hint = info.type
            return tuple(get_args(hint)) if get_origin(hint) is Literal else ()
    return ()


def parse_bootstrap(servers: str | list[str]) -> list[tuple[str, int]]:
    """Parse "host:port,host2:port" or a list of them; the default port is 9092."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out: list[tuple[str, int]] = []
    for item in items:
        item = item.strip()
        if item:
            out.append(_parse_address(item))
    if not out:
        raise ConfigError("bootstrap_servers: no broker address given")
    return out


def _parse_address(item: str) -> tuple[str, int]:
    if item.startswith("["):  # [IPv6] or [IPv6]:port
        host, _, rest = item[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ("9092" if not rest else "?")
    elif item.count(":") > 1:  # a bare IPv6 address, no port
        host, port = item, "9092"
    else:
        host, sep, port = item.rpartition(":")
        if not sep:
            host, port = item, "9092"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"bootstrap_servers: cannot parse {item!r} as host:port")
    return host, int(port)
