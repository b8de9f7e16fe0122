"""Benchmark of the lakehouse sinks (log → table format) beside dlt; prints one JSON object.

    python bench/lakehouse_bench.py [--rows N] [--changes M] [--formats iceberg,delta]
                                    [--skip-dlt]

The rows are the lake benchmark's table (bench/lake_bench.py: bigint key, ints, text,
a float, numeric(12,2), timestamptz, boolean, a nullable text), N of them (default
1,000,000), made in Arrow and written to a two-partition topic of the embedded log as
Avro messages, schemas in the worker's embedded registry (untimed). Then, per table format:

- <format>_rows_per_s: a sink connector (two tasks, the default process isolation)
  on a StandaloneHerder that is already running, timed from the connector's creation
  until the table holds N rows (its own commit metadata, polled);
- dlt_<format>_rows_per_s: dlt's filesystem destination with `table_format=<format>`
  writing the same rows (fed as Arrow tables of 100,000 rows, dlt's fastest input),
  timed from `pipeline.run()` to its return; dlt runs from a virtualenv of its own
  (`.venv-dlt-lakehouse`, made on first use with `pip install
  "dlt[filesystem,pyiceberg,deltalake]"`): its aiobotocore pins an older botocore than
  the project's boto3 wants, so it never enters the project's environment;
- <format>_vs_dlt: the ratio; dlt_<format>_cpu_s_per_m_rows: dlt's CPU seconds (its
  process and children, over `pipeline.run()`) per million rows, beside the sink's;
- <format>_cpu_s_per_m_rows: CPU seconds (user + system) of this process and its
  children (the task processes) over the timed span, per million rows: the figure that
  does not move with the machine's load (the bench's own table polling is in it);
- <format>_upserts_per_s: M (default 200,000) change events — updates, deletes and
  inserts, as ExtractNewRecordState writes them (`__op`, `__deleted`) — applied in
  upsert mode to the N-row table, timed from the connector's creation until its
  offsets in the table cover the M events.

Formats are the `RUNNERS` below: each maps a format to the function that measures the
sink (and its upserts), and `DLT_FORMATS` the dlt table format.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TOPIC = "lake_orders"
CHANGES_TOPIC = "lake_orders_changes"
PARTITIONS = 2
DLT_VENV = ROOT / ".venv-dlt-lakehouse"
TIMEOUT_S = 900.0
AVRO = "io.confluent.connect.avro.AvroConverter"


@dataclass
class Run:
    """What every runner gets: the herder over the filled log, a scratch directory, the
    rows (as Arrow, for checks) and the sizes."""

    herder: Any
    log: Any
    base: Path
    rows: int
    changes: int


# ------------------------------------------------------------------ the data

def lake_schema(*, cdc: bool = False) -> Any:
    from connect.api import (
        BOOLEAN_SCHEMA,
        FLOAT64_SCHEMA,
        INT32_SCHEMA,
        INT64_SCHEMA,
        OPTIONAL_STRING_SCHEMA,
        STRING_SCHEMA,
        Decimal,
        Schema,
        Timestamp,
    )

    fields = [
        ("id", INT64_SCHEMA), ("customer", STRING_SCHEMA), ("product", STRING_SCHEMA),
        ("quantity", INT32_SCHEMA), ("price", FLOAT64_SCHEMA),
        ("amount", Decimal.schema(2, precision=12)), ("status", STRING_SCHEMA),
        ("region", OPTIONAL_STRING_SCHEMA), ("created_at", Timestamp.schema()),
        ("paid", BOOLEAN_SCHEMA),
    ]
    if cdc:
        fields += [("__op", STRING_SCHEMA), ("__deleted", STRING_SCHEMA)]
    return Schema.struct(fields, name="bench.public.lake_orders.Value" + ("Change" if cdc else ""))


def lake_rows(ids: Any, *, version: int = 0) -> Any:
    """The lake benchmark's rows for the int64 array `ids` (lake_bench's generator, in
    numpy); `version` shifts the changing columns, as an update would."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from connect.api import ARROW_TIMESTAMP, decimal_type

    n = np.asarray(ids, dtype=np.int64)

    def pick(choices: list[str], k: np.ndarray) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(k, pa.int32()),
                                              pa.array(choices)).cast(pa.string())

    customers = [f"customer-{i}" for i in range(5000)]
    regions = pick([f"region-{i}" for i in range(4)], n % 4)
    cents = np.round(n * 100 / 7).astype(np.int64) + version
    return pa.RecordBatch.from_arrays(
        [
            pa.array(n),
            pick(customers, n % 5000),
            pick(["kayak", "tent", "lamp", "rope"], n % 4),
            pa.array(((n + version) % 9).astype(np.int32)),
            pa.array(n * 0.25 + version),
            pa.array(cents / 100.0).cast(decimal_type(2, 12)),
            pick(["new", "paid", "shipped"], (n + version) % 3),
            pc.if_else(pa.array(n % 11 == 0), pa.nulls(len(n), pa.string()), regions),
            pa.array((n + 1_704_067_200) * 1000).cast(ARROW_TIMESTAMP),
            pa.array(n % 2 == 0),
        ],
        names=[f.name for f in lake_schema().fields],
    )


