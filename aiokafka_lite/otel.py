"""OpenTelemetry for the producer: a span per send, W3C trace context in record headers,
and the producer's metrics as observable instruments. Needs the ``otel`` extra
(``opentelemetry-api``; configure an SDK as usual)::

    from aiokafka_lite.otel import instrument

    producer = AIOKafkaProducer(bootstrap_servers=...)
    instrument(producer)          # global tracer/meter providers and propagator
    await producer.start()

Tracing: every ``send()`` (and so ``send_and_wait``) starts a PRODUCER
span ``send <topic>``, a child of the caller's current span, with the messaging semantic
conventions' attributes (``messaging.system=kafka``, ``messaging.operation.type=send``,
``messaging.destination.name``, and on delivery ``messaging.destination.partition.id`` and
``messaging.kafka.offset``). The span's context is injected into the record's headers
through the configured propagator (by default W3C ``traceparent``, plus ``baggage`` if
set), so a consumer continues the trace. The span ends when the record is delivered, or
with an ERROR status and the exception recorded when it fails. The bulk paths
(``send_many``, ``send_batch``) are not traced per record.

This wraps ``send`` on the producer instance rather than being a
:class:`~aiokafka_lite.interceptors.ProducerInterceptor`: an interceptor's
``on_acknowledgement`` is not told which record it is about, so it could not end the
right span (acknowledgements of different partitions come back in any order).

Metrics: each entry of :meth:`AIOKafkaProducer.metrics` becomes an observable instrument
named ``kafka.producer.<name with _ for ->`` (``kafka.producer.record_send_rate``, ...):
``*-total`` ones as monotonic counters, the rest as gauges; read on the producer's event
loop at each collection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

try:
    from opentelemetry import metrics, propagate, trace
    from opentelemetry.context import Context
    from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
    from opentelemetry.propagators.textmap import TextMapPropagator
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider
except ImportError as e:  # without the extra (tests/test_otel.py shows the message)
    raise ImportError(
        'aiokafka_lite.otel needs OpenTelemetry: pip install "aiokafka-lite[otel]" '
        '(or, in a clone of the repository, pip install -e ".[otel]")'
    ) from e

from ._internal.records import Header
from ._version import __version__
from .metrics import METRIC_DOCS
from .producer import AIOKafkaProducer
from .structs import RecordMetadata

__all__ = ["Instrumentation", "instrument"]

_SCOPE = "aiokafka_lite"
_SNAPSHOT_TIMEOUT_S = 1.0
_SNAPSHOT_MAX_AGE_S = 0.5  # one collection reads every instrument: one snapshot serves all


class Instrumentation:
    """What :func:`instrument` set up on one producer; :meth:`uninstrument` undoes it."""

    def __init__(self, producer: AIOKafkaProducer[Any, Any]) -> None:
        self._producer = producer
        # The instance's own send before tracing (interceptors and transactions
        # put one there), restored by uninstrument(); None: the class's.
        self._untraced: Any = None
        self._traced = False
        self._snapshot: dict[str, float] = {}
        self._snapshot_at = -1.0

    # -- tracing ---------------------------------------------------------------------------

    def trace_sends(
        self, tracer_provider: TracerProvider | None, propagator: TextMapPropagator | None
    ) -> None:
        producer = self._producer
        tracer = trace.get_tracer(_SCOPE, __version__, tracer_provider=tracer_provider)
        inject = propagate.inject if propagator is None else propagator.inject
        untraced = producer.send  # bound: the plain or the intercepted send
        self._untraced = vars(producer).get("send")
        client_id = producer._config.client_id  # config may be a subclass's own

        async def send(
            topic: str,
            value: Any = None,
            key: Any = None,
            partition: int | None = None,
            timestamp_ms: int | None = None,
            headers: Sequence[Header] | None = None,
        ) -> asyncio.Future[RecordMetadata]:
            attributes: dict[str, Any] = {
                "messaging.system": "kafka",
                "messaging.operation.type": "send",
                "messaging.operation.name": "send",
                "messaging.destination.name": topic,
            }
            if client_id:
                attributes["messaging.client.id"] = client_id
            if isinstance(key, str):
                attributes["messaging.kafka.message.key"] = key
            if value is None:
                attributes["messaging.kafka.message.tombstone"] = True
            span = tracer.start_span(f"send {topic}", kind=SpanKind.PRODUCER, attributes=attributes)
            carrier: dict[str, str] = {}
            inject(carrier, context=trace.set_span_in_context(span, Context()))
            traced = [*(headers or ()), *((k, v.encode()) for k, v in carrier.items())]
            try:
                fut = await untraced(topic, value, key, partition, timestamp_ms, traced)
            except BaseException as e:
                _end(span, None, e)
                raise
            fut.add_done_callback(partial(_on_delivery, span))
            return fut

        producer.send = send  # type: ignore[method-assign]
        self._traced = True

    # -- metrics ---------------------------------------------------------------------------

    def observe_metrics(self, meter_provider: MeterProvider | None) -> None:
        meter = metrics.get_meter(_SCOPE, __version__, meter_provider=meter_provider)
        for name, doc in METRIC_DOCS.items():
            otel_name = "kafka.producer." + name.replace("-", "_")
            callback = partial(self._observe, name)
            if name.endswith("-total"):
                meter.create_observable_counter(otel_name, [callback], description=doc)
            else:
                meter.create_observable_gauge(otel_name, [callback], description=doc)

    def _observe(self, name: str, options: CallbackOptions) -> Iterable[Observation]:
        value = self._metrics().get(name)
        return [] if value is None else [Observation(value)]

    def _metrics(self) -> dict[str, float]:
        now = time.monotonic()
        if now - self._snapshot_at > _SNAPSHOT_MAX_AGE_S:
            self._snapshot = _read_on_loop(self._producer)
            self._snapshot_at = now
        return self._snapshot

    def uninstrument(self) -> None:
        """Stop tracing sends (instruments stay registered, reporting nothing once stopped)."""
        if self._traced:
            if self._untraced is None:
                del self._producer.send  # back to the class's send
            else:
                self._producer.send = self._untraced  # type: ignore[method-assign]
            self._traced = False


def instrument(
    producer: AIOKafkaProducer[Any, Any],
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    propagator: TextMapPropagator | None = None,
    tracing: bool = True,
    metrics: bool = True,
) -> Instrumentation:
    """Trace ``producer``'s sends and/or publish its metrics (global providers by default)."""
    instrumentation = Instrumentation(producer)
    if tracing:
        instrumentation.trace_sends(tracer_provider, propagator)
    if metrics:
        instrumentation.observe_metrics(meter_provider)
    return instrumentation


