"""Backup and restore: every format and partitioner, written by S3Sink and read back by
S3Source (RESTORE_BACKUP) into the original partitions, compared record for record.

The restore renames the topic with Kafka's RegexRouter (`orders` → `restored-orders`),
so both sides live in one log and can be compared; the restored topic is created
beforehand with the same partition count, as Confluent's restore asks."""

from __future__ import annotations

import decimal
from typing import Any

import orjson
import pytest

from connect.herder.standalone import StandaloneHerder
from tests.connectors.s3.conftest import (
    BYTES,
    STRING,
    produce,
    read_values,
    schemaless,
    sink_config,
    source_config,
    wait_keys,
)
from tests.s3 import Bucket
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

_ROUTER = {
    "transforms": "restore",
    "transforms.restore.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.restore.regex": "(.*)",
    "transforms.restore.replacement": "restored-$1",
}
_FORMATS = {
    "json": "io.confluent.connect.s3.format.json.JsonFormat",
    "avro": "io.confluent.connect.s3.format.avro.AvroFormat",
    "parquet": "io.confluent.connect.s3.format.parquet.ParquetFormat",
    "bytearray": "io.confluent.connect.s3.format.bytearray.ByteArrayFormat",
}


def _rich_records(n: int, start: int = 0) -> list[bytes]:
    """JsonConverter envelopes with nested structs, arrays, maps, bytes, and the
    logical types, so the Avro and Parquet schema mappings are all exercised."""
    schema = {
        "type": "struct",
        "name": "shop.Order",
        "version": 3,
        "optional": False,
        "fields": [
            {"field": "id", "type": "int64", "optional": False},
            {"field": "small", "type": "int8", "optional": False},
            {"field": "name", "type": "string", "optional": True},
            {
                "field": "price",
                "type": "bytes",
                "optional": False,
                "name": "org.apache.kafka.connect.data.Decimal",
                "version": 1,
                "parameters": {"scale": "2"},
            },
            {
                "field": "day",
                "type": "int32",
                "optional": True,
                "name": "org.apache.kafka.connect.data.Date",
                "version": 1,
            },
            {
                "field": "at",
                "type": "int64",
                "optional": False,
                "name": "org.apache.kafka.connect.data.Timestamp",
                "version": 1,
            },
            {
                "field": "tags",
                "type": "array",
                "optional": True,
                "items": {"type": "string", "optional": False},
            },
            {
                "field": "attrs",
                "type": "map",
                "optional": True,
                "keys": {"type": "string", "optional": False},
                "values": {"type": "double", "optional": True},
            },
            {"field": "blob", "type": "bytes", "optional": True},
            {
                "field": "address",
                "type": "struct",
                "optional": True,
                "name": "shop.Address",
                "fields": [
                    {"field": "city", "type": "string", "optional": False},
                    {"field": "zip", "type": "int32", "optional": True},
                ],
            },
        ],
    }
    import base64

    out = []
    for i in range(start, start + n):
        price = decimal.Decimal(i * 7) / 100
        unscaled = int(price * 100).to_bytes(8, "big", signed=True).lstrip(b"\x00") or b"\x00"
        payload = {
            "id": i,
            "small": i % 100,
            "name": None if i % 5 == 0 else f"name {i} ünï",
            "price": base64.b64encode(unscaled).decode(),
            "day": 19000 + i,
            "at": 1_700_000_000_000 + i,
            "tags": [f"t{i}", "x"] if i % 2 else [],
            "attrs": {"a": i / 3, "b": None} if i % 3 else None,
            "blob": base64.b64encode(bytes([i % 256]) * 3).decode(),
            "address": None if i % 4 == 0 else {"city": f"c{i}", "zip": i},
        }
        out.append(orjson.dumps({"schema": schema, "payload": payload}))
    return out


def _payloads(values: list[bytes | None]) -> list[Any]:
    return [orjson.loads(v)["payload"] if v is not None else None for v in values]


def _restore(herder: StandaloneHerder, bucket: Bucket, name: str, **props: str) -> None:
    herder.put_connector_config(name, source_config(bucket, **_ROUTER, **props), allow_replace=True)


