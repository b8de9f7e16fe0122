"""S3Source: GENERIC mode over objects written by other tools (JSON lines, CSV, Avro,
Parquet), objects appearing while it runs, and resuming mid-object from a stored
offset; config refusals name the key."""

from __future__ import annotations

import io

import fastavro
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connect.api import ConfigError
from connectors.s3.config import SinkSettings, SourceSettings, validate_sink
from connectors.s3.source import S3SourceTask
from tests.connectors.fakes import FakeOffsetReader, FakeSourceContext
from tests.connectors.s3.conftest import read_values, source_config
from tests.s3 import Bucket
from tests.waiting import wait_until


def _avro(rows: list[dict]) -> bytes:
    schema = fastavro.parse_schema({"type": "record", "name": "Row", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"]}]})
    out = io.BytesIO()
    fastavro.writer(out, schema, rows)
    return out.getvalue()


def _parquet(rows: list[dict]) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), out)
    return out.getvalue()


@pytest.mark.slow
def test_generic_mode_reads_every_format_and_new_objects(start_herder, s3_bucket: Bucket) -> None:
    herder = start_herder()
    rows = [{"id": i, "name": f"n{i}"} for i in range(5)]
    s3_bucket.put("in/a.jsonl", b"".join(orjson.dumps(r) + b"\n" for r in rows))
    s3_bucket.put("in/b.csv", b"id,name\n" + b"".join(b"%d,n%d\n" % (i, i) for i in range(3)))
    s3_bucket.put("in/c.avro", _avro(rows))
    s3_bucket.put("in/d.parquet", _parquet(rows))
    s3_bucket.put("in/ignored.txt", b"not matched")
    formats = {"json": r"a.*\.jsonl", "csv": r".*\.csv", "avro": r".*\.avro",
               "parquet": r".*\.parquet"}
    for fmt, regex in formats.items():
        herder.put_connector_config(f"generic-{fmt}", source_config(s3_bucket, **{
            "mode": "GENERIC", "topics.dir": "in", "format.class": fmt,
            "topic.regex.list": f"{fmt}-rows:{regex}",
            "value.converter.schemas.enable": "false"}), allow_replace=True)
    log = herder.log
    wait_until(lambda: all(read_values(log, f"{f}-rows") for f in formats), 30, "all topics")
    wait_until(lambda: len(read_values(log, "json-rows")) == 5, 10, "json rows")
    assert [orjson.loads(v) for v in read_values(log, "json-rows")] == rows
    assert [orjson.loads(v) for v in read_values(log, "csv-rows")] == [
        {"id": str(i), "name": f"n{i}"} for i in range(3)]  # CSV: strings, named by the header
    for fmt in ("avro", "parquet"):
        wait_until(lambda f=fmt: len(read_values(log, f"{f}-rows")) == 5, 10, f"{fmt} rows")
        assert [orjson.loads(v) for v in read_values(log, f"{fmt}-rows")] == rows
    s3_bucket.put("in/a-later.jsonl", b'{"late": true}\n')
    wait_until(lambda: len(read_values(log, "json-rows")) == 6, 30, "the later object")
    assert orjson.loads(read_values(log, "json-rows")[-1]) == {"late": True}


def _task(bucket: Bucket, reader: FakeOffsetReader, **props: str) -> S3SourceTask:
    task = S3SourceTask()
    config = source_config(bucket, **props)
    task.initialize(FakeSourceContext(config, reader))
    task.start(config)
    return task


def _drain(task: S3SourceTask) -> list:
    out = []
    while True:
        records = task.poll()
        if not records:
            return out
        out.extend(records)


def test_a_restart_resumes_mid_object_from_the_stored_offset(s3_bucket: Bucket) -> None:
    s3_bucket.put("in/x.jsonl", b"".join(b'{"i": %d}\n' % i for i in range(10)))
    props = {"mode": "GENERIC", "topics.dir": "in", "topic.regex.list": "t:.*",
             "record.batch.max.size": "4"}
    task = _task(s3_bucket, FakeOffsetReader(), **props)
    first = task.poll()
    assert first is not None and [r.value for r in first] == [{"i": i} for i in range(4)]
    assert first[-1].source_partition == {"object": "in/x.jsonl"}
    assert first[-1].source_offset == {"position": 4, "complete": False}
    task.stop()
    # As if the runtime committed that offset, then the task restarted.
    reader = FakeOffsetReader()
    reader.put({"object": "in/x.jsonl"}, {"position": 4, "complete": False})
    again = _drain(_task(s3_bucket, reader, **props))
    assert [r.value for r in again] == [{"i": i} for i in range(4, 10)]
    assert again[-1].source_offset == {"position": 10, "complete": True}
    reader.put({"object": "in/x.jsonl"}, {"position": 10, "complete": True})
    assert _drain(_task(s3_bucket, reader, **props)) == []  # finished objects stay finished


def test_restore_resumes_after_the_committed_object(s3_bucket: Bucket) -> None:
    for start in (0, 3, 6):
        body = b"".join(b'{"o": %d}\n' % o for o in range(start, start + 3))
        s3_bucket.put(f"topics/t/partition=2/t+2+{start:010d}.json", body)
    reader = FakeOffsetReader()
    reader.put({"topic": "t", "partition": 2},
               {"object": "topics/t/partition=2/t+2+0000000003.json", "start": 3,
                "position": 1, "complete": False})
    records = _drain(_task(s3_bucket, reader))
    assert [r.value["o"] for r in records] == [4, 5, 6, 7, 8]
    assert {(r.topic, r.kafka_partition) for r in records} == {("t", 2)}


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"flush.size": "0"}, "flush.size"),
        ({"s3.part.size": "1024"}, "s3.part.size"),
        ({"format.class": "io.confluent.connect.s3.format.xml.XmlFormat"}, "format.class"),
        ({"partitioner.class": "FieldPartitioner"}, "partition.field.name"),
        ({"partitioner.class": "TimeBasedPartitioner", "path.format": "YYYY",
          "partition.duration.ms": "1000"}, "timezone"),
        ({"partitioner.class": "TimeBasedPartitioner", "timezone": "UTC"}, "path.format"),
        ({"rotate.schedule.interval.ms": "1000"}, "timezone"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"s3.bucket.name": "Not_A_Bucket"}, "s3.bucket.name"),
        ({"store.url": "ftp://x"}, "store.url"),
        ({"format.class": "csv"}, "format.class"),
    ],
)
def test_sink_config_errors_name_the_key(props: dict[str, str], key: str) -> None:
    base = {"s3.bucket.name": "b-1", "flush.size": "3",
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat"}
    with pytest.raises(ConfigError) as error:
        SinkSettings.parse({**base, **props})
    assert error.value.name == key
    results = {r.name: r.errors for r in validate_sink({**base, **props})}
    assert results[key], results


def test_secrets_are_hidden_and_generic_mode_needs_regexes() -> None:
    settings = SinkSettings.parse({"s3.bucket.name": "b-1", "flush.size": "3",
                                   "format.class": "json", "aws.secret.access.key": "s3cr3t"})
    assert "s3cr3t" not in repr(settings) and settings.store.secret_access_key.value == "s3cr3t"
    validated = {r.name: r.value for r in validate_sink({"aws.secret.access.key": "s3cr3t"})}
    assert validated["aws.secret.access.key"] == "[hidden]"
    with pytest.raises(ConfigError) as error:
        SourceSettings.parse({"s3.bucket.name": "b-1", "format.class": "json",
                              "mode": "GENERIC"})
    assert error.value.name == "topic.regex.list"
