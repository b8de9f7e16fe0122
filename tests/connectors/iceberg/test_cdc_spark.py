"""A PostgreSQL table through PostgresCdcSource (Debezium's envelope, no unwrapping)
and IcebergSink in upsert mode on a real StandaloneHerder: after a snapshot, updates,
deletes and inserts, the Iceberg table equals the source table; Spark (the session
fixture, with Iceberg's Spark runtime) reads the same rows from the table's metadata;
and pyiceberg's time travel still sees the snapshot as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.connectors.iceberg.helpers import load
from tests.connectors.postgres.helpers import run, table_rows
from tests.waiting import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.slow]


def _table_rows(warehouse: Path) -> dict[int, dict[str, Any]]:
    if not (warehouse / "catalog.db").exists():
        return {}
    try:
        rows = load(warehouse, "db.c").scan().to_arrow().to_pylist()
    except Exception:  # not created yet
        return {}
    return {r["id"]: r for r in rows}


def test_cdc_round_trip_equals_the_source_and_spark_reads_it(
    tmp_path: Path, postgres_url: str, start_herder: Any, spark: Any
) -> None:
    run(
        postgres_url,
        "CREATE TABLE c (id int PRIMARY KEY, name text NOT NULL, qty int, "
        "price numeric(10,2))",
        "INSERT INTO c SELECT n, 'n' || n, n % 7, n * 1.25 FROM generate_series(1, 60) n",
    )
    warehouse = tmp_path / "warehouse"
    herder = start_herder({"value.converter.schemas.enable": "true"})
    herder.put_connector_config("cdc", {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "connection.url": postgres_url,
        "topic.prefix": "srv",
        "poll.interval.ms": "100",
    }, allow_replace=False)
    herder.put_connector_config("ice", {
        "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
        "topics": "srv.public.c",
        "iceberg.tables": "db.c",
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.tables.upsert-mode-enabled": "true",
        "iceberg.tables.default-id-columns": "id",
        "iceberg.catalog.warehouse": warehouse.as_uri(),
        "iceberg.control.commit.interval-ms": "200",
    }, allow_replace=False)

    def same() -> bool:
        return _table_rows(warehouse) == table_rows(postgres_url, "c")

    wait_until(same, 60, "the snapshot in the table")
    first = load(warehouse, "db.c").current_snapshot().snapshot_id
    run(
        postgres_url,
        "UPDATE c SET qty = qty + 100 WHERE id % 3 = 0",
        "DELETE FROM c WHERE id % 10 = 0",
        "INSERT INTO c VALUES (100, 'new', 1, 9.99), (101, 'newer', NULL, NULL)",
        "UPDATE c SET name = 'renamed', price = 0.01 WHERE id = 100",
        "DELETE FROM c WHERE id = 101",
    )
    wait_until(same, 60, "the changes in the table")
    source = table_rows(postgres_url, "c")
    assert len(source) == 60 - 6 + 1

    table = load(warehouse, "db.c")
    df = spark.read.format("iceberg").load(table.metadata_location)
    from_spark = {r["id"]: r.asDict() for r in df.collect()}
    assert from_spark == source
    # Time travel: the first snapshot still holds the table as the snapshot read it.
    then = table.scan(snapshot_id=first).to_arrow()
    assert then.num_rows == 60
    assert sorted(then.column("qty").to_pylist()) == sorted(n % 7 for n in range(1, 61))
