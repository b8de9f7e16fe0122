"""Debezium's temporal types land in the lake as dates and timestamps, not as the
numbers and text they travel as (`connect.api.arrow.file_batch`): through `put()`'s
records, through `put_batches` (JsonConverter.to_arrow), through `value.format=json`,
flat and nested in an envelope; and a time partitioner reads such a field as a time."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connect.api import (
    STRING_SCHEMA,
    DataError,
    Schema,
    SinkRecord,
    Struct,
    TopicPartition,
)
from connect.api.arrow import batch_from_values, file_batch
from connect.api.sink_batch import SinkBatch
from connect.converters import JsonConverter
from connectors.jdbc.types import debezium_schema
from tests.connectors.spark.helpers import T0, lake_files, start_task

TP = TopicPartition("orders", 0)
UTC = dt.UTC
ROW = Schema.struct(
    [
        ("id", STRING_SCHEMA),
        ("day", debezium_schema("io.debezium.time.Date", optional=True)),
        ("ms", debezium_schema("io.debezium.time.Timestamp", optional=True)),
        ("us", debezium_schema("io.debezium.time.MicroTimestamp", optional=True)),
        ("ns", debezium_schema("io.debezium.time.NanoTimestamp", optional=True)),
        ("zoned", debezium_schema("io.debezium.time.ZonedTimestamp", optional=True)),
        ("clock", debezium_schema("io.debezium.time.MicroTime", optional=True)),
    ],
    name="srv.public.orders.Value",
    optional=True,  # as an envelope's row images are
)
ENVELOPE = Schema.struct(
    [("before", ROW), ("after", ROW), ("op", STRING_SCHEMA)],
    name="srv.public.orders.Envelope",
)
AT = dt.datetime(2016, 11, 4, 13, 51, 30, 123456, tzinfo=UTC)
AT_US = 1478267490123456  # AT in µs since the epoch
# What each row's fields travel as, and what the lake holds for them.
SENT = [
    ["a", 17109, AT_US // 1000, AT_US, AT_US * 1000 + 789, "2016-11-04T13:51:30.123456Z", 5],
    ["b", -1, -1, -1, -1, "1969-12-31T23:59:59.999999Z", None],
    ["c", None, None, None, None, None, None],
]
LANDED = [
    {
        "id": "a",
        "day": dt.date(2016, 11, 4),
        "ms": AT.replace(microsecond=123000),
        "us": AT,
        "ns": AT,  # floored to µs
        "zoned": AT,
        "clock": 5,  # times stay numbers (Spark has no time type)
    },
    {
        "id": "b",
        "day": dt.date(1969, 12, 31),
        "ms": dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
        "us": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "ns": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "zoned": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "clock": None,
    },
    dict.fromkeys(("day", "ms", "us", "ns", "zoned", "clock"), None) | {"id": "c"},
]
LAKE_TYPES = {
    "day": pa.date32(),
    "ms": pa.timestamp("ms", tz="UTC"),
    "us": pa.timestamp("us", tz="UTC"),
    "ns": pa.timestamp("us", tz="UTC"),
    "zoned": pa.timestamp("us", tz="UTC"),
    "clock": pa.int64(),
}


def rows(schema: Schema = ROW) -> list[Struct]:
    out = []
    for values in SENT:
        row = Struct(ROW)
        for f, v in zip(ROW.fields, values, strict=True):
            row.put(f.name, v)
        if schema is ENVELOPE:
            envelope = Struct(ENVELOPE)
            envelope.put("after", row)
            envelope.put("op", "c")
            row = envelope
        out.append(row)
    return out


def sink_records(schema: Schema = ROW) -> list[SinkRecord]:
    return [
        SinkRecord(
            topic="orders",
            kafka_partition=0,
            value_schema=schema,
            value=value,
            timestamp=T0 + i,
            kafka_offset=i,
        )
        for i, value in enumerate(rows(schema))
    ]


def _json() -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": True}, is_key=False)
    return converter


def messages(schema: Schema = ROW) -> list[bytes | None]:
    values = rows(schema)
    return _json().from_connect_batch("orders", [schema] * len(values), values)


def landed(lake: Path) -> tuple[pa.Schema, list[dict[str, Any]]]:
    files = lake_files(lake)
    assert len(files) == 1
    table = pq.read_table(files[0])
    return table.schema, table.to_pylist()


def test_records_land_debezium_times_as_dates_and_timestamps(tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="3")
    task.put(sink_records())
    schema, got = landed(tmp_path)
    assert {f.name: f.type for f in schema if f.name != "id"} == LAKE_TYPES
    assert got == LANDED


def test_batches_and_value_format_json_land_the_same(tmp_path: Path) -> None:
    runs = _json().to_arrow("orders", messages())
    assert runs is not None and len(runs) == 1
    value_schema, values, _ = runs[0]
    batch = SinkBatch(
        topic="orders",
        partition=0,
        value_schema=value_schema,
        values=values,
        offsets=np.arange(3, dtype=np.int64),
        timestamps=np.full(3, T0, np.int64),
    )
    task, _ = start_task(tmp_path / "batches", flush_size="3")
    task.open([TP])
    task.put_batches([batch])
    task.put([])
    assert landed(tmp_path / "batches")[1] == LANDED

    raw, _ = start_task(
        tmp_path / "bytes",
        flush_size="3",
        value_format="json",
        value_converter="org.apache.kafka.connect.converters.ByteArrayConverter",
    )
    raw.put(
        [
            SinkRecord(topic="orders", kafka_partition=0, value=m, kafka_offset=i, timestamp=T0)
            for i, m in enumerate(messages())
        ]
    )
    schema, got = landed(tmp_path / "bytes")
    assert {f.name: f.type for f in schema if f.name != "id"} == LAKE_TYPES
    assert got == LANDED


def test_an_envelope_lands_its_row_images_times_as_timestamps(tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="3")
    task.put(sink_records(ENVELOPE))
    schema, got = landed(tmp_path)
    after = schema.field("after").type
    assert {f.name: f.type for f in after if f.name != "id"} == LAKE_TYPES
    assert [r["after"] for r in got] == LANDED
    assert [r["before"] for r in got] == [None] * 3


def test_a_time_partitioner_reads_a_micro_timestamp_field_as_its_time(tmp_path: Path) -> None:
    task, _ = start_task(
        tmp_path,
        flush_size="2",
        partitioner_class="DailyPartitioner",
        timestamp_extractor="RecordField",
        timestamp_field="us",
        timezone="UTC",
    )
    task.put(sink_records()[:2])
    dirs = {
        f.parent.relative_to(tmp_path / "topics" / "orders").as_posix()
        for f in lake_files(tmp_path)
    }
    assert dirs == {"year=2016/month=11/day=04", "year=1969/month=12/day=31"}


def test_zoned_text_arrow_cannot_parse_is_parsed_exactly() -> None:
    zoned = Schema.struct([("at", debezium_schema("io.debezium.time.ZonedTimestamp"))])
    texts = [
        "2016-11-04T13:51:30.123456789Z",  # nanoseconds: floored
        "+10000-01-01T00:00:00+01:00",  # past year 9999, another offset
        "-0001-12-31T23:00:00-01:00",  # 2 BC (year -1), west of UTC
        "2016-11-04T13:51:30.5+05:30:15",
    ]
    batch = batch_from_values(zoned, [Struct(zoned).put("at", t) for t in texts])
    micros = file_batch(zoned, batch).column(0).cast(pa.int64()).to_pylist()
    day = 86_400_000_000
    assert micros == [
        AT_US - 123456 + 123456,
        (dt.date(9999, 12, 31).toordinal() - dt.date(1970, 1, 1).toordinal()) * day
        + day
        - 3_600_000_000,
        # -0001-12-31T24:00Z is 0000-01-01T00:00Z, 400 years (146097 days) before 0400-01-01
        (dt.date(400, 1, 1).toordinal() - dt.date(1970, 1, 1).toordinal() - 146_097) * day,
        AT_US - 123456 + 500_000 - (5 * 3600 + 30 * 60 + 15) * 1_000_000,
    ]


def test_zoned_infinity_lands_as_a_micro_timestamps_infinity() -> None:
    both = Schema.struct(
        [
            ("zoned", debezium_schema("io.debezium.time.ZonedTimestamp")),
            ("us", debezium_schema("io.debezium.time.MicroTimestamp")),
        ]
    )
    # the values a MicroTimestamp carries for ±infinity (connectors.postgres.calendar_math)
    values = [
        Struct(both).put("zoned", "infinity").put("us", 9_223_372_036_825_200_000),
        Struct(both).put("zoned", "-infinity").put("us", -9_223_372_036_832_400_000),
    ]
    out = file_batch(both, batch_from_values(both, values))
    assert out.column(0).cast(pa.int64()).to_pylist() == out.column(1).cast(pa.int64()).to_pylist()


def test_a_text_that_is_no_timestamp_is_refused_naming_its_field() -> None:
    zoned = Schema.struct([("after", ROW)])
    row = Struct(ROW).put("id", "x").put("zoned", "yesterday")
    batch = batch_from_values(zoned, [Struct(zoned).put("after", row)])
    with pytest.raises(DataError, match=r"field 'after\.zoned': 'yesterday' is not an ISO-8601"):
        file_batch(zoned, batch)


def test_a_schema_without_semantic_times_keeps_its_batch() -> None:
    plain = Schema.struct(
        [("id", STRING_SCHEMA), ("n", debezium_schema("io.debezium.time.MicroTime"))]
    )
    batch = batch_from_values(plain, [Struct(plain).put("id", "a").put("n", 1)])
    assert file_batch(plain, batch) is batch
    assert file_batch(None, batch) is batch


def test_avro_values_land_the_same(tmp_path: Path) -> None:
    """AvroConverter keeps the semantic names (`connect.name`) through the registry, so
    its values land as the JSON ones do (record by record: it reads no optional
    top-level struct as columns)."""
    from connect.converters.avro import AvroConverter
    from connect.converters.avro.client import drop_mock_registry

    scope = f"temporal-{tmp_path.name}"
    converter = AvroConverter()
    converter.configure({"schema.registry.url": f"mock://{scope}"}, False)
    try:
        values = rows()
        data = converter.from_connect_batch("orders", [ROW] * len(values), values)
        decoded = converter.to_connect_batch("orders", data)
    finally:
        drop_mock_registry(scope)
    task, _ = start_task(tmp_path, flush_size="3")
    task.put(
        [
            SinkRecord(
                topic="orders",
                kafka_partition=0,
                value_schema=d.schema,
                value=d.value,
                kafka_offset=i,
                timestamp=T0,
            )
            for i, d in enumerate(decoded)
        ]
    )
    schema, got = landed(tmp_path)
    assert {f.name: f.type for f in schema if f.name != "id"} == LAKE_TYPES
    assert got == LANDED