def _messages(topic: str, schema: Any, batch: Any) -> list[bytes]:
    """Avro in Confluent's wire format, the schema in the worker's embedded registry
    (the herder installed it in this process): what a Debezium → lake pipeline runs
    with, and ~5x cheaper to decode than JsonConverter's envelopes (2 µs a row against
    11 µs, measured here), which would cap either sink below the target."""
    from connect.converters.avro import AvroConverter

    converter = AvroConverter()
    converter.configure({"schema.registry.url": "embedded"}, is_key=False)
    out = converter.from_arrow(topic, schema, batch)
    if out is None:
        raise RuntimeError("AvroConverter.from_arrow could not write the bench rows")
    return out


def fill(log: Any, topic: str, batches: list[Any], schema: Any) -> None:
    """The batches' rows as messages, row i into partition i % PARTITIONS."""
    import numpy as np

    log.create_topic(topic, PARTITIONS)
    for batch in batches:
        for start in range(0, batch.num_rows, 50_000):
            chunk = batch.slice(start, 50_000)
            part = np.arange(chunk.num_rows) % PARTITIONS
            for p in range(PARTITIONS):
                rows = chunk.filter(part == p)
                log.append(topic, p, _messages(topic, schema, rows))
    log.flush()


def change_batches(rows: int, changes: int) -> list[Any]:
    """`changes` events on the `rows`-row table: 70% updates, 15% deletes of existing
    keys (spread over the table), 15% inserts of new keys."""
    import numpy as np
    import pyarrow as pa

    updates, deletes = changes * 70 // 100, changes * 15 // 100
    inserts = changes - updates - deletes
    rng = np.random.default_rng(7)
    touched = rng.choice(np.arange(1, rows + 1), updates + deletes, replace=False)
    out = []
    for ids, op in ((touched[:updates], "u"), (touched[updates:], "d"),
                    (np.arange(rows + 1, rows + 1 + inserts), "c")):
        batch = lake_rows(ids, version=1)
        out.append(pa.RecordBatch.from_arrays(
            [*batch.columns, pa.array([op] * len(ids)),
             pa.array(["true" if op == "d" else "false"] * len(ids))],
            names=[*batch.schema.names, "__op", "__deleted"]))
    return out


# --------------------------------------------------------------- the runtime

def _herder(directory: Path, isolation: str) -> tuple[Any, Any]:
    from connect.herder.standalone import StandaloneHerder
    from connect.worker.config import WORKER_CONFIG
    from log import FileLog

    raw = {"log.dir": str(directory), "offset.flush.interval.ms": "1000",
           "task.isolation": isolation}
    log = FileLog(directory)
    herder = StandaloneHerder({**raw, **WORKER_CONFIG.parse(raw)}, log=log, worker_id="bench")
    herder.start()
    return herder, log


