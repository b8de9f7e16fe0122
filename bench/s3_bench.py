"""Benchmark of the S3 connectors against a local S3 endpoint; prints one JSON object.

A private SeaweedFS server (the tests' endpoint, tests/s3.py) runs on 127.0.0.1. Each
figure is end to end through the runtime: a StandaloneHerder in this process with its
task in a child process (the default isolation), the embedded log, converters, the
connector, boto3, and the server. Clocks start when the connector is created and
stop when the last object is visible (sinks) or the last record is in the log
(restore), so task start-up (~0.7 s: a process, imports, a boto3 client) is inside
every figure.

1. JSON lines: N records of 1 KiB (schemaless JSON) from the log into objects of
   `flush.size` records, uploaded in `s3.part.size` parts. Then the baseline: the very
   same objects' bytes uploaded again with plain boto3 calls — PutObject for a small
   object, CreateMultipartUpload / UploadPart (same part size) / Complete otherwise, one
   after the other, with the same client settings. `s3_json_vs_boto3` is the sink's
   MB/s over the baseline's. Both write into a bucket already written to once (see
   `_warm`): SeaweedFS creates a new bucket's first volumes on its first write.
Sink clocks stop at the offset commit that follows the last object (see `_sink`).

2. Parquet: M records of five fields (JsonConverter with schemas) in two partitions
   into Parquet objects, by two tasks.
3. Restore: the JSON-lines backup of M small records (two partitions) read back by
   S3Source (RESTORE_BACKUP, two tasks) into the same topic and partitions of a fresh
   log.

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
from log import TopicPartition as LogTopicPartition  # noqa: E402

# tests.s3 (the SeaweedFS harness, which imports pytest) is imported in main() only:
# each task process is spawned, and spawning runs this module's top level again in
# the child (as __mp_main__), where it added 0.3 s to every sink's start-up that a
# worker's task processes never pay.

JSON = "org.apache.kafka.connect.json.JsonConverter"
MiB = 1024 * 1024
PART = 8 * MiB
TIMEOUT_S = 300.0
#: Tasks (and topic partitions) of the Parquet and restore runs: Connect's way to use
#: both cores. The JSON run keeps one task, like its one-threaded boto3 baseline.
TASKS = 2


ISOLATION = {"value": "process"}


def _herder(log_dir: Path) -> tuple[StandaloneHerder, FileLog]:
    raw = {"log.dir": str(log_dir), "offset.flush.interval.ms": "1000",
           "task.isolation": ISOLATION["value"]}
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


def _committed(log: FileLog, group: str, topic: str) -> int:
    partitions = [LogTopicPartition(topic, p) for p in range(log.partition_count(topic))]
    return sum(o.offset for o in log.committed_offsets(group, partitions).values())


def _sink(herder: StandaloneHerder, bucket: Any, name: str, topic: str, records: int,
          **props: str) -> float:
    """Seconds from creating the connector to the offset commit that follows its last
    object: the sink commits an offset only once the objects before it are visible,
    and reading the log's committed offsets costs the measurement nothing (listing
    the bucket every few ms would load the very server being measured)."""
    config = {
        "connector.class": "io.confluent.connect.s3.S3SinkConnector",
        "topics": topic, "value.converter": JSON, "s3.part.size": str(PART),
        **bucket.props, **props,
    }
    start = time.perf_counter()
    herder.put_connector_config(name, config, allow_replace=True)
    log = herder.log
    _wait(lambda: _committed(log, f"connect-{name}", topic) >= records, name)
    elapsed = time.perf_counter() - start
    herder.delete_connector(name)
    return elapsed


def _warm(bucket: Any) -> None:
    """Write (and delete) one object before anything is measured. SeaweedFS creates a
    bucket's first volumes on its first write (0.25 s here); the sink, measured first,
    paid that alone, since the baseline runs later in the same bucket."""
    bucket.put("warm-up", b"x" * MiB)
    bucket.client.delete_object(Bucket=bucket.name, Key="warm-up")


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


def _json_step(
    herder: StandaloneHerder, log: FileLog, bucket: Any, n: int, tasks: int
) -> dict[str, Any]:
    # Step 1
    pad = "x" * 1000
    _fill(log, "json", [orjson.dumps({"id": i, "pad": pad}) for i in range(n)], tasks)
    flush = 16_384
    objects = n // flush
    sink_s = _sink(herder, bucket, "json", "json", objects * flush, **{
        "tasks.max": str(tasks),
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
        "value.converter.schemas.enable": "false", "flush.size": str(flush),
        "topics.dir": "json"})
    keys = bucket.keys("json/")[:objects]
    base_s, total = _baseline(bucket, keys)
    sink_mb = total / MiB / sink_s
    base_mb = total / MiB / base_s
    return {
        "s3_json_vs_boto3": round(sink_mb / base_mb, 3),
        "s3_json_sink_mb_per_s": round(sink_mb, 1),
        "s3_boto3_baseline_mb_per_s": round(base_mb, 1),
        "s3_json_sink_s": round(sink_s, 3), "s3_boto3_baseline_s": round(base_s, 3),
        "s3_json_bytes": total, "s3_json_objects": objects, "s3_json_tasks": tasks,
    }


def _parquet_step(herder: StandaloneHerder, log: FileLog, bucket: Any, n: int) -> dict[str, Any]:
    # Step 2
    schema = {"type": "struct", "name": "bench.Row", "optional": False, "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "name", "type": "string", "optional": True},
        {"field": "amount", "type": "double", "optional": False},
        {"field": "category", "type": "string", "optional": False},
        {"field": "created_at", "type": "int64", "optional": False}]}
    _fill(log, "rows", [orjson.dumps({"schema": schema, "payload": {
        "id": i, "name": f"name-{i}", "amount": i * 0.25, "category": "abcd"[i % 4],
        "created_at": 1_700_000_000_000 + i}}) for i in range(n)], partitions=TASKS)
    flush = 100_000
    parquet_s = _sink(herder, bucket, "parquet", "rows", n - n % (TASKS * flush), **{
        "tasks.max": str(TASKS),
        "format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat",
        "value.converter.schemas.enable": "true", "flush.size": str(flush),
        "topics.dir": "parquet"})
    return {"s3_parquet_records_per_s": round(n / parquet_s), "s3_parquet_s": round(parquet_s, 3)}


def _restore_step(herder: StandaloneHerder, log: FileLog, bucket: Any, n: int,
                  base: Path) -> dict[str, Any]:
    # Step 3
    flush = 50_000
    _fill(log, "small", [orjson.dumps({"id": i, "name": f"name-{i}", "v": i * 0.5})
                         for i in range(n)], partitions=TASKS)
    _sink(herder, bucket, "backup", "small", n - n % (2 * flush), **{
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
        "value.converter.schemas.enable": "false", "flush.size": str(flush),
        "topics.dir": "backup"})
    restorer, restored = _herder(base / "restored")
    try:
        restored.create_topic("small", TASKS)
        start = time.perf_counter()
        restorer.put_connector_config("restore", {
            "connector.class": "io.confluent.connect.s3.source.S3SourceConnector",
            "tasks.max": str(TASKS),
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
            "topics.dir": "backup", "value.converter": JSON,
            "value.converter.schemas.enable": "false", **bucket.props,
        }, allow_replace=True)
        _wait(lambda: sum(restored.latest_offset("small", p) for p in range(TASKS)) >= n,
              "restore")
        restore_s = time.perf_counter() - start
    finally:
        restorer.stop()
        restored.close()
    return {"s3_restore_records_per_s": round(n / restore_s), "s3_restore_s": round(restore_s, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # 512 MiB: enough that the task's start (~0.7 s: a process, boto3's import and
    # client) does not decide the figure, which is about sustained throughput.
    parser.add_argument("--json-records", type=int, default=524_288)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--only", choices=("json", "parquet", "restore"), default=None,
                        help="run one step (for profiling)")
    parser.add_argument("--json-tasks", type=int, default=1,
                        help="tasks (and partitions) of the JSON run (default 1, like the "
                        "one-threaded baseline)")
    parser.add_argument("--isolation", choices=("process", "thread"), default="process",
                        help="thread: tasks in this process (for profiling)")
    args = parser.parse_args()
    ISOLATION["value"] = args.isolation
    from tests.s3 import S3Server, new_bucket

    base = Path(tempfile.mkdtemp(prefix="s3-bench-", dir=args.dir))
    server = S3Server(base / "s3").start()
    result: dict[str, Any] = {"json_records": args.json_records, "records": args.records,
                              "part_size": PART, "tasks": TASKS}
    herder, log = _herder(base / "log")
    try:
        bucket = new_bucket(server)
        _warm(bucket)
        if args.only in (None, "json"):
            result.update(_json_step(herder, log, bucket, args.json_records, args.json_tasks))
        if args.only in (None, "parquet"):
            result.update(_parquet_step(herder, log, bucket, args.records))
        if args.only in (None, "restore"):
            result.update(_restore_step(herder, log, bucket, args.records, base))
    finally:
        herder.stop()
        log.close()
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
