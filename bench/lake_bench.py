"""Benchmark of the data lake path; prints one JSON object.

    python bench/lake_bench.py [--rows N] [--url postgresql+psycopg2://…] [--skip-dlt]
                               [--format avro|json]

A PostgreSQL table of N (default 1,000,000) rows and 10 columns (bigint key, ints,
text, a float, numeric(12,2), timestamptz, boolean) is moved into Parquet:

- lake_rows_per_s: PostgresCdcSource's snapshot → embedded log → SparkParquetSink (2
  tasks), on a StandaloneHerder that is already running, with a SparkSession already
  up in the process; timed from the connectors' creation until the lake's Parquet
  footers add up to N rows. Values are Avro in Confluent's wire format with their
  schemas in the worker's embedded registry (`--format avro`, the default: what a
  Debezium → data lake pipeline runs with), or JsonConverter envelopes, which repeat
  the ~1 KB schema in every message (`--format json`). Both sides take the columnar
  paths: the snapshot's chunks as SourceBatches, the sink's values through the
  converter's `to_arrow`.
- spark_sink_rows_per_s: SparkParquetSink alone, log → Parquet: a second sink
  connector (its own consumer group) over the topic the first run filled;
  spark_sink_cpu_us_per_row: the CPU its task processes used (start-up included) per
  row, and spark_sink_rows_per_s_on_2_free_cores the rate that CPU allows when both
  cores are the sink's — the wall-clock rate says little while other work shares
  the machine (load_average_1m says how much did).
- dlt_fastest_rows_per_s / dlt_fastest_backend / dlt_sqlalchemy_rows_per_s: dlt's
  `sql_database.sql_table` → `filesystem` destination (Parquet) on the same table,
  timed from `pipeline.run()` to its return, per backend (pyarrow, pandas,
  sqlalchemy). dlt runs from a virtualenv of its own (`.venv-dlt`, created on first
  use with `pip install "dlt[parquet,sql-database]" pandas`), so its pins never touch the
  project's environment; when it cannot be installed its keys are null.
- vs_dlt_fastest / vs_dlt_sqlalchemy: lake_rows_per_s over those rates.
- main_job_s: `python -m connect.demo` (the README's main job) from start to its
  summary, on a warm install, in a scratch directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TABLE = "lake_orders"
TOPIC = f"bench.public.{TABLE}"
DLT_VENV = ROOT / ".venv-dlt"


@contextmanager
def postgres(url: str | None) -> Iterator[str]:
    """`url`, or a private server for the run (tests/pg.py's), stopped afterwards."""
    if url:
        yield url
        return
    from tests.pg import PostgresServer

    server = PostgresServer()
    try:
        server.start()
        yield server.url(server.create_database())
    finally:
        server.stop()


def _pg(url: str) -> Any:
    import psycopg2
    import sqlalchemy as sa

    u = sa.make_url(url)
    conn = psycopg2.connect(host=u.host, port=u.port, user=u.username, dbname=u.database)
    conn.autocommit = True
    return conn


def make_table(url: str, rows: int) -> None:
    conn = _pg(url)
    with conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, customer text NOT NULL, "
            "product text NOT NULL, quantity int NOT NULL, price float8 NOT NULL, "
            "amount numeric(12,2) NOT NULL, status text NOT NULL, region text, "
            "created_at timestamptz NOT NULL, paid boolean NOT NULL)"
        )
        cur.execute(
            f"INSERT INTO {TABLE} SELECT n, 'customer-' || (n %% 5000), "
            "(ARRAY['kayak','tent','lamp','rope'])[1 + n %% 4], n %% 9, n * 0.25, "
            "round(n / 7.0, 2), (ARRAY['new','paid','shipped'])[1 + n %% 3], "
            "CASE WHEN n %% 11 = 0 THEN NULL ELSE 'region-' || (n %% 4) END, "
            "timestamptz '2024-01-01' + n * interval '1 second', n %% 2 = 0 "
            "FROM generate_series(1, %s) n",
            (rows,),
        )
        cur.execute(f"VACUUM ANALYZE {TABLE}")
    conn.close()


