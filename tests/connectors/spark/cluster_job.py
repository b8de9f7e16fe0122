"""The cluster half of `test_cluster.py`, run in a child process of its own:

    python -m tests.connectors.spark.cluster_job spark://127.0.0.1:PORT REPORT.json \
        [--jars JARS --kafka BOOTSTRAP --topic TOPIC]

A process has one SparkContext, and the suite's process already holds the local one
(`tests/spark.py`), so a SparkSession on the cluster lives here. The working
directory is the test's: the lake and the log are given as relative paths, as a user
in a project directory gives them, while the executors run in directories of the
cluster's worker. With `--kafka`, Spark's own Kafka source (`format("kafka")`, from
the `--jars` given as `spark.jars`) reads a topic Tributary wrote to a real broker, in
the same application. Each step's facts (or its error, one line) go to REPORT.json; a step
that fails does not stop the next.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from connect.api import TopicPartition
from connectors.spark.config import SPARK_CONF_PREFIX
from connectors.spark.datasource import register
from log import FileLog
from tests.connectors.spark.helpers import records, start_task
from tests.spark_cluster import EXECUTOR_CONF

LAKE = "lake"
LOG_DIR = "events-log"
STREAM_OUT = "stream-out"
STREAM_CHECKPOINT = "stream-checkpoint"
T0 = 1_700_000_000_000


def sink(master: str, jars: str | None) -> tuple[Any, dict[str, Any]]:
    """The Parquet sink's Spark writer on the cluster: 12 records, files of 5. Its
    session is the application's: `spark.conf.*` keys give it the cluster's settings
    (start_task's keyword arguments spell dots as underscores)."""
    settings = dict(EXECUTOR_CONF, **({"spark.jars": jars} if jars else {}))
    conf = {(SPARK_CONF_PREFIX + k).replace(".", "_"): v for k, v in settings.items()}
    task, _ = start_task(
        Path(LAKE),
        flush_size="5",
        parquet_writer="spark",
        spark_master=master,
        spark_app_name="tributary-cluster-test",
        **conf,
    )
    tp = TopicPartition("orders", 0)
    task.open([tp])
    task.put(records(range(12)))
    spark = task.spark
    sc = spark.sparkContext
    facts = {
        "master": sc.master,
        "app_id": sc.applicationId,
        # The driver's block manager and the executors'.
        "executors": sc._jsc.sc().getExecutorMemoryStatus().size() - 1,
        "committed": task.writers[tp].committed,
    }
    task.stop()
    return spark, facts


def fill(log_dir: str, start: int, count: int) -> None:
    with FileLog(log_dir, background=False) as log:
        if "events" not in log.list_topics():
            log.create_topic("events", 2)
        for p in range(2):
            ids = range(start, start + count)
            log.append(
                "events",
                p,
                [json.dumps({"id": p * 1000 + i}).encode() for i in ids],
                keys=[str(i).encode() for i in ids],
                timestamps=[T0 + i for i in ids],
            )


def _where(rows: Iterator[Any]) -> Iterator[tuple[str, int, list[list[Any]]]]:
    """Where a partition of the scan ran (the Python worker's working directory), and
    its rows: the same task as the scan, so the same executor."""
    got = [[r.partition, r.offset, r.value.decode()] for r in rows]
    yield os.getcwd(), os.getpid(), got


def batch_read(spark: Any) -> dict[str, Any]:
    """`format("tributary")` over a log named by a relative path."""
    fill(LOG_DIR, 0, 10)
    register(spark)
    df = spark.read.format("tributary").option("log.dir", LOG_DIR).option("topic", "events").load()
    parts = df.rdd.mapPartitions(_where).collect()
    return {
        "cwds": sorted({cwd for cwd, _, _ in parts}),
        "rows": sorted(row for _, _, rows in parts for row in rows),
    }


def stream_read(spark: Any) -> dict[str, Any]:
    """`readStream.format("tributary")` drained twice with one checkpoint: the second
    run reads what was appended since, nothing again."""

    def drain() -> None:
        query = (
            spark.readStream.format("tributary")
            .option("log.dir", LOG_DIR)
            .option("topic", "events")
            .option("startingOffsets", "earliest")
            .load()
            .selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
            .writeStream.format("parquet")
            .option("path", STREAM_OUT)
            .option("checkpointLocation", STREAM_CHECKPOINT)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(180)
        if query.isActive:
            query.stop()
            raise TimeoutError("the availableNow query did not finish in 180 s")
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))

    drain()
    fill(LOG_DIR, 10, 3)
    drain()
    return {"out": str(Path(STREAM_OUT).resolve())}


def kafka_read(spark: Any, bootstrap: str, topic: str) -> dict[str, Any]:
    """Spark's Kafka source over a topic of the real broker, read on the executors."""
    df = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
    )

    def where(rows: Iterator[Any]) -> Iterator[tuple[str, list[list[Any]]]]:
        got = [
            [
                r.partition,
                r.offset,
                r.key.decode(),
                r.value.decode(),
                [[h.key, h.value.decode()] for h in r.headers or ()],
                int(r.timestamp.timestamp() * 1000),
            ]
            for r in rows
        ]
        yield os.getcwd(), got

    parts = df.rdd.mapPartitions(where).collect()
    return {
        "cwds": sorted({cwd for cwd, _ in parts}),
        "rows": sorted(row for _, rows in parts for row in rows),
    }


def _step(report: dict[str, Any], name: str, fn: Callable[[], dict[str, Any]]) -> None:
    started = time.monotonic()
    try:
        report[name] = fn()
        report[name]["seconds"] = round(time.monotonic() - started, 1)
    except Exception as exc:
        traceback.print_exc()
        lines = [line for line in str(exc).splitlines() if line.strip()]
        errors = [line for line in lines if "Error" in line or "Exception" in line]
        report[name] = {"error": (errors or lines or [type(exc).__name__])[-1].strip()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("master")
    parser.add_argument("report")
    parser.add_argument("--jars")
    parser.add_argument("--kafka")
    parser.add_argument("--topic")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    started = time.monotonic()
    spark, report["sink"] = sink(args.master, args.jars)
    report["sink"]["seconds"] = round(time.monotonic() - started, 1)
    try:
        _step(report, "batch", lambda: batch_read(spark))
        _step(report, "stream", lambda: stream_read(spark))
        if args.kafka:
            _step(report, "kafka", lambda: kafka_read(spark, args.kafka, args.topic))
    finally:
        spark.stop()  # the application ends: the master lists it as completed
        Path(args.report).write_text(json.dumps(report))


if __name__ == "__main__":
    main()
