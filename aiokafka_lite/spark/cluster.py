"""A throwaway Spark standalone cluster on this host, from pyspark's own distribution.

``StandaloneCluster`` starts a master and workers with pyspark's ``spark-class``
(``org.apache.spark.deploy.master.Master``, ``...worker.Worker``) on the loopback
interface, each in a process group of its own (started and ended as the embedded
broker's process is), so that :meth:`~StandaloneCluster.stop` ends them and everything
they started (executor JVMs, Python workers). It is how
this project's tests and benchmarks run Spark the way a cluster does (driver,
master, workers and executors in separate processes), and a way to try a job
that way before deploying it::

    with StandaloneCluster(workers=2) as cluster:
        spark = SparkSession.builder.master(cluster.master_url).getOrCreate()

Needs a Java runtime (``java`` on ``PATH`` or ``JAVA_HOME``) and a POSIX system.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from .._internal._processes import end_group, log_tail, spawn

__all__ = ["ClusterError", "StandaloneCluster", "java_runtime", "spark_home"]

_MASTER_URL = re.compile(r"Starting Spark master at (spark://[\w.\-]+:\d+)")
_REGISTERED = "Successfully registered with master"


class ClusterError(RuntimeError):
    """A master or worker did not start; the message quotes the end of its log."""


def java_runtime() -> str | None:
    """The ``java`` Spark's scripts would run, or None if there is none."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home, "bin", "java"), os.X_OK):
        return str(Path(home, "bin", "java"))
    return shutil.which("java")


def spark_home() -> Path:
    """The installed pyspark package: it is a Spark distribution (``bin/``, ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each."""

    def __init__(
        self,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        *,
        work_dir: str | Path | None = None,
        start_timeout: float = 90.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.start_timeout = start_timeout
        self.extra_env = dict(env or {})
        self._own_dir = work_dir is None
        self.dir = Path(work_dir or tempfile.mkdtemp(prefix="aiokafka-lite-spark-"))
        self.master_url = ""
        self._procs: list[subprocess.Popen[bytes]] = []

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> StandaloneCluster:
        if java_runtime() is None:
            raise ClusterError("no Java runtime: put java on PATH or set JAVA_HOME")
        conf = self.dir / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        # Its processes live in sessions of their own: end them even if stop() is forgotten.
        atexit.register(self.stop)
        # No REST submission server: it would take the fixed port 6066.
        (conf / "spark-defaults.conf").write_text("spark.master.rest.enabled false\n")
        try:
            master = self._spawn("master", "org.apache.spark.deploy.master.Master")
            self.master_url = self._wait_for(master, _MASTER_URL).group(1)
            workers = [
                self._spawn(
                    f"worker-{i}",
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--work-dir",
                    str(self.dir / f"worker-{i}"),
                )
                for i in range(self.workers)
            ]
            for worker in workers:
                self._wait_for(worker, re.compile(re.escape(_REGISTERED)))
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """End every process this cluster started, workers (and their executors) first."""
        descendants = [
            (pid, _started(pid)) for proc in self._procs for pid in _descendants(proc.pid)
        ]
        for proc in reversed(self._procs):
            end_group(proc, signal.SIGTERM, grace=10.0)
        # Python workers run in process groups of their own (pyspark's daemon makes one):
        # they exit when their executor does; any left behind is ended here (the start
        # time tells a leftover from a new process that got its pid).
        for pid, started in descendants:
            if started is not None and _started(pid) == started:
                _kill(pid, signal.SIGKILL)
        self._procs.clear()
        atexit.unregister(self.stop)
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what runs ------------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        """The master's and the workers' process ids (in that order)."""
        return [p.pid for p in self._procs]

    def process_ids(self) -> list[int]:
        """Every process of the cluster: master, workers, and all they started."""
        return [pid for p in self._procs for pid in (p.pid, *_descendants(p.pid))]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_CONF_DIR=str(self.dir / "conf"),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOG_DIR=str(self.dir / "logs"),
            SPARK_WORKER_DIR=str(self.dir / "work"),
        )
        env.update(self.extra_env)
        return env

    def _spawn(
        self, name: str, main_class: str, *args: str
    ) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.dir / f"{name}.log"
        spark_class = spark_home() / "bin" / "spark-class"
        command = [str(spark_class), main_class, *args]
        command += ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"]
        command += ["--properties-file", str(self.dir / "conf" / "spark-defaults.conf")]
        log.unlink(missing_ok=True)  # a log of this run only: the start pattern is in it
        proc = spawn(command, log, self._env())
        self._procs.append(proc)
        return proc, log

    def _wait_for(
        self, started: tuple[subprocess.Popen[bytes], Path], pattern: re.Pattern[str]
    ) -> re.Match[str]:
        proc, log = started
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            found = pattern.search(log.read_text(errors="replace"))
            if found:
                return found
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        tail = log_tail(log, size=2000)
        raise ClusterError(f"{log.stem} did not start within {self.start_timeout:.0f}s:\n{tail}")


def _kill(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _started(pid: int) -> str | None:
    """The process's start time (field 22 of ``/proc/<pid>/stat``), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()[19]


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, from ``/proc`` (empty where there is no ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces or parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out
