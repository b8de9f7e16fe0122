"""The main job's Delta table (`python -m connect.demo --table-format delta`).

DeltaSink (`configs/delta-main-job-sink.json`) appends every version of every order to
the Delta table `./lake/delta/shop-orders`, partitioned by region; the summary reads
it with delta-rs (no JVM, so `make run` needs no Java): rows and versions, a
time-travel read (the table as of its first version holding rows, against now), and
the latest version of each order per region against the database.

The job counts the table's rows from the Parquet footers under its directory (as it
does the lake's), so the config keeps delta-rs from writing checkpoints (Parquet files
in `_delta_log`) within the job's run: `delta.checkpoint.interval` 1000.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["SINK_CONFIG", "lake_dir", "summary"]

SINK_CONFIG = "configs/delta-main-job-sink.json"


def lake_dir(args: argparse.Namespace, topic: str) -> Path:
    return Path(args.lake) / "delta" / topic


def summary(
    args: argparse.Namespace, shop: Any, records: int, topic: str,
    latest_by_region: Callable[[Any], dict[str, tuple[int, str]]],
) -> bool:
    """What landed, read back with delta-rs; `latest_by_region` is the Iceberg
    summary's (the same check on the same columns)."""
    from deltalake import DeltaTable

    path = lake_dir(args, topic).resolve()
    table = DeltaTable(str(path))
    now = table.to_pyarrow_table()
    history = table.history()
    print(f"\nWhat landed in the Delta table {path} (delta-rs):")
    print(f"  {now.num_rows:,} rows (every version of each order), {table.version() + 1} "
          "versions, columns " + ", ".join(f"{f.name} {f.type}" for f in now.schema))
    first = min((h["version"] for h in history if h.get("operation") == "WRITE"), default=0)
    then = DeltaTable(str(path), version=first).to_pyarrow_table(columns=["id"])
    print(f"  time travel: as of version {first} the table held {then.num_rows:,} rows; "
          f"now {now.num_rows:,}")
    got = latest_by_region(now)
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
