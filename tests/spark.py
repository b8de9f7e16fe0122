"""A pytest plugin: one local SparkSession for the whole test session (`spark`).

Starting a session costs 7–12 s of both cores here, so it is paid once; tests that
take it are marked `spark`. Spark's Python workers run this interpreter
(PYSPARK_PYTHON, set by `spark_session`), which has pyarrow and the project.

The session carries the Spark packages pom.xml pins (`.jvm/spark-packages`: Kafka,
Iceberg's runtime, Delta Lake) with Iceberg's and Delta's SQL extensions, so one JVM
reads what the lakehouse sinks write: there can be only one SparkContext per process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import ROOT


def _close_result_sockets() -> None:
    """PySpark 4.1 reads a collect()'s results from a local socket it leaves for the
    garbage collector to close (pyspark.util._load_from_socket says so), which the suite's
    warnings-as-errors turns into a failure of whichever test runs the collection. Close
    it when the results are read instead, in every module that imported the function."""
    import importlib

    from pyspark import util

    def load_from_socket(sock_info: Any, serializer: Any) -> Iterator[Any]:
        sockfile, sock = util.local_connect_and_auth(sock_info[0], sock_info[1])
        sock.settimeout(None)  # as PySpark does: materialisation time is unbounded
        try:
            yield from serializer.load_stream(sockfile)
        finally:
            sockfile.close()
            sock.close()

    for name in (
        "pyspark.util",
        "pyspark.sql.classic.dataframe",
        "pyspark.sql.pandas.conversion",
        "pyspark.core.rdd",
        "pyspark.core.context",
    ):
        module = importlib.import_module(name)
        if hasattr(module, "_load_from_socket"):
            module._load_from_socket = load_from_socket


@pytest.fixture(scope="session")
def spark(spark_kafka_jars: str) -> Iterator[Any]:
    from connectors.spark.session import spark_session

    _close_result_sockets()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no loopback-hostname warning
    # Executors' Python workers import the project (the data source's read()).
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    session = spark_session(
        "local[2]",
        "tributary-tests",
        {
            # C1 only: the JIT costs more than it saves in short test jobs.
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
            "spark.sql.shuffle.partitions": "2",
            "spark.python.worker.reuse": "true",
            "spark.jars": spark_kafka_jars,
            "spark.sql.extensions": (
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions,"
                "io.delta.sql.DeltaSparkSessionExtension"
            ),
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
