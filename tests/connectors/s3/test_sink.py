"""S3Sink end to end on a StandaloneHerder (task in a child process) against a real S3
endpoint: object names and contents per format, rotation by size, record time and
schedule, schema changes, offsets committed only for complete objects, and the
failures a user must see in the task status."""

from __future__ import annotations

import gzip
import io

import fastavro
import orjson
import pyarrow.parquet as pq
import pytest

from connect.herder.standalone import StandaloneHerder
from tests.connectors.s3.conftest import (
    BYTES,
    committed,
    produce,
    schemaless,
    sink_config,
    task_state,
    wait_keys,
)
from tests.s3 import Bucket
from tests.waiting import wait_until

pytestmark = pytest.mark.slow


def _lines(data: bytes) -> list[object]:
    return [orjson.loads(line) for line in data.splitlines()]


def test_json_objects_are_named_by_topic_partition_and_start_offset(
    herder: StandaloneHerder, s3_bucket: Bucket
) -> None:
    values = [{"id": i, "name": f"n{i}"} for i in range(10)]
    produce(herder.log, "orders", schemaless(values))
    herder.put_connector_config("s3", sink_config(s3_bucket, "orders"), allow_replace=True)
    keys = wait_keys(s3_bucket, 3)
    assert keys == [
        "topics/orders/partition=0/orders+0+0000000000.json",
        "topics/orders/partition=0/orders+0+0000000003.json",
        "topics/orders/partition=0/orders+0+0000000006.json",
    ]
    assert [_lines(s3_bucket.get(k)) for k in keys] == [values[0:3], values[3:6], values[6:9]]
    # The tenth record sits in an open object: its offset is not committed.
    wait_until(lambda: committed(herder.log, "s3", "orders") == 9, 10, "offset 9 committed")
    produce(herder.log, "orders", schemaless([{"id": 10}, {"id": 11}]))
    wait_keys(s3_bucket, 4)
    assert _lines(s3_bucket.get("topics/orders/partition=0/orders+0+0000000009.json")) == [
        values[9],
        {"id": 10},
        {"id": 11},
    ]
    wait_until(lambda: committed(herder.log, "s3", "orders") == 12, 10, "offset 12 committed")


def test_gzip_bytearray_and_layout_keys(herder: StandaloneHerder, s3_bucket: Bucket) -> None:
    produce(herder.log, "raw", [b"a", b"bb", b"ccc", b"dddd"], partitions=2, partition=1)
    herder.put_connector_config(
        "s3",
        sink_config(
            s3_bucket,
            "raw",
            **{
                "format.class": "io.confluent.connect.s3.format.bytearray.ByteArrayFormat",
                "value.converter": BYTES,
                "s3.compression.type": "gzip",
                "flush.size": "2",
                "topics.dir": "backup/v1",
                "filename.offset.zero.pad.width": "4",
                "format.bytearray.separator": "|",
            },
        ),
        allow_replace=True,
    )
    keys = wait_keys(s3_bucket, 2)
    assert keys == [
        "backup/v1/raw/partition=1/raw+1+0000.bin.gz",
        "backup/v1/raw/partition=1/raw+1+0002.bin.gz",
    ]
    assert gzip.decompress(s3_bucket.get(keys[0])) == b"a|bb|"
    assert gzip.decompress(s3_bucket.get(keys[1])) == b"ccc|dddd|"


def _struct_records(n: int, version: int = 1, extra: bool = False) -> list[bytes]:
    fields = [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "name", "type": "string", "optional": True},
    ]
    if extra:
        fields.append({"field": "score", "type": "double", "optional": True})
    schema = {
        "type": "struct",
        "name": "shop.Order",
        "version": version,
        "optional": False,
        "fields": fields,
    }
    out = []
    for i in range(n):
        payload: dict[str, object] = {"id": i, "name": f"n{i}"}
        if extra:
            payload["score"] = i / 2
        out.append(orjson.dumps({"schema": schema, "payload": payload}))
    return out


