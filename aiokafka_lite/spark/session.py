"""The Spark session around a write: which Python its workers run, which session a thread has."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ensure_local_python", "local_session", "set_active_session"]


def ensure_local_python(spark: SparkSession) -> None:
    """Make a ``local[...]`` session start its Python workers with this interpreter.

    Without ``PYSPARK_PYTHON`` Spark runs ``python3`` from ``PATH``, which may be
    another Python without pyarrow or aiokafka_lite. On a cluster the executors'
    Python is the cluster's business (``PYSPARK_PYTHON`` when the session starts, or
    ``spark.pyspark.python``), so nothing changes there, nor when ``PYSPARK_PYTHON``
    is set.
    """
    if "PYSPARK_PYTHON" in os.environ:
        return
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: no context here, the server starts the workers
        return
    if not str(sc.master).startswith("local"):
        return
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The context read the variable when it started; the functions it ships to the
    # workers from now on carry this attribute.
    sc.pythonExec = sys.executable


def local_session(
    master: str = "local[2]", app_name: str = "aiokafka-lite", **conf: str
) -> SparkSession:
    """A ``SparkSession`` for local runs whose Python workers use this interpreter."""
    from pyspark.sql import SparkSession

    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    builder = builder.config("spark.ui.enabled", "false")
    for name, value in conf.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    ensure_local_python(spark)
    return spark


def set_active_session(spark: SparkSession) -> None:
    """Make ``spark`` the active session of the calling thread; call it first thing in a
    thread of your own that writes with ``format("aiokafka_lite")``.

    Spark's JVM keeps the active session per thread, and looks data sources up in the
    active session's registry: without one, ``save()`` or ``start()`` from a thread
    other than the session's fails with ``DATA_SOURCE_NOT_FOUND``. PySpark 4 has no
    Python API for it; this calls the JVM's ``SparkSession.setActiveSession``. A Spark
    Connect session has no JVM in the client: there it does nothing.
    """
    jvm = getattr(spark, "_jvm", None)
    jsession = getattr(spark, "_jsparkSession", None)
    if jvm is None or jsession is None:
        return
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(jsession)
