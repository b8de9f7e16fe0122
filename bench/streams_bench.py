"""Benchmark of Spark writing to the log and of the KSQL-style pipeline; prints one
JSON object.

    python bench/streams_bench.py [--rows N] [--probes K] [--skip-pipeline]

- spark_write_rows_per_s (Avro values, the target) and spark_write_json_rows_per_s:
  `df.write.format("tributary")` of N (default 1,000,000) rows of the lake
  benchmark's table (bench/lake_bench.py's columns and values, made by Spark from a
  range and cached first, so the source costs nothing), key = id, into a
  two-partition topic of an embedded log, one transaction; timed from `save()` to
  its return, the best of two runs (the first also registers the schema).
  load_average_1m says how busy the machine was.
- pipeline_latency_p50_s / _p90_s: the README pipeline (connect.demo_streams: the
  main job's SQLite shop → JdbcSource → log → Spark SQL, a 1 s trigger → compacted
  topic → JdbcSink → SQLite) running on a shop of 10,000 orders; K (default 20)
  times an order's status is changed in SQLite and the time until the result table
  shows it is measured (polled every 20 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: bench/lake_bench.py's table, made by Spark (the same values as its SQL).
LAKE_COLUMNS = (
    "cast(id as string) key",
    "id",
    "concat('customer-', id % 5000) customer",
    "element_at(array('kayak','tent','lamp','rope'), cast(1 + id % 4 as int)) product",
    "cast(id % 9 as int) quantity",
    "id * 0.25d price",
    "cast(round(id / 7.0, 2) as decimal(12,2)) amount",
    "element_at(array('new','paid','shipped'), cast(1 + id % 3 as int)) status",
    "case when id % 11 = 0 then null else concat('region-', id % 4) end region",
    "timestamp '2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) created_at",
    "id % 2 = 0 paid",
)


def spark_write(spark: Any, rows: int, log_dir: Path) -> dict[str, Any]:
    from connectors.spark.datasource import register
    from log import FileLog

    register(spark)
    FileLog(log_dir, background=False).close()
    df = spark.range(1, rows + 1, numPartitions=2).selectExpr(*LAKE_COLUMNS).cache()
    df.count()
    out: dict[str, Any] = {"rows": rows}
    for form in ("avro", "json"):
        best = None
        for attempt in range(2):
            began = time.perf_counter()
            (
                df.write.format("tributary").mode("append").option("log.dir", str(log_dir))
                .option("topic", f"bench-{form}-{attempt}").option("topic.partitions", "2")
                .option("value.format", form).save()
            )
            seconds = time.perf_counter() - began
            best = seconds if best is None else min(best, seconds)
        key = "spark_write_rows_per_s" if form == "avro" else "spark_write_json_rows_per_s"
        out[key] = round(rows / best)
    with FileLog(log_dir, background=False) as log:
        written = sum(
            log.last_stable_offset("bench-avro-1", p) for p in range(2)
        ) - 2  # the commit markers
    out["spark_write_rows_in_log"] = written
    df.unpersist()
    return out


def _status(db: Path, order: int) -> str | None:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            row = conn.execute("SELECT status FROM orders_latest WHERE id = ?", (order,))
            found = row.fetchone()
    except sqlite3.OperationalError:
        return None
    return found[0] if found else None


def pipeline_latency(spark: Any, probes: int) -> dict[str, Any]:
    """The README pipeline in a scratch directory (its paths are relative)."""
    from connect.demo_shop import ShopDatabase
    from connect.demo_streams import RESULTS_DB, DemoStreams
    from connect.herder.standalone import StandaloneHerder
    from connect.standalone import load_connector_config, load_worker_config
    from log import FileLog

    class _Ready:
        def get(self) -> Any:
            return spark

    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(ROOT / "configs", Path(tmp) / "configs")
        os.chdir(tmp)
        try:
            shop = ShopDatabase(Path("data/main-job/shop.db"))
            shop.create(10_000)
            config = load_worker_config("configs/main-job-worker.json")
            log = FileLog(config["log.dir"])
            herder = StandaloneHerder(config, log=log, worker_id="bench")
            herder.start()
            streams = DemoStreams(_Ready(), RuntimeError)
            try:
                name, source = load_connector_config("configs/main-job-orders-source.json")
                herder.put_connector_config(name, source, allow_replace=True)
                streams.start(herder)
                caught_up = streams.until_caught_up(300)
                latencies = []
                conn = sqlite3.connect(shop.path, timeout=30)
                for i in range(probes):
                    order, status = 1 + (i * 37) % 10_000, f"probe-{i}"
                    with conn:
                        conn.execute(
                            "UPDATE orders SET status = ?, updated_at = "
                            "strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE id = ?",
                            (status, order),
                        )
                    began = time.perf_counter()
                    while _status(RESULTS_DB, order) != status:
                        if time.perf_counter() - began > 60:
                            raise RuntimeError(f"probe {i} not in the result table in 60 s")
                        time.sleep(0.02)
                    latencies.append(time.perf_counter() - began)
                conn.close()
            finally:
                streams.stop()
                herder.stop()
                log.close()
                shop.close()
        finally:
            os.chdir(here)
    ordered = sorted(latencies)
    return {
        "pipeline_catch_up_s": round(caught_up, 1),
        "pipeline_latency_p50_s": round(statistics.median(ordered), 2),
        "pipeline_latency_p90_s": round(ordered[int(0.9 * (len(ordered) - 1))], 2),
        "pipeline_probes": probes,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--probes", type=int, default=20)
    parser.add_argument("--skip-pipeline", action="store_true")
    args = parser.parse_args()
    from connectors.spark.session import spark_session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    spark = spark_session(
        "local[2]", "streams-bench",
        {"spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    results: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results.update(spark_write(spark, args.rows, Path(tmp) / "log"))
        if not args.skip_pipeline:
            results.update(pipeline_latency(spark, args.probes))
    finally:
        spark.stop()
    results["load_average_1m"] = round(os.getloadavg()[0], 1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
