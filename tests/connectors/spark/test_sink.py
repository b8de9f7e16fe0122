"""SparkParquetSink through the plugin API: layout, partitioners, rotation, schema
changes, the commit protocol's recovery, the JSON fast path and config refusals."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connect.api import ConfigError, SinkRecord, TopicPartition
from connect.converters import JsonConverter
from connectors.spark.config import parse
from connectors.spark.files import parse_file_name
from connectors.spark.partitioners import joda_to_strftime
from connectors.spark.storage import StorageError
from tests.connectors.spark.helpers import (
    ORDER,
    ORDER_V2,
    T0,
    lake_files,
    lake_rows,
    order,
    records,
    start_task,
)

TP = TopicPartition("orders", 0)


def rel(lake: Path, path: Path) -> str:
    return path.relative_to(lake / "topics/orders").as_posix()


def test_default_partitioner_names_files_by_offsets_and_keeps_types(tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="10")
    task.open([TP])
    task.put(records(range(25)))
    files = lake_files(tmp_path)
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "topics/orders/partition=0/orders+0+0000000000+0000000009.parquet",
        "topics/orders/partition=0/orders+0+0000000010+0000000019.parquet",
    ]
    # Only what is in published files may be committed; 20..24 are still buffered.
    assert task.pre_commit({TP: 25}) == {TP: 20}
    schema = pq.read_schema(files[0])
    assert schema.field("amount").type == pa.decimal128(10, 2)
    assert schema.field("day").type == pa.date32()
    assert schema.field("at").type == pa.timestamp("ms", tz="UTC")
    rows = lake_rows(tmp_path)
    assert [r["id"] for r in rows] == list(range(20))
    assert rows[3]["amount"] == decimal.Decimal("3.75")
    assert rows[3]["day"] == dt.date(2024, 1, 4)
    assert rows[3]["at"] == dt.datetime(2024, 1, 1, 0, 0, 3, tzinfo=dt.UTC)
    task.stop()


def test_field_partitioner_writes_hive_directories(tmp_path: Path) -> None:
    task, _ = start_task(
        tmp_path,
        flush_size="9",
        partitioner_class="FieldPartitioner",
        partition_field_name="region",
    )
    task.open([TP])
    task.put(records(range(9)))
    names = sorted(rel(tmp_path, f) for f in lake_files(tmp_path))
    # One commit: the files of each region carry the first and last offset they hold.
    assert names == [
        "region=apac/orders+0+0000000002+0000000008.parquet",
        "region=eu/orders+0+0000000000+0000000006.parquet",
        "region=us/orders+0+0000000001+0000000007.parquet",
    ]
    eu = pq.read_table(tmp_path / "topics/orders" / names[1]).column("id").to_pylist()
    assert eu == [0, 3, 6]


def test_confluent_field_partitioner_class_name_and_several_fields(tmp_path: Path) -> None:
    task, _ = start_task(
        tmp_path,
        flush_size="3",
        partitioner_class="io.confluent.connect.storage.partitioner.FieldPartitioner",
        partition_field_name="region,day",
    )
    task.put(records(range(3)))
    dirs = {rel(tmp_path, f.parent) for f in lake_files(tmp_path)}
    assert dirs == {
        "region=eu/day=2024-01-01",
        "region=us/day=2024-01-02",
        "region=apac/day=2024-01-03",
    }


def test_time_based_partitioner_uses_record_time_and_path_format(tmp_path: Path) -> None:
    task, _ = start_task(
        tmp_path,
        flush_size="4",
        partitioner_class="TimeBasedPartitioner",
        partition_duration_ms="3600000",
        path_format="'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH",
        timezone="UTC",
    )
    # One record every 40 minutes from 22:13:20 UTC: hours 22, 22, 23, 00 (next day).
    task.put(records(range(4), ts_step_ms=40 * 60_000))
    dirs = [rel(tmp_path, f.parent) for f in lake_files(tmp_path)]
    assert sorted(dirs) == [
        "year=2023/month=11/day=14/hour=22",
        "year=2023/month=11/day=14/hour=23",
        "year=2023/month=11/day=15/hour=00",
    ]


def test_time_based_partitioner_from_a_record_field_in_another_zone(tmp_path: Path) -> None:
    task, _ = start_task(
        tmp_path,
        flush_size="2",
        partitioner_class="DailyPartitioner",
        timestamp_extractor="RecordField",
        timestamp_field="at",
        timezone="Asia/Tokyo",
    )
    task.put(records(range(2)))
    dirs = {rel(tmp_path, f.parent) for f in lake_files(tmp_path)}
    assert dirs == {"year=2024/month=01/day=01"}  # 00:00:0x UTC is 09:00 in Tokyo


def test_rotate_interval_cuts_files_by_record_time(tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="1000", rotate_interval_ms="5000")
    task.put(records(range(12)))  # one record a second
    spans = [(p.start, p.end) for p in map(parse_file_name, (f.name for f in lake_files(tmp_path)))]
    assert spans == [(0, 4), (5, 9)]
    assert task.pre_commit({TP: 12}) == {TP: 10}


def test_rotate_schedule_interval_commits_on_the_wall_clock_without_new_records(
    tmp_path: Path,
) -> None:
    now = [960.0]  # a whole minute: the next boundary is 60 s away
    task, _ = start_task(
        tmp_path, clock=lambda: now[0], flush_size="1000", rotate_schedule_interval_ms="60000"
    )
    task.put(records(range(3)))
    assert lake_files(tmp_path) == []
    now[0] += 59
    task.put([])
    assert lake_files(tmp_path) == []
    now[0] += 1.5  # past the minute boundary: committed by an empty put
    task.put([])
    assert [f.name for f in lake_files(tmp_path)] == ["orders+0+0000000000+0000000002.parquet"]
    assert task.pre_commit({TP: 3}) == {TP: 3}


def test_schema_change_starts_new_files(tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="100")
    task.put(records(range(3)) + records(range(3, 5), schema=ORDER_V2) + records(range(5, 6)))
    task.put([])
    assert [f.name for f in lake_files(tmp_path)] == [
        "orders+0+0000000000+0000000002.parquet",
        "orders+0+0000000003+0000000004.parquet",
    ]
    assert "note" in pq.read_schema(lake_files(tmp_path)[1]).names
    assert task.pre_commit({TP: 6}) == {TP: 5}


def test_tombstones_are_skipped_and_committed_past(tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="2")
    recs = records(range(2))
    recs.append(SinkRecord(topic="orders", kafka_partition=0, value=None, kafka_offset=2))
    task.put(recs)
    assert task.pre_commit({TP: 3}) == {TP: 3}
    failing, _ = start_task(tmp_path / "b", behavior_on_null_values="fail")
    with pytest.raises(Exception, match="null value"):
        failing.put(recs[2:])


def test_restart_resumes_after_the_published_files_and_skips_replays(tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="10")
    task.put(records(range(25)))
    task.stop()  # 20..24 were buffered only: dropped, read again
    again, context = start_task(tmp_path, flush_size="10")
    again.open([TP])
    assert context.seeks == {TP: 20}
    again.put(records(range(15, 30)))  # a stale poll from before the seek: ignored
    assert len(lake_files(tmp_path)) == 2
    again.put(records(range(18, 30)))  # after the seek, with a replayed head
    assert [r["id"] for r in lake_rows(tmp_path)] == list(range(30))


def test_an_interrupted_commit_is_finished_on_open_and_stray_temp_files_removed(
    tmp_path: Path,
) -> None:
    task, _ = start_task(
        tmp_path,
        flush_size="100",
        partitioner_class="FieldPartitioner",
        partition_field_name="region",
    )
    task.put(records(range(6)))
    writer = task.writers[TP]
    storage = writer._storage
    renames: list[tuple[str, str]] = []
    original = storage.rename

    def crash_after_first(src: str, dst: str) -> None:
        if renames:
            raise KeyboardInterrupt("crash")  # the process dies between two renames
        renames.append((src, dst))
        original(src, dst)

    storage.rename = crash_after_first  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        writer.commit()
    assert len(lake_files(tmp_path)) == 1
    stray = tmp_path / "topics/+tmp/orders/0/stray.parquet"
    stray.write_bytes(b"half a file")
    again, context = start_task(
        tmp_path,
        flush_size="100",
        partitioner_class="FieldPartitioner",
        partition_field_name="region",
    )
    again.open([TP])
    assert context.seeks == {TP: 6}
    assert [r["id"] for r in lake_rows(tmp_path)] == list(range(6))
    assert not stray.exists()
    assert not (tmp_path / "logs/orders/0/commit.intent").exists()


def test_json_value_format_decodes_envelopes_like_the_converter(tmp_path: Path) -> None:
    converter = JsonConverter()
    converter.configure({"schemas.enable": True}, is_key=False)
    values = [order(i) for i in range(10)] + [order(i, ORDER_V2) for i in range(10, 12)]
    data = converter.from_connect_batch("orders", [ORDER] * 10 + [ORDER_V2] * 2, values)
    raw = [
        SinkRecord(topic="orders", kafka_partition=0, value=v, kafka_offset=i, timestamp=T0)
        for i, v in enumerate(data)
    ]
    task, _ = start_task(tmp_path / "json", flush_size="100", value_format="json")
    task.put(raw)
    task.writers[TP].commit()
    typed, _ = start_task(tmp_path / "connect", flush_size="100")
    typed.put(records(range(10)) + records(range(10, 12), schema=ORDER_V2))
    typed.writers[TP].commit()
    assert lake_rows(tmp_path / "json") == lake_rows(tmp_path / "connect")
    json_files = lake_files(tmp_path / "json")
    assert [pq.read_schema(f) for f in json_files] == [
        pq.read_schema(f) for f in lake_files(tmp_path / "connect")
    ]


def test_json_value_format_numeric_decimals_and_schemaless_objects(tmp_path: Path) -> None:
    converter = JsonConverter()
    converter.configure({"schemas.enable": True, "decimal.format": "NUMERIC"}, is_key=False)
    data = converter.from_connect_batch("orders", [ORDER] * 3, [order(i) for i in range(3)])
    plain = [json.dumps({"id": i, "region": "eu"}).encode() for i in range(3, 5)]
    raw = [
        SinkRecord(topic="orders", kafka_partition=0, value=v, kafka_offset=i, timestamp=T0)
        for i, v in enumerate(data + plain)
    ]
    task, _ = start_task(tmp_path, flush_size="100", value_format="json")
    task.put(raw)
    task.writers[TP].commit()
    rows = lake_rows(tmp_path)
    assert [r["id"] for r in rows] == [0, 1, 2, 3, 4]
    assert rows[2]["amount"] == decimal.Decimal("2.50")


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({}, "store.url"),
        ({"store.url": "s3://bucket/x"}, "store.url"),
        ({"store.url": "file:relative"}, "store.url"),
        ({"path": "lake", "flush.size": "0"}, "flush.size"),
        ({"path": "lake", "partitioner.class": "Nope"}, "partitioner.class"),
        ({"path": "lake", "partitioner.class": "FieldPartitioner"}, "partition.field.name"),
        ({"path": "lake", "partitioner.class": "TimeBasedPartitioner"}, "partition.duration.ms"),
        ({"path": "lake", "timezone": "Mars/Olympus"}, "timezone"),
        ({"path": "lake", "topics.dir": "../up"}, "topics.dir"),
        ({"path": "lake", "value.format": "xml"}, "value.format"),
        ({"store.url": "hdfs://nn:8020/x", "parquet.writer": "arrow"}, "parquet.writer"),
    ],
)
def test_config_refusals_name_the_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(props)
    assert info.value.name == key


def test_path_format_refusal_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        joda_to_strftime("'y'=QQQ")
    assert info.value.name == "path.format"


def test_spark_conf_passes_through_and_auto_picks_the_writer() -> None:
    settings = parse({"path": "lake", "spark.conf.spark.executor.memory": "2g"})
    assert settings.spark_conf == {"spark.executor.memory": "2g"}
    assert settings.writer == "arrow"
    assert parse({"store.url": "hdfs://nn:8020/lake"}).writer == "spark"
    assert parse({"path": "lake", "spark.master": "spark://h:7077"}).writer == "spark"


def test_an_unwritable_store_fails_start_with_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StorageError) as info:
        start_task(blocker / "lake")
    assert str(blocker / "lake") in str(info.value)


def test_avro_values_from_the_registry_keep_their_types(tmp_path: Path) -> None:
    from connect.converters.avro import AvroConverter
    from connect.converters.avro.client import drop_mock_registry

    converter = AvroConverter()
    converter.configure({"schema.registry.url": "mock://spark-sink"}, False)
    try:
        data = [converter.from_connect_data("orders", ORDER, order(i)) for i in range(4)]
        decoded = converter.to_connect_batch("orders", data)
    finally:
        drop_mock_registry("spark-sink")
    task, _ = start_task(tmp_path, flush_size="4")
    task.put(
        [
            SinkRecord(
                topic="orders",
                kafka_partition=0,
                value_schema=sv.schema,
                value=sv.value,
                kafka_offset=i,
                timestamp=T0,
            )
            for i, sv in enumerate(decoded)
        ]
    )
    schema = pq.read_schema(lake_files(tmp_path)[0])
    assert schema.field("amount").type == pa.decimal128(10, 2)
    assert schema.field("day").type == pa.date32()
    assert schema.field("at").type == pa.timestamp("ms", tz="UTC")
    assert lake_rows(tmp_path)[3]["amount"] == decimal.Decimal("3.75")
