"""The SparkSession a sink task (or the main job) uses, from `spark.master` and
`spark.conf.*`.

One session per process: `getOrCreate` hands every caller in a process the same one,
and starting it costs 7–12 s of two cores here, so it is started only when something
needs it. Spark's Python workers must run this interpreter (it has pyarrow and the
project), so PYSPARK_PYTHON defaults to `sys.executable`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["spark_session"]

#: Defaults for a session on one machine; `spark.conf.*` overrides any of them.
DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    # Arrow batches of Python-built tables arrive whole instead of in 10k-row slices.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "1000000",
    "spark.sql.shuffle.partitions": "4",
    # Timestamps as Parquet's TIMESTAMP(MICROS, UTC), not the deprecated INT96, which
    # pyarrow reads as a zone-less timestamp[ns]: the lake's files then carry one type
    # per column whichever writer wrote them (see connectors.spark.table_schema).
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


def spark_session(
    master: str = "local[*]",
    app_name: str = "tributary",
    conf: Mapping[str, str] | None = None,
) -> Any:
    """The process's SparkSession, started with these settings if there is none."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**DEFAULTS, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