@pytest.mark.parametrize("fmt", sorted(_FORMATS))
def test_each_format_round_trips_through_a_restore(
    start_herder, s3_bucket: Bucket, fmt: str
) -> None:
    herder = start_herder()
    log = herder.log
    log.create_topic("orders", 2)
    log.create_topic("restored-orders", 2)
    if fmt == "bytearray":
        first = [b"\x00raw %d \xff" % i for i in range(25)]
        second = [b"raw %d" % i for i in range(25, 37)]
        converter = {"value.converter": BYTES}
    elif fmt == "json":
        first = schemaless([{"id": i, "nested": {"a": [i, None, "é"]}} for i in range(25)])
        second = schemaless([{"id": i} for i in range(25, 37)])
        converter = {}
    else:
        first, second = _rich_records(25), _rich_records(12, 25)
        converter = {"value.converter.schemas.enable": "true"}
    produce(log, "orders", first, partition=0)
    produce(log, "orders", second, partition=1)
    extra = {"s3.compression.type": "gzip"} if fmt in ("json", "bytearray") else {}
    herder.put_connector_config(
        "sink",
        sink_config(
            s3_bucket,
            "orders",
            **{"format.class": _FORMATS[fmt], "flush.size": "4", **converter, **extra},
        ),
        allow_replace=True,
    )
    # 25 records → 6 objects (one record stays open), 12 → 3 objects.
    wait_keys(s3_bucket, 9)
    _restore(herder, s3_bucket, "restore", **{"format.class": _FORMATS[fmt], **converter, **extra})
    wait_until(
        lambda: (
            len(read_values(log, "restored-orders", 0)) >= 24
            and len(read_values(log, "restored-orders", 1)) >= 12
        ),
        30,
        "restored records",
    )
    restored0, restored1 = (read_values(log, "restored-orders", p) for p in (0, 1))
    if fmt in ("bytearray", "json"):
        assert restored0 == first[:24] and restored1 == second
    else:
        assert _payloads(restored0) == _payloads(first[:24])
        assert _payloads(restored1) == _payloads(second)
        envelope = orjson.loads(restored0[0])["schema"]
        assert envelope["name"] == "shop.Order" and envelope["version"] == 3
        assert [f["field"] for f in envelope["fields"]][:3] == ["id", "small", "name"]
        assert envelope["fields"][1]["type"] == "int8"
    # Objects written after the restore started are picked up too.
    produce(
        log, "orders", first[:4] if fmt != "json" else schemaless([{"late": 1}] * 4), partition=1
    )
    wait_until(lambda: len(read_values(log, "restored-orders", 1)) == 16, 30, "late object")