def _wait(predicate: Callable[[], bool], what: str) -> float:
    deadline = time.monotonic() + TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not done in {TIMEOUT_S:.0f} s")
        time.sleep(0.05)
    return time.perf_counter()


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its live children (the worker's
    task processes with process isolation): the load-independent measure beside the
    wall-clock rate. Children gone meanwhile are not counted."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def _start_paused(herder: Any, name: str, config: dict[str, str],
                  written: Callable[[], int]) -> tuple[float, float, float]:
    """Create the connector PAUSED, wait until every task has started (its process
    spawned, pyarrow and the sink imported, `start()` run) and reports PAUSED, then
    resume it: the timed span that follows is log → table alone, as dlt's is (dlt is
    imported before its timer starts). Returns (start-up seconds, the moment resumed,
    `_cpu_seconds()` then).
    `written` (the rows the table already holds for the connector) must be 0 then: a
    paused task that had consumed would make the figure a lie.

    Why: with process isolation a task's start-up (a Python process importing pyarrow,
    pyiceberg and SQLAlchemy) took 1.5-3 s of a 300,000-row run's 4.6 s at load 5, and
    tens of seconds at load 12+; it is reported beside the rate, not hidden."""
    began = time.perf_counter()
    herder.put_connector_config(name, config, allow_replace=False, initial_state="PAUSED")
    tasks = int(config["tasks.max"])

    def started() -> bool:
        states = [t.state for t in herder.connector_status(name).tasks]
        if "FAILED" in states:
            raise RuntimeError(f"{name}: a task failed to start")
        return len(states) == tasks and all(s == "PAUSED" for s in states)

    ready = _wait(started, f"{name} start-up")
    if written():
        raise RuntimeError(f"{name}: the paused tasks wrote {written()} rows")
    cpu = _cpu_seconds()
    herder.resume_connector(name)
    return ready - began, time.perf_counter(), cpu


# ------------------------------------------------------------------ Iceberg

def _iceberg_props(warehouse: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
        "tasks.max": str(PARTITIONS),
        "value.converter": AVRO,
        "value.converter.schema.registry.url": "embedded",
        "iceberg.tables": "bench.lake_orders",
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.tables.default-id-columns": "id",
        "iceberg.catalog.warehouse": warehouse.as_uri(),
        # As the Delta runner: a commit a second at most, or once 200,000 rows wait.
        "iceberg.control.commit.interval-ms": "1000",
        "iceberg.commit.max-buffered-records": "200000",
        **extra,
    }


def _iceberg_table(warehouse: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import NoSuchTableError

    if not (warehouse / "catalog.db").exists():
        return None  # the task has not started yet
    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'catalog.db'}",
                         warehouse=warehouse.as_uri())
    try:
        return catalog.load_table("bench.lake_orders")
    except NoSuchTableError:
        return None


class _IcebergOffsets:
    """The offsets the table's snapshots hold for a connector, polled every 50 ms.

    Why not a catalog and a table load per poll: that (an SQLAlchemy engine, the
    catalog's CREATE TABLE checks, the metadata JSON parsed) took a third of the
    samples of the bench's process under py-spy, CPU taken from the tasks on two cores
    (and the GIL from them with --isolation thread). The catalog's row for the table
    is read with sqlite3 (~0.1 ms) and the table loaded only when it has moved."""

    def __init__(self, warehouse: Path, connector: str) -> None:
        import pyiceberg.catalog.sql  # imported before the timer starts
        import pyiceberg.table  # noqa: F401

        self.warehouse, self.connector = warehouse, connector
        self.location: str | None = None
        self.held = 0
        self.catalog: Any = None

    def __call__(self) -> int:
        import sqlite3

        from connectors.iceberg.offsets import committed_offsets

        database = self.warehouse / "catalog.db"
        if not database.exists():
            return 0  # no task has opened the catalog yet
        with sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True) as db:
            try:
                row = db.execute("SELECT metadata_location FROM iceberg_tables WHERE "
                                 "table_namespace = 'bench' AND table_name = 'lake_orders'"
                                 ).fetchone()
            except sqlite3.OperationalError:  # the catalog's tables are being made
                row = None
        if row is not None and row[0] != self.location:
            from pyiceberg.catalog.sql import SqlCatalog

            self.location = row[0]
            if self.catalog is None:
                self.catalog = SqlCatalog("iceberg", uri=f"sqlite:///{database}",
                                          warehouse=self.warehouse.as_uri())
            table = self.catalog.load_table("bench.lake_orders")
            self.held = sum(committed_offsets(table, self.connector).values())
        return self.held


