"""Spark's own Kafka sink (``format("kafka")``) for the tests and benchmarks beside ours.

``spark-sql-kafka-0-10`` comes from Maven (``tests/spark_kafka/pom.xml``, pinned to the
PySpark version of the dev extra). :func:`connector_jars` resolves it once, keeps the
classpath in a git-ignored file beside the pom, and returns the jars pyspark does not
ship itself (the connector, its token provider, ``kafka-clients``, ``commons-pool2``):
what ``spark.jars`` needs for ``format("kafka")`` on a standalone cluster.
:func:`missing_reason` says why it cannot be had (no Maven, another PySpark).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import kafka_cluster

POM = Path(__file__).resolve().parent / "spark_kafka" / "pom.xml"
_VERSION = re.compile(r"<spark\.version>([^<]+)</spark\.version>")
_ARTIFACT = re.compile(r"^(?P<name>.+?)-\d[\w.\-]*\.jar$")


def connector_version() -> str:
    match = _VERSION.search(POM.read_text())
    assert match, f"no spark.version in {POM}"
    return match.group(1)


def missing_reason() -> str | None:
    """Why Spark's Kafka sink cannot run here, or None if it can."""
    try:
        import pyspark
    except ImportError:
        return "pyspark is not installed (the spark extra)"
    if pyspark.__version__ != connector_version():
        return (
            f"pyspark {pyspark.__version__} is installed; Spark's Kafka connector is pinned "
            f"to {connector_version()} (tests/spark_kafka/pom.xml, the dev extra's pyspark)"
        )
    if shutil.which("mvn") is None and not kafka_cluster.classpath_file(POM).exists():
        return "no Maven (mvn on PATH): it resolves Spark's Kafka connector"
    return None


def _classpath() -> list[str]:
    return kafka_cluster.maven_classpath(POM).split(os.pathsep)


def _artifact(jar: str) -> str:
    match = _ARTIFACT.match(Path(jar).name)
    return match.group("name") if match else Path(jar).name


def connector_jars() -> list[str]:
    """The connector's jars that pyspark's own ``jars/`` lacks (by artifact name)."""
    import pyspark

    shipped = {_artifact(j.name) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return [j for j in _classpath() if _artifact(j) not in shipped]
