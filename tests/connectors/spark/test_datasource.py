"""The `tributary` Spark data source: batch and streaming reads of log topics, the
offsets options, JSON decoding, and a checkpointed stream restarted without gaps or
repeats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from connectors.spark.datasource import register
from connectors.spark.datasource.options import OptionError, parse_options
from connectors.spark.datasource.source import _capped
from log import FileLog
from tests.connectors.spark.helpers import ORDER, order

pytestmark = pytest.mark.spark
T0 = 1_700_000_000_000


def fill(
    log: FileLog,
    topic: str,
    per_partition: int,
    *,
    partitions: int = 2,
    start: int = 0,
    json_values: bool = False,
) -> None:
    if topic not in log.list_topics():
        log.create_topic(topic, partitions)
    converter = None
    if json_values:
        from connect.converters import JsonConverter

        converter = JsonConverter()
        converter.configure({"schemas.enable": True}, is_key=False)
    for p in range(partitions):
        ids = [p * 1_000_000 + i for i in range(start, start + per_partition)]
        if converter is not None:
            values = converter.from_connect_batch(
                topic, [ORDER] * len(ids), [order(i) for i in ids]
            )
        else:
            values = [json.dumps({"id": i}).encode() for i in ids]
        log.append(
            topic,
            p,
            values,
            keys=[str(i).encode() for i in ids],
            timestamps=[T0 + i for i in range(start, start + per_partition)],
            headers=[[("h", b"v")]] * len(ids),
        )


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "log"


@pytest.fixture
def reader(spark: Any, log_dir: Path) -> Any:
    register(spark)
    return lambda: spark.read.format("tributary").option("log.dir", str(log_dir))


def test_batch_read_has_kafka_columns_for_every_record(reader: Any, log_dir: Path) -> None:
    with FileLog(log_dir, background=False) as log:
        fill(log, "events", 20)
    df = reader().option("topic", "events").option("includeHeaders", "true").load()
    assert df.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    rows = df.orderBy("partition", "offset").collect()
    assert len(rows) == 40
    assert [(r.partition, r.offset) for r in rows[:2]] == [(0, 0), (0, 1)]
    assert json.loads(rows[21].value) == {"id": 1_000_001}
    assert rows[21].key == b"1000001"
    assert rows[5].timestamp.timestamp() * 1000 == T0 + 5
    assert rows[0].headers[0].key == "h" and rows[0].headers[0].value == b"v"


def test_starting_and_ending_offsets_and_timestamps(reader: Any, log_dir: Path) -> None:
    with FileLog(log_dir, background=False) as log:
        fill(log, "events", 20)
    ranged = (
        reader()
        .option("topics", "events")
        .option("startingOffsets", '{"events": {"0": 5, "1": -2}}')
        .option("endingOffsets", '{"events": {"0": 8, "1": -1}}')
        .load()
    )
    got = sorted((r.partition, r.offset) for r in ranged.select("partition", "offset").collect())
    assert got == [(0, 5), (0, 6), (0, 7)] + [(1, o) for o in range(20)]
    by_time = reader().option("topic", "events").option("startingTimestamp", str(T0 + 15)).load()
    assert by_time.count() == 10
    latest = reader().option("topic", "events").option("startingOffsets", "latest").load()
    assert latest.count() == 0


def test_topic_pattern_reads_every_matching_topic(reader: Any, log_dir: Path) -> None:
    with FileLog(log_dir, background=False) as log:
        fill(log, "shop-orders", 3, partitions=1)
        fill(log, "shop-customers", 2, partitions=1)
        fill(log, "other", 5, partitions=1)
    df = reader().option("topic.pattern", "shop-.*").load()
    counts = {r.topic: r["count"] for r in df.groupBy("topic").count().collect()}
    assert counts == {"shop-orders": 3, "shop-customers": 2}


def test_json_values_decode_into_typed_columns(reader: Any, log_dir: Path) -> None:
    with FileLog(log_dir, background=False) as log:
        fill(log, "orders", 4, json_values=True)
    df = reader().option("topic", "orders").option("value.format", "json").load()
    assert dict(df.dtypes) == {
        "id": "bigint",
        "region": "string",
        "amount": "decimal(10,2)",
        "day": "date",
        "at": "timestamp",
        "_topic": "string",
        "_partition": "int",
        "_offset": "bigint",
        "_timestamp": "timestamp",
    }
    row = df.where("id = 3").collect()[0]
    expected = order(3)
    assert (row.region, row.amount, row.day) == (
        expected.get("region"),
        expected.get("amount"),
        expected.get("day"),
    )
    assert row.at.timestamp() == expected.get("at").timestamp()
    assert (row._partition, row._offset) == (0, 3)


def test_stream_with_checkpoint_restarts_without_gaps_or_repeats(
    spark: Any, log_dir: Path, tmp_path: Path
) -> None:
    register(spark)
    with FileLog(log_dir, background=False) as log:
        fill(log, "events", 25)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> Any:
        query = (
            spark.readStream.format("tributary")
            .option("log.dir", str(log_dir))
            .option("topic", "events")
            .option("startingOffsets", "earliest")
            .option("maxRecordsPerTrigger", "20")
            .load()
            .select("partition", "offset")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="0 seconds")
            .start()
        )
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        return query

    first = run()
    # 50 records at 20 per trigger: the read limit is honoured.
    assert [p["numInputRows"] for p in first.recentProgress if p["numInputRows"]] == [20, 20, 10]
    with FileLog(log_dir, background=False) as log:
        fill(log, "events", 27, start=25)
    # Restarted from its checkpoint, the reader learns where it stopped from Spark (it is
    # not told in latestOffset on PySpark 4.1) and still caps: 54 more records.
    second = run()
    assert [p["numInputRows"] for p in second.recentProgress if p["numInputRows"]] == [20, 20, 14]
    rows = sorted(tuple(r) for r in spark.read.parquet(str(out)).collect())
    assert rows == sorted((p, o) for p in range(2) for o in range(52))


def test_read_limit_is_shared_in_proportion_to_the_backlog() -> None:
    begin = {"t": {"0": 0, "1": 10}}
    end = {"t": {"0": 90, "1": 20}}
    assert _capped(begin, end, 10) == {"t": {"0": 9, "1": 11}}  # backlogs 90 and 10
    assert _capped(begin, end, 1000) == end


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"topic": "t"}, "log.dir"),
        ({"log.dir": "x"}, "topic"),
        ({"log.dir": "x", "topic": "t", "topic.pattern": "t"}, "topic"),
        ({"log.dir": "x", "topic.pattern": "("}, "topic.pattern"),
        ({"log.dir": "x", "topic": "t", "startingOffsets": "soon"}, "startingOffsets"),
        ({"log.dir": "x", "topic": "t", "endingOffsets": "earliest"}, "endingOffsets"),
        ({"log.dir": "x", "topic": "t", "maxRecordsPerTrigger": "0"}, "maxRecordsPerTrigger"),
        ({"log.dir": "x", "topic": "t", "value.format": "xml"}, "value.format"),
    ],
)
def test_bad_options_are_refused_by_name(options: dict[str, str], name: str) -> None:
    with pytest.raises(OptionError) as info:
        parse_options(options)
    assert info.value.name == name


def test_a_relative_log_dir_is_resolved_where_the_options_are_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver parses the options and pickles the reader to executors that run in
    directories of their own (test_cluster runs one): the path must not travel
    relative."""
    monkeypatch.chdir(tmp_path)
    opts = parse_options({"log.dir": "data/log", "topic": "t"})
    assert opts.log_dir == str(tmp_path / "data" / "log")
    assert parse_options({"path": "/srv/log", "topic": "t"}).log_dir == "/srv/log"


