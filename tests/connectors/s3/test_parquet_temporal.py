"""Debezium's times in S3 Parquet objects: written as Parquet dates and UTC timestamps
(`connect.api.arrow.file_batch`, as the Spark lake writes them), not as the int64 and
strings they travel as, also inside a nested struct beside an array; and restored by
S3Source as the numbers and text they travel as. Objects go to the local S3 server
and are read back with pyarrow."""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connect.api import Schema, Struct, Type
from connect.herder.standalone import StandaloneHerder
from connectors.s3.formats.parquet import ParquetFormat
from tests.connectors.s3.conftest import (
    produce,
    read_values,
    sink_config,
    source_config,
    wait_keys,
)
from tests.s3 import Bucket
from tests.waiting import wait_until

PARQUET = "io.confluent.connect.s3.format.parquet.ParquetFormat"
UTC = dt.UTC


def _time(name: str, kind: str, optional: bool = False) -> dict[str, object]:
    return {"type": kind, "optional": optional, "name": f"io.debezium.time.{name}", "version": 1}


SCHEMA = {
    "type": "struct",
    "name": "shop.Event",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "day", **_time("Date", "int32")},
        {"field": "at_ms", **_time("Timestamp", "int64")},
        {"field": "at_us", **_time("MicroTimestamp", "int64", optional=True)},
        {"field": "at_ns", **_time("NanoTimestamp", "int64")},
        {"field": "zoned", **_time("ZonedTimestamp", "string", optional=True)},
        {
            "field": "after",
            "type": "struct",
            "optional": True,
            "fields": [
                {
                    "field": "tags",
                    "type": "array",
                    "optional": False,
                    "items": {"type": "string", "optional": False},
                },
                {"field": "seen", **_time("ZonedTimestamp", "string")},
            ],
        },
    ],
}
US = 1_700_000_000_123_456  # 2023-11-14T22:13:20.123456Z


def _payload(i: int) -> dict[str, object]:
    return {
        "id": i,
        "day": 19_675 + i,
        "at_ms": US // 1000 + i,
        "at_us": None if i == 1 else US + i,
        "at_ns": (US + i) * 1000,  # whole µs: the file keeps µs, as Spark does
        "zoned": f"2023-11-14T22:13:2{i}.123456Z",
        "after": None if i == 2 else {"tags": [f"t{i}"], "seen": "1999-12-31T23:59:59.000001Z"},
    }


def _records(n: int) -> list[bytes]:
    return [orjson.dumps({"schema": SCHEMA, "payload": _payload(i)}) for i in range(n)]


@pytest.mark.slow
def test_debezium_times_land_as_dates_and_timestamps_and_restore_as_they_travel(
    start_herder: Callable[..., StandaloneHerder], s3_bucket: Bucket
) -> None:
    herder = start_herder()
    log = herder.log
    produce(log, "events", _records(3))
    log.create_topic("restored-events", 1)
    converter = {"value.converter.schemas.enable": "true", "format.class": PARQUET}
    herder.put_connector_config(
        "sink", sink_config(s3_bucket, "events", **converter), allow_replace=False
    )
    [key] = wait_keys(s3_bucket, 1)
    table = pq.read_table(io.BytesIO(s3_bucket.get(key)))
    types = {f.name: f.type for f in table.schema}
    # Was: int32, int64, int64, int64 and string, as they travel.
    assert types["day"] == pa.date32()
    assert types["at_ms"] == pa.timestamp("ms", tz="UTC")
    assert types["at_us"] == types["at_ns"] == types["zoned"] == pa.timestamp("us", tz="UTC")
    assert types["after"].field("seen").type == pa.timestamp("us", tz="UTC")
    assert types["id"] == pa.int32() and not table.schema.field("id").nullable
    first, second, third = table.to_pylist()
    at = dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)
    assert first["day"] == dt.date(2023, 11, 14)
    assert first["at_ms"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert first["at_us"] == first["at_ns"] == first["zoned"] == at
    assert second["at_us"] is None and second["zoned"] == at + dt.timedelta(seconds=1)
    assert first["after"] == {
        "tags": ["t0"],
        "seen": dt.datetime(1999, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
    }
    assert third["after"] is None
    # A restore gives back the numbers and texts the records carried.
    herder.put_connector_config(
        "restore",
        source_config(
            s3_bucket,
            **converter,
            **{
                "transforms": "restore",
                "transforms.restore.type": "org.apache.kafka.connect.transforms.RegexRouter",
                "transforms.restore.regex": "(.*)",
                "transforms.restore.replacement": "restored-$1",
            },
        ),
        allow_replace=False,
    )
    restored = wait_until(
        lambda: len(v := read_values(log, "restored-events")) >= 3 and v, 30, "restored"
    )
    assert [orjson.loads(v)["payload"] for v in restored] == [_payload(i) for i in range(3)]


class _Bytes(bytearray):
    """A Sink that keeps the object's bytes."""

    key = "object.parquet"

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.extend(data)


def test_zoned_timestamps_past_what_arrow_formats_restore_as_text() -> None:
    """Arrow's strftime counts in nanoseconds (to year 2262); later instants and
    ±infinity (PgJDBC's stand-ins) are turned back in Python."""
    zoned = Schema(Type.STRING, optional=True, name="io.debezium.time.ZonedTimestamp")
    schema = Schema.struct([("z", zoned)])
    texts = [
        "2023-11-14T22:13:20.123456Z",
        "10000-01-01T00:00:00.000001Z",
        "infinity",
        "-infinity",
        None,
    ]
    fmt = ParquetFormat(codec="none")
    sink = _Bytes()
    writer = fmt.writer(sink, schema)
    writer.write([Struct(schema).put("z", t) for t in texts])
    writer.finish()
    stored = pq.read_table(io.BytesIO(bytes(sink)))
    assert stored.schema.field("z").type == pa.timestamp("us", tz="UTC")
    back_schema, values = fmt.read(bytes(sink))
    assert back_schema == schema
    assert [v.get("z") for v in values] == texts