def lake_rows(directory: Path) -> int:
    import pyarrow.parquet as pq

    total = 0
    for path in directory.rglob("*.parquet"):
        if "+tmp" not in path.parts:
            try:
                total += pq.read_metadata(path).num_rows
            except OSError:
                continue  # published between the listing and the read: next time
    return total


def _wait_rows(directory: Path, rows: int, timeout_s: float = 900) -> float:
    deadline = time.monotonic() + timeout_s
    while lake_rows(directory) < rows:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{directory}: {lake_rows(directory)} of {rows} rows in time")
        time.sleep(0.05)
    return time.perf_counter()


@contextmanager
def _herder(directory: Path) -> Iterator[Any]:
    from connect.herder.standalone import StandaloneHerder
    from connect.worker.config import WORKER_CONFIG
    from log import FileLog

    raw = {
        "log.dir": str(directory / "log"),
        "offset.flush.interval.ms": "1000",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "true",
        "num.partitions": "2",
    }
    log = FileLog(directory / "log")
    herder = StandaloneHerder({**raw, **WORKER_CONFIG.parse(raw)}, log=log, worker_id="bench")
    herder.start()
    try:
        yield herder
    finally:
        herder.stop()
        log.close()


def _values(form: str) -> dict[str, str]:
    """The value converter settings of `--format`."""
    if form == "avro":
        return {
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": "embedded",
        }
    return {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
    }


def _sink_config(lake: Path, form: str) -> dict[str, str]:
    return {
        "connector.class": "io.confluent.connect.hdfs3.Hdfs3SinkConnector",
        "tasks.max": "2",
        "topics": TOPIC,
        "store.url": lake.as_uri(),
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        **_values(form),
        "flush.size": "200000",
        "rotate.schedule.interval.ms": "1000",
    }


def tributary(url: str, rows: int, spark: Any, form: str = "avro") -> dict[str, Any]:
    import psutil

    with tempfile.TemporaryDirectory() as tmp, _herder(Path(tmp)) as herder:
        lake = Path(tmp) / "lake"
        began = time.perf_counter()
        herder.put_connector_config(
            "pg",
            {
                "connector.class": "PostgresCdcSource",
                "connection.url": url,
                "topic.prefix": "bench",
                "snapshot.mode": "initial_only",
                "table.include.list": f"public\\.{TABLE}",
                "slot.name": "bench_lake",
                "publication.autocreate.mode": "filtered",
                "max.batch.size": "10000",
                **_values(form),
                # lz4 batches: a JsonConverter envelope repeats its schema in every
                # message, which lz4 brings to a twentieth; Avro shrinks by a third.
                "topic.creation.default.partitions": "2",
                "topic.creation.default.compression.type": "lz4",
                "transforms": "unwrap",
                "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
            },
            allow_replace=False,
        )
        herder.put_connector_config("lake", _sink_config(lake, form), allow_replace=False)
        ended = _wait_rows(lake, rows)
        lake_s = ended - began
        count = spark.read.parquet(str(lake / "topics" / TOPIC)).count()
        # The sink alone: a second connector over the topic the first one filled.
        alone = Path(tmp) / "lake2"
        before = {p.pid for p in psutil.Process().children(recursive=True)}
        began = time.perf_counter()
        herder.put_connector_config("lake2", _sink_config(alone, form), allow_replace=False)
        sink_s = _wait_rows(alone, rows) - began
        # CPU of the new task processes (start-up included): what the sink costs,
        # whatever else shares the machine's cores.
        sink_cpu_s = sum(
            sum(p.cpu_times()[:2])
            for p in psutil.Process().children(recursive=True)
            if p.pid not in before
        )
    return {
        "lake_rows_per_s": round(rows / lake_s),
        "lake_s": round(lake_s, 2),
        "lake_rows_read_back_by_spark": count,
        "spark_sink_rows_per_s": round(rows / sink_s),
        "spark_sink_cpu_us_per_row": round(sink_cpu_s / rows * 1e6, 2),
        "spark_sink_rows_per_s_on_2_free_cores": round(2 * rows / sink_cpu_s),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


_DLT_SCRIPT = """
import json, sys, time, dlt
from dlt.sources.sql_database import sql_table
url, table, backend, out = sys.argv[1:5]
source = sql_table(credentials=url, table=table, backend=backend, chunk_size=50000)
pipe = dlt.pipeline(pipeline_name="bench_" + backend, pipelines_dir=out + "/pipelines",
                    destination=dlt.destinations.filesystem(bucket_url="file://" + out + "/data"),
                    dataset_name="lake")
began = time.perf_counter()
pipe.run(source, loader_file_format="parquet")
print(json.dumps({"seconds": time.perf_counter() - began}))
"""


def _dlt_python() -> Path | None:
    """dlt's interpreter, its virtualenv made (or completed) on first use."""
    python = DLT_VENV / "bin" / "python"
    probe = [str(python), "-c", "import dlt, pandas, psycopg2, pyarrow, sqlalchemy"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(DLT_VENV)], check=True)
        subprocess.run(
            [
                str(DLT_VENV / "bin" / "pip"),
                "install",
                "--quiet",
                "dlt[parquet,sql-database]",
                "pandas",
                "psycopg2-binary",
            ],
            check=True,
            capture_output=True,
        )
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"dlt could not be installed: {exc}", file=sys.stderr)
        return None
    return python


