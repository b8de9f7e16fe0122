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
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import sys
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows for the sink figure")
    parser.add_argument("--url", help="a PostgreSQL SQLAlchemy URL (default: a private server)")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with postgres(args.url) as url:
        results.update(jdbc_sink_upsert_rows_per_s(url, rows=args.rows))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
