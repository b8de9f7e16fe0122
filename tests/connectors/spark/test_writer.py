"""The `tributary` data source as a writer: batch and streaming writes with the Kafka
sink's columns and options, JSON and Avro values read by Connect's converters, the
commit's transaction and its replay marker (a batch id committed twice is written
once), and what readers see: the log at read_committed, `connect log consume`, the
Spark reader, a Connect sink."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from connectors.spark.datasource import register
from connectors.spark.datasource.options import OptionError
from connectors.spark.datasource.writer import (
    MARKER_TOPIC,
    TributaryStreamWriter,
    _stage,
    marker_group,
)
from connectors.spark.datasource.writer_options import parse_writer_options
from log import FileLog, TopicPartition, partition_for_key
from tests.waiting import wait_until

pytestmark = pytest.mark.spark


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    FileLog(tmp_path / "log", background=False).close()
    return tmp_path / "log"


def committed(log: FileLog, topic: str) -> list[Any]:
    """Every committed record of the topic, partition by partition."""
    out = []
    for p in range(log.partition_count(topic)):
        position, end = log.earliest_offset(topic, p), log.last_stable_offset(topic, p)
        while position < end:
            batch = log.read(topic, p, position, isolation_level="read_committed")
            out.extend(batch)
            position = getattr(batch, "next_offset", None) or batch[-1].offset + 1
    return out


def test_options_are_checked_in_the_driver(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"log.dir"):
        parse_writer_options({"topic": "t"})
    with pytest.raises(OptionError, match=r"value.format"):
        parse_writer_options({"log.dir": str(tmp_path), "value.format": "xml"})
    with pytest.raises(OptionError, match=r"topic.partitions"):
        parse_writer_options({"log.dir": str(tmp_path), "topic.partitions": "0"})
    with pytest.raises(OptionError, match=r"schema.registry.url"):
        parse_writer_options({"bootstrap.servers": "h:9092", "value.format": "avro"})
    opts = parse_writer_options(
        {"log.dir": "rel", "kafka.acks": "all", "topic.config.cleanup.policy": "compact"}
    )
    assert opts.log_dir == str(Path("rel").resolve())
    assert opts.staging_dir == str(Path("rel").resolve() / ".spark-staging")
    assert opts.topic_config == {"cleanup.policy": "compact"}


def test_batch_write_with_the_kafka_sinks_columns(spark: Any, log_dir: Path) -> None:
    """key, value, topic, partition, headers and timestamp columns; the topic column
    spreads rows over two topics, keys land on the partition a Connect source picks,
    and the option `topic` beats the column."""
    register(spark)
    stamp = dt.datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=dt.UTC)
    rows = [
        (f"k{i}", f"v{i}", "left" if i % 2 else "right", 0 if i == 7 else None,
         [("h", f"x{i}".encode())], stamp)
        for i in range(40)
    ]
    schema = (
        "key string, value string, topic string, partition int, "
        "headers array<struct<key: string, value: binary>>, timestamp timestamp"
    )
    df = spark.createDataFrame(rows, schema).repartition(3)
    writer = df.write.format("tributary").mode("append").option("log.dir", str(log_dir))
    writer.option("topic.partitions", "3").save()
    with FileLog(log_dir, background=False) as log:
        assert sorted(log.list_topics()) == ["left", "right"]
        seen = {}
        for topic in ("left", "right"):
            for r in committed(log, topic):
                seen[r.key.decode()] = (topic, r.partition, r.value, r.headers, r.timestamp)
        assert len(seen) == 40
        for i in range(40):
            topic, partition, value, headers, timestamp = seen[f"k{i}"]
            assert topic == ("left" if i % 2 else "right")
            assert partition == (0 if i == 7 else partition_for_key(f"k{i}".encode(), 3))
            assert (value, list(headers)) == (f"v{i}".encode(), [("h", f"x{i}".encode())])
            assert timestamp == int(stamp.timestamp() * 1000)

    # The option wins over the column; a binary value and no key are fine; without a
    # timestamp column a record is stamped when the write appends it.
    before = int(time.time() * 1000)
    spark.createDataFrame([("left", b"\x00\x01")], "topic string, value binary").write.format(
        "tributary"
    ).mode("append").option("log.dir", str(log_dir)).option("topic", "forced").save()
    after = time.time() * 1000
    with FileLog(log_dir, background=False) as log:
        forced = committed(log, "forced")
        assert [(r.key, r.value) for r in forced] == [(None, b"\x00\x01")]
        assert before <= forced[0].timestamp <= after

    # The Spark reader sees exactly the rows written.
    back = (
        spark.read.format("tributary").option("log.dir", str(log_dir)).option("topic", "left")
        .load().selectExpr("cast(key as string) k", "cast(value as string) v").collect()
    )
    assert sorted((r.k, r.v) for r in back) == sorted(
        (f"k{i}", f"v{i}") for i in range(40) if i % 2
    )


def test_a_null_topic_fails_the_write_and_leaves_nothing(spark: Any, log_dir: Path) -> None:
    register(spark)
    df = spark.createDataFrame([("a", "t1"), ("b", None)], "value string, topic string")
    with pytest.raises(Exception, match="null topic"):
        df.coalesce(1).write.format("tributary").mode("append").option(
            "log.dir", str(log_dir)
        ).save()
    with FileLog(log_dir, background=False) as log:
        assert all(committed(log, t) == [] for t in log.list_topics())
        assert not list((log_dir / ".spark-staging").rglob("*.arrow"))


def test_json_values_read_by_connect_log_consume(
    spark: Any, log_dir: Path, subprocess_env: dict[str, str]
) -> None:
    """value.format=json without a value column: the other columns are the value, as
    JsonConverter envelopes; `connect log consume` prints them (read_committed)."""
    register(spark)
    df = spark.createDataFrame(
        [(i, f"r{i % 2}", i * 2.5) for i in range(5)], "id long, region string, amount double"
    ).selectExpr("cast(id as string) key", "*")
    df.write.format("tributary").mode("append").option("log.dir", str(log_dir)).option(
        "topic", "j"
    ).option("value.format", "json").save()
    out = subprocess.run(
        [sys.executable, "-m", "connect.cli.main", "log", "--log-dir", str(log_dir), "consume",
         "j", "--from-beginning", "--json", "--max-messages", "5", "--timeout-ms", "5000",
         "--isolation-level", "read_committed"],
        capture_output=True, text=True, env=subprocess_env, timeout=60, check=True,
    ).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    values = sorted((json.loads(v["value"]) for v in lines), key=lambda v: v["payload"]["id"])
    assert [v["payload"] for v in values] == [
        {"id": i, "region": f"r{i % 2}", "amount": i * 2.5} for i in range(5)
    ]
    assert [f["field"] for f in values[0]["schema"]["fields"]] == ["id", "region", "amount"]
    # The reader infers the value columns of the transactional topic (its last offset is
    # a commit marker, not a record).
    read = (
        spark.read.format("tributary").option("log.dir", str(log_dir)).option("topic", "j")
        .option("value.format", "json").load()
    )
    assert sorted(tuple(r) for r in read.select("id", "region", "amount").collect()) == [
        (i, f"r{i % 2}", i * 2.5) for i in range(5)
    ]


def test_avro_values_registered_and_read_by_a_connect_sink(
    spark: Any, log_dir: Path, tmp_path: Path, start_herder: Any
) -> None:
    """value.format=avro: a struct `value` column in Confluent's wire format, its schema
    registered in the log's embedded registry; a JdbcSink with the AvroConverter keeps
    the rows as a SQLite table."""
    import sqlite3

    register(spark)
    df = spark.createDataFrame(
        [(i, f"north-{i}", i * 1.25) for i in range(30)], "id long, region string, amount double"
    ).selectExpr("cast(id as string) key", "named_struct('id', id, 'region', region, "
                 "'amount', amount) value")
    df.write.format("tributary").mode("append").option("log.dir", str(log_dir)).option(
        "topic", "av"
    ).option("value.format", "avro").save()
    with FileLog(log_dir, background=False) as log:
        assert "_schemas" in log.list_topics(include_internal=True)
        assert all(r.value[0] == 0 for r in committed(log, "av"))  # the magic byte
    db = tmp_path / "sink.db"
    herder = start_herder()
    herder.put_connector_config("avro-sink", {
        "connector.class": "JdbcSinkConnector", "tasks.max": "1", "topics": "av",
        "connection.url": f"sqlite:///{db}", "auto.create": "true", "insert.mode": "upsert",
        "pk.mode": "record_value", "pk.fields": "id",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": "embedded",
        "consumer.override.isolation.level": "read_committed",
    }, allow_replace=False)

    def rows() -> list[tuple[Any, ...]]:
        if not db.exists():
            return []
        with sqlite3.connect(db) as conn:
            try:
                return conn.execute("SELECT id, region, amount FROM av ORDER BY id").fetchall()
            except sqlite3.OperationalError:
                return []

    wait_until(lambda: len(rows()) == 30, 60, "the sink's 30 rows")
    assert rows() == [(i, f"north-{i}", i * 1.25) for i in range(30)]


def test_a_replayed_micro_batch_is_written_once(log_dir: Path, tmp_path: Path) -> None:
    """Spark re-runs the last planned batch after a restart and commits it again, in
    a fresh process: the marker in the log says it was written (step 2). Without a
    query id from the tasks (no Spark task here) it comes from the checkpoint."""
    import pyarrow as pa

    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "metadata").write_text('{"id":"q1"}\n')
    opts = {"log.dir": str(log_dir), "topic": "once", "checkpointLocation": str(checkpoint)}

    def staged() -> Any:
        batch = pa.RecordBatch.from_pydict({"value": [b"a", b"b", b"c"]})
        return _stage(parse_writer_options(opts), "w", iter([batch]))

    for batch_id in (0, 0, 1, 1, 0):
        TributaryStreamWriter(opts).commit([staged()], batch_id)
    with FileLog(log_dir, background=False) as log:
        assert [r.value for r in committed(log, "once")] == [b"a", b"b", b"c"] * 2
        marker = TopicPartition(MARKER_TOPIC, 0)
        assert log.committed_offsets(marker_group("q1"), [marker])[marker].offset == 2
    assert not list((log_dir / ".spark-staging").rglob("*.arrow"))


def test_streaming_write_one_transaction_per_batch(spark: Any, log_dir: Path,
                                                   tmp_path: Path) -> None:
    """A stream from the log back to the log (value.format=json), restarted from its
    checkpoint: every input row once in the output, the marker at the last batch."""
    register(spark)
    with FileLog(log_dir, background=False) as log:
        log.create_topic("in", 2)
        for p in range(2):
            log.append("in", p, [f"{p}-{i}".encode() for i in range(50)])
    checkpoint = tmp_path / "checkpoint"

    def run() -> str:
        query = (
            spark.readStream.format("tributary").option("log.dir", str(log_dir))
            .option("topic", "in").option("startingOffsets", "earliest").load()
            .selectExpr("key", "value", "partition")
            .writeStream.format("tributary").option("log.dir", str(log_dir))
            .option("topic", "out").option("topic.partitions", "2")
            .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
        )
        query.awaitTermination(120)
        return str(query.id)

    query_id = run()
    with FileLog(log_dir, background=False) as log:
        log.append("in", 0, [b"late"])
    assert run() == query_id
    with FileLog(log_dir, background=False) as log:
        out = committed(log, "out")
        assert sorted(r.value for r in out) == sorted(
            [f"{p}-{i}".encode() for p in range(2) for i in range(50)] + [b"late"]
        )
        assert {(r.value[:1], r.partition) for r in out if r.value != b"late"} == {
            (b"0", 0), (b"1", 1)
        }
        marker = log.committed_offsets(marker_group(query_id), [TopicPartition(MARKER_TOPIC, 0)])
        assert marker[TopicPartition(MARKER_TOPIC, 0)].offset >= 2
