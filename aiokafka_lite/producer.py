"""The public producer: aiokafka's ``AIOKafkaProducer`` API over Java's design.

``send()`` is the hot path. Once a topic's partitions are known it never
suspends: it looks the partitions up (one dict get), serializes, picks a
partition, and appends straight into the partition's open batch, returning that
record's delivery future. It awaits only when it must: for metadata of a topic
it has not seen (bounded by ``max_block_ms``), or for ``buffer_memory`` to free
up (same bound).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Generic, Literal

from ._internal import aiokafka_arguments, checks, loop_check
from ._internal.accumulator import RecordAccumulator
from ._internal.aiokafka_client import AiokafkaClientView, AiokafkaInternals
from ._internal.batch_builder import BatchBuilder
from ._internal.client import NetworkClient
from ._internal.compression import get_codec
from ._internal.hand_over import FILLED, NOT_PLAIN, Declined, hand_over
from ._internal.key_value import K, V
from ._internal.metadata import Metadata, wait_on_metadata
from ._internal.partitioner import Partitioner
from ._internal.placement import RecordPartitioner, RecordPlacement
from ._internal.producer_bulk import ProducerBulk
from ._internal.producer_transactions import ProducerTransactions
from ._internal.records import MAX_RECORD_OVERHEAD, Header
from ._internal.runtime import Runtime
from ._internal.sender import Sender
from ._internal.tasks import uncancellable
from ._internal.txn_result import Transaction, TransactionalResult
from .config import ProducerConfig
from .errors import (
    BufferFullError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
    ProducerNotStartedError,
)
from .interceptors import (
    ProducerInterceptor,
    ProducerRecord,
    run_on_acknowledgement,
    run_on_send,
)
from .structs import RecordMetadata

__all__ = ["AIOKafkaProducer", "BatchBuilder", "Transaction"]

log = logging.getLogger("aiokafka_lite.producer")


_NEW, _STARTING, _STARTED, _FAILED, _CLOSING, _CLOSED = range(6)

# send() compares it with the thread id of the producer's loop on every record:
# asyncio.get_running_loop() makes a getpid() syscall (to notice forks) on every call.
_get_ident = threading.get_ident


def _is_default(value: Any, default: Any) -> bool:
    """``value`` is the signature's default (the same object, or an equal one of its type)."""
    return value is default or (type(value) is type(default) and value == default)


def _no_fast_path(topic: Any, key: Any, value: Any) -> Declined:
    """send()'s fast path for a producer that has none: every record takes the general one."""
    return NOT_PLAIN


