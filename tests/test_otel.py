"""OpenTelemetry: spans per send with the SDK's in-memory exporter, traceparent read back
from the broker by an independent consumer (confluent-kafka), metrics via an in-memory
metric reader (collected from another thread, as a periodic exporter would)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TopicFactory
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from readers import read_all_confluent

from aiokafka_lite import AIOKafkaProducer, ProducerRecord
from aiokafka_lite.otel import instrument

Tracing = tuple[TracerProvider, InMemorySpanExporter]


@pytest.fixture
def tracing() -> Tracing:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def test_span_per_send_and_traceparent_in_headers(
    bootstrap: str,
    topic_factory: TopicFactory,
    tracing: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = tracing
    topic = topic_factory(2)
    tracer = provider.get_tracer("app")
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="otel-test") as producer:
        instrument(producer, tracer_provider=provider, metrics=False)
        with tracer.start_as_current_span("handle-request") as parent:
            md = await producer.send_and_wait(topic, b"v0", key=b"k", headers=[("app", b"1")])
            futures = [await producer.send(topic, b"v%d" % i) for i in range(1, 5)]
            await asyncio.gather(*futures)
    spans = [s for s in exporter.get_finished_spans() if s.name == f"send {topic}"]
    assert len(spans) == 5
    parent_ctx = parent.get_span_context()
    for span in spans:
        assert span.kind == SpanKind.PRODUCER
        assert span.parent is not None and span.parent.span_id == parent_ctx.span_id
        assert span.context.trace_id == parent_ctx.trace_id
        assert span.attributes is not None
        assert span.attributes["messaging.system"] == "kafka"
        assert span.attributes["messaging.operation.type"] == "send"
        assert span.attributes["messaging.destination.name"] == topic
        assert span.attributes["messaging.client.id"] == "otel-test"
        assert span.status.status_code == StatusCode.UNSET
    first = spans[0]
    assert first.attributes is not None
    assert first.attributes["messaging.destination.partition.id"] == str(md.partition)
    assert first.attributes["messaging.kafka.offset"] == md.offset
    # What a consumer sees: the record's own header first, then the W3C traceparent of
    # exactly the span that sent it.
    expected = {
        f"00-{s.context.trace_id:032x}-{s.context.span_id:016x}-"
        f"{int(s.context.trace_flags):02x}".encode()
        for s in spans
    }
    records = read_all_confluent(bootstrap, topic, 5)
    assert len(records) == 5
    seen = set()
    for r in records:
        names = [k for k, _ in r.headers]
        assert names[-1] == "traceparent"
        seen.add(dict(r.headers)["traceparent"])
    assert seen == expected
    by_value = {r.value: r for r in records}
    assert by_value[b"v0"].headers[0] == ("app", b"1")


async def test_failed_send_ends_its_span_with_an_error(
    bootstrap: str,
    topic_factory: TopicFactory,
    tracing: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = tracing
    topic = topic_factory(1)
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        instrumentation = instrument(producer, tracer_provider=provider, metrics=False)
        with pytest.raises(ValueError, match="out of range"):
            await producer.send(topic, b"x", partition=3)
        instrumentation.uninstrument()
        await producer.send_and_wait(topic, b"untraced")
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes is not None and span.attributes["error.type"] == "ValueError"
    assert span.events[0].name == "exception"
    (record,) = read_all_confluent(bootstrap, topic, 1)
    assert record.headers == []  # after uninstrument(): no span, no header


async def test_tracing_composes_with_interceptors(
    bootstrap: str,
    topic_factory: TopicFactory,
    tracing: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = tracing
    topic = topic_factory(1)

    class Stamp:
        def on_send(self, record: ProducerRecord) -> ProducerRecord:
            return record._replace(headers=[*(record.headers or ()), ("stamp", b"1")])

        def on_acknowledgement(self, metadata: object, exception: object) -> None:
            pass

    async with AIOKafkaProducer(bootstrap_servers=bootstrap, interceptors=[Stamp()]) as p:
        instrumentation = instrument(p, tracer_provider=provider, metrics=False)
        await p.send_and_wait(topic, b"x")
        instrumentation.uninstrument()  # the interceptors stay
        await p.send_and_wait(topic, b"y")
    traced, untraced = read_all_confluent(bootstrap, topic, 2)
    assert [k for k, _ in traced.headers] == ["traceparent", "stamp"]
    assert [k for k, _ in untraced.headers] == ["stamp"]
    assert len(exporter.get_finished_spans()) == 1


async def test_metrics_as_observable_instruments(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        instrument(producer, meter_provider=provider, tracing=False)
        await asyncio.gather(*[await producer.send(topic, b"m%d" % i) for i in range(300)])
        # Collect from another thread (as PeriodicExportingMetricReader does) while the
        # loop runs: the snapshot is taken on the loop.
        data = await asyncio.to_thread(reader.get_metrics_data)
    values = {}
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                values[metric.name] = metric.data.data_points[0].value
    assert values["kafka.producer.record_send_total"] == 300
    assert values["kafka.producer.record_error_total"] == 0
    assert values["kafka.producer.record_send_rate"] > 0
    assert values["kafka.producer.buffer_total_bytes"] == 32 * 1024 * 1024
    assert values["kafka.producer.request_latency_avg"] > 0
    provider.shutdown()


def test_without_the_extra_the_error_names_it(tmp_path: Path) -> None:
    # A stand-in 'opentelemetry' that fails to import, first on the path (the real one is
    # installed here): what a user without the extra sees.
    (tmp_path / "opentelemetry").mkdir()
    (tmp_path / "opentelemetry" / "__init__.py").write_text("raise ImportError('absent')\n")
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-c", "import aiokafka_lite.otel"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{repo}"},
        timeout=60,
    )
    assert proc.returncode != 0
    assert 'pip install "aiokafka-lite[otel]"' in proc.stderr
    assert 'in a clone of the repository, pip install -e ".[otel]"' in proc.stderr