def iceberg_runner(run: Run) -> dict[str, Any]:
    warehouse = run.base / "iceberg"
    held = _IcebergOffsets(warehouse, "ice")
    startup, began, cpu = _start_paused(run.herder, "ice",
                                        {**_iceberg_props(warehouse), "topics": TOPIC}, held)
    ended = _wait(lambda: held() >= run.rows, "iceberg sink")
    seconds, cpu = ended - began, _cpu_seconds() - cpu
    count = _iceberg_table(warehouse).scan().to_arrow().num_rows
    run.herder.delete_connector("ice")
    out = {"iceberg_rows_per_s": round(run.rows / seconds), "iceberg_s": round(seconds, 2),
           "iceberg_startup_s": round(startup, 2),
           "iceberg_rows_per_s_with_startup": round(run.rows / (seconds + startup)),
           "iceberg_cpu_s_per_m_rows": round(cpu * 1e6 / run.rows, 2),
           "iceberg_rows_read_back": count}
    if run.changes:
        held = _IcebergOffsets(warehouse, "ice-cdc")
        startup, began, cpu = _start_paused(
            run.herder, "ice-cdc",
            # Copy-on-write: each commit rewrites every data file holding a changed key
            # (with keys spread over the table: all of them), so upserts want few, big
            # commits: one task, one commit for the run's changes.
            {**_iceberg_props(warehouse, **{
                "iceberg.tables.upsert-mode-enabled": "true",
                "iceberg.control.commit.interval-ms": "60000",
                "iceberg.commit.max-buffered-records": str(run.changes)}),
             "tasks.max": "1", "topics": CHANGES_TOPIC},
            held,
        )
        ended = _wait(lambda: held() >= run.changes, "iceberg upserts")
        seconds, cpu = ended - began, _cpu_seconds() - cpu
        expected = run.rows + run.changes * 15 // 100 - run.changes * 15 // 100
        count = _iceberg_table(warehouse).scan().to_arrow().num_rows
        run.herder.delete_connector("ice-cdc")
        out.update({"iceberg_upserts_per_s": round(run.changes / seconds),
                    "iceberg_upserts_s": round(seconds, 2),
                    "iceberg_upserts_startup_s": round(startup, 2),
                    "iceberg_upserts_cpu_s_per_m": round(cpu * 1e6 / run.changes, 2),
                    "iceberg_rows_after_upserts": count,
                    "iceberg_rows_after_upserts_expected": expected})
    return out


# -------------------------------------------------------------------- Delta

def _delta_props(table: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "DeltaSink",
        "tasks.max": str(PARTITIONS),
        "value.converter": AVRO,
        "value.converter.schema.registry.url": "embedded",
        "delta.table.uri": str(table),
        # A poll (up to 10,000 records a partition) is buffered until 200,000 rows wait
        # or a second has passed: files of that size, a commit a second at most.
        "delta.flush.size": "200000",
        "delta.commit.interval.ms": "1000",
        **extra,
    }


_DELTA_TABLES: dict[Path, Any] = {}