def _on_delivery(span: Span, fut: asyncio.Future[RecordMetadata]) -> None:
    if fut.cancelled():
        _end(span, None, asyncio.CancelledError())
        return
    exc = fut.exception()
    _end(span, None if exc else fut.result(), exc)


def _end(span: Span, metadata: RecordMetadata | None, exc: BaseException | None) -> None:
    if metadata is not None:
        span.set_attribute("messaging.destination.partition.id", str(metadata.partition))
        if metadata.offset >= 0:  # acks=0 reports no offset
            span.set_attribute("messaging.kafka.offset", metadata.offset)
    if exc is not None:
        span.record_exception(exc)
        span.set_attribute("error.type", type(exc).__qualname__)
        span.set_status(Status(StatusCode.ERROR, str(exc)))
    span.end()


def _read_on_loop(producer: AIOKafkaProducer[Any, Any]) -> dict[str, float]:
    """``producer.metrics()`` taken on the producer's loop: collectors call from their
    own thread, while the sender updates the figures on the loop's."""
    loop: asyncio.AbstractEventLoop | None = getattr(producer, "_loop", None)
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if loop is None or running is loop:
        return producer.metrics()
    result: concurrent.futures.Future[dict[str, float]] = concurrent.futures.Future()

    def take() -> None:
        try:
            result.set_result(producer.metrics())
        except BaseException as e:
            result.set_exception(e)

    try:
        loop.call_soon_threadsafe(take)
        return result.result(timeout=_SNAPSHOT_TIMEOUT_S)
    except (RuntimeError, concurrent.futures.TimeoutError):
        return {}  # the loop is closed or too busy: skip this collection
