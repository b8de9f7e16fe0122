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
    check: Callable[[Any, Any, int], bool],
) -> bool:
    """What landed, read back with delta-rs; `check` is the Iceberg summary's
    (`connect.demo_tables.check_table`: the same check on the same columns)."""
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
    return check(now, shop, records)
