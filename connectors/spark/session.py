"""The SparkSession a sink task (or the main job) uses, from `spark.master` and
`spark.conf.*`.

One session per process: `getOrCreate` hands every caller in a process the same one,
and starting it costs seconds of every core (docs/performance.md), so it is started
only when something needs it. It hands it back whatever master it is asked for, so a
caller that names another place than the running session's (a cluster's spark:// URL
while a local session runs, or another cluster) is refused with a ConfigError naming
spark.master, instead of writing through the session that happens to run; a local
master of any size (`local`, `local[2]`, `local[*]`) is served by any local session.

A standalone master (`spark://host:port`, or several for HA) that no address answers
is refused before the JVM starts, in one line naming spark.master: Spark itself
retries for about a minute, stops its context, and hands the caller a Java stack
("Cannot call methods on a stopped SparkContext") with the reason only in its log.

Spark's Python workers must run this interpreter (it has pyarrow and the project), so
PYSPARK_PYTHON defaults to `sys.executable`; on a cluster, the executors start the
driver's PYSPARK_PYTHON path, so every node needs an interpreter there that imports
the project (installed in it, or on `spark.executorEnv.PYTHONPATH`).
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from typing import Any

from connect.api import ConfigError

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
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    # What getOrCreate would hand back (None once stopped).
    running = SparkContext._active_spark_context
    if running is None or not _same_place(str(running.master), master):
        _check_answers(master)
    if running is not None and not _same_place(str(running.master), master):
        raise ConfigError(
            "spark.master",
            master,
            f"this process already runs a Spark session on {running.master}, and a "
            "process has one; run the tasks of each master in processes of their own "
            "(task.isolation=process)",
        )
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**DEFAULTS, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _same_place(running: str, wanted: str) -> bool:
    """Whether a session on `running` does the work asked of `wanted`: the same URL, or
    both in this process (local masters differ only in threads)."""
    return running == wanted or (running.startswith("local") and wanted.startswith("local"))


def _check_answers(master: str, timeout_s: float = 5.0) -> None:
    """Refuse a standalone master none of whose addresses accepts a connection (see
    the module docstring); other masters (local, yarn, k8s) are Spark's to check."""
    if not master.startswith("spark://"):
        return
    reasons = []
    for address in master[len("spark://") :].split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return
        except ValueError:
            raise ConfigError(
                "spark.master", master, "spark://HOST:PORT (or HOST:PORT,HOST:PORT,...)"
            ) from None
        except OSError as exc:
            reasons.append(f"{address.strip()}: {exc.strerror or exc}")
    raise ConfigError(
        "spark.master", master, f"no Spark master answers there ({'; '.join(reasons)})"
    )
