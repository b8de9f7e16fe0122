"""The main job (`make run`): database → log → data lake, on embedded defaults.

1. A SQLite shop (`data/main-job/shop.db`, see `connect.demo_shop`) gets its first
   orders, and keeps changing while the job runs: new orders, orders moving on.
2. A standalone worker on the embedded log (`data/main-job/log`) runs the shipped
   connectors: `configs/main-job-orders-source.json` (JdbcSource,
   timestamp+incrementing) into topic `shop-orders`, and
   `configs/main-job-lake-sink.json` (SparkParquetSink) from there into `./lake`,
   partitioned by region. Tasks run in processes of their own.
3. Meanwhile a SparkSession starts in the background (it takes seconds of CPU), and
   the job prints progress every second: database changes, records in the log, rows
   and files in the lake.
4. The changes stop; once the lake holds every record of the log, the worker stops.
5. Spark SQL says what landed: the lake's tables and row counts, each order's latest
   version per region checked against the database, a sample, and the same topic
   read straight from the log through the `tributary` data source.

PostgreSQL instead of SQLite is one config away: `--source-config
configs/main-job-postgres-cdc-source.json` (PostgresCdcSource with
ExtractNewRecordState and a RegexRouter into the same topic). In a database without
`public.orders` the job makes the shop there (`connect.demo_shop.PostgresShop`) and
changes it once the source's replication slot exists, so the log must hold one row
per insert and update, and the database check runs. A `public.orders` of the user's
is only read: nothing is generated, the job stops when the log and the lake are
steady, and the database check is skipped.
Each run starts from scratch: it removes `data/main-job` and `lake` first.

What stops the job — a config or database it cannot use, a failed connector, a lake
that does not catch up — is one line on stderr (`JobError`), exit status 2 for what
the user gave, 1 for a failed run. The worker's and Spark's logs go to
`data/main-job/job.log`, a failed connector's trace to `data/main-job/<name>.trace`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connect import demo_tables

__all__ = ["JobError", "main"]

SOURCE_CONFIG = "configs/main-job-orders-source.json"
SHOP_URL = "sqlite:///data/main-job/shop.db"  # the shipped SQLite source's database
SINK_CONFIG = "configs/main-job-lake-sink.json"
WORKER_CONFIG = "configs/main-job-worker.json"
TOPIC = "shop-orders"
LOG4J = Path(__file__).resolve().parent.parent / "configs" / "spark-log4j2.properties"


class JobError(Exception):
    """What stops the job, said in one line; `code` is the exit status (2: the config
    or database given cannot be used; 1: the run failed)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class _Source:
    """The source side of a run: its kind, and the shop the job changes (None: the
    database is the user's, or not one the job knows)."""

    kind: str
    shop: Any = None
    note: str = ""  # the line that says what happens to the database
    slot: str | None = None  # PostgreSQL: changes start once this slot exists


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
    """(rows, files) published for a topic; each file's footer is read once. A file
    still being written (the table sinks write data files in place, then commit them)
    has no footer yet: it is counted on a later look."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in topic_dir.rglob("*.parquet") if topic_dir.is_dir() else ():
        if path not in seen and "+tmp" not in path.parts:
            with contextlib.suppress(OSError, pa.ArrowException):
                seen[path] = pq.read_metadata(path).num_rows
    return sum(seen.values()), len(seen)


def _log_records(log: Any) -> int:
    if TOPIC not in log.list_topics():
        return 0
    return sum(
        log.latest_offset(TOPIC, p) - log.earliest_offset(TOPIC, p)
        for p in range(log.partition_count(TOPIC))
    )


def _source_done(
    herder: Any, name: str, shop: Any, last: tuple[int, int] | None, records: int
) -> bool:
    """The source has read the database's last change: for a CDC source, the log holds
    an event per row and change (`PostgresShop`); for the JdbcSource, its committed
    offset has reached the newest change. Without a database of ours, trust a log
    that stopped growing."""
    from connect.demo_shop import PostgresShop

    if isinstance(shop, PostgresShop):
        return records >= shop.changes
    if shop is None or last is None:
        return True
    for entry in herder.connector_offsets(name):
        offset = entry["offset"] or {}
        if offset.get("incrementing") == last[0] and offset.get("timestamp", -1) >= last[1]:
            return True
    return False


def _check_tasks(herder: Any, names: list[str]) -> None:
    """A failed connector or task stops the job: its error's last line on the screen,
    the whole trace in `data/main-job/<name>.trace`."""
    for name in names:
        status = herder.connector_status(name)
        failed = [t for t in status.tasks if t.state == "FAILED"]
        if status.state == "FAILED" or failed:
            trace = (status.trace or (failed[0].trace if failed else "")).strip()
            saved = Path("data/main-job") / f"{name}.trace"
            saved.write_text(trace + "\n", encoding="utf-8")
            reason = trace.splitlines()[-1] if trace else "no trace"
            raise JobError(f"connector {name} failed: {reason} (trace in {saved})")


def _run_pipeline(
    args: argparse.Namespace, source: _Source, streams: Any = None
) -> tuple[int, int, float]:
    """Steps 2 to 4 of the module docstring: (records in the log, rows in the lake,
    seconds the pipeline took). With `streams` (`--stream-processing`), its queries
    and sink run beside the lake sink, and the job also waits for its table."""
    from connect.herder.standalone import StandaloneHerder
    from connect.standalone import load_worker_config
    from log import FileLog

    config = load_worker_config(WORKER_CONFIG)
    log = FileLog(config["log.dir"])
    herder = StandaloneHerder(config, log=log, worker_id="main-job")
    herder.start()
    lake_topic = demo_tables.lake_dir(args, TOPIC)
    seen: dict[Path, int] = {}
    try:
        if streams is not None:
            streams.prepare()
        started = time.monotonic()
        names = _start_connectors(herder, args, source)
        if streams is not None:
            names.append(streams.start(herder))
            started = time.monotonic()  # the shop's changes run from when the queries do
        watch = _Watch(args, source, herder, log, names, lake_topic, seen, started)
        records = watch.until_the_lake_holds_the_log()
        if streams is not None:
            streams.until_caught_up(args.timeout)
        elapsed = time.monotonic() - started
    finally:
        if streams is not None:
            streams.stop()
        herder.stop()
        log.close()
    rows, files = _lake_rows(lake_topic, seen)
    print(
        f"  pipeline done in {elapsed:.1f}s: {records:,} records → {rows:,} lake rows "
        f"in {files} files"
    )
    return records, rows, elapsed


def _start_connectors(herder: Any, args: argparse.Namespace, source: _Source) -> list[str]:
    """Create the source and the lake sink; their names, the source first."""
    from connect.standalone import load_connector_config

    names = []
    for path in (args.source_config, demo_tables.sink_config(args)):
        name, connector = load_connector_config(path)
        herder.put_connector_config(name, connector, allow_replace=True)
        names.append(name)
    if source.shop is None:
        what = "nothing is changed by the job (the database is yours)"
    elif source.slot is not None:
        what = f"changes for {args.seconds:.0f}s once slot {source.slot} exists"
    else:
        what = f"changes for {args.seconds:.0f}s"
    print(f"  connectors {', '.join(names)} running; {what}")
    return names


class _Watch:
    """The job's wait, step by step: changes start (at once, or once the CDC source's
    slot exists: every change after it is one event) and stop; then the job waits for
    the log and the lake to hold them all, printing progress every second."""

    def __init__(
        self,
        args: argparse.Namespace,
        source: _Source,
        herder: Any,
        log: Any,
        names: list[str],
        lake_topic: Path,
        seen: dict[Path, int],
        started: float,
    ) -> None:
        self.args, self.shop, self.slot = args, source.shop, source.slot
        self.herder, self.log, self.names = herder, log, names
        self.lake_topic, self.seen, self.started = lake_topic, seen, started
        self.stop_changes = None if source.slot is not None else started + args.seconds
        self.last_print = 0.0
        self.steady_since: float | None = None
        self.last_count = -1
        self.last: tuple[int, int] | None = None  # the shop's last change, once it stopped

    def until_the_lake_holds_the_log(self) -> int:
        """Records in the log, once the lake has held them all for a second."""
        while True:
            now = time.monotonic()
            changing = self._change(now)
            records = _log_records(self.log)
            rows, files = _lake_rows(self.lake_topic, self.seen)
            if now - self.last_print >= 1.0:
                self.last_print = now
                self._progress(now, records, rows, files)
            changes_over = self.shop is None or (self.stop_changes is not None and not changing)
            if changes_over and self._steady(now, records, rows):
                return records
            if now - self.started > self.args.timeout:
                raise self._timed_out(records, rows)
            time.sleep(0.2)

    def _change(self, now: float) -> bool:
        """Change the shop for a fifth of a second's share, while changes run."""
        shop = self.shop
        if self.stop_changes is None and shop is not None and shop.slot_exists(self.slot):
            self.stop_changes = now + self.args.seconds
        changing = shop is not None and self.stop_changes is not None and now < self.stop_changes
        if changing:
            shop.change(self.args.inserts_per_s // 5, self.args.updates_per_s // 5)
        return changing

    def _progress(self, now: float, records: int, rows: int, files: int) -> None:
        shop = self.shop
        db = f"db {shop.count():,} orders ({shop.changes:,} changes) | " if shop else ""
        print(
            f"  {now - self.started:5.1f}s  {db}log {records:,} records | "
            f"lake {rows:,} rows in {files} files",
            flush=True,
        )
        _check_tasks(self.herder, self.names)

    def _steady(self, now: float, records: int, rows: int) -> bool:
        """Done when the source has read the last change, the log stopped growing, and
        the lake holds all of it, for a second."""
        from connect.demo_shop import ShopDatabase

        if self.last is None and isinstance(self.shop, ShopDatabase):
            self.last = self.shop.last_change()
        done = _source_done(self.herder, self.names[0], self.shop, self.last, records)
        steady = False
        if done and records == self.last_count and rows >= records > 0:
            self.steady_since = self.steady_since or now
            steady = now - self.steady_since >= 1.0
        else:
            self.steady_since = None
        self.last_count = records
        return steady

    def _timed_out(self, records: int, rows: int) -> JobError:
        timeout = self.args.timeout
        if records == 0 and self.shop is None:
            return JobError(
                f"no record reached the log within {timeout:.0f}s: the source "
                "read no row (an empty table?), and the job stops only once the "
                "lake holds what the log does"
            )
        return JobError(
            f"the lake did not catch up within {timeout:.0f}s "
            f"({records:,} records in the log, {rows:,} rows in the lake; "
            "--timeout gives it longer)"
        )


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
    parser.add_argument("--table-format", choices=demo_tables.FORMATS, default="parquet",
                        help="the lake's format (connect.demo_tables)")
    parser.add_argument(
        "--stream-processing",
        action="store_true",
        help="also run the KSQL-style Spark SQL pipeline (connect.demo_streams)",
    )
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except JobError as exc:
        print(f"main job: {exc}", file=sys.stderr, flush=True)
        return exc.code


def _source(args: argparse.Namespace) -> _Source:
    """What the source config reads, said in the banner (printed here, before a
    database is reached); for PostgreSQL, whether the job makes its shop there."""
    from connect.api import ConfigError
    from connect.plugins import PluginKind, Plugins
    from connect.standalone import load_connector_config

    lake = args.lake if Path(args.lake).is_absolute() else f"./{args.lake}"
    tail = f"embedded log → {demo_tables.sink_name(args)} → {lake}"
    try:
        _, config = load_connector_config(args.source_config)
        kind = Plugins().resolve(
            PluginKind.CONNECTOR, config.get("connector.class", ""), key="connector.class"
        )
    except ConfigError as exc:
        raise JobError(f"{args.source_config}: {exc}", 2) from None
    if config.get("connection.url") == SHOP_URL:
        from connect.demo_shop import ShopDatabase

        print(f"Tributary main job: SQLite orders → JdbcSource → {tail}")
        return _Source(
            "SQLite",
            ShopDatabase(Path("data/main-job/shop.db")),
            f"  data/main-job/shop.db: {args.rows:,} orders, and changing",
        )
    from connectors.postgres import PostgresCdcSourceConnector

    if not issubclass(kind, PostgresCdcSourceConnector):
        print(f"Tributary main job: {config['connector.class']} → {tail}")
        return _Source("other", None, "  the source's system is yours: the job changes nothing")
    from connect.demo_shop import PostgresShop, ShopError
    from connectors.postgres.config import connection_params, describe_connection, parse_config

    try:
        cfg = parse_config(config)
        params = connection_params(cfg)
    except ConfigError as exc:
        raise JobError(f"{args.source_config}: {exc}", 2) from None
    where = describe_connection(params)
    print(f"Tributary main job: PostgreSQL orders ({where}) → PostgresCdcSource → {tail}")
    try:
        shop = PostgresShop(params, where)
    except ShopError as exc:
        raise JobError(str(exc), 2) from None
    try:
        own = shop.owns_orders()
    except ShopError as exc:
        shop.close()
        raise JobError(str(exc), 2) from None
    if not own:
        shop.close()
        return _Source(
            "PostgreSQL",
            None,
            "  public.orders is yours: the job snapshots and streams it, and changes nothing",
        )
    return _Source(
        "PostgreSQL",
        shop,
        f"  public.orders: {args.rows:,} orders made by the job, and changing",
        slot=cfg["slot.name"],
    )


@contextlib.contextmanager
def _logs_to(path: Path) -> Iterator[None]:
    """Standard error (file descriptor 2) into `path` while the job runs: the task
    processes and Spark's JVM inherit it, so their logs — a failed task's traceback
    among them — go to the file, and the terminal shows the job's own lines (the one
    line of a `JobError` is printed after this gives the terminal back)."""
    sys.stderr.flush()
    terminal = os.dup(2)
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(terminal, 2)
        os.close(terminal)


def _run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    source = _source(args)
    for stale in ("data/main-job", args.lake):
        shutil.rmtree(stale, ignore_errors=True)
    logs = Path("data/main-job/job.log")
    logs.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _logs_to(logs):
            spark = _Background() if demo_tables.needs_spark(args) else None
            if source.shop is not None:
                from connect.demo_shop import ShopDatabase, ShopError

                try:
                    if isinstance(source.shop, ShopDatabase):
                        source.shop.create(args.rows)
                    else:
                        source.shop.create(args.rows, slot=source.slot)
                except ShopError as exc:
                    raise JobError(str(exc), 2) from None
            print(source.note)
            print(f"  the worker's and Spark's logs: {logs}")
            streams = None
            if args.stream_processing:
                from connect.demo_streams import DemoStreams

                streams = DemoStreams(spark, JobError)
            try:
                records, _rows, _ = _run_pipeline(args, source, streams)
                ok = (_summary(spark.get(), args, source.shop, records)
                      if args.table_format == "parquet"
                      else demo_tables.summary(args, source.shop, records))
                if streams is not None:
                    ok = streams.summary() and ok
            finally:
                if spark is not None and spark.session is not None:
                    spark.session.stop()
    finally:
        if source.shop is not None:
            source.shop.close()
    print(f"\nmain job finished in {time.monotonic() - started:.1f}s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