def dlt_rates(url: str, rows: int) -> dict[str, Any]:
    python = _dlt_python()
    rates: dict[str, float] = {}
    if python is not None:
        import sqlalchemy as sa

        # dlt's environment has psycopg2 (whatever driver the project's URL names).
        plain_url = (
            sa.make_url(url)
            .set(drivername="postgresql+psycopg2")
            .render_as_string(hide_password=False)
        )
        for backend in ("pyarrow", "pandas", "sqlalchemy"):
            with tempfile.TemporaryDirectory() as tmp:
                env = dict(
                    os.environ,
                    DLT_DATA_DIR=tmp,
                    DLT_PROJECT_DIR=tmp,
                    RUNTIME__DLTHUB_TELEMETRY="false",
                )
                done = subprocess.run(
                    [str(python), "-c", _DLT_SCRIPT, plain_url, TABLE, backend, tmp],
                    capture_output=True,
                    text=True,
                    env=env,
                    cwd=tmp,
                    timeout=900,
                )
                if done.returncode != 0:
                    print(f"dlt {backend} failed: {done.stderr[-2000:]}", file=sys.stderr)
                    continue
                seconds = json.loads(done.stdout.strip().splitlines()[-1])["seconds"]
                rates[backend] = rows / seconds
    fastest = max(rates, key=lambda b: rates[b]) if rates else None
    return {
        "dlt_fastest_backend": fastest,
        "dlt_fastest_rows_per_s": round(rates[fastest]) if fastest else None,
        "dlt_sqlalchemy_rows_per_s": round(rates["sqlalchemy"]) if "sqlalchemy" in rates else None,
        "dlt_rows_per_s_by_backend": {b: round(r) for b, r in rates.items()},
    }


def main_job_s() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(ROOT / "configs", Path(tmp) / "configs")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "connect.demo"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        seconds = time.perf_counter() - began
    ok = done.returncode == 0 and "result: OK" in done.stdout
    if not ok:
        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
    return {"main_job_s": round(seconds, 1), "main_job_ok": ok}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--url", default=None)
    parser.add_argument("--skip-dlt", action="store_true")
    parser.add_argument("--format", choices=("avro", "json"), default="avro")
    args = parser.parse_args()
    from connectors.spark.session import spark_session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    results: dict[str, Any] = {"rows": args.rows, "format": args.format}
    with postgres(args.url) as url:
        make_table(url, args.rows)
        spark = spark_session("local[2]", "lake-bench", {"spark.ui.showConsoleProgress": "false"})
        spark.sparkContext.setLogLevel("ERROR")
        try:
            results.update(tributary(url, args.rows, spark, args.format))
        finally:
            spark.stop()
        if not args.skip_dlt:
            results.update(dlt_rates(url, args.rows))
    lake = results["lake_rows_per_s"]
    fastest, slow = results.get("dlt_fastest_rows_per_s"), results.get("dlt_sqlalchemy_rows_per_s")
    results["vs_dlt_fastest"] = round(lake / fastest, 2) if fastest else None
    results["vs_dlt_sqlalchemy"] = round(lake / slow, 2) if slow else None
    results.update(main_job_s())
    print(json.dumps(results))


if __name__ == "__main__":
    main()
