"""Spark on a cluster: the Parquet sink's Spark writer and the `tributary` data source
(batch and streaming) run against a standalone master and worker (`spark_cluster`),
and the work is done by the cluster's executor, not in the driver. In the same
application Spark's own Kafka source reads a topic Tributary (KafkaLog) wrote to a
real broker (`kafka_broker`), so a Spark user can mix both.

One child process (`cluster_job`) holds the cluster's SparkSession (this process has
the suite's local one) and runs every step once: a SparkSession and its executor cost
~20 s here, paid once. The tests below each check one step of its report, the files
it left, and what the master and the worker recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from connectors.spark.files import parse_file_name
from log.kafka import KafkaLog
from tests.conftest import ROOT
from tests.connectors.spark import cluster_job
from tests.connectors.spark.helpers import lake_files, lake_rows
from tests.kafka_broker import KafkaBroker
from tests.spark_cluster import SparkCluster

T0 = 1_700_000_000_000
#: What Tributary writes to the broker: partition → (codec, records).
KAFKA_PARTITIONS = {0: None, 1: "lz4", 2: "zstd"}
KAFKA_RECORDS = 40

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def kafka_expected(p: int, i: int) -> list[Any]:
    """A record as the job reports it: partition, offset, key, value, headers, time."""
    return [p, i, f"k{p}-{i}", json.dumps({"id": p * 1000 + i}), [["h", f"{p}/{i}"]], T0 + i]


def write_kafka_topic(broker: KafkaBroker, topic: str) -> None:
    """Tributary's KafkaLog writes the topic, one codec per partition."""
    with KafkaLog(broker.bootstrap) as log:
        # Kept without a time limit: the broker deletes by the records' own timestamps
        # (T0 is in 2023), first 30 s after it starts and then every 5 minutes.
        log.create_topic(topic, len(KAFKA_PARTITIONS), config={"retention.ms": "-1"})
        for p, codec in KAFKA_PARTITIONS.items():
            rows = [kafka_expected(p, i) for i in range(KAFKA_RECORDS)]
            offsets = log.append(
                topic,
                p,
                [r[3].encode() for r in rows],
                keys=[r[2].encode() for r in rows],
                timestamps=[r[5] for r in rows],
                headers=[[(k, v.encode()) for k, v in r[4]] for r in rows],
                compression=codec,
            )
            assert offsets == range(KAFKA_RECORDS)


@pytest.fixture(scope="module")
def run(
    spark_cluster: SparkCluster,
    spark_kafka_jars: str,
    kafka_broker: KafkaBroker,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """The job's report, its working directory (`cwd`) and its stderr."""
    cwd = tmp_path_factory.mktemp("cluster-job")
    report = cwd / "report.json"
    topic = f"tributary-to-spark-{uuid.uuid4().hex[:8]}"
    write_kafka_topic(kafka_broker, topic)
    # The job starts its own JVM: nothing of this process's local session's gateway.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["PYTHONPATH"] = str(ROOT)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.connectors.spark.cluster_job",
            spark_cluster.master_url,
            str(report),
            "--jars",
            spark_kafka_jars,
            "--kafka",
            kafka_broker.bootstrap,
            "--topic",
            topic,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert report.exists(), f"the job wrote no report ({done.returncode}):\n{done.stderr[-3000:]}"
    return {"report": json.loads(report.read_text()), "cwd": cwd, "stderr": done.stderr}


def test_the_sink_writes_the_lake_through_the_clusters_executor(
    run: dict[str, Any], spark_cluster: SparkCluster
) -> None:
    sink = run["report"]["sink"]
    assert sink["master"] == spark_cluster.master_url
    assert sink["executors"] >= 1
    assert sink["committed"] == 10  # two files of 5; the last 2 records stay buffered
    lake = run["cwd"] / cluster_job.LAKE
    names = [path.name for path in lake_files(lake)]
    assert names == [
        "orders+0+0000000000+0000000004.parquet",
        "orders+0+0000000005+0000000009.parquet",
    ]
    assert [parse_file_name(n).end for n in names] == [4, 9]  # type: ignore[union-attr]
    assert [row["id"] for row in lake_rows(lake)] == list(range(10))
    assert not list((lake / "topics").rglob("*.dir"))  # Spark's scratch dirs are gone
    # The master ran the application on the worker's cores, and its executor wrote.
    app = spark_cluster.application(sink["app_id"])
    assert app is not None and app["name"] == "tributary-cluster-test"
    assert app["cores"] >= 1
    assert "Finished task" in spark_cluster.executor_logs(sink["app_id"])


def test_the_tributary_source_reads_a_relative_log_dir_on_the_executor(
    run: dict[str, Any], spark_cluster: SparkCluster
) -> None:
    batch = run["report"]["batch"]
    assert "error" not in batch, batch
    expected = sorted([p, i, json.dumps({"id": p * 1000 + i})] for p in range(2) for i in range(10))
    assert batch["rows"] == expected
    # Every partition was scanned in the executor's directory on the worker, where
    # the relative path means nothing: the driver resolved it.
    app_dir = spark_cluster.work_dir / run["report"]["sink"]["app_id"]
    assert batch["cwds"] and all(Path(cwd).is_relative_to(app_dir) for cwd in batch["cwds"])


def test_a_stream_on_the_cluster_resumes_from_its_checkpoint(run: dict[str, Any]) -> None:
    stream = run["report"]["stream"]
    assert "error" not in stream, stream
    table = pq.read_table(stream["out"])
    got = sorted(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))
    # Two drains with one checkpoint: 10 then 3 more per partition, none twice.
    assert got == [(p, o) for p in range(2) for o in range(13)]


def test_sparks_kafka_source_reads_every_record_tributary_wrote_to_the_broker(
    run: dict[str, Any], spark_cluster: SparkCluster
) -> None:
    kafka = run["report"]["kafka"]
    assert "error" not in kafka, kafka
    expected = sorted(kafka_expected(p, i) for p in KAFKA_PARTITIONS for i in range(KAFKA_RECORDS))
    assert kafka["rows"] == expected  # keys, values, headers, offsets, times; lz4, zstd
    app_dir = spark_cluster.work_dir / run["report"]["sink"]["app_id"]
    assert kafka["cwds"] and all(Path(cwd).is_relative_to(app_dir) for cwd in kafka["cwds"])
