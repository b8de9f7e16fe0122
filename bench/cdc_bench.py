"""Benchmark of the database connectors; prints one JSON object.

Each figure is one function returning a dict of keys; `main()` runs them against a
PostgreSQL server (a private one started like the tests' fixture, or `--url`) and
prints them together, so runs can be compared over time.

    python bench/cdc_bench.py [--rows N] [--url postgresql+psycopg2://…]

Keys:
- jdbc_sink_upsert_rows_per_s: JdbcSinkTask.put() of N 10-column rows (Struct values
  with a schema: int64 key, int32s, strings, a double, a Decimal, a Timestamp, a
  boolean) with insert.mode=upsert and pk.mode=record_value, in puts of 10,000 records
  as the worker delivers them, every row already in the table (each upsert updates);
  jdbc_sink_upsert_new_rows_per_s: the first pass, into the empty table it creates.
  The clock covers put() only: building the records is the converter's work.
- snapshot_rows_per_s: PostgresCdcSource's snapshot (snapshot.mode=initial_only) of a
  N-row, 10-column table into a FileLog through a StandaloneHerder (the worker's default
  task process, JsonConverter schemas.enable=false, the connector's default batch sizes —
  Debezium's max.batch.size 2048 and snapshot.fetch.size 10240): rows over the time from
  the connector's creation until the last row is in the log; snapshot_peak_rss_mb: the
  peak RSS of the bench and its task processes over that run.
- cdc_changes_per_s: the stream of a backlog of changes (inserts, updates and deletes in
  transactions of 1,000) made while the slot existed and the connector was not
  running: changes over the time to drain them into the log.
- cdc_latency_p50_ms / cdc_latency_p99_ms: rows inserted at 5,000 a second (50 per
  transaction, every 10 ms), each carrying clock_timestamp() of its insert; latency is
  the log append time of its record minus that timestamp.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from connect.api import (  # noqa: E402 - after the path set-up
    BOOLEAN_SCHEMA,
    FLOAT64_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Decimal,
    Schema,
    SinkRecord,
    Struct,
    Timestamp,
)

PUT_SIZE = 10_000  # the worker's max records per put()


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


class _Context:
    """The little of SinkTaskContext that put() uses here."""

    def __init__(self) -> None:
        self.backoff_ms = 0

    def timeout(self, timeout_ms: int) -> None:
        self.backoff_ms = timeout_ms


def _records(rows: int, *, version: int) -> list[SinkRecord]:
    schema = Schema.struct(
        [
            ("id", INT64_SCHEMA),
            ("customer", STRING_SCHEMA),
            ("city", OPTIONAL_STRING_SCHEMA),
            ("status", STRING_SCHEMA),
            ("quantity", INT32_SCHEMA),
            ("version", INT32_SCHEMA),
            ("price", FLOAT64_SCHEMA),
            ("amount", Decimal.schema(2)),
            ("updated_at", Timestamp.schema()),
            ("paid", BOOLEAN_SCHEMA),
        ],
        name="bench.orders.Value",
    )
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    out = []
    for i in range(rows):
        value = Struct(
            schema,
            {
                "id": i,
                "customer": f"customer-{i % 5000}",
                "city": None if i % 7 == 0 else f"city-{i % 300}",
                "status": ("new", "paid", "shipped")[(i + version) % 3],
                "quantity": i % 100,
                "version": version,
                "price": i * 0.25,
                "amount": decimal.Decimal(i * 3 + version).scaleb(-2),
                "updated_at": base + dt.timedelta(seconds=i + version),
                "paid": (i + version) % 2 == 0,
            },
        )
        out.append(
            SinkRecord(
                topic="orders",
                kafka_partition=0,
                kafka_offset=i,
                value_schema=schema,
                value=value,
            )
        )
    return out


def jdbc_sink_upsert_rows_per_s(url: str, *, rows: int = 200_000) -> dict[str, Any]:
    from connectors.jdbc.sink import JdbcSinkTask

    config: Mapping[str, str] = {
        "connection.url": url,
        "insert.mode": "upsert",
        "pk.mode": "record_value",
        "pk.fields": "id",
        "auto.create": "true",
        "table.name.format": "bench_${topic}",
    }
    rates = []
    for version in (1, 2):
        records = _records(rows, version=version)
        task = JdbcSinkTask()
        task.initialize(_Context())  # type: ignore[arg-type]
        task.start(config)
        try:
            began = time.perf_counter()
            for start in range(0, rows, PUT_SIZE):
                task.put(records[start : start + PUT_SIZE])
            rates.append(rows / (time.perf_counter() - began))
        finally:
            task.stop()
        del records
    return {
        "jdbc_sink_upsert_new_rows_per_s": round(rates[0]),
        "jdbc_sink_upsert_rows_per_s": round(rates[1]),
        "jdbc_sink_rows": rows,
    }


# ---------------------------------------------------------------- PostgresCdcSource


def _pg(url: str) -> Any:
    import psycopg2
    import sqlalchemy as sa

    u = sa.make_url(url)
    conn = psycopg2.connect(host=u.host, port=u.port, user=u.username, dbname=u.database)
    conn.autocommit = True
    return conn


@contextmanager
def _herder(directory: Path, worker: Mapping[str, str] | None = None) -> Iterator[Any]:
    from connect.herder.standalone import StandaloneHerder
    from connect.worker.config import WORKER_CONFIG
    from log import FileLog

    raw = {
        "log.dir": str(directory),
        "offset.flush.interval.ms": "1000",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
        **(worker or {}),
    }
    log = FileLog(directory)
    herder = StandaloneHerder({**raw, **WORKER_CONFIG.parse(raw)}, log=log, worker_id="bench")
    herder.start()
    try:
        yield herder
    finally:
        herder.stop()
        log.close()


def _count(log: Any, topic: str) -> int:
    if topic not in log.list_topics():
        return 0
    return sum(log.latest_offset(topic, p) for p in range(log.partition_count(topic)))


def _wait_count(log: Any, topic: str, n: int, timeout_s: float = 600) -> float:
    deadline = time.monotonic() + timeout_s
    while _count(log, topic) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic}: {_count(log, topic)} of {n} records in time")
        time.sleep(0.02)
    return time.perf_counter()


def _wait_committed(log: Any, topic: str, n: int, timeout_s: float = 600) -> float:
    """`_wait_count` for a topic written in transactions, where markers take offsets
    too: once the offsets reach `n` and nothing is open, the committed records are
    counted (read_committed); the time is taken before that count."""
    deadline = time.monotonic() + timeout_s
    while True:
        _wait_count(log, topic, n, max(0.0, deadline - time.monotonic()))
        parts = range(log.partition_count(topic))
        ended = time.perf_counter()
        stable = all(log.last_stable_offset(topic, p) == log.latest_offset(topic, p) for p in parts)
        if stable and sum(count_records(log, topic, p) for p in parts) >= n:
            return ended
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic}: fewer than {n} committed records in time")
        time.sleep(0.02)


def count_records(
    log: Any, topic: str, partition: int, isolation_level: str = "read_committed"
) -> int:
    """The records a consumer at `isolation_level` reads in the partition, read whole
    (bench/eos_bench.py times these reads)."""
    got, offset = 0, 0
    while True:
        batch = log.read(
            topic, partition, offset, max_bytes=1 << 20, isolation_level=isolation_level
        )
        after = getattr(batch, "next_offset", None)
        if after is None:
            after = batch[-1].offset + 1 if batch else offset
        if after <= offset:
            return got
        got, offset = got + len(batch), after


def _cdc_config(url: str, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "PostgresCdcSource",
        "connection.url": url,
        "topic.prefix": "bench",
        "publication.autocreate.mode": "filtered",
        "poll.interval.ms": "100",
        **extra,
    }


def make_snap_table(url: str, rows: int) -> None:
    """The snapshot figures' table `snap`: `rows` rows of 10 columns (ids 1..rows);
    bench/peers_bench.py snapshots and changes the same table."""
    conn = _pg(url)
    with conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE snap (id bigint PRIMARY KEY, a int NOT NULL, b int, c text, "
            "d text, e float8, f numeric(12,2), g timestamptz, h boolean, i bigint)"
        )
        cur.execute(
            "INSERT INTO snap SELECT n, n %% 1000, n %% 7, 'name-' || n, md5(n::text), n / 3.0, "
            "n / 7.0, timestamptz '2024-01-01' + n * interval '1 second', n %% 2 = 0, n * 3 "
            "FROM generate_series(1, %s) n",
            (rows,),
        )
        cur.execute("VACUUM ANALYZE snap")
    conn.close()


def snapshot_rows_per_s(url: str, *, rows: int = 1_000_000) -> dict[str, Any]:
    import tempfile

    make_snap_table(url, rows)
    sampler = _RssSampler()
    with tempfile.TemporaryDirectory() as tmp, _herder(Path(tmp)) as herder, sampler:
        began = time.perf_counter()
        herder.put_connector_config(
            "snap",
            _cdc_config(
                url,
                **{
                    "snapshot.mode": "initial_only",
                    "table.include.list": "public\\.snap",
                    "slot.name": "bench_snap",
                },
            ),
            allow_replace=False,
        )
        ended = _wait_count(herder.log, "bench.public.snap", rows)
    return {
        "snapshot_rows_per_s": round(rows / (ended - began)),
        "snapshot_rows": rows,
        "snapshot_peak_rss_mb": round(sampler.peak / 2**20),
    }


class _RssSampler:
    """Peak RSS of this process and its children (the task processes; not the
    PostgreSQL server, which runs under another parent), sampled every 50 ms."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.wait(0.05):
            total = 0
            for proc in [me, *me.children(recursive=True)]:
                try:
                    if "postgres" not in proc.name():
                        total += proc.memory_info().rss
                except psutil.Error:
                    continue
            self.peak = max(self.peak, total)

    def __enter__(self) -> _RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def cdc_changes_per_s(
    url: str,
    *,
    transactions: int = 200,
    worker: Mapping[str, str] | None = None,
    slot: str = "bench_chg",
) -> dict[str, Any]:
    """`worker`: keys added to the worker's config (bench/eos_bench.py's exactly-once
    run: its topic counted committed); `slot`: the replication slot's name, which is
    the server's, not the database's."""
    import tempfile

    conn = _pg(url)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE chg (id int PRIMARY KEY, v int NOT NULL, s text)")
        cur.execute("CREATE PUBLICATION bench_chg FOR TABLE chg")
        cur.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
        changes = 0
        for t in range(transactions):  # 600 inserts, 300 updates, 100 deletes each
            base = t * 1000
            cur.execute(
                "BEGIN; INSERT INTO chg SELECT n, 0, 'row ' || n "
                "FROM generate_series(%s, %s) n; "
                "UPDATE chg SET v = v + 1 WHERE id BETWEEN %s AND %s; "
                "DELETE FROM chg WHERE id BETWEEN %s AND %s; COMMIT",
                (base, base + 599, base, base + 299, base + 500, base + 599),
            )
            changes += 1000
    conn.close()
    expected = transactions * (600 + 300 + 200)  # each delete has its tombstone
    sampler = _RssSampler()
    with tempfile.TemporaryDirectory() as tmp, _herder(Path(tmp), worker) as herder, sampler:
        began = time.perf_counter()
        herder.put_connector_config(
            "chg",
            _cdc_config(
                url,
                **{
                    "snapshot.mode": "never",
                    "slot.name": slot,
                    "publication.name": "bench_chg",
                    "publication.autocreate.mode": "disabled",
                },
            ),
            allow_replace=False,
        )
        wait = _wait_committed if worker else _wait_count
        ended = wait(herder.log, "bench.public.chg", expected)
        # Offsets past the records: an exactly-once run's commit markers, one a
        # transaction (bench/eos_bench.py's records per transaction).
        log_end = _count(herder.log, "bench.public.chg")
    return {
        "cdc_changes_per_s": round(changes / (ended - began)),
        "cdc_changes": changes,
        "cdc_records": expected,
        "cdc_log_end_offset": log_end,
    }


