"""The main job's `--stream-processing`: the KSQL-style pipeline of
`connectors.spark.streams` beside the lake sink, and its tables in the summary.

1. `start`: the two continuous Spark SQL queries (latest version of each order;
   revenue per region per minute) read `shop-orders` and write the compacted topics
   `orders_latest` and `region_revenue`, a micro-batch a second, exactly once; the
   shipped `configs/main-job-streams-sink.json` (JdbcSink, upsert, read_committed)
   keeps both as tables of `data/main-job/results.db`.
2. `until_caught_up`: once the lake holds the log, the job waits until the results
   tables hold what the orders topic says: every order in its latest status, and
   its orders and revenue per region (`expected_from_log`).
3. `stop`, then `summary`: the tables as an application would query them, and
   that check.
"""

from __future__ import annotations

import sqlite3
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

__all__ = ["RESULTS_DB", "SINK_CONFIG", "DemoStreams"]

SINK_CONFIG = "configs/main-job-streams-sink.json"
RESULTS_DB = Path("data/main-job/results.db")
LOG_DIR = "data/main-job/log"
TOPIC = "shop-orders"
CHECKPOINTS = "data/main-job/streams"
MAX_RESTARTS = 2  # a query failing more often than this fails the job


def _query(sql: str, db: Path = RESULTS_DB) -> list[tuple[Any, ...]]:
    """Rows of the results database; none while its tables do not exist yet."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db, timeout=30) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []


def _decimal(value: Any) -> Decimal:
    return Decimal(str(value)).quantize(Decimal("0.01"))


def expected_from_log() -> tuple[list[tuple[int, str]], dict[str, tuple[int, Decimal]]]:
    """What the tables must hold, from the orders topic itself (not the shop: a
    timestamp+incrementing source can miss an update whose transaction committed
    after a poll that read a later timestamp, and the pipeline can only keep what
    reached the log): each order's newest (id, status), and orders and revenue per
    region (amounts do not change)."""
    import base64

    import orjson

    from log import FileLog

    newest: dict[int, tuple[int, str, str, Decimal]] = {}
    with FileLog(LOG_DIR, background=False, create=False) as log:
        for p in range(log.partition_count(TOPIC)):
            position, end = log.earliest_offset(TOPIC, p), log.last_stable_offset(TOPIC, p)
            while position < end:
                records = log.read(TOPIC, p, position, max_bytes=8 << 20)
                for r in records:
                    v = orjson.loads(r.value)["payload"]
                    known = newest.get(v["id"])
                    if known is None or v["updated_at"] > known[0]:
                        raw = base64.b64decode(v["amount"])
                        amount = Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-2)
                        newest[v["id"]] = (v["updated_at"], v["status"], v["region"], amount)
                position = getattr(records, "next_offset", None) or records[-1].offset + 1
    totals: dict[str, tuple[int, Decimal]] = {}
    for _, _, region, amount in newest.values():
        n, total = totals.get(region, (0, Decimal(0)))
        totals[region] = (n + 1, total + amount)
    latest = [(i, newest[i][1]) for i in sorted(newest)]
    return latest, {r: (n, _decimal(t)) for r, (n, t) in totals.items()}


class DemoStreams:
    """Steps 1–3 of the module docstring, on the job's SparkSession (a `_Background`
    whose `get()` waits for it)."""

    def __init__(self, spark: Any, error: type[Exception], *, trigger: str = "1 second") -> None:
        self._spark = spark
        self._error = error  # the job's JobError (its module may run as __main__)
        self._trigger = trigger
        self.queries: list[Any] = []
        self.expected: tuple[Any, ...] = ()

    def prepare(self) -> None:
        """Wait for the SparkSession before the pipeline's clock starts: the shop's
        changes run for `--seconds` from then, and must reach the queries."""
        self._spark.get()

    def start(self, herder: Any) -> str:
        """Step 1, once the source has made its topic; the sink connector's name."""
        from connect.standalone import load_connector_config

        deadline = time.monotonic() + 60
        while not (Path(LOG_DIR) / TOPIC).is_dir():
            if time.monotonic() > deadline:
                raise self._error(f"the source made no topic {TOPIC} within 60s")
            time.sleep(0.05)
        self._start_queries()
        name, connector = load_connector_config(SINK_CONFIG)
        herder.put_connector_config(name, connector, allow_replace=True)
        print(f"  stream processing: queries {', '.join(q.name for q in self.queries)} → "
              f"{name} → {RESULTS_DB}")
        return name

    def _start_queries(self) -> None:
        from connectors.spark.streams import start_orders_pipeline

        # Absolute: Spark's Python planner resolves a relative path against the
        # JVM's working directory, which need not be this process's.
        self.queries = start_orders_pipeline(
            self._spark.get(), str(Path(LOG_DIR).resolve()), str(Path(CHECKPOINTS).resolve()),
            trigger=self._trigger,
        )

    def _restart(self, error: str) -> None:
        """Start the queries again from their checkpoints, as a supervisor restarts a
        failed streaming application. Why: Spark gives a Python data source's planner
        worker 10 s to connect back, a limit it does not let us set, and a starved
        machine can miss it ("Python worker failed to connect back"). A restart repeats
        no batch's effect: the checkpoints say where each query was, its writes carry
        the batch id (`txnVersion`), and the results tables are upserted by key."""
        print(f"  {error}; restarting the queries from their checkpoints")
        self.stop()
        self._start_queries()

    def failed(self) -> str | None:
        """A query's error, once one has stopped with it."""
        for q in self.queries:
            error = q.exception()
            if error is not None:
                return f"query {q.name} failed: {str(error).splitlines()[0]}"
        return None

    def until_caught_up(self, timeout_s: float) -> float:
        """Step 2, once the log holds every change the source read: seconds waited
        until both tables hold what the topic says (`expected_from_log`)."""
        self.expected = expected_from_log()
        started = time.monotonic()
        restarts = 0
        while time.monotonic() - started < timeout_s:
            error = self.failed()
            if error is not None:
                if restarts == MAX_RESTARTS:
                    raise self._error(error)
                restarts += 1
                self._restart(error)
            latest = _query("SELECT id, status FROM orders_latest ORDER BY id")
            if (latest, self._revenue()) == self.expected:
                return time.monotonic() - started
            time.sleep(0.5)
        raise self._error(f"the results tables did not catch up within {timeout_s:.0f}s")

    @staticmethod
    def _revenue() -> dict[str, tuple[int, Decimal]]:
        """Orders and revenue per region, summed over the minutes."""
        rows = _query("SELECT region, sum(orders), sum(revenue) FROM region_revenue "
                      "GROUP BY region")
        return {r: (int(o), _decimal(t)) for r, o, t in rows}

    def stop(self) -> None:
        for q in self.queries:
            q.stop()

    def summary(self) -> bool:
        """Step 3: the result tables, and whether they agree with the shop."""
        latest = _query("SELECT count(*), count(DISTINCT status) FROM orders_latest")
        revenue = _query(
            "SELECT region, sum(orders), sum(revenue), count(*) FROM region_revenue "
            "GROUP BY region ORDER BY region"
        )
        print(f"\nStream processing results in {RESULTS_DB} (JdbcSink tables):")
        n = latest[0][0] if latest else 0
        print(f"  table orders_latest: {n:,} orders, the latest version of each")
        print("  table region_revenue (orders and revenue per region per minute, summed):")
        for region, orders, total, minutes in revenue:
            print(f"    {region:<6} {orders:>8,} orders  revenue {_decimal(total):>14}  "
                  f"over {minutes} minute(s)")
        for row in _query("SELECT region, minute, orders, revenue FROM region_revenue "
                          "ORDER BY minute DESC, region LIMIT 3"):
            print(f"    {row}")
        ok = (_query("SELECT id, status FROM orders_latest ORDER BY id"), self._revenue()) == (
            self.expected
        )
        print(f"  check against the orders topic (each order's latest status; orders and "
              f"revenue per region): {'equal' if ok else 'DIFFERENT'}")
        return ok
