"""The Spark standalone cluster the Spark tests run on, shared by their modules.

A master and two workers (1 core, 1 GiB each) from pyspark's own distribution
(:class:`aiokafka_lite.spark.StandaloneCluster`), and one driver session in this
process whose executors (one per worker, 512 MiB) run this interpreter and import
this checkout. The session fixtures ``spark_cluster`` and ``spark`` (tests/conftest.py)
delegate to :func:`shared_cluster` and :func:`shared_session`: one cluster and one
session (reference-counted), stopped when the last user is torn down, even when tests
failed. Without a Java runtime every test using them is
skipped, saying so.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
import spark_connector
from pyspark.sql import SparkSession

from aiokafka_lite.spark.cluster import StandaloneCluster, java_runtime

REPO_ROOT = Path(__file__).resolve().parent.parent
NO_JAVA = (
    "no Java runtime (no java on PATH, JAVA_HOME unset): Spark needs one; "
    "install one (Debian: apt-get install -y default-jre-headless), as .ci/run does"
)
#: Arrow batches of this many rows reach the Python workers (tests count on it)
ARROW_BATCH_ROWS = 10_000
_EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def executor_pids(cluster: StandaloneCluster, app_id: str) -> list[int]:
    """The executor JVMs of application ``app_id`` (``sparkContext.applicationId``)."""
    return [
        pid
        for pid in cluster.process_ids()
        if _EXECUTOR_CLASS in (args := cmdline(pid)) and app_id in args
    ]


def cmdline(pid: int) -> str:
    """Process ``pid``'s command line, its arguments joined by spaces ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class _Shared:
    """One cluster and session for every module that asks, stopped after the last."""

    users = 0
    cluster: StandaloneCluster | None = None
    session: SparkSession | None = None
    saved_env: dict[str, str | None] = {}

    @classmethod
    def acquire(cls, work_dir: Path) -> tuple[StandaloneCluster, SparkSession]:
        if cls.cluster is None or cls.session is None:
            cls.start(work_dir)
        cls.users += 1
        assert cls.cluster is not None and cls.session is not None
        return cls.cluster, cls.session

    @classmethod
    def start(cls, work_dir: Path) -> None:
        # The driver's Python workers (data source planning, commits) and the
        # executors' run this interpreter and import this checkout.
        env = {
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p
            ),
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        cls.saved_env = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        cluster = StandaloneCluster(workers=2, cores=1, memory="1g", work_dir=work_dir)
        cluster.start()
        cls.cluster = cluster
        try:
            cls.session = _session(cluster.master_url)
        except BaseException:
            cls.stop()
            raise

    @classmethod
    def release(cls) -> None:
        cls.users -= 1
        if cls.users <= 0:
            cls.stop()

    @classmethod
    def stop(cls) -> None:
        try:
            if cls.session is not None:
                cls.session.stop()
        finally:
            cls.session = None
            if cls.cluster is not None:
                cls.cluster.stop()
            cls.cluster = None
            for k, v in cls.saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _session(master_url: str) -> SparkSession:
    conf: dict[str, Any] = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "1g",
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        "spark.executorEnv.PYTHONPATH": os.environ["PYTHONPATH"],
        "spark.pyspark.python": sys.executable,
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    # Spark's own Kafka sink beside ours (tests/test_spark_kafka_sink.py), where Maven
    # and the pinned PySpark let it run.
    if spark_connector.missing_reason() is None:
        conf["spark.jars"] = ",".join(spark_connector.connector_jars())
    builder = SparkSession.builder.master(master_url).appName("aiokafka-lite-tests")
    for name, value in conf.items():
        builder = builder.config(name, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    # Both executors up before the first test: tests count on two tasks running at once.
    session.sparkContext.parallelize(range(2), 2).map(lambda x: x).collect()
    return session


def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """The body of a session fixture: the cluster, started by its first user."""
    if java_runtime() is None:
        pytest.skip(NO_JAVA)
    cluster, _ = _Shared.acquire(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield cluster
    finally:
        _Shared.release()


def shared_session() -> SparkSession:
    """The driver session on the cluster (use with :func:`shared_cluster` running)."""
    assert _Shared.session is not None
    return _Shared.session


def slow_first_attempt(pause_s: float) -> Any:
    """An upstream ``mapInArrow`` step that pauses after each Arrow batch on a task's first
    attempt (a slow source), so that an executor can be killed while its task writes."""

    def step(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        slow = ctx is not None and ctx.attemptNumber() == 0
        for batch in batches:
            yield batch
            if slow:
                time.sleep(pause_s)

    return step


def json_stream_source(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A streaming source's directory (made in ``tmp_path``): three JSON-lines files of
    100 rows (``user string, n long``; seven users), one micro-batch each with
    ``maxFilesPerTrigger=1``. Returns the directory and the rows in file order."""
    source = tmp_path / "in"
    source.mkdir()
    sent: list[dict[str, Any]] = []
    for f in range(3):
        lines = [{"user": f"u{i % 7}", "n": f * 100 + i} for i in range(100)]
        sent += lines
        (source / f"part-{f}.json").write_text("\n".join(json.dumps(x) for x in lines))
    return source, sent
