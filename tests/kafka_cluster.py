"""Apache Kafka on loopback for the tests and benchmarks: 1 or 3 KRaft nodes, Java's tools.

The broker and Java's clients come from Maven (``tests/apache_kafka/pom.xml`` pins the
version): :func:`kafka_classpath` asks Maven for the classpath once and keeps it in a file
beside the pom (``.classpath``, git-ignored), so nothing downloaded is committed and the
second run starts at once. :class:`KafkaCluster` writes each node's configuration
(combined broker and controller roles, a static quorum), formats its storage and starts
``kafka.Kafka`` in a process group of its own with a bounded heap, so that ``kill`` is a
real ``kill -9`` and :meth:`KafkaCluster.stop` leaves nothing behind. Each node logs to
``<work_dir>/node-<id>/server.log``; :meth:`KafkaCluster.log_tail` quotes it on failure.

Needs Java 17+ and Maven; :func:`missing_reason` says what is missing, and the fixtures
skip with it.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

POM = Path(__file__).resolve().parent / "apache_kafka" / "pom.xml"
#: The Apache Kafka version the pom pins (what the README's version table names).
KAFKA_VERSION = "4.1.1"
CONTROLLER = "CONTROLLER"
#: A node's heap: enough for the tests' topics; a 2-core, 24 GiB machine runs several.
DEFAULT_HEAP = "384m"


def java() -> str | None:
    """The ``java`` to run: ``$JAVA_HOME/bin/java`` or the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home, "bin", "java"), os.X_OK):
        return str(Path(home, "bin", "java"))
    return shutil.which("java")


def missing_reason() -> str | None:
    """Why Apache Kafka cannot run here (no Java, no Maven), or None if it can."""
    if java() is None:
        return "no Java runtime (java on PATH or JAVA_HOME): Apache Kafka needs Java 17+"
    if shutil.which("mvn") is None and not classpath_file().exists():
        return "no Maven (mvn on PATH): it resolves Apache Kafka from tests/apache_kafka/pom.xml"
    return None


def classpath_file(pom: Path = POM) -> Path:
    """Where :func:`maven_classpath` keeps ``pom``'s resolved classpath."""
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    return pom.parent / f".classpath-{digest}"


def kafka_classpath() -> str:
    """The classpath of the pinned Apache Kafka (broker, clients, tools), resolved by Maven."""
    return maven_classpath(POM)