class AIOKafkaProducer(ProducerTransactions, AiokafkaInternals, ProducerBulk[K, V], Generic[K, V]):
    """An asyncio Kafka producer; every option and its default: docs/configuration.md."""

    # What send()'s loop check compares (see _check_send): set by its first full check.
    _send_loop: Any = loop_check.NotChecked
    # aiokafka's producer numbers its unnamed instances through the module-level name
    # AIOKafkaProducer, which is this class after patch_aiokafka(): keep its counter here
    # so that aiokafka's own producer can still be built (by code holding its class).
    _PRODUCER_CLIENT_ID_SEQUENCE = 0

    def __init__(
        self,
        *,
        bootstrap_servers: str | list[str] = "localhost:9092",
        client_id: str | None = None,
        acks: Literal[0, 1, -1, "all"] = "all",
        linger_ms: float = 5,
        batch_size: int = 16384,
        buffer_memory: int = 32 * 1024 * 1024,
        max_request_size: int = 1024 * 1024,
        max_block_ms: int = 60000,
        request_timeout_ms: int = 30000,
        delivery_timeout_ms: int | None = None,
        retries: int = 2**31 - 1,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        socket_connection_setup_timeout_ms: int = 10000,
        metadata_max_age_ms: int = 300000,
        metadata_max_idle_ms: int = 300000,
        max_in_flight_requests_per_connection: int = 5,
        connections_max_idle_ms: int | None = 540000,
        enable_idempotence: bool | None = None,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        allow_auto_create_topics: bool = True,
        fail_partition_on_error: bool = False,
        compression_type: str | None = None,
        compression_level: int | None = None,
        security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT",
        key_serializer: Callable[[K], bytes | None] | str | None = None,
        value_serializer: Callable[[V], bytes | None] | str | None = None,
        partitioner: Partitioner | None = None,
        interceptors: Sequence[ProducerInterceptor] = (),
        ssl_context: ssl.SSLContext | None = None,
        ssl_cafile: str | None = None,
        ssl_certfile: str | None = None,
        ssl_keyfile: str | None = None,
        ssl_password: str | None = None,
        ssl_check_hostname: bool = True,
        sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] = "PLAIN",
        sasl_plain_username: str | None = None,
        sasl_plain_password: str | None = None,
        sasl_oauth_token_provider: Any = None,
        loop: asyncio.AbstractEventLoop | None = None,
        api_version: str | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        **config: Any,
    ) -> None:
        """Build a producer; nothing connects until :meth:`start`. Each option and why
        its default: docs/configuration.md.

        Every option of :class:`~aiokafka_lite.config.ProducerConfig` is an argument
        here, with its default (tests/test_config.py keeps the two in step), and is
        checked at once: a bad value raises ``ConfigError`` naming it. Two defaults
        depend on other options, as Java's do: ``enable_idempotence=None`` is on unless
        ``acks``, ``retries`` or ``max_in_flight_requests_per_connection`` rule it out
        (then off; set it to ``True`` to make such a conflict an error), and
        ``delivery_timeout_ms=None`` is 120000, or ``linger_ms + request_timeout_ms``
        when that is longer. ``**config`` takes the other spellings: aiokafka's
        ``max_batch_size``, Java's and librdkafka's dotted names
        (``**{"enable.idempotence": False}``). ``loop``, ``api_version`` and the
        Kerberos names are aiokafka's and change nothing here (the versions are
        negotiated per broker; GSSAPI is refused).
        """
        # An argument left at its default is not "given": the config then applies its
        # own rules (an alias may set it; the two derived defaults are computed).
        arguments = locals()  # read first: every argument, and nothing else yet
        config.update(
            (name, value)
            for name, value in tuple(arguments.items())
            if name in _DEFAULTS and not _is_default(value, _DEFAULTS[name])
        )
        aiokafka_arguments.warn_deprecated(loop, api_version)
        aiokafka_arguments.drop_acks_sentinel(config)
        del sasl_kerberos_service_name, sasl_kerberos_domain_name
        cfg = ProducerConfig.from_kwargs(**config).named()
        self._config = cfg
        self._serializing = cfg.key_serializer is not None or cfg.value_serializer is not None
        self._max_block = cfg.max_block_ms / 1000
        self._max_request_size = cfg.max_request_size
        self._batch_size = cfg.batch_size
        codec = get_codec(cfg.compression_type)
        self._compress = None if codec is None else codec.compressor(cfg.compression_level)
        self._codec_id = 0 if codec is None else codec.id
        self._placement = placement = RecordPlacement(cfg)
        # Bound once, so that send() reads them as attributes of its own: the partitioner
        # and the key hash cache for its inline paths, the rest as its own methods.
        self._record_partitioner = placement.partitioner
        self._custom_partitioner = placement.partitioner.custom
        self._hashes = placement.partitioner.hashes
        self._hash_peek = placement.partitioner.hashes.peek
        self._prepare = placement.prepare
        self._place = placement.place
        self._interceptors = tuple(cfg.interceptors)
        # Whether send() has work beyond the plain path: interceptors to run, or
        # a transaction to check. One test per record for the producers without.
        self._wrapped = bool(self._interceptors) or cfg.transactional_id is not None
        self._state = _NEW
        self._txn_result = TransactionalResult(log)  # a commit or abort under way
        self._fatal: KafkaError | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = ""
        self._runtime: Runtime | None = None
        self._starting: asyncio.Future[None] | None = None  # done when start() has ended
        self._stopping: asyncio.Future[None] | None = None  # done when stop() has ended
        # The runtime's parts, bound at start() for the hot path.
        self._client: NetworkClient
        self._metadata: Metadata
        self._acc: RecordAccumulator
        self._sender: Sender
        # send()'s fast path (see send_path), for producers whose records take no
        # serializer, partitioner, interceptor or transaction check: set at start().
        self._fast_append: Callable[[Any, Any, Any], asyncio.Future[RecordMetadata] | Declined]
        self._fast_append = _no_fast_path

    # Not properties: frameworks subclass the producer and keep their own attributes
    # on it (kstreams sets ``self.config = kwargs`` before calling our __init__), so
    # every public name aiokafka's producer lacks is one an instance can overwrite.
    @functools.cached_property
    def config(self) -> ProducerConfig:
        """The checked configuration (read-only: a new producer takes new options)."""
        return self._config

    @property
    def _closed(self) -> bool:
        # aiokafka's flag, read by frameworks (FastStream): set once stop() begins.
        return self._state in (_CLOSING, _CLOSED)

    def __del__(self, _warn: Callable[..., None] = warnings.warn) -> None:
        # As aiokafka: a producer dropped while running holds sockets and
        # undelivered records. (One never started holds nothing: no warning.)
        # Its runtime holds no reference back to it, so it is collected, and the
        # runtime is torn down: no task or socket outlives it.
        if getattr(self, "_state", _NEW) not in (_STARTING, _STARTED, _FAILED):
            return
        _warn(f"Unclosed AIOKafkaProducer {self!r}", ResourceWarning, source=self)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_exception_handler({"producer": self, "message": "Unclosed AIOKafkaProducer"})
        if self._runtime is not None:
            self._runtime.abandon()

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Connect to the cluster and start the sender.

        Calling it again once started (or while starting) waits for that start
        (as in aiokafka); after :meth:`stop` it raises :class:`ProducerClosedError`.
        """
        if self._state in (_STARTED, _FAILED):
            return
        if self._state == _STARTING:
            assert self._starting is not None
            await asyncio.shield(self._starting)
            self._check_running()
            return
        if self._state != _NEW:
            raise ProducerClosedError("start(): the producer is stopped; create a new one")
        self._loop = loop = asyncio.get_running_loop()
        self._loop_thread = threading.current_thread().name
        self._state = _STARTING
        starting = self._starting = loop.create_future()
        try:
            runtime = Runtime(self._config, self._compress, self._codec_id, self._on_fatal)
            self._runtime = runtime
            self._client, self._metadata = runtime.client, runtime.metadata
            self._placement.metadata = runtime.metadata
            self._acc, self._sender = runtime.acc, runtime.sender
            if not (self._wrapped or self._serializing or self._custom_partitioner is not None):
                path = runtime.acc.send_path(self._record_partitioner, self._max_request_size)
                self._fast_append = path.append
            await runtime.open()
        except BaseException as e:
            self._state = _CLOSED
            starting.set_exception(e if isinstance(e, Exception) else ProducerClosedError())
            starting.exception()  # retrieved: start()'s own caller gets it
            raise
        if self._state == _STARTING:  # (stop() may have begun meanwhile)
            self._state = _STARTED
        starting.set_result(None)
        log.info(
            "producer started: %s; config: %s", self._metadata.cluster, self._config.describe()
        )

    def _on_fatal(self, error: KafkaError) -> None:
        self._fatal = error
        if self._state == _STARTED:
            self._state = _FAILED

    def _wakeup(self) -> None:
        if self._runtime is not None:
            self._runtime.wakeup()

    async def stop(self, timeout: float | None = None) -> None:
        """Deliver what is buffered, then close every connection and task.

        Waits at most ``timeout`` seconds (default: ``delivery_timeout_ms``,
        within which every record resolves anyway); records still undelivered
        then fail with :class:`KafkaTimeoutError`. Sends waiting for metadata or
        buffer memory fail with :class:`ProducerClosedError` as soon as it
        begins. Called during :meth:`start`, it waits for start to end, then
        stops. Cancelled (a caller's timeout), it stops at once: every record
        still pending fails, and tasks and connections are closed before the
        cancellation propagates. Safe to call more than once: a second call
        waits for the first.
        """
        if self._state == _NEW:
            self._state = _CLOSED
            return
        self._check_loop()
        if self._stopping is not None:
            await uncancellable(asyncio.wait({self._stopping}))
            return
        loop = asyncio.get_running_loop()
        stopping = self._stopping = loop.create_future()
        try:
            if self._state == _STARTING:
                self._state = _CLOSING  # no send may slip in once start() has ended
                assert self._starting is not None
                await asyncio.wait({self._starting})
            if self._state == _CLOSED or self._runtime is None:  # start() failed
                return
            self._state = _CLOSING
            if timeout is None:
                timeout = self._config.delivery_timeout_ms / 1000
            try:
                await self._runtime.close(timeout, self._txn_result.handle)
            finally:
                view = self.__dict__.get("client")  # opened only if a framework used it
                if isinstance(view, AiokafkaClientView):
                    await uncancellable(view.close())
        finally:
            self._state = _CLOSED
            stopping.set_result(None)

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered now, and wait until all of it is delivered or failed.

        Before :meth:`start` and after :meth:`stop` nothing is buffered: it returns at once.
        """
        if self._state != _STARTED:
            if self._state == _FAILED and self._fatal is not None:
                raise self._fatal
            return
        self._check_loop()
        self._acc.begin_flush()
        self._wakeup()
        try:
            async with asyncio.timeout(timeout):
                await self._acc.await_flush_completion()
        except TimeoutError:
            raise KafkaTimeoutError(f"flush did not complete within {timeout}s") from None
        finally:
            self._acc.end_flush()

    async def __aenter__(self) -> AIOKafkaProducer[K, V]:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _check_loop(self) -> None:
        """Raise :class:`WrongEventLoopError` unless called in the loop that started us.

        Used from another loop, our futures and timers would never fire there
        (or fire in a loop nobody awaits): fail at once instead of hanging.
        """
        current = loop_check.running_loop()
        if current is not self._loop:
            raise loop_check.wrong_loop(self._loop, self._loop_thread, current)

    def _check_running(self) -> None:
        if self._state == _STARTED:
            self._check_loop()
            return
        if self._state == _NEW:
            raise ProducerNotStartedError(
                "the producer is not started: await producer.start() first"
            )
        if self._state == _STARTING:
            raise ProducerNotStartedError("the producer is starting: await its start() first")
        if self._state == _FAILED and self._fatal is not None:
            raise self._fatal
        raise ProducerClosedError("the producer is stopped; records can no longer be sent")

    def _check_transactional_send(self) -> None:
        txn = self._sender.transactions if self._state == _STARTED else None
        if txn is not None:
            txn.check_can_send()

    def metrics(self) -> dict[str, float]:
        """A snapshot of the producer's metrics, under Java's names (see
        :data:`aiokafka_lite.metrics.METRIC_DOCS`): rates, averages and maxima over the
        last 30 s, totals since start. Empty before :meth:`start`."""
        # (No runtime: never started, or its start() failed before making one.)
        return {} if self._runtime is None else self._runtime.metrics()

    # -- sending -------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: V | None = None,
        key: K | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Buffer one record; return the future of its delivery.

        Awaits only for unknown topic metadata or a full buffer, each for at
        most ``max_block_ms``, and once after the caller's records filled a
        batch (unless the event loop turned less than a millisecond ago), so
        that the sender sends it while a loop of sends goes on.
        Errors about this record (too large, bad partition, serializer failure)
        raise here and affect nothing else.
        """
        if self._state != _STARTED or self._send_loop._thread_id != _get_ident():
            self._check_send()
        if partition is None and timestamp_ms is None and headers is None:
            found = self._fast_append(topic, key, value)
            if found:  # (else NOT_PLAIN or FILLED: nothing was appended)
                return found
        else:
            found = NOT_PLAIN
        if found is FILLED or self._acc.filler is not None:
            await hand_over(self._acc, found is FILLED, self._sender.wakeup)
            if self._state != _STARTED:  # stopped or failed in its yield
                self._check_running()
        if self._wrapped:  # a transaction to check, or interceptors to run
            self._check_transactional_send()
            if self._interceptors:
                topic, value, key, partition, timestamp_ms, headers = run_on_send(
                    self._interceptors,
                    ProducerRecord(topic, value, key, partition, timestamp_ms, headers),
                )
        try:
            try:  # (_known_partitions, inline: this is every general-path send)
                parts = self._metadata.partitions_by_topic.get(topic)
            except TypeError:  # unhashable: _wait_on_metadata's check names the problem
                parts = None
            if parts is None:
                parts = await self._wait_on_metadata(topic, time.monotonic() + self._max_block)
            # Untyped locals from here: serializers turn K and V into bytes.
            k: Any = key
            v: Any = value
            if (
                self._serializing
                or headers is not None
                or (k is not None and type(k) is not bytes)
                or (v is not None and type(v) is not bytes)
            ):
                k, v, size, headers = self._prepare(topic, k, v, headers)
            else:  # plain bytes: the common case, sized inline
                size = MAX_RECORD_OVERHEAD
                if k is not None:
                    size += len(k)
                if v is not None:
                    size += len(v)
                if size > self._max_request_size:
                    self._prepare(topic, k, v, headers)  # raises, naming the topic
                headers = None
            keyless: RecordPartitioner | None = None
            if partition is None and self._custom_partitioner is None:
                if k is not None:  # keyed: the common case, the hash cache's hit path inline
                    h = self._hash_peek(k)
                    partition = (self._hashes.hash(k) if h is None else h) % len(parts)
                else:  # the accumulator places it, as Java's does
                    keyless = self._record_partitioner
                    partition = -1
            else:
                partition = self._place(topic, k, parts, size, partition)
            if timestamp_ms is None:  # (the common case, inline)
                ts = int(time.time() * 1000)
            else:
                ts = checks.record_timestamp(timestamp_ms, topic)
            fut = await self._acc.append(
                topic, partition, ts, k, v, headers, size, self._max_block, keyless
            )
        except Exception as e:
            if self._interceptors:
                run_on_acknowledgement(self._interceptors, None, e)
            raise
        if self._interceptors:
            fut.add_done_callback(self._acknowledge)
        return fut

    def _check_sending(self) -> None:
        """send()'s check, for the bulk calls: a compare while started in the loop that
        passed the full check, else the full check."""
        if self._state != _STARTED or self._send_loop._thread_id != _get_ident():
            self._check_send()

    def _check_send(self) -> None:
        """send()'s full check (raises unless started and in its loop), then what the
        per-record check compares from now on (see :mod:`aiokafka_lite._internal.loop_check`)."""
        self._check_running()
        assert self._loop is not None  # started
        loop_check.remember(self, self._loop)

    def _acknowledge(self, fut: asyncio.Future[RecordMetadata]) -> None:
        if fut.cancelled():
            return
        exc = fut.exception()
        run_on_acknowledgement(self._interceptors, None if exc else fut.result(), exc)

    async def send_and_wait(
        self,
        topic: str,
        value: V | None = None,
        key: K | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> RecordMetadata:
        """Send one record and wait for its delivery."""
        if (
            partition is None
            and timestamp_ms is None
            and headers is None
            and self._state == _STARTED
            and self._send_loop._thread_id == _get_ident()
        ):  # send()'s own first steps, without a second coroutine per record
            fast = self._fast_append(topic, key, value)
            if fast:  # (a full batch: send() below starts the next one)
                return await fast
        fut = await self.send(topic, value, key, partition, timestamp_ms, headers)
        return await fut

    def try_send(
        self,
        topic: str,
        value: V | None = None,
        key: K | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Sequence[Header] | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Like :meth:`send`, but never waits: raises :class:`BufferFullError` instead.

        The topic's partitions must already be known (after a ``send`` to it or
        ``partitions_for``); otherwise a metadata fetch is started and
        :class:`BufferFullError` is not what you get: :class:`KafkaError` says so.
        """
        self._check_running()
        self._check_transactional_send()
        parts = self._known_partitions(topic)
        if parts is None:
            self._metadata.add_topic(checks.check_topic(topic))
            self._wakeup()
            raise KafkaError(
                f"partitions of {topic!r} are not known yet: await send() or "
                "partitions_for() once before using try_send()"
            )
        key_bytes, value_bytes, size, headers = self._prepare(topic, key, value, headers)
        keyless = None
        if partition is None and key_bytes is None and self._custom_partitioner is None:
            keyless, partition = self._record_partitioner, -1  # the accumulator places it
        else:
            partition = self._place(topic, key_bytes, parts, size, partition)
        ts = checks.record_timestamp(timestamp_ms, topic)
        fut = self._acc.try_append(
            topic, partition, ts, key_bytes, value_bytes, headers, size, keyless
        )
        if fut is None:
            raise BufferFullError(
                f"buffer_memory ({self._acc.limit} bytes) is full; record for {topic!r} not sent"
            )
        return fut

    def _known_partitions(self, topic: str) -> tuple[Any, ...] | None:
        try:
            return self._metadata.partitions_by_topic.get(topic)
        except TypeError:  # unhashable: _wait_on_metadata's check names the problem
            return None

    async def _wait_on_metadata(self, topic: str, deadline: float) -> tuple[Any, ...]:
        """Java's waitOnMetadata: until ``topic``'s partitions are known, or ``deadline``."""
        checks.check_topic(topic)
        self._check_running()
        return await wait_on_metadata(
            self._metadata,
            topic,
            deadline,
            self._config.max_block_ms,
            self._wakeup,
            self._check_running,
        )

    async def partitions_for(self, topic: str) -> set[int]:
        """The partition ids of ``topic`` (fetching its metadata if needed)."""
        self._check_running()
        parts = self._known_partitions(topic)
        if parts is None:
            parts = await self._wait_on_metadata(topic, time.monotonic() + self._max_block)
        return set(range(len(parts)))


# The constructor's defaults of the configuration options (the arguments that are
# ProducerConfig fields): an argument equal to its default was not given.
_DEFAULTS: dict[str, Any] = {
    name: default
    for name, default in (AIOKafkaProducer.__init__.__kwdefaults__ or {}).items()
    if name in ProducerConfig.__struct_fields__
}
