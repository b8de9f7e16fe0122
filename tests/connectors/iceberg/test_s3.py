"""IcebergSink with its warehouse in S3 (the tests' SeaweedFS endpoint, tests/s3.py)
and its SQL catalog on a local SQLite file: the data and metadata files land in the
bucket, a restarted task resumes from the snapshots there, and an s3:// warehouse
without a catalog uri is refused naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from connect.api import ConfigError
from connectors.iceberg.config import parse
from tests.connectors.iceberg.helpers import TP, commit, order_schema, records, start
from tests.s3 import ACCESS_KEY, REGION, SECRET_KEY


def _props(tmp_path: Path, bucket: Any) -> dict[str, str]:
    return {
        "name": "ice",
        "topics": "orders",
        "iceberg.tables": "db.orders",
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.catalog.uri": f"sqlite:///{tmp_path / 'catalog.db'}",
        "iceberg.catalog.warehouse": f"s3://{bucket.name}/warehouse",
        "iceberg.catalog.s3.endpoint": bucket.url,
        "iceberg.catalog.s3.access-key-id": ACCESS_KEY,
        "iceberg.catalog.s3.secret-access-key": SECRET_KEY,
        "iceberg.catalog.s3.region": REGION,
        "iceberg.control.commit.interval-ms": "1000",
    }


def test_an_s3_warehouse_holds_the_table_and_its_offsets(tmp_path: Path, s3_bucket: Any):
    config = _props(tmp_path, s3_bucket)
    schema = order_schema()
    task, _, clock = start(config)
    task.put(records(schema, range(30)))
    commit(task, clock)
    keys = s3_bucket.keys("warehouse/")
    assert any(k.endswith(".parquet") for k in keys)
    assert any(k.endswith(".metadata.json") for k in keys)
    task2, context, clock2 = start(config)
    assert context.rewinds == {TP: 30}
    task2.put(records(schema, range(25, 40), first=25))
    commit(task2, clock2)
    table = task2.catalog.load_table("db.orders")
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(40))


def test_an_s3_warehouse_needs_a_catalog_uri(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"iceberg\.catalog\.uri"):
        parse({"iceberg.tables": "db.t", "iceberg.catalog.warehouse": "s3://b/w"})
