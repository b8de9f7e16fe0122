"""JdbcSink on PostgreSQL takes its COPY path through either driver a URL names:
psycopg2 and psycopg 3 (`postgresql+psycopg://`) stage rows with COPY and write the
same values — awkward strings, nulls, bytes, decimals, times — so choosing the driver
SQLAlchemy 2.1 defaults to never costs the fast path."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
import sqlalchemy as sa

from connect.api import (
    INT32_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    Decimal,
    Schema,
    SinkRecord,
    Struct,
    Timestamp,
)
from connectors.jdbc.sink import JdbcSinkTask

pytestmark = pytest.mark.postgres

SCHEMA = Schema.struct(
    [
        ("id", INT32_SCHEMA),
        ("s", OPTIONAL_STRING_SCHEMA),
        ("f", OPTIONAL_FLOAT64_SCHEMA),
        ("b", OPTIONAL_BYTES_SCHEMA),
        ("money", Decimal.schema(4, optional=True)),
        ("ts", Timestamp.schema(optional=True)),
    ]
)
STRINGS = ["", 'comma, and "quotes"', "new\nline\r\n\ttab", "back\\slash \\N", "NULL", "ünï ✓"]
STAGED = (
    "SELECT count(*) FROM pg_class WHERE relpersistence = 't' AND relkind = 'r' "
    "AND starts_with(relname, 'tributary_stage')"
)


def records() -> list[SinkRecord]:
    out = []
    for i, s in enumerate(STRINGS):
        value = {
            "id": i,
            "s": s,
            "f": i / 3,
            "b": s.encode(),
            "money": decimal.Decimal(f"{i}12345678901.2345"),
            "ts": dt.datetime(2024, 2, 29, 12, 0, i, 1000 * i, tzinfo=dt.UTC),
        }
        out.append(
            SinkRecord(
                topic="awkward",
                kafka_partition=0,
                kafka_offset=i,
                value_schema=SCHEMA,
                value=Struct(SCHEMA, value),
            )
        )
    nulls = {"id": 99, "s": None, "f": None, "b": None, "money": None, "ts": None}
    out.append(
        SinkRecord(
            topic="awkward",
            kafka_partition=0,
            kafka_offset=99,
            value_schema=SCHEMA,
            value=Struct(SCHEMA, nulls),
        )
    )
    return out


@pytest.mark.parametrize("driver", ["postgresql+psycopg2", "postgresql+psycopg"])
def test_both_drivers_copy_the_same_rows(postgres_url, driver):
    url = postgres_url.replace("postgresql+psycopg2", driver)
    task = JdbcSinkTask()
    task.initialize(None)  # type: ignore[arg-type]
    task.start(
        {
            "connection.url": url,
            "auto.create": "true",
            "insert.mode": "upsert",
            "pk.mode": "record_value",
            "pk.fields": "id",
        }
    )
    engine = sa.create_engine(postgres_url)
    try:
        task.put(records())
        with engine.connect() as conn:  # while the task's session holds its stage
            staged = conn.exec_driver_sql(STAGED).scalar_one()
            rows = [tuple(r) for r in conn.exec_driver_sql("SELECT * FROM awkward ORDER BY id")]
    finally:
        task.stop()
        engine.dispose()
    assert staged == 1  # the COPY path, not executemany
    expected = [
        (
            i,
            s,
            i / 3,
            s.encode(),
            decimal.Decimal(f"{i}12345678901.2345"),
            dt.datetime(2024, 2, 29, 12, 0, i, 1000 * i),
        )
        for i, s in enumerate(STRINGS)
    ] + [(99, None, None, None, None, None)]
    assert [(*r[:3], None if r[3] is None else bytes(r[3]), *r[4:]) for r in rows] == expected
