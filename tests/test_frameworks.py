"""Faust, kstreams and broadcaster, unchanged, on aiokafka_lite's producer.

Each app (tests/apps/) is a program whose first lines call ``patch_aiokafka()`` and then
import the framework, as a user's entry point would; it runs in its own process, so the
framework's import-time references (``from aiokafka import AIOKafkaProducer``, kstreams'
subclass of it) are bound after the patch, as in production. Everything the apps
produced is read back with confluent-kafka: nothing missing, nothing twice. The wrong
order (framework imported first) is run too: it must be reported, naming the module.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer as CkProducer
from conftest import TopicFactory
from readers import read_all_confluent

import aiokafka_lite
from aiokafka_lite._internal.partitioner import default_partition

APPS = Path(__file__).parent / "apps"
# The apps import the aiokafka_lite under test (this checkout's, compiled or pure as the
# suite runs: AIOKAFKA_LITE_NO_EXTENSIONS is inherited).
SRC = str(Path(aiokafka_lite.__file__).parent.parent)
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p),
    "PYTHONWARNINGS": "ignore::DeprecationWarning",  # the frameworks' own, not ours
}


WORKER = ("worker", "--loglevel", "info", "--without-web")  # no HTTP port (6066) taken


def run_app(name: str, *args: str, timeout: float = 90) -> tuple[dict[str, Any], str]:
    """Run tests/apps/<name> to its end; its JSON result line and its stderr."""
    done = subprocess.run(
        [sys.executable, str(APPS / name), *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_faust_worker_agents_and_table_produce_everything_once(
    guarantee: str, bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    """With exactly_once Faust also builds a transactional producer (ours) per worker and
    commits the consumed offsets in its transactions; read_committed sees the output."""
    source, sink, counts = topic_factory(1), topic_factory(1), topic_factory(1)
    orders = [("ann", 1), ("bob", 2), ("ann", 3), ("cid", 4), ("ann", 5)]
    ck = CkProducer({"bootstrap.servers": bootstrap, "log_level": 3})
    for customer, amount in orders:
        ck.produce(source, json.dumps({"customer": customer, "amount": amount}).encode())
    assert ck.flush(10) == 0

    # The worker as Faust runs it (`app.main()`: `python faust_app.py ... worker`),
    # stopped with SIGTERM once its output is all there.
    worker = subprocess.Popen(
        [sys.executable, str(APPS / "faust_app.py"), bootstrap, source, sink, counts, *WORKER],
        cwd=tmp_path,  # Faust's data directory
        env={**ENV, "PROCESSING_GUARANTEE": guarantee},  # Faust's setting, from the env
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    failure: BaseException | None = None
    try:
        doubled = read_all_confluent(bootstrap, sink, expected=6, timeout=50, idle=2, at_least=5)
        counted = read_all_confluent(bootstrap, counts, expected=6, timeout=15, idle=2, at_least=5)
        changelog = read_all_confluent(
            bootstrap,
            f"lite-{source}-orders-per-customer-changelog",
            expected=6,
            timeout=15,
            idle=2,
            at_least=5,
        )
    except Exception as e:  # shown with the worker's log below
        failure = e
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            out, _ = worker.communicate(timeout=25)  # all bounds: < pytest-timeout's 120 s
        except subprocess.TimeoutExpired:
            worker.kill()
            out, _ = worker.communicate()
    assert failure is None, f"{failure!r}\n{out[-5000:]}"
    assert "producer: aiokafka_lite.producer.AIOKafkaProducer" in out, out[-3000:]
    assert "Traceback" not in out and "AiokafkaPatchWarning" not in out, out[-3000:]
    assert worker.returncode == 0, out[-3000:]  # stopped cleanly on SIGTERM
    if guarantee == "exactly_once":  # our transactional producer, with Faust's id
        assert f"transactional id 'lite-{source}-0-0': producer id" in out, out[-3000:]

    assert [(r.key, json.loads(r.value or b"")) for r in doubled] == [
        (c.encode(), {"customer": c, "amount": 2 * a, "__faust": {"ns": "faust_app.Order"}})
        for c, a in orders
    ]
    assert [(r.key, r.value) for r in counted] == [
        (b"ann", b"1"), (b"bob", b"1"), (b"ann", b"2"), (b"cid", b"1"), (b"ann", b"3")
    ]  # fmt: skip
    # The table's changelog (Faust's own topic, declared through producer.client).
    assert [(json.loads(r.key or b""), r.value) for r in changelog] == [
        ("ann", b"1"), ("bob", b"1"), ("ann", b"2"), ("cid", b"1"), ("ann", b"3")
    ]  # fmt: skip


def test_kstreams_engine_sends_and_stream_forwards(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    source, sink, batched = topic_factory(2), topic_factory(2), topic_factory(3)
    got, err = run_app("kstreams_app.py", bootstrap, source, sink, batched, "5")
    # kstreams.Producer (it sets self.config = kwargs) subclasses aiokafka_lite's producer.
    assert got["bases"][0] == "aiokafka_lite.producer.AIOKafkaProducer"
    assert "AiokafkaPatchWarning" not in err
    assert got["forwarded"] and sorted(got["forwarded"]) == [f"k{i}" for i in range(5)]
    sent = read_all_confluent(bootstrap, source, expected=6, idle=1.0, at_least=5)
    assert sorted((r.key, r.value, tuple(r.headers)) for r in sent) == [
        (f"k{i}".encode(), f"v{i}".encode(), (("n", str(i).encode()),)) for i in range(5)
    ]
    assert len({r.partition for r in sent}) == 2  # the keys spread over both partitions
    out = read_all_confluent(bootstrap, sink, expected=6, idle=1.0, at_least=5)
    assert sorted((r.key, r.value, tuple(r.headers)) for r in out) == [
        (f"k{i}".encode(), f"V{i}".encode(), (("from", source.encode()),)) for i in range(5)
    ]
    # send_many: kstreams groups the records by producer._partitioner(key, ...), one batch
    # per partition; each record must sit where send() puts its key (murmur2).
    many = read_all_confluent(bootstrap, batched, expected=7, idle=1.0, at_least=6)
    assert sorted((r.key, r.value) for r in many) == [
        (b"b%d" % i, b"w%d" % i) for i in range(5)
    ] + [(b"single", b"single")]
    assert all(r.partition == default_partition(r.key or b"", 3) for r in many)
    assert got["batches"] == len({r.partition for r in many if r.key != b"single"})


def test_broadcaster_publishes_on_aiokafka_lite(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    channel = topic_factory(1)
    got, err = run_app("broadcaster_app.py", bootstrap, channel, "3")
    assert got["class"] == "aiokafka_lite.producer.AIOKafkaProducer"
    assert "AiokafkaPatchWarning" not in err
    assert got["received"] == ["message 0", "message 1", "message 2"]
    read = read_all_confluent(bootstrap, channel, expected=4, idle=1.0, at_least=3)
    assert [r.value for r in read] == [b"message 0", b"message 1", b"message 2"]


def test_framework_imported_before_the_patch_is_reported(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    """The wrong order keeps aiokafka's producer: patch_aiokafka() names the module that
    holds aiokafka's class, and building that class while patched warns again."""
    channel = topic_factory(1)
    got, err = run_app("broadcaster_app.py", bootstrap, channel, "1", "--late")
    assert got["class"] == "aiokafka.producer.producer.AIOKafkaProducer"  # still works
    assert "AiokafkaPatchWarning: aiokafka_lite.patch_aiokafka(): these were imported" in err
    assert "broadcaster._backends.kafka.AIOKafkaProducer" in err
    assert "is built on aiokafka's own producer" in err
    assert "call aiokafka_lite.patch_aiokafka() before importing that code" in err
    read = read_all_confluent(bootstrap, channel, expected=2, idle=1.0, at_least=1)
    assert [r.value for r in read] == [b"message 0"]
