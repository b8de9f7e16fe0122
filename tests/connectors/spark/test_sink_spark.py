"""The lake as Spark sees it: one table across schema changes (mergeSchema), Hive-style
partition columns, and the Spark writer (`parquet.writer=spark`, files written by the
SparkSession through Hadoop's file system)."""

from __future__ import annotations

import contextlib
import decimal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect.api import ConfigError, TopicPartition
from tests.connectors.spark.helpers import ORDER_V2, lake_files, order, records, start_task

pytestmark = pytest.mark.spark
TP = TopicPartition("orders", 0)


def test_a_new_optional_column_keeps_the_topic_one_table(spark: Any, tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="4")
    task.put(records(range(6)) + records(range(6, 10), schema=ORDER_V2))
    task.writers[TP].commit()
    assert len(lake_files(tmp_path)) == 3
    df = spark.read.option("mergeSchema", "true").parquet(str(tmp_path / "topics/orders"))
    types = dict(df.dtypes)
    assert types["amount"] == "decimal(10,2)"
    assert types["day"] == "date"
    assert types["at"] == "timestamp"
    assert types["partition"] == "int"  # the default partitioner's directory
    rows = {r.id: r for r in df.collect()}
    assert sorted(rows) == list(range(10))
    assert rows[2].note is None and rows[7].note == "n7"
    assert rows[7].amount == decimal.Decimal("8.75")


def test_field_partitions_are_columns_spark_can_prune(spark: Any, tmp_path: Path) -> None:
    task, _ = start_task(
        tmp_path,
        flush_size="30",
        partitioner_class="FieldPartitioner",
        partition_field_name="region",
    )
    task.put(records(range(30)))
    df = spark.read.parquet(str(tmp_path / "topics/orders"))
    eu = df.where("region = 'eu'")
    assert sorted(r.id for r in eu.collect()) == list(range(0, 30, 3))
    assert (
        "PartitionFilters: [isnotnull(region" in eu._jdf.queryExecution().executedPlan().toString()
    )


def test_the_spark_writer_publishes_the_same_files(spark: Any, tmp_path: Path) -> None:
    task, context = start_task(tmp_path, flush_size="5", parquet_writer="spark")
    assert task.spark is spark  # the process's one session
    task.open([TP])
    task.put(records(range(12)))
    names = [f.name for f in lake_files(tmp_path)]
    assert names == [
        "orders+0+0000000000+0000000004.parquet",
        "orders+0+0000000005+0000000009.parquet",
    ]
    assert not list((tmp_path / "topics").rglob("*.dir"))  # Spark's scratch dirs are gone
    df = spark.read.parquet(str(tmp_path / "topics/orders"))
    assert sorted(r.id for r in df.collect()) == list(range(10))
    assert df.where("id = 3").collect()[0].amount == order(3).get("amount")
    again, context = start_task(tmp_path, flush_size="5", parquet_writer="spark")
    again.open([TP])
    assert context.seeks == {TP: 10}  # recovered through Hadoop's listing


def test_a_cluster_master_is_never_served_by_the_local_session(
    spark: Any, tmp_path: Path
) -> None:
    """A process has one SparkContext and getOrCreate returns it whatever master is
    asked for: a sink configured for a cluster, in a process that runs a local session,
    wrote through the local one without a word. It is refused, naming spark.master."""
    # A master that answers (the second of two, as an HA pair is given): only the
    # running session stands in the way.
    with socket.create_server(("127.0.0.1", 0)) as listening, _closed_port() as closed:
        cluster = f"spark://127.0.0.1:{closed},127.0.0.1:{listening.getsockname()[1]}"
        with pytest.raises(ConfigError) as refused:
            start_task(tmp_path, parquet_writer="spark", spark_master=cluster)
    assert refused.value.name == "spark.master"
    assert str(refused.value) == (
        f"Invalid value {cluster} for configuration spark.master: this process already "
        "runs a Spark session on local[2], and a process has one; run the tasks of each "
        "master in processes of their own (task.isolation=process)"
    )
    assert not list(tmp_path.rglob("*.parquet"))
    # Another local master (threads differ) is served by the local session.
    task, _ = start_task(tmp_path, parquet_writer="spark", spark_master="local[*]")
    assert task.spark is spark and spark.sparkContext.master == "local[2]"


@contextlib.contextmanager
def _closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 where nothing listens (held bound, not listening)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_a_master_nobody_answers_for_is_one_line_at_once(tmp_path: Path) -> None:
    """Spark retried for a minute, stopped its context and the task failed with a Java
    stack ("Cannot call methods on a stopped SparkContext"); the reason was only in
    Spark's log."""
    with _closed_port() as port:
        started = time.monotonic()
        with pytest.raises(ConfigError) as refused:
            start_task(tmp_path, parquet_writer="spark", spark_master=f"spark://127.0.0.1:{port}")
        assert time.monotonic() - started < 10
    assert str(refused.value) == (
        f"Invalid value spark://127.0.0.1:{port} for configuration spark.master: "
        f"no Spark master answers there (127.0.0.1:{port}: Connection refused)"
    )
    with pytest.raises(ConfigError, match="spark://HOST:PORT"):
        start_task(tmp_path, parquet_writer="spark", spark_master="spark://nowhere")


def test_hadoop_storage_state_files_listing_and_refusals(spark: Any, tmp_path: Path) -> None:
    from connectors.spark.storage import HadoopStorage, StorageError

    storage = HadoopStorage((tmp_path / "store").as_uri(), spark)
    storage.check_writable()
    assert storage.read_text("logs/t/0/commit.intent") is None
    storage.write_text("logs/t/0/commit.intent", '{"files": []}')
    assert storage.read_text("logs/t/0/commit.intent") == '{"files": []}'
    storage.write_text("logs/t/0/commit.intent", '{"files": [1]}')  # replaced whole
    assert storage.read_text("logs/t/0/commit.intent") == '{"files": [1]}'
    assert sorted(storage.walk_files("logs")) == ["logs/t/0/commit.intent"]
    storage.delete("logs/t/0/commit.intent")
    assert not storage.exists("logs/t/0/commit.intent")
    (tmp_path / "blocked").write_text("a file")
    with pytest.raises(StorageError) as info:
        HadoopStorage((tmp_path / "blocked" / "store").as_uri(), spark).check_writable()
    assert "blocked" in str(info.value)