def maven_classpath(pom: Path) -> str:
    """The classpath of ``pom``'s dependencies, resolved by Maven and kept beside the pom
    (a git-ignored ``.classpath-<digest>`` file, renewed when the pom changes).

    Safe to call from several processes at once (pytest-xdist workers): a file lock beside
    the pom lets one of them run Maven while the others wait, then read its result.
    """
    cached = classpath_file(pom)
    with open(cached.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _read_or_resolve(pom, cached)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read_or_resolve(pom: Path, cached: Path) -> str:
    if cached.exists():
        cp = cached.read_text().strip()
        if cp and all(Path(p).exists() for p in cp.split(os.pathsep)):
            return cp
    out = cached.with_suffix(".tmp")
    proc = subprocess.run(
        [
            "mvn",
            "-q",
            "-B",
            "-f",
            str(pom),
            "dependency:build-classpath",
            f"-Dmdep.outputFile={out}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(
            f"Maven could not resolve {pom}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        )
    out.replace(cached)
    return cached.read_text().strip()


_PORT_LOCKS: list[IO[str]] = []  # open lock files: each reserves its port for this process's life


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A loopback port for a Kafka node, outside the kernel's ephemeral range.

    A port the kernel hands out for ``bind(0)`` can also become the local end of any
    client connection made before the node binds it, or while a killed node is down
    (seen in CI: "Address already in use" at node start). Ports below the ephemeral range
    are never handed out that way. A lock file per port keeps xdist workers from picking
    the same one; the lock is held until this process exits.
    """
    low, high = _ephemeral_range()
    first, last = (10_000, low - 1) if low > 12_000 else (high + 1, 65_535)
    lock_dir = Path(os.environ.get("TMPDIR", "/tmp")) / "aiokafka-lite-test-ports"
    lock_dir.mkdir(exist_ok=True)
    for _ in range(1_000):
        port = random.randint(first, last)
        lock = (lock_dir / str(port)).open("a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                lock.close()
                continue
        _PORT_LOCKS.append(lock)
        return port
    raise RuntimeError(f"no free loopback port in {first}-{last}")


@dataclass
class Listener:
    """One broker listener: its name, security protocol and the extra settings it needs."""

    name: str
    protocol: str = "PLAINTEXT"
    #: ``listener.name.<name>.<key>`` settings (SASL JAAS, TLS stores), without the prefix
    settings: dict[str, str] = field(default_factory=dict)


@dataclass
class KafkaNode:
    """One KRaft node (broker and controller), its ports and its process."""

    node_id: int
    dir: Path
    ports: dict[str, int]
    controller_port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def log(self) -> Path:
        return self.dir / "server.log"


class KafkaCluster:
    """``nodes`` Apache Kafka KRaft nodes on loopback, each broker and controller.

    ``listeners`` are the client listeners (the first is also the inter-broker one
    unless ``inter_broker`` names another); ``PLAINTEXT`` alone by default.
    ``settings`` are added to every node's ``server.properties`` (and win);
    ``format_args`` are passed to the storage format step (``--add-scram ...``).
    """

    def __init__(
        self,
        work_dir: Path,
        nodes: int = 1,
        *,
        listeners: Iterable[Listener] = (Listener("PLAINTEXT"),),
        inter_broker: str | None = None,
        settings: Mapping[str, str] | None = None,
        heap: str = DEFAULT_HEAP,
        jvm_options: Iterable[str] = (),
        start_timeout: float = 90.0,
        format_args: Iterable[str] = (),
    ) -> None:
        self.dir = Path(work_dir)
        self.listeners = list(listeners)
        self.inter_broker = inter_broker or self.listeners[0].name
        self.settings = dict(settings or {})
        self.heap = heap
        self.jvm_options = list(jvm_options)
        #: extra ``StorageTool format`` arguments: ``--add-scram`` for SCRAM users,
        #: ``--feature transaction.version=1`` for a 4.x cluster without KIP-890's v2
        self.format_args = list(format_args)
        self.start_timeout = start_timeout
        self.cluster_id = _cluster_id()
        self.nodes = [
            KafkaNode(
                node_id=i,
                dir=self.dir / f"node-{i}",
                ports={lst.name: free_port() for lst in self.listeners},
                controller_port=free_port(),
            )
            for i in range(1, nodes + 1)
        ]
        self._classpath = ""

    # -- addresses -------------------------------------------------------------------

    def bootstrap(self, listener: str | None = None) -> str:
        """``host:port,...`` of every node's ``listener`` (the first listener by default)."""
        name = listener or self.listeners[0].name
        return ",".join(f"127.0.0.1:{n.ports[name]}" for n in self.nodes)

    @property
    def bootstrap_servers(self) -> str:
        return self.bootstrap()

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id - 1]

    # -- configuration ----------------------------------------------------------------

    def _properties(self, node: KafkaNode) -> dict[str, str]:
        n = len(self.nodes)
        voters = ",".join(f"{m.node_id}@127.0.0.1:{m.controller_port}" for m in self.nodes)
        names = [lst.name for lst in self.listeners]
        protocol_map = [f"{lst.name}:{lst.protocol}" for lst in self.listeners]
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": ",".join(
                [f"{name}://127.0.0.1:{node.ports[name]}" for name in names]
                + [f"{CONTROLLER}://127.0.0.1:{node.controller_port}"]
            ),
            "advertised.listeners": ",".join(
                f"{name}://127.0.0.1:{node.ports[name]}" for name in names
            ),
            "controller.listener.names": CONTROLLER,
            "inter.broker.listener.name": self.inter_broker,
            "listener.security.protocol.map": ",".join([*protocol_map, f"{CONTROLLER}:PLAINTEXT"]),
            "log.dirs": str(node.dir / "data"),
            "num.partitions": "1",
            "default.replication.factor": str(min(3, n)),
            "min.insync.replicas": str(min(2, n)),
            "offsets.topic.replication.factor": str(min(3, n)),
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": str(min(3, n)),
            "transaction.state.log.min.isr": str(min(2, n)),
            "transaction.state.log.num.partitions": "5",
            "group.initial.rebalance.delay.ms": "0",
            "share.coordinator.state.topic.replication.factor": str(min(3, n)),
            "share.coordinator.state.topic.min.isr": str(min(2, n)),
            "auto.create.topics.enable": "true",
            "delete.topic.enable": "true",
            # Small, quick-to-roll segments keep a test's disk use low.
            "log.segment.bytes": str(64 * 1024 * 1024),
            # Tests write records with timestamps years in the past (e.g. taken from a
            # column); time-based retention would delete them at its next check, between a
            # test's write and its read-back. Nothing in a test broker expires.
            "log.retention.ms": "-1",
            "log.retention.check.interval.ms": "300000",
        }
        for lst in self.listeners:
            for key, value in lst.settings.items():
                props[f"listener.name.{lst.name.lower()}.{key}"] = value
        props.update(self.settings)
        return props

    def _write_config(self, node: KafkaNode) -> Path:
        node.dir.mkdir(parents=True, exist_ok=True)
        config = node.dir / "server.properties"
        lines = [f"{k}={v}" for k, v in self._properties(node).items()]
        config.write_text("\n".join(lines) + "\n")
        (node.dir / "log4j2.properties").write_text(_LOG4J2)
        return config

    def _java(self, node: KafkaNode, main: str, *args: str) -> list[str]:
        java_bin = java()
        if java_bin is None:
            raise RuntimeError(missing_reason() or "no Java")
        return [
            java_bin,
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={node.dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={node.dir}",
            *self.jvm_options,
            "-cp",
            self._classpath,
            main,
            *args,
        ]

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> KafkaCluster:
        """Format and start every node; return when all of them serve metadata."""
        self._classpath = kafka_classpath()
        for node in self.nodes:
            config = self._write_config(node)
            fmt = subprocess.run(
                self._java(
                    node,
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    self.cluster_id,
                    "-c",
                    str(config),
                    "--ignore-formatted",
                    *self.format_args,
                ),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if fmt.returncode != 0:
                raise RuntimeError(f"formatting node {node.node_id} failed:\n{fmt.stderr}")
        for node in self.nodes:
            self.start_node(node.node_id, wait=False)
        self.wait_ready()
        return self

    def start_node(self, node_id: int, *, wait: bool = True) -> None:
        """Start (or restart) one node from its existing configuration and data."""
        node = self.node(node_id)
        if node.alive:
            return
        log = open(node.log, "ab")  # noqa: SIM115 (the child keeps it; closed below)
        try:
            node.proc = subprocess.Popen(
                self._java(node, "kafka.Kafka", str(node.dir / "server.properties")),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float | None = None) -> None:
        """Wait until every live node answers Metadata and sees every live node."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + (timeout or self.start_timeout)
        alive = [n for n in self.nodes if n.alive]
        bootstrap = ",".join(f"127.0.0.1:{n.ports[self.listeners[0].name]}" for n in alive)
        last = ""
        while time.monotonic() < deadline:
            for n in self.nodes:
                if n.proc is not None and n.proc.poll() is not None and n in alive:
                    raise RuntimeError(
                        f"Kafka node {n.node_id} exited ({n.proc.returncode}):\n"
                        + self.log_tail(n.node_id)
                    )
            if self.listeners[0].protocol != "PLAINTEXT":
                # Readiness through a secured listener needs credentials: probe the ports.
                if all(_port_open(n.ports[self.listeners[0].name]) for n in alive):
                    return
                time.sleep(0.2)
                continue
            try:
                admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
                md = admin.list_topics(timeout=2)
                if len(md.brokers) >= len(alive):
                    return
                last = f"{len(md.brokers)} of {len(alive)} brokers registered"
            except Exception as e:  # not up yet
                last = str(e)
            time.sleep(0.3)
        raise RuntimeError(
            f"Kafka did not become ready in {timeout or self.start_timeout} s ({last}):\n"
            + "\n".join(self.log_tail(n.node_id) for n in alive)
        )

    def kill(self, node_id: int) -> None:
        """``kill -9`` one node (its whole process group)."""
        node = self.node(node_id)
        if node.proc is not None and node.alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.proc.pid, signal.SIGKILL)
            node.proc.wait(timeout=30)

    def pause(self, node_id: int) -> None:
        """Freeze one node (SIGSTOP to its process group): its sockets stay open and
        nothing answers, as a node stuck in a long GC pause; :meth:`resume` thaws it."""
        self._signal(node_id, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        """Thaw a node :meth:`pause` froze (SIGCONT); a no-op for a running node."""
        self._signal(node_id, signal.SIGCONT)

    def _signal(self, node_id: int, sig: signal.Signals) -> None:
        node = self.node(node_id)
        if node.proc is not None and node.alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.proc.pid, sig)

    def stop_node(self, node_id: int, timeout: float = 60.0) -> None:
        """A controlled shutdown of one node (SIGTERM; its leaderships move first)."""
        node = self.node(node_id)
        if node.proc is None or not node.alive:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.proc.pid, signal.SIGTERM)
        try:
            node.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(node_id)

    def stop(self) -> None:
        """Stop every node: SIGTERM, then SIGKILL after a grace period."""
        for node in self.nodes:
            if node.proc is not None and node.alive:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for node in self.nodes:
            if node.proc is None:
                continue
            try:
                node.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill(node.node_id)

    def log_tail(self, node_id: int, lines: int = 40) -> str:
        node = self.node(node_id)
        try:
            text = node.log.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return f"(no log for node {node_id})"
        return f"--- node {node_id} ({node.log}) ---\n" + "\n".join(text)

    def java_tool(
        self, main: str, *args: str, timeout: float = 300.0, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run one of Java's tools (``org.apache.kafka.tools.*``) with the cluster's classpath.

        ``input`` is written to the tool's stdin (e.g. the console producer's lines)."""
        java_bin = java()
        assert java_bin is not None
        # The tools' own logs go to stderr, WARN and up: stdout is what they print (the
        # console consumer's records), which the tests parse.
        tools_log = self.dir / "tools-log4j2.properties"
        if not tools_log.exists():
            self.dir.mkdir(parents=True, exist_ok=True)
            tools_log.write_text(_LOG4J2_TOOLS)
        return subprocess.run(
            [
                java_bin,
                "-Xmx512m",
                f"-Dlog4j2.configurationFile={tools_log}",
                "-cp",
                self._classpath or kafka_classpath(),
                main,
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            input=input,
        )

    def __enter__(self) -> KafkaCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _cluster_id() -> str:
    """A random KRaft cluster id (22 url-safe base64 characters).

    One that starts with ``-`` would read as an option to the storage tool's ``-t``.
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# INFO for Kafka's own startup and state changes; the request loggers stay quiet.
_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.network.name = kafka.network.RequestChannel$
logger.network.level = WARN
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
"""

# Java's tools: warnings and errors to stderr only.
_LOG4J2_TOOLS = """\
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
"""
