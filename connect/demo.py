"""The main job (`make run`): database → log → data lake, on embedded defaults.

1. A SQLite shop (`data/main-job/shop.db`, see `connect.demo_shop`) gets its first
   orders, and keeps changing while the job runs: new orders, orders moving on.
2. A standalone worker on the embedded log (`data/main-job/log`) runs the shipped
   connectors: `configs/main-job-orders-source.json` (JdbcSource,
   timestamp+incrementing) into topic `shop-orders`, and
   `configs/main-job-lake-sink.json` (SparkParquetSink) from there into `./lake`,
   partitioned by region. Tasks run in processes of their own.
3. Meanwhile a SparkSession starts in the background (it takes 7–12 s of CPU), and
   the job prints progress every second: database changes, records in the log, rows
   and files in the lake.
4. The changes stop; once the lake holds every record of the log, the worker stops.
5. Spark SQL says what landed: the lake's tables and row counts, each order's latest
   version per region checked against the database, a sample, and the same topic
   read straight from the log through the `tributary` data source.

PostgreSQL instead of SQLite is one config away: `--source-config
configs/main-job-postgres-cdc-source.json` (PostgresCdcSource with
ExtractNewRecordState and a RegexRouter into the same topic; the database is yours,
so nothing is generated and the database check is skipped).
Each run starts from scratch: it removes `data/main-job` and `lake` first.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]

SOURCE_CONFIG = "configs/main-job-orders-source.json"
SINK_CONFIG = "configs/main-job-lake-sink.json"
WORKER_CONFIG = "configs/main-job-worker.json"
TOPIC = "shop-orders"
LOG4J = Path(__file__).resolve().parent.parent / "configs" / "spark-log4j2.properties"


class _Background:
    """A SparkSession started on a thread, so its start-up overlaps the pipeline."""

    def __init__(self) -> None:
        self.session: Any = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="spark-start", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            from connectors.spark.session import spark_session

            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            self.session = spark_session(
                "local[2]",
                "tributary-main-job",
                {
                    "spark.sql.shuffle.partitions": "4",
                    "spark.ui.showConsoleProgress": "false",
                    # Errors only: the job's own progress is the output to read.
                    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J}",
                },
            )
            self.session.sparkContext.setLogLevel("ERROR")
        except BaseException as exc:
            self.error = exc

    def get(self) -> Any:
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.session


def _lake_rows(topic_dir: Path, seen: dict[Path, int]) -> tuple[int, int]:
    """(rows, files) published for a topic; each file's footer is read once."""
    import pyarrow.parquet as pq

    for path in topic_dir.rglob("*.parquet") if topic_dir.is_dir() else ():
        if path not in seen and "+tmp" not in path.parts:
            with contextlib.suppress(OSError):
                seen[path] = pq.read_metadata(path).num_rows
    return sum(seen.values()), len(seen)


def _log_records(log: Any) -> int:
    if TOPIC not in log.list_topics():
        return 0
    return sum(
        log.latest_offset(TOPIC, p) - log.earliest_offset(TOPIC, p)
        for p in range(log.partition_count(TOPIC))
    )


def _source_done(herder: Any, name: str, shop: Any, last: tuple[int, int] | None) -> bool:
    """The source's committed offset has reached the database's last change (without
    a database of ours, e.g. CDC: trust a log that stopped growing)."""
    if shop is None or last is None:
        return True
    for entry in herder.connector_offsets(name):
        offset = entry["offset"] or {}
        if offset.get("incrementing") == last[0] and offset.get("timestamp", -1) >= last[1]:
            return True
    return False


def _check_tasks(herder: Any, names: list[str]) -> None:
    for name in names:
        status = herder.connector_status(name)
        failed = [t for t in status.tasks if t.state == "FAILED"]
        if status.state == "FAILED" or failed:
            trace = status.trace or (failed[0].trace if failed else "")
            raise RuntimeError(f"connector {name} failed:\n{trace}")


