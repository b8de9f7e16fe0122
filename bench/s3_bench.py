"""Benchmark of the S3 connectors against a local S3 endpoint; prints one JSON object.

A private SeaweedFS server (the tests' endpoint, tests/s3.py) runs on 127.0.0.1. Each
figure is end to end through the runtime: a StandaloneHerder in this process with its
task in a child process (the default isolation), the embedded log, converters, the
connector, boto3, and the server. Clocks start when the connector is created and
stop when the last object is visible (sinks) or the last record is in the log
(restore), so task start-up is inside every figure.

1. JSON lines: N records of 1 KiB (schemaless JSON) from the log into objects of
   `flush.size` records, uploaded in `s3.part.size` parts. Then the baseline: the very
   same objects' bytes uploaded again with plain boto3 calls — PutObject for a small
   object, CreateMultipartUpload / UploadPart (same part size) / Complete otherwise, one
   after the other, with the same client settings. `s3_json_vs_boto3` is the sink's
   MB/s over the baseline's.
2. Parquet: M records of five fields (JsonConverter with schemas) into Parquet objects.
3. Restore: the JSON-lines backup of M small records read back by S3Source
   (RESTORE_BACKUP) into the same topic and partitions of a fresh log.

    python bench/s3_bench.py [--json-records N] [--records M] [--dir DIR]

Keys: s3_json_vs_boto3, s3_json_sink_mb_per_s, s3_boto3_baseline_mb_per_s,
s3_parquet_records_per_s, s3_restore_records_per_s, plus the seconds and sizes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from connect.herder.standalone import StandaloneHerder  # noqa: E402
from connect.worker.config import WORKER_CONFIG  # noqa: E402
from log import FileLog  # noqa: E402
from tests.s3 import S3Server, new_bucket  # noqa: E402

JSON = "org.apache.kafka.connect.json.JsonConverter"
MiB = 1024 * 1024
PART = 8 * MiB
TIMEOUT_S = 300.0


def _herder(log_dir: Path) -> tuple[StandaloneHerder, FileLog]:
    raw = {"log.dir": str(log_dir), "offset.flush.interval.ms": "1000"}
    log = FileLog(log_dir)
    herder = StandaloneHerder({**raw, **WORKER_CONFIG.parse(raw)}, log=log, worker_id="bench")
    herder.start()
    return herder, log


def _wait(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def _fill(log: FileLog, topic: str, values: list[bytes], partitions: int = 1) -> None:
    log.create_topic(topic, partitions)
    per = len(values) // partitions
    for p in range(partitions):
        chunk = values[p * per : (p + 1) * per]
        for start in range(0, len(chunk), 20_000):
            log.append(topic, p, chunk[start : start + 20_000])
    log.flush()


def _count(bucket: Any, prefix: str) -> int:
    return sum(1 for _ in bucket.keys(prefix))


def _sink(herder: StandaloneHerder, bucket: Any, name: str, topic: str, objects: int,
          **props: str) -> float:
    config = {
        "connector.class": "io.confluent.connect.s3.S3SinkConnector",
        "topics": topic, "value.converter": JSON, "s3.part.size": str(PART),
        **bucket.props, **props,
    }
    start = time.perf_counter()
    herder.put_connector_config(name, config, allow_replace=True)
    _wait(lambda: _count(bucket, props.get("topics.dir", "topics") + "/") >= objects, name)
    elapsed = time.perf_counter() - start
    herder.delete_connector(name)
    return elapsed


def _baseline(bucket: Any, keys: list[str]) -> tuple[float, int]:
    """The same bytes, uploaded with plain boto3 calls (see the module docstring)."""
    from connectors.s3.config import StoreSettings
    from connectors.s3.store import Store

    # The sink's client settings (no boto3 retries, checksums only where required).
    store = Store(StoreSettings(bucket.name, "us-east-1", bucket.url, *_creds(bucket), True,
                                PART, 0, 100, 5000, 60000))
    client = store.client
    bodies = [bucket.get(k) for k in keys]
    total = sum(map(len, bodies))
    start = time.perf_counter()
    for i, body in enumerate(bodies):
        key = f"baseline/{i}"
        if len(body) < PART:
            client.put_object(Bucket=bucket.name, Key=key, Body=body)
            continue
        upload = client.create_multipart_upload(Bucket=bucket.name, Key=key)["UploadId"]
        parts = []
        for n, offset in enumerate(range(0, len(body), PART)):
            etag = client.upload_part(Bucket=bucket.name, Key=key, UploadId=upload,
                                      PartNumber=n + 1, Body=body[offset : offset + PART])["ETag"]
            parts.append({"ETag": etag, "PartNumber": n + 1})
        client.complete_multipart_upload(Bucket=bucket.name, Key=key, UploadId=upload,
                                         MultipartUpload={"Parts": parts})
    return time.perf_counter() - start, total


def _creds(bucket: Any) -> tuple[str, Any]:
    from connect.api import Password

    props = bucket.props
    return props["aws.access.key.id"], Password(props["aws.secret.access.key"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json-records", type=int, default=200_000)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="s3-bench-", dir=args.dir))
    server = S3Server(base / "s3").start()
    result: dict[str, Any] = {"json_records": args.json_records, "records": args.records,
                              "part_size": PART}
    try:
        herder, log = _herder(base / "log")
        bucket = new_bucket(server)
        # Step 1
        pad = "x" * 1000
        values = [orjson.dumps({"id": i, "pad": pad}) for i in range(args.json_records)]
        _fill(log, "json", values)
        flush = 16_384
        objects = args.json_records // flush
        sink_s = _sink(herder, bucket, "json", "json", objects, **{
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
            "value.converter.schemas.enable": "false", "flush.size": str(flush),
            "topics.dir": "json"})
        keys = bucket.keys("json/")[:objects]
        base_s, total = _baseline(bucket, keys)
        sink_mb = total / MiB / sink_s
        base_mb = total / MiB / base_s
        result.update({
            "s3_json_vs_boto3": round(sink_mb / base_mb, 3),
            "s3_json_sink_mb_per_s": round(sink_mb, 1),
            "s3_boto3_baseline_mb_per_s": round(base_mb, 1),
            "s3_json_sink_s": round(sink_s, 3), "s3_boto3_baseline_s": round(base_s, 3),
            "s3_json_bytes": total, "s3_json_objects": objects,
        })
        print(json.dumps(result), file=sys.stderr)
        # Step 2
        schema = {"type": "struct", "name": "bench.Row", "optional": False, "fields": [
            {"field": "id", "type": "int64", "optional": False},
            {"field": "name", "type": "string", "optional": True},
            {"field": "amount", "type": "double", "optional": False},
            {"field": "category", "type": "string", "optional": False},
            {"field": "created_at", "type": "int64", "optional": False}]}
        rows = [orjson.dumps({"schema": schema, "payload": {
            "id": i, "name": f"name-{i}", "amount": i * 0.25, "category": "abcd"[i % 4],
            "created_at": 1_700_000_000_000 + i}}) for i in range(args.records)]
        _fill(log, "rows", rows)
        del rows
        flush = 100_000
        parquet_s = _sink(herder, bucket, "parquet", "rows", args.records // flush, **{
            "format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat",
            "value.converter.schemas.enable": "true", "flush.size": str(flush),
            "topics.dir": "parquet"})
        result["s3_parquet_records_per_s"] = round(args.records / parquet_s)
        result["s3_parquet_s"] = round(parquet_s, 3)
        print(json.dumps(result), file=sys.stderr)
        # Step 3
        small = [orjson.dumps({"id": i, "name": f"name-{i}", "v": i * 0.5})
                 for i in range(args.records)]
        _fill(log, "small", small, partitions=2)
        del small
        _sink(herder, bucket, "backup", "small", args.records // (flush // 2), **{
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
            "value.converter.schemas.enable": "false", "flush.size": str(flush // 2),
            "topics.dir": "backup"})
        herder.stop()
        log.close()
        herder, log = _herder(base / "restored")
        log.create_topic("small", 2)
        start = time.perf_counter()
        herder.put_connector_config("restore", {
            "connector.class": "io.confluent.connect.s3.source.S3SourceConnector",
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
            "topics.dir": "backup", "value.converter": JSON,
            "value.converter.schemas.enable": "false", **bucket.props,
        }, allow_replace=True)
        _wait(lambda: sum(log.latest_offset("small", p) for p in (0, 1)) >= args.records,
              "restore")
        restore_s = time.perf_counter() - start
        result["s3_restore_records_per_s"] = round(args.records / restore_s)
        result["s3_restore_s"] = round(restore_s, 3)
        herder.stop()
        log.close()
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