def _delta_offsets(table: Path, connector: str) -> int:
    """The offsets the table's txn actions hold for the connector's partitions. The
    table is loaded once and then brought up to date (reading only new commits): the
    poll shares the machine's two cores with the tasks it times."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    delta = _DELTA_TABLES.get(table)
    if delta is None:
        try:
            delta = _DELTA_TABLES[table] = DeltaTable(str(table))
        except TableNotFoundError:
            return 0
    else:
        delta.update_incremental()
    topic = CHANGES_TOPIC if connector.endswith("cdc") else TOPIC
    return sum(delta.transaction_version(f"{connector}-{topic}-{p}") or 0
               for p in range(PARTITIONS))


def delta_runner(run: Run) -> dict[str, Any]:
    from deltalake import DeltaTable

    table = run.base / "delta" / TOPIC
    # Timed from the resume of started tasks, as the Iceberg runner is (_start_paused).
    startup, began, cpu = _start_paused(run.herder, "delta",
                                        {**_delta_props(table), "topics": TOPIC},
                                        lambda: _delta_offsets(table, "delta"))
    ended = _wait(lambda: _delta_offsets(table, "delta") >= run.rows, "delta sink")
    seconds, cpu = ended - began, _cpu_seconds() - cpu
    count = DeltaTable(str(table)).to_pyarrow_table(columns=["id"]).num_rows
    run.herder.delete_connector("delta")
    out = {"delta_rows_per_s": round(run.rows / seconds), "delta_s": round(seconds, 2),
           "delta_startup_s": round(startup, 2),
           "delta_rows_per_s_with_startup": round(run.rows / (seconds + startup)),
           "delta_cpu_s_per_m_rows": round(cpu * 1e6 / run.rows, 2),
           "delta_rows_read_back": count}
    if run.changes:
        startup, began, cpu = _start_paused(
            run.herder,
            "delta-cdc",
            # One task: MERGEs of two tasks into one table rewrite the same files and
            # conflict; one MERGE per commit of up to delta.flush.size changes.
            {**_delta_props(table, **{"delta.write.mode": "merge", "delta.id.columns": "id",
                                      "tasks.max": "1"}),
             "topics": CHANGES_TOPIC},
            lambda: _delta_offsets(table, "delta-cdc"),
        )
        ended = _wait(lambda: _delta_offsets(table, "delta-cdc") >= run.changes,
                      "delta upserts")
        seconds, cpu = ended - began, _cpu_seconds() - cpu
        count = DeltaTable(str(table)).to_pyarrow_table(columns=["id"]).num_rows
        run.herder.delete_connector("delta-cdc")
        out.update({"delta_upserts_per_s": round(run.changes / seconds),
                    "delta_upserts_s": round(seconds, 2),
                    "delta_upserts_startup_s": round(startup, 2),
                    "delta_upserts_cpu_s_per_m": round(cpu * 1e6 / run.changes, 2),
                    "delta_rows_after_upserts": count,
                    "delta_rows_after_upserts_expected":
                        run.rows - run.changes * 15 // 100
                        + run.changes - run.changes * 70 // 100 - run.changes * 15 // 100})
    return out


#: format → the runner that measures its sink (rows/s, and upserts/s when asked).
RUNNERS: dict[str, Callable[[Run], dict[str, Any]]] = {
    "iceberg": iceberg_runner,
    "delta": delta_runner,
}
#: format → dlt's `table_format` for the same rows.
DLT_FORMATS: dict[str, str] = {"iceberg": "iceberg", "delta": "delta"}


# ---------------------------------------------------------------------- dlt

_DLT_SCRIPT = """
import json, sys, time
import dlt, pyarrow as pa, pyarrow.ipc as ipc
source, out, table_format = sys.argv[1:4]
table = ipc.open_file(source).read_all()
@dlt.resource(name="lake_orders", table_format=table_format)
def rows():
    for start in range(0, table.num_rows, 100_000):
        yield table.slice(start, 100_000)
