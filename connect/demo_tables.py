"""The main job's table formats (`python -m connect.demo --table-format ...`).

- `parquet` (the default): SparkParquetSink's Hive-style folders in `./lake`, read back
  with Spark SQL (`connect.demo._summary`).
- `iceberg`: IcebergSink (`configs/iceberg-main-job-sink.json`) appends every version
  of every order to the Iceberg table `shop.orders` in `./lake/iceberg` (an SQL catalog
  on SQLite there); the summary reads it with pyiceberg — no JVM, so `make run` needs no
  Java — and shows time travel: the table as of its first snapshot against now.
- `delta`: DeltaSink (`connect.demo_delta`: its config, table and summary).

The job counts a table's rows as it does the lake's, from the Parquet footers under
the table's directory (`lake_dir`), so its progress and its wait are the same code.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = [
    "FORMATS", "check_table", "lake_dir", "needs_spark", "sink_config", "sink_name", "summary",
]

FORMATS = ("parquet", "iceberg", "delta")
PARQUET_SINK_CONFIG = "configs/main-job-lake-sink.json"
ICEBERG_SINK_CONFIG = "configs/iceberg-main-job-sink.json"
ICEBERG_TABLE = "shop.orders"


def sink_config(args: argparse.Namespace) -> str:
    if args.table_format == "iceberg":
        return ICEBERG_SINK_CONFIG
    if args.table_format == "delta":
        return delta_sink_config()
    return PARQUET_SINK_CONFIG


def sink_name(args: argparse.Namespace) -> str:
    return {"iceberg": "IcebergSink", "delta": "DeltaSink"}.get(args.table_format,
                                                                "SparkParquetSink")


def needs_spark(args: argparse.Namespace) -> bool:
    """Whether the job starts a SparkSession: the Parquet summary reads with Spark SQL,
    `--stream-processing` runs on Spark; the table formats' summaries need no JVM."""
    return args.table_format == "parquet" or bool(getattr(args, "stream_processing", False))


def lake_dir(args: argparse.Namespace, topic: str) -> Path:
    """The directory whose Parquet files hold the sink's rows (see the docstring)."""
    if args.table_format == "iceberg":
        namespace, table = ICEBERG_TABLE.split(".")
        return Path(args.lake) / "iceberg" / namespace / table  # pyiceberg's SQL layout
    if args.table_format == "delta":
        return delta_lake_dir(args, topic)
    return Path(args.lake) / "topics" / topic


def summary(args: argparse.Namespace, shop: Any, records: int) -> bool:
    """The summary of a table format (Parquet's is `connect.demo._summary`)."""
    if args.table_format == "delta":
        return delta_summary(args, shop, records)
    return iceberg_summary(args, shop, records)


# ----------------------------------------------------------------- Iceberg

def iceberg_summary(args: argparse.Namespace, shop: Any, records: int) -> bool:
    """Rows and snapshots of the table, a time-travel read (as of the first snapshot
    against now), and the latest version of each order per region against the
    database, all through pyiceberg and Arrow."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = (Path(args.lake) / "iceberg").resolve()
    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'catalog.db'}",
                         warehouse=warehouse.as_uri())
    table = catalog.load_table(ICEBERG_TABLE)
    now = table.scan().to_arrow()
    snapshots = table.metadata.snapshots
    print(f"\nWhat landed in the Iceberg table {ICEBERG_TABLE} ({warehouse}, pyiceberg):")
    print(f"  {now.num_rows:,} rows (every version of each order), {len(snapshots)} "
          "snapshots, columns " + ", ".join(f"{f.name} {f.type}" for f in now.schema))
    first = snapshots[0]
    then = table.scan(snapshot_id=first.snapshot_id).to_arrow()
    print(f"  time travel: as of the first snapshot ({first.snapshot_id}) the table held "
          f"{then.num_rows:,} rows; now {now.num_rows:,}")
    return check_table(now, shop, records)


def check_table(now: Any, shop: Any, records: int) -> bool:
    """What both table formats' summaries check and print: the latest version of each
    order per region (against the database's when the job made the shop), and the
    table's rows against the log's records."""
    got = _latest_by_region(now)
    print("  latest version of each order, by region:")
    for region, (orders, revenue) in sorted(got.items(), key=lambda kv: str(kv[0])):
        print(f"    {region!s:<6} {orders:>8,} orders  revenue {revenue:>14}")
    ok = now.num_rows == records
    print(f"  rows against the log's records: {now.num_rows:,} / {records:,}")
    if shop is not None:
        expected = shop.totals()
        ok = ok and got == expected
        print("  database check (orders and revenue per region): "
              f"{'equal' if got == expected else f'DIFFERENT: {expected}'}")
    print("  result: OK" if ok else "  result: MISMATCH")
    return ok


def _latest_by_region(rows: Any) -> dict[str, tuple[int, str]]:
    """Per region, the orders and the revenue (two decimals) of each order's latest
    version: the last by updated_at per id, as the Parquet summary's SQL picks it."""
    import numpy as np

    ordered = rows.sort_by([("id", "ascending"), ("updated_at", "ascending")])
    ids = ordered.column("id").to_numpy()
    keep = np.append(ids[1:] != ids[:-1], True) if len(ids) else np.zeros(0, bool)
    latest = ordered.filter(keep)
    out = {}
    for group in latest.group_by("region").aggregate([("id", "count"),
                                                        ("amount", "sum")]).to_pylist():
        out[group["region"]] = (group["id_count"], f"{group['amount_sum']:.2f}")
    return out


# ------------------------------------------------------------------- Delta
# DELTA: DeltaSink's config, directory and summary live in connect/demo_delta.py.

def delta_sink_config() -> str:  # DELTA
    from connect.demo_delta import SINK_CONFIG

    return SINK_CONFIG


def delta_lake_dir(args: argparse.Namespace, topic: str) -> Path:  # DELTA
    from connect.demo_delta import lake_dir

    return lake_dir(args, topic)


def delta_summary(args: argparse.Namespace, shop: Any, records: int) -> bool:  # DELTA
    from connect.demo import TOPIC
    from connect.demo_delta import summary as delta

    return delta(args, shop, records, TOPIC, check_table)
