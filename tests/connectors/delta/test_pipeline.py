"""DeltaSink in real `connect standalone` workers (task processes and all):

- SIGKILLed at several points while two tasks commit to one table, restarted each
  time: the table then holds every record of the log exactly once, row for row what
  the log holds, and Spark (Delta's own reader) reads the same, also through filters
  its data skipping answers from the add actions' stats;
- on the local S3 server (`s3://`, delta-rs's S3 store with conditional puts).

Both tables are unpartitioned, so their files are the sink's own
(`connectors.delta.files`); a partitioned table's go through delta-rs's writer (the
main job's table, tests/connectors/delta/test_main_job.py).
"""

from __future__ import annotations

import decimal
import functools
import gc
import random
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from connect.converters import JsonConverter
from log import FileLog
from tests.connectors.spark.helpers import ORDER, order
from tests.integration.conftest import JSON, WorkerProcess, connector_file
from tests.s3 import ACCESS_KEY, REGION, SECRET_KEY, Bucket
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PER_PARTITION = 20_000


def _fill_log(log_dir: Path, topic: str = "orders", per_partition: int = PER_PARTITION) -> None:
    converter = JsonConverter()
    converter.configure({"schemas.enable": True}, is_key=False)
    with FileLog(log_dir, background=False) as log:
        log.create_topic(topic, 2)
        for p in range(2):
            for start in range(0, per_partition, 5_000):
                end = min(start + 5_000, per_partition)
                ids = [p * per_partition + i for i in range(start, end)]
                log.append(topic, p, converter.from_connect_batch(
                    topic, [ORDER] * len(ids), [order(i) for i in ids]))


def _sink(tmp_path: Path, uri: str, **props: str) -> Path:
    return connector_file(tmp_path, "lake", {
        "connector.class": "DeltaSink",
        "tasks.max": "2",
        "topics": "orders",
        "value.converter": JSON,
        "value.converter.schemas.enable": "true",
        "delta.table.uri": uri,
        "delta.flush.size": "300",
        "delta.commit.interval.ms": "300",
        **props,
    })


def _committed(uri: str, storage: dict[str, str] | None = None) -> int:
    """Records the table holds by its txn versions (0 before it exists)."""
    try:
        table = DeltaTable(uri, storage_options=storage)
    except Exception:
        return 0
    return sum(table.transaction_version(f"lake-orders-{p}") or 0 for p in range(2))


def _expected(total: int) -> list[tuple[Any, ...]]:
    return sorted((i, ("eu", "us", "apac")[i % 3], decimal.Decimal(i * 125).scaleb(-2))
                  for i in range(total))


def _first(frame: Any) -> Any:
    """`frame.first()`. PySpark reads results from a local socket it leaves to the
    garbage collector to close (pyspark/util.py `_load_from_socket`), and the
    ResourceWarning that raises fails a test run with warnings as errors, whenever the
    collection happens to come; here it comes at once, and is ignored."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        row = frame.first()
        gc.collect()
    return row


def test_sigkill_at_several_points_leaves_each_record_once_and_spark_reads_it(
    tmp_path: Path, start_worker: Callable[..., WorkerProcess], spark: Any
) -> None:
    _fill_log(tmp_path / "log")
    uri = str(tmp_path / "lake" / "${topic}")
    table_path = str(tmp_path / "lake" / "orders")
    # A transform: records reach the sink through put() (the batches path is the S3
    # test's), each row with its log offset.
    sink = _sink(tmp_path, uri, **{
        "transforms": "offset",
        "transforms.offset.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.offset.offset.field": "log_offset",
        "delta.flush.size": "2500",
        "delta.checkpoint.interval": "10",
    })
    total = 2 * PER_PARTITION
    rng = random.Random(11)
    at_kill = [0]
    for _ in range(3):  # killed right after each run's first commit is seen
        worker = start_worker([sink], {"offset.flush.interval.ms": str(rng.randint(50, 400))})
        try:
            wait_until(lambda w=worker, before=at_kill[-1]: _committed(table_path) > before
                       and len(w.task_pids()) >= 2, 60, "a commit")
        except AssertionError:
            raise AssertionError((at_kill, worker.status("lake"), worker.stderr[-3000:])) from None
        worker.kill()
        at_kill.append(_committed(table_path))
    assert at_kill[-1] < total, at_kill  # the last kill still interrupted the work
    worker = start_worker([sink])
    wait_until(lambda: _committed(table_path) == total, 90, "every row")
    assert worker.stop() == 0
    table = DeltaTable(table_path).to_pyarrow_table(columns=["id", "region", "amount"])
    got = sorted(zip(*(table.column(c).to_pylist() for c in ("id", "region", "amount")),
                     strict=True))
    assert got == _expected(total)
    frame = spark.read.format("delta").load(table_path)
    assert {f.name for f in frame.schema.fields} == {
        "id", "region", "amount", "day", "at", "log_offset"}
    # Spark reads the same rows: compared in aggregate, one pass, no row through py4j
    summary = _first(frame.selectExpr(
        "count(*) AS n", "sum(id) AS ids", "sum(amount) AS amounts",
        "sum(log_offset) AS offsets", "min(id) AS first", "max(id) AS last",
    ))
    assert summary.asDict() == {
        "n": total, "ids": total * (total - 1) // 2, "amounts": sum(r[2] for r in got),
        "offsets": PER_PARTITION * (PER_PARTITION - 1), "first": 0, "last": total - 1,
    }
    # Filters Spark answers by skipping files on their stats' bounds (ids, decimals,
    # timestamps, dates): a wrong bound would skip a file holding rows. Each partition's
    # ids are a range, so each filter keeps a few files of many. One Spark job: a scan
    # per filter (each skipping on its own), counted together.
    filtered = {
        "id BETWEEN 1000 AND 1999": 1000,
        "amount > 100.00 AND amount <= 200.00": 80,  # ids 81-160
        "at >= TIMESTAMP '2024-01-01T00:05:00Z' AND at < TIMESTAMP '2024-01-01T00:10:00Z'":
            300,  # ids 300-599
        "day = DATE '2024-01-03' AND id >= 30000": 2000,
    }
    scans = [frame.where(f).selectExpr(f"{i} AS filter") for i, f in enumerate(filtered)]
    union = functools.reduce(lambda a, b: a.unionAll(b), scans)
    counts = _first(union.selectExpr(
        *(f"count_if(filter = {i}) AS f{i}" for i in range(len(filtered)))))
    assert dict(zip(filtered, counts, strict=True)) == filtered


def test_a_table_on_s3(tmp_path: Path, start_worker: Callable[..., WorkerProcess],
                       s3_bucket: Bucket) -> None:
    per_partition = 2_500
    _fill_log(tmp_path / "log", per_partition=per_partition)
    storage = {
        "AWS_ENDPOINT_URL": s3_bucket.url, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true",
        "conditional_put": "etag",
    }
    uri = f"s3://{s3_bucket.name}/lake/orders"
    sink = _sink(tmp_path, uri, **{f"delta.storage.{k}": v for k, v in storage.items()})
    worker = start_worker([sink])
    wait_until(lambda: _committed(uri, storage) == 2 * per_partition, 60, "every row")
    assert worker.stop() == 0
    table = DeltaTable(uri, storage_options=storage).to_pyarrow_table(
        columns=["id", "region", "amount"])
    got = sorted(zip(*(table.column(c).to_pylist() for c in ("id", "region", "amount")),
                     strict=True))
    assert got == _expected(2 * per_partition)
    assert s3_bucket.keys("lake/orders/_delta_log/")
