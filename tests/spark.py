"""A pytest plugin: one local SparkSession for the whole test session (`spark`).

Starting a session costs 7–12 s of both cores here, so it is paid once; tests that
take it are marked `spark`. Spark's Python workers run this interpreter
(PYSPARK_PYTHON, set by `spark_session`), which has pyarrow and the project.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from connectors.spark.session import spark_session

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
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