def test_field_and_time_partitioned_backups_restore_every_record(
    start_herder, s3_bucket: Bucket
) -> None:
    herder = start_herder()
    log = herder.log
    hour = 3_600_000
    base = 1_700_000_000_000 - 1_700_000_000_000 % hour
    values = [{"id": i, "region": "abc"[i % 3], "at": base + i * hour // 3} for i in range(30)]
    produce(log, "orders", schemaless(values))
    log.create_topic("restored-orders", 1)
    layouts = {
        "field": {"partitioner.class": "FieldPartitioner", "partition.field.name": "region"},
        "time": {
            "partitioner.class": "TimeBasedPartitioner",
            "path.format": "'dt'=YYYY-MM-dd/'h'=HH",
            "partition.duration.ms": str(hour),
            "timezone": "UTC",
            "timestamp.extractor": "RecordField",
            "timestamp.field": "at",
            "rotate.interval.ms": str(hour),
            # the last hour's records close on the clock (record time never would)
            "rotate.schedule.interval.ms": "500",
        },
        "daily": {
            "partitioner.class": "DailyPartitioner",
            "timezone": "America/New_York",
            "timestamp.extractor": "RecordField",
            "timestamp.field": "at",
        },
        "hourly": {
            "partitioner.class": "io.confluent.connect.storage.partitioner.HourlyPartitioner",
            "timezone": "UTC",
            "timestamp.extractor": "RecordField",
            "timestamp.field": "at",
        },
    }
    for name, layout in layouts.items():
        herder.put_connector_config(
            f"sink-{name}",
            sink_config(s3_bucket, "orders", **{"flush.size": "6", "topics.dir": name, **layout}),
            allow_replace=True,
        )
    for name in layouts:
        wait_until(lambda n=name: len(s3_bucket.keys(f"{n}/")) >= 3, 30, f"{name} objects")
    wait_until(
        lambda: all(_restored_count(s3_bucket, n) == 30 for n in layouts),
        30,
        "every record in a complete object",
    )
    assert any("/dt=2023-11-14/h=23/" in k for k in s3_bucket.keys("time/"))
    assert any("/year=2023/month=11/day=14/" in k for k in s3_bucket.keys("daily/"))
    assert any("/year=2023/month=11/day=15/hour=07/" in k for k in s3_bucket.keys("hourly/"))
    for name, layout in layouts.items():
        herder.put_connector_config(
            f"restore-{name}",
            source_config(
                s3_bucket,
                **{
                    "topics.dir": name,
                    **layout,
                    **_ROUTER,
                    "transforms.restore.replacement": f"{name}-$1",
                },
            ),
            allow_replace=True,
        )
    for name in layouts:
        log.list_topics()
        restored = wait_until(
            lambda n=name: (v := read_values(log, f"{n}-orders")) and len(v) >= 30 and v,
            30,
            f"{name} restored",
        )
        back = [orjson.loads(v) for v in restored]
        assert sorted(back, key=lambda r: r["id"]) == values
        # Within each directory, the order of the original partition is kept.
        for region in "abc":
            ids = [r["id"] for r in back if r["region"] == region]
            if name == "field":
                assert ids == sorted(ids)


def _restored_count(bucket: Bucket, prefix: str) -> int:
    return sum(len(bucket.get(k).splitlines()) for k in bucket.keys(f"{prefix}/"))


def test_json_schema_values_keep_logical_types(start_herder, s3_bucket: Bucket) -> None:
    herder = start_herder()
    produce(herder.log, "orders", _rich_records(3))
    herder.put_connector_config(
        "sink",
        sink_config(s3_bucket, "orders", **{"value.converter.schemas.enable": "true"}),
        allow_replace=True,
    )
    key = wait_keys(s3_bucket, 1)[0]
    first = orjson.loads(s3_bucket.get(key).splitlines()[1])
    # Kafka's JsonConverter without schemas: Decimal as base64, Date as days,
    # Timestamp as epoch ms, bytes as base64.
    assert first["price"] == "Bw==" and first["day"] == 19001
    assert first["at"] == 1_700_000_000_001 and first["blob"] == "AQEB"
    assert first["address"] == {"city": "c1", "zip": 1}


@pytest.mark.parametrize("keys_format", ["avro", "json", "parquet"])
def test_keys_are_backed_up_beside_the_values_and_restored(
    start_herder, s3_bucket: Bucket, keys_format: str
) -> None:
    herder = start_herder()
    log = herder.log
    values = schemaless([{"n": i} for i in range(6)])
    keys: list[bytes | None] = [b"k%d" % i if i != 3 else None for i in range(6)]
    produce(log, "orders", values, keys=keys)
    log.create_topic("restored-orders", 1)
    layout = {
        "store.kafka.keys": "true",
        "keys.format.class": _FORMATS[keys_format],
        "key.converter": STRING,
    }
    herder.put_connector_config(
        "sink", sink_config(s3_bucket, "orders", **layout), allow_replace=True
    )
    objects = wait_keys(s3_bucket, 4)
    ext = {"avro": ".avro", "json": ".json", "parquet": ".snappy.parquet"}[keys_format]
    assert objects[:2] == [
        "topics/orders/partition=0/orders+0+0000000000.json",
        f"topics/orders/partition=0/orders+0+0000000000.keys{ext}",
    ]
    _restore(herder, s3_bucket, "restore", **layout)
    restored = wait_until(
        lambda: (v := read_values(log, "restored-orders", keys=True)) and len(v) >= 6 and v,
        30,
        "restored records",
    )
    assert restored == list(zip(keys, values, strict=True))


def _log_headers(log: Any, topic: str) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    offset = 0
    while batch := log.read(topic, 0, offset):
        out.extend(r.headers for r in batch)
        offset = batch[-1].offset + 1
    return out


@pytest.mark.parametrize("headers_format", ["avro", "json", "parquet"])
def test_headers_are_backed_up_beside_the_values_and_restored(
    start_herder, s3_bucket: Bucket, headers_format: str
) -> None:
    """Confluent's layout (`.headers.<ext>` beside each object, an array of key/value
    string structs per record) and a restore that gives the log back the same header
    bytes: repeated names, a null value, numbers and booleans that the default
    SimpleHeaderConverter parses on the way out and writes back the same."""
    herder = start_herder()
    log = herder.log
    values = schemaless([{"n": i} for i in range(6)])
    headers = [
        [
            ("trace", b"abc-%d" % i),
            ("n", b"%d" % (i * 100)),
            ("trace", b"second"),
            ("flag", b"true"),
            ("none", None),
            ("text", "ünï ".encode() * i),
        ]
        if i != 2
        else []
        for i in range(6)
    ]
    log.create_topic("orders", 1)
    log.append("orders", 0, values, headers=headers)
    log.flush()
    log.create_topic("restored-orders", 1)
    layout = {"store.kafka.headers": "true", "headers.format.class": _FORMATS[headers_format]}
    herder.put_connector_config(
        "sink", sink_config(s3_bucket, "orders", **layout), allow_replace=True
    )
    objects = wait_keys(s3_bucket, 4)
    ext = {"avro": ".avro", "json": ".json", "parquet": ".snappy.parquet"}[headers_format]
    assert objects == [
        f"topics/orders/partition=0/orders+0+000000000{n}{suffix}"
        for n in (0, 3)
        for suffix in (".headers" + ext, ".json")
    ]
    _restore(herder, s3_bucket, "restore", **layout)
    wait_until(lambda: len(read_values(log, "restored-orders")) >= 6, 30, "restored records")
    assert read_values(log, "restored-orders") == values
    assert _log_headers(log, "restored-orders") == [tuple(h) for h in headers]