def test_avro_and_parquet_objects_hold_the_records_and_their_schema(
    start_herder, s3_bucket: Bucket
) -> None:
    herder = start_herder()
    produce(herder.log, "orders", _struct_records(4))
    for fmt in ("avro", "parquet"):
        herder.put_connector_config(
            f"s3-{fmt}",
            sink_config(
                s3_bucket,
                "orders",
                **{
                    "format.class": f"io.confluent.connect.s3.format.{fmt}.{fmt.title()}Format",
                    "value.converter.schemas.enable": "true",
                    "flush.size": "2",
                    "topics.dir": fmt,
                },
            ),
            allow_replace=True,
        )
    avro_keys = wait_keys(s3_bucket, 2, "avro/")
    parquet_keys = wait_keys(s3_bucket, 2, "parquet/")
    assert avro_keys[1] == "avro/orders/partition=0/orders+0+0000000002.avro"
    assert parquet_keys[1] == "parquet/orders/partition=0/orders+0+0000000002.snappy.parquet"
    reader = fastavro.reader(io.BytesIO(s3_bucket.get(avro_keys[1])))
    assert list(reader) == [{"id": 2, "name": "n2"}, {"id": 3, "name": "n3"}]
    assert reader.writer_schema["name"] == "shop.Order"
    table = pq.read_table(io.BytesIO(s3_bucket.get(parquet_keys[0])))
    assert table.to_pylist() == [{"id": 0, "name": "n0"}, {"id": 1, "name": "n1"}]
    assert str(table.schema.field("id").type) == "int64"
    assert not table.schema.field("id").nullable and table.schema.field("name").nullable


def test_a_schema_change_rotates_under_none_and_projects_under_backward(
    start_herder, s3_bucket: Bucket
) -> None:
    herder = start_herder()
    # v1, v1, v2, v1, v2: NONE cuts at every change; BACKWARD projects the old v1
    # record onto v2 and cuts only where v2 first appears.
    v1, v2 = _struct_records(5), _struct_records(5, version=2, extra=True)
    produce(herder.log, "orders", [v1[0], v1[1], v2[2], v1[3], v2[4]])
    for mode in ("NONE", "BACKWARD"):
        herder.put_connector_config(
            f"s3-{mode}",
            sink_config(
                s3_bucket,
                "orders",
                **{
                    "value.converter.schemas.enable": "true",
                    "flush.size": "100",
                    "rotate.schedule.interval.ms": "500",
                    "timezone": "UTC",
                    "schema.compatibility": mode,
                    "topics.dir": mode,
                },
            ),
            allow_replace=True,
        )
    none = wait_keys(s3_bucket, 4, "NONE/")
    assert [k.rsplit("+", 1)[1] for k in none] == [
        "0000000000.json",
        "0000000002.json",
        "0000000003.json",
        "0000000004.json",
    ]
    backward = wait_keys(s3_bucket, 2, "BACKWARD/")
    assert [k.rsplit("+", 1)[1] for k in backward] == ["0000000000.json", "0000000002.json"]
    assert _lines(s3_bucket.get(backward[1])) == [
        {"id": 2, "name": "n2", "score": 1.0},
        {"id": 3, "name": "n3", "score": None},
        {"id": 4, "name": "n4", "score": 2.0},
    ]


def test_scheduled_rotation_closes_objects_on_a_quiet_partition(
    herder: StandaloneHerder, s3_bucket: Bucket
) -> None:
    produce(herder.log, "quiet", schemaless([{"n": 1}, {"n": 2}]))
    herder.put_connector_config(
        "s3",
        sink_config(
            s3_bucket,
            "quiet",
            **{"flush.size": "1000", "rotate.schedule.interval.ms": "300", "timezone": "UTC"},
        ),
        allow_replace=True,
    )
    keys = wait_keys(s3_bucket, 1, timeout_s=15)
    assert _lines(s3_bucket.get(keys[0])) == [{"n": 1}, {"n": 2}]
    wait_until(lambda: committed(herder.log, "s3", "quiet") == 2, 10, "offset 2 committed")


def test_rotate_interval_uses_record_time(herder: StandaloneHerder, s3_bucket: Bucket) -> None:
    base = 1_700_000_000_000
    stamps = [base, base + 400, base + 999, base + 1000, base + 1500, base + 5000]
    produce(herder.log, "events", schemaless([{"i": i} for i in range(6)]), timestamps=stamps)
    herder.put_connector_config(
        "s3",
        sink_config(
            s3_bucket,
            "events",
            **{"flush.size": "1000", "rotate.interval.ms": "1000", "timestamp.extractor": "Record"},
        ),
        allow_replace=True,
    )
    # [0,1,2] then a record 1000 ms after the first cuts; [3,4] then 5000 cuts; [5] stays
    # open until another record arrives (record time never fires by itself).
    keys = wait_keys(s3_bucket, 2)
    assert [_lines(s3_bucket.get(k)) for k in keys] == [
        [{"i": 0}, {"i": 1}, {"i": 2}],
        [{"i": 3}, {"i": 4}],
    ]
    wait_until(lambda: committed(herder.log, "s3", "events") == 5, 10, "offset 5 committed")