pipe = dlt.pipeline(pipeline_name="bench_" + table_format, pipelines_dir=out + "/pipelines",
                    destination=dlt.destinations.filesystem(bucket_url="file://" + out + "/data"),
                    dataset_name="lake")
def cpu():
    import resource
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
               resource.getrusage(resource.RUSAGE_CHILDREN)))
began, cpu_began = time.perf_counter(), cpu()
pipe.run(rows(), loader_file_format="parquet")
print(json.dumps({"seconds": time.perf_counter() - began, "cpu_s": cpu() - cpu_began}))
"""


def _dlt_python() -> Path | None:
    python = DLT_VENV / "bin" / "python"
    probe = [str(python), "-c", "import dlt, pyiceberg, deltalake, pyarrow"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(DLT_VENV)], check=True)
        subprocess.run([str(DLT_VENV / "bin" / "pip"), "install", "--quiet",
                        "dlt[filesystem,pyiceberg,deltalake]"], check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"dlt could not be installed: {exc}", file=sys.stderr)
        return None
    return python


def dlt_rate(table_format: str, source: Path, rows: int) -> tuple[float, float] | None:
    """(rows/s, CPU seconds per million rows) of dlt's run; the CPU is its process's
    and its children's over `pipeline.run()` (rusage), as the sinks' figure is."""
    python = _dlt_python()
    if python is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, DLT_DATA_DIR=tmp, DLT_PROJECT_DIR=tmp,
                   RUNTIME__DLTHUB_TELEMETRY="false")
        done = subprocess.run([str(python), "-c", _DLT_SCRIPT, str(source), tmp, table_format],
                              capture_output=True, text=True, env=env, cwd=tmp, timeout=900)
    if done.returncode != 0:
        print(f"dlt {table_format} failed: {done.stderr[-2000:]}", file=sys.stderr)
        return None
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return rows / measured["seconds"], measured["cpu_s"] * 1e6 / rows


# --------------------------------------------------------------------- main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=200_000)
    parser.add_argument("--formats", default=",".join(RUNNERS))
    parser.add_argument("--skip-dlt", action="store_true")
    parser.add_argument("--isolation", choices=("process", "thread"), default="process",
                        help="thread: tasks in this process (no task start-up in the "
                        "figures; for profiling)")
    args = parser.parse_args()
    import numpy as np
    import pyarrow as pa
    import pyarrow.ipc as ipc

    formats = [f for f in args.formats.split(",") if f]
    result: dict[str, Any] = {"rows": args.rows, "changes": args.changes,
                              "isolation": args.isolation}
    with tempfile.TemporaryDirectory(prefix="lakehouse-bench-") as tmp:
        base = Path(tmp)
        rows = [lake_rows(np.arange(s + 1, min(s + 100_000, args.rows) + 1))
                for s in range(0, args.rows, 100_000)]
        herder, log = _herder(base / "log", args.isolation)
        try:
            fill(log, TOPIC, rows, lake_schema())
            if args.changes:
                fill(log, CHANGES_TOPIC, change_batches(args.rows, args.changes),
                     lake_schema(cdc=True))
            run = Run(herder=herder, log=log, base=base, rows=args.rows, changes=args.changes)
            for name in formats:
                result.update(RUNNERS[name](run))
        finally:
            herder.stop()
            log.close()
        if not args.skip_dlt:
            source = base / "rows.arrow"
            table = pa.Table.from_batches(rows)
            with ipc.new_file(source, table.schema) as writer:
                writer.write_table(table)
            for name in formats:
                rate, cpu = dlt_rate(DLT_FORMATS[name], source, args.rows) or (None, None)
                result[f"dlt_{name}_rows_per_s"] = round(rate) if rate else None
                result[f"dlt_{name}_cpu_s_per_m_rows"] = round(cpu, 2) if cpu else None
                mine = result.get(f"{name}_rows_per_s")
                result[f"{name}_vs_dlt"] = round(mine / rate, 2) if rate and mine else None
    result["load_average_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