def cdc_latency_ms(url: str, *, seconds: float = 10.0, rate: int = 5000) -> dict[str, Any]:
    import statistics
    import tempfile

    conn = _pg(url)
    with conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE lat (id serial PRIMARY KEY, at timestamptz NOT NULL "
            "DEFAULT clock_timestamp(), pad text)"
        )
    per_tx, every_s = 50, 50 / rate
    with tempfile.TemporaryDirectory() as tmp, _herder(Path(tmp)) as herder:
        herder.put_connector_config(
            "lat",
            _cdc_config(
                url,
                **{
                    "snapshot.mode": "never",
                    "slot.name": "bench_lat",
                    "publication.name": "bench_lat",
                    "table.include.list": "public\\.lat",
                },
            ),
            allow_replace=False,
        )
        # the stream is up once a first row comes through
        with conn.cursor() as cur:
            deadline = time.monotonic() + 60
            while _count(herder.log, "bench.public.lat") == 0:
                cur.execute("INSERT INTO lat (pad) VALUES ('warm-up')")
                time.sleep(0.2)
                if time.monotonic() > deadline:
                    raise RuntimeError("the stream did not start")
            time.sleep(1.0)  # the last warm-up rows arrive (the first may precede the slot)
            warm = _count(herder.log, "bench.public.lat")
            total = int(seconds * rate)
            next_at = time.perf_counter()
            for _ in range(total // per_tx):
                cur.execute(
                    "INSERT INTO lat (pad) SELECT 'x' FROM generate_series(1, %s)", (per_tx,)
                )
                next_at += every_s
                pause = next_at - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
        _wait_count(herder.log, "bench.public.lat", warm + total)
        log = herder.log
        latencies = []
        for p in range(log.partition_count("bench.public.lat")):
            offset = 0
            while batch := log.read("bench.public.lat", p, offset):
                for rec in batch:
                    after = json.loads(rec.value)["after"]
                    if after["pad"] == "x":  # `at` is an io.debezium.time.ZonedTimestamp
                        at = dt.datetime.fromisoformat(after["at"]).timestamp() * 1000
                        latencies.append(rec.timestamp - at)
                offset = batch[-1].offset + 1
    conn.close()
    latencies.sort()
    return {
        "cdc_latency_p50_ms": round(statistics.median(latencies), 1),
        "cdc_latency_p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 1),
        "cdc_latency_changes_per_s": rate,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows for the sink figure")
    parser.add_argument("--url", help="a PostgreSQL SQLAlchemy URL (default: a private server)")
    parser.add_argument(
        "--snapshot-rows", type=int, default=1_000_000, help="rows for the snapshot figure"
    )
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with postgres(args.url) as url:
        results.update(jdbc_sink_upsert_rows_per_s(url, rows=args.rows))
        results.update(snapshot_rows_per_s(url, rows=args.snapshot_rows))
        results.update(cdc_changes_per_s(url))
        results.update(cdc_latency_ms(url))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