def test_field_and_time_partitioners_name_directories(start_herder, s3_bucket: Bucket) -> None:
    herder = start_herder()
    hour = 3_600_000
    base = 1_700_000_000_000 - 1_700_000_000_000 % hour  # 2023-11-14T22:00Z
    values = [{"region": r, "at": base + i * hour // 2} for i, r in enumerate("ababa")]
    produce(herder.log, "geo", schemaless(values))
    herder.put_connector_config(
        "s3-field",
        sink_config(
            s3_bucket,
            "geo",
            **{
                "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner",
                "partition.field.name": "region",
                "flush.size": "5",
                "topics.dir": "field",
            },
        ),
        allow_replace=True,
    )
    herder.put_connector_config(
        "s3-time",
        sink_config(
            s3_bucket,
            "geo",
            **{
                "partitioner.class": "io.confluent.connect.storage.partitioner.HourlyPartitioner",
                "timestamp.extractor": "RecordField",
                "timestamp.field": "at",
                "timezone": "Europe/Paris",
                "locale": "fr-FR",
                "flush.size": "5",
                "topics.dir": "time",
            },
        ),
        allow_replace=True,
    )
    field = wait_keys(s3_bucket, 2, "field/")
    assert field == [
        "field/geo/region=a/geo+0+0000000000.json",
        "field/geo/region=b/geo+0+0000000001.json",
    ]  # its first record
    assert _lines(s3_bucket.get(field[0])) == [values[0], values[2], values[4]]
    time_keys = wait_keys(s3_bucket, 3, "time/")
    assert time_keys == [
        "time/geo/year=2023/month=11/day=14/hour=23/geo+0+0000000000.json",
        "time/geo/year=2023/month=11/day=15/hour=00/geo+0+0000000002.json",
        "time/geo/year=2023/month=11/day=15/hour=01/geo+0+0000000004.json",
    ]
    assert _lines(s3_bucket.get(time_keys[2])) == [values[4]]


def test_time_directories_name_months_in_the_locale(
    herder: StandaloneHerder, s3_bucket: Bucket
) -> None:
    """`locale` names the months of `path.format` (MMMM) in the bucket's keys."""
    day = 86_400_000
    march = 1_709_251_200_000  # 2024-03-01T00:00Z
    values = [{"at": march + i * 20 * day} for i in range(3)]  # March, March, April
    produce(herder.log, "cal", schemaless(values))
    config = sink_config(
        s3_bucket,
        "cal",
        **{
            "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
            "path.format": "'mois'=MMMM/'jour'=EEEE",
            "partition.duration.ms": str(day),
            "timestamp.extractor": "RecordField",
            "timestamp.field": "at",
            "timezone": "UTC",
            "locale": "fr-FR",
            "flush.size": "3",
        },
    )
    herder.put_connector_config("s3", config, allow_replace=True)
    keys = wait_keys(s3_bucket, 3)
    assert keys == [
        "topics/cal/mois=avril/jour=mercredi/cal+0+0000000002.json",
        "topics/cal/mois=mars/jour=jeudi/cal+0+0000000001.json",
        "topics/cal/mois=mars/jour=vendredi/cal+0+0000000000.json",
    ]
    assert _lines(s3_bucket.get(keys[0])) == [values[2]]


def test_multipart_objects_over_the_part_size(herder: StandaloneHerder, s3_bucket: Bucket) -> None:
    body = b"x" * 1000
    produce(herder.log, "big", [b"%06d" % i + body for i in range(12_000)])
    config = sink_config(
        s3_bucket,
        "big",
        **{
            "format.class": "ByteArrayFormat",
            "value.converter": BYTES,
            "flush.size": "12000",
            "s3.part.size": str(5 * 1024 * 1024),
        },
    )
    herder.put_connector_config("s3", config, allow_replace=True)
    keys = wait_keys(s3_bucket, 1, timeout_s=60)
    head = s3_bucket.client.head_object(Bucket=s3_bucket.name, Key=keys[0])
    assert head["ETag"].strip('"').endswith("-3")  # 12 MB in 5 MiB parts: three parts
    data = s3_bucket.get(keys[0])
    assert data.split(b"\n")[:-1] == [b"%06d" % i + body for i in range(12_000)]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"s3.bucket.name": "no-such-bucket-here"}, "S3 bucket does not exist"),
        ({"aws.secret.access.key": "wrong-secret"}, "S3 refused the credentials"),
        ({"store.url": "http://127.0.0.1:9"}, "S3 endpoint unavailable"),
    ],
    ids=["missing-bucket", "bad-credentials", "unreachable"],
)
def test_failures_are_reported_in_the_task_status(
    herder: StandaloneHerder, s3_bucket: Bucket, change: dict[str, str], expected: str
) -> None:
    config = sink_config(s3_bucket, "orders", **change, **{"s3.part.retries": "0"})
    herder.put_connector_config("s3", config, allow_replace=True)
    _, trace = wait_until(
        lambda: (s := task_state(herder, "s3"))[0] == "FAILED" and s, 30, "task FAILED"
    )
    assert expected in trace
    assert "wrong-secret" not in trace