def test_avro_values_decode_with_schemas_from_the_logs_registry(reader: Any, log_dir: Path) -> None:
    from connect.converters.avro import AvroConverter
    from connect.registry.embedded import install_embedded_registry
    from tests.connectors.spark.helpers import ORDER_V2

    with FileLog(log_dir, background=False) as log:
        uninstall = install_embedded_registry(log)
        try:
            converter = AvroConverter()
            converter.configure({"schema.registry.url": "embedded"}, False)
            old = [converter.from_connect_data("orders", ORDER, order(i)) for i in range(3)]
            new = [
                converter.from_connect_data("orders", ORDER_V2, order(i, ORDER_V2))
                for i in range(3, 5)
            ]
            converter.close()
        finally:
            uninstall()
        log.create_topic("orders", 1)
        log.append("orders", 0, old + new, timestamps=[T0] * 5)
    df = reader().option("topic", "orders").option("value.format", "avro").load()
    types = dict(df.dtypes)
    assert (types["amount"], types["day"], types["at"], types["note"]) == (
        "decimal(10,2)",
        "date",
        "timestamp",
        "string",
    )
    rows = {r.id: r for r in df.collect()}
    assert sorted(rows) == [0, 1, 2, 3, 4]
    assert rows[1].note is None and rows[4].note == "n4"  # old schema: projected, null
    assert rows[4].amount == order(4).get("amount")
    assert rows[2].day == order(2).get("day")
    assert rows[0]._offset == 0 and rows[4]._offset == 4


@pytest.mark.parametrize("value_format", ["none", "json"])
def test_a_missing_log_dir_is_a_clear_error_and_is_not_created(
    reader: Any, log_dir: Path, value_format: str
) -> None:
    """A mistyped log.dir must not read as an empty log (and leave one behind): the
    batch read (or, for json, the schema inference) says there is no log there."""
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as info:
        reader().option("topic", "events").option("value.format", value_format).load().collect()
    assert f"no log at {log_dir}" in str(info.value)
    assert not log_dir.exists()