def _run_pipeline(args: argparse.Namespace, shop: Any) -> tuple[int, int, float]:
    from connect.herder.standalone import StandaloneHerder
    from connect.standalone import load_connector_config, load_worker_config
    from log import FileLog

    config = load_worker_config(WORKER_CONFIG)
    log = FileLog(config["log.dir"])
    herder = StandaloneHerder(config, log=log, worker_id="main-job")
    herder.start()
    lake_topic = Path(args.lake) / "topics" / TOPIC
    seen: dict[Path, int] = {}
    names = []
    try:
        started = time.monotonic()
        for path in (args.source_config, SINK_CONFIG):
            name, connector = load_connector_config(path)
            herder.put_connector_config(name, connector, allow_replace=True)
            names.append(name)
        print(f"  connectors {', '.join(names)} running; changes for {args.seconds:.0f}s")
        stop_changes = started + args.seconds
        last_print = 0.0
        steady_since, last_count = None, -1
        last: tuple[int, int] | None = None
        while True:
            now = time.monotonic()
            changing = shop is not None and now < stop_changes
            if changing:
                shop.change(args.inserts_per_s // 5, args.updates_per_s // 5)
            records = _log_records(log)
            rows, files = _lake_rows(lake_topic, seen)
            if now - last_print >= 1.0:
                last_print = now
                db = f"db {shop.count():,} orders ({shop.changes:,} changes) | " if shop else ""
                print(
                    f"  {now - started:5.1f}s  {db}log {records:,} records | "
                    f"lake {rows:,} rows in {files} files",
                    flush=True,
                )
                _check_tasks(herder, names)
            if not changing:
                last = shop.last_change() if shop is not None and last is None else last
                # Done when the source has read the last change, the log stopped
                # growing, and the lake holds all of it.
                done = _source_done(herder, names[0], shop, last)
                if done and records == last_count and rows >= records > 0:
                    steady_since = steady_since or now
                    if now - steady_since >= 1.0:
                        break
                else:
                    steady_since = None
                last_count = records
            if now - started > args.timeout:
                raise RuntimeError(f"the lake did not catch up within {args.timeout:.0f}s")
            time.sleep(0.2)
        elapsed = time.monotonic() - started
    finally:
        herder.stop()
        log.close()
    rows, files = _lake_rows(lake_topic, seen)
    print(
        f"  pipeline done in {elapsed:.1f}s: {records:,} records → {rows:,} lake rows "
        f"in {files} files"
    )
    return records, rows, elapsed


def _summary(spark: Any, args: argparse.Namespace, shop: Any, records: int) -> bool:
    from connectors.spark.datasource import register

    topics_dir = Path(args.lake) / "topics"
    print(f"\nWhat landed in {Path(args.lake).resolve()} (Spark SQL):")
    for topic in sorted(p.name for p in topics_dir.iterdir() if not p.name.startswith("+")):
        df = spark.read.option("mergeSchema", "true").parquet(str(topics_dir / topic))
        df.createOrReplaceTempView("order_versions")
        print(
            f"  table {topic}: {df.count():,} rows, columns "
            + ", ".join(f"{n} {t}" for n, t in df.dtypes)
        )
    latest = spark.sql(
        "SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY id ORDER BY updated_at DESC)"
        " AS version FROM order_versions) WHERE version = 1"
    )
    latest.createOrReplaceTempView("orders")
    by_region = spark.sql(
        "SELECT region, count(*) AS orders, cast(sum(amount) AS string) AS revenue, "
        "sum(CASE WHEN status = 'delivered' THEN 1 ELSE 0 END) AS delivered "
        "FROM orders GROUP BY region ORDER BY region"
    ).collect()
    print("  latest version of each order, by region:")
    for r in by_region:
        print(
            f"    {r.region:<6} {r.orders:>8,} orders  revenue {r.revenue:>14}  "
            f"delivered {r.delivered:,}"
        )
    print("  sample:")
    for r in spark.sql(
        "SELECT id, customer, product, amount, status, region, updated_at "
        "FROM orders ORDER BY updated_at DESC LIMIT 3"
    ).collect():
        print(f"    {r.asDict()}")
    register(spark)
    from_log = (
        spark.read.format("tributary")
        .option("log.dir", "data/main-job/log")
        .option("topic", TOPIC)
        .load()
        .count()
    )
    print(f"  the log read through spark.read.format('tributary'): {from_log:,} records")
    ok = from_log == records
    if shop is not None:
        expected = shop.totals()
        got = {r.region: (r.orders, r.revenue) for r in by_region}
        ok = ok and got == expected
        print(
            f"  database check (orders and revenue per region): "
            f"{'equal' if got == expected else f'DIFFERENT: {expected}'}"
        )
    print("  result: OK" if ok else "  result: MISMATCH")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m connect.demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rows", type=int, default=100_000, help="orders to start with")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long changes go on")
    parser.add_argument("--inserts-per-s", type=int, default=2_000)
    parser.add_argument("--updates-per-s", type=int, default=1_000)
    parser.add_argument("--source-config", default=SOURCE_CONFIG)
    parser.add_argument("--lake", default="lake")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)

    started = time.monotonic()
    print(
        "Tributary main job: SQLite orders → JdbcSource → embedded log → SparkParquetSink → ./lake"
    )
    spark = _Background()
    for stale in ("data/main-job", args.lake):
        shutil.rmtree(stale, ignore_errors=True)
    shop = None
    if args.source_config == SOURCE_CONFIG:
        from connect.demo_shop import ShopDatabase

        shop = ShopDatabase(Path("data/main-job/shop.db"))
        shop.create(args.rows)
        print(f"  data/main-job/shop.db: {args.rows:,} orders, and changing")
    try:
        records, _rows, _ = _run_pipeline(args, shop)
        ok = _summary(spark.get(), args, shop, records)
    finally:
        if shop is not None:
            shop.close()
        if spark.session is not None:
            spark.session.stop()
    print(f"\nmain job finished in {time.monotonic() - started:.1f}s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
