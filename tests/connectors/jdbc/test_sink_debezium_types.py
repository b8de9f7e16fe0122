"""The JDBC sink and Debezium's semantic types: the columns `auto.create` makes for
them on PostgreSQL, MySQL and SQLite, and the values written, read back exactly from
SQLite, a real PostgreSQL (both the COPY path and the bound-parameter path) and a
real MariaDB."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite

from connect.api import INT32_SCHEMA, DataError, Schema, SinkRecord, Struct
from connectors.jdbc.sink import JdbcSinkTask
from connectors.jdbc.sink_fields import column_type, value_converter
from connectors.jdbc.types import (
    DBZ_DATE,
    DBZ_ENUM,
    DBZ_INTERVAL,
    DBZ_JSON,
    DBZ_MICRO_DURATION,
    DBZ_MICRO_TIME,
    DBZ_MICRO_TIMESTAMP,
    DBZ_NANO_TIME,
    DBZ_NANO_TIMESTAMP,
    DBZ_TIME,
    DBZ_TIMESTAMP,
    DBZ_UUID,
    DBZ_VARIABLE_SCALE_DECIMAL,
    DBZ_ZONED_TIME,
    DBZ_ZONED_TIMESTAMP,
    debezium_schema,
    from_variable_scale_decimal,
    to_variable_scale_decimal,
)

_DIALECTS = {
    "postgresql": postgresql.dialect(),
    "mysql": mysql.dialect(),
    "sqlite": sqlite.dialect(),
}


def ddl(name: str, dialect: str, *, key: bool = False) -> str:
    """The column type `auto.create` gives a field of Debezium type `name`."""
    type_ = column_type(debezium_schema(name), dialect, key=key, where="f")
    return type_.compile(dialect=_DIALECTS[dialect])


@pytest.mark.parametrize(
    ("name", "postgres", "mysql_", "sqlite_"),
    [
        (DBZ_DATE, "DATE", "DATE", "DATE"),
        (DBZ_TIME, "TIME(3) WITHOUT TIME ZONE", "TIME(3)", "TIME"),
        (DBZ_MICRO_TIME, "TIME(6) WITHOUT TIME ZONE", "TIME(6)", "TIME"),
        (DBZ_NANO_TIME, "TIME(6) WITHOUT TIME ZONE", "TIME(6)", "TIME"),
        (DBZ_TIMESTAMP, "TIMESTAMP(3) WITHOUT TIME ZONE", "DATETIME(3)", "DATETIME"),
        (DBZ_MICRO_TIMESTAMP, "TIMESTAMP(6) WITHOUT TIME ZONE", "DATETIME(6)", "DATETIME"),
        (DBZ_NANO_TIMESTAMP, "TIMESTAMP(6) WITHOUT TIME ZONE", "DATETIME(6)", "DATETIME"),
        (DBZ_ZONED_TIMESTAMP, "TIMESTAMP(6) WITH TIME ZONE", "DATETIME(6)", "DATETIME"),
        (DBZ_ZONED_TIME, "TIME(6) WITH TIME ZONE", "TIME(6)", "TIME"),
        (DBZ_VARIABLE_SCALE_DECIMAL, "NUMERIC", "NUMERIC(65, 30)", "TEXT"),
        (DBZ_JSON, "JSONB", "JSON", "TEXT"),
        (DBZ_UUID, "UUID", "VARCHAR(36)", "VARCHAR(36)"),
        (DBZ_MICRO_DURATION, "INTERVAL", "BIGINT", "BIGINT"),
        (DBZ_INTERVAL, "TEXT", "TEXT", "TEXT"),
        (DBZ_ENUM, "TEXT", "TEXT", "TEXT"),
    ],
)
def test_auto_create_column_types(name: str, postgres: str, mysql_: str, sqlite_: str) -> None:
    assert ddl(name, "postgresql") == postgres
    assert ddl(name, "mysql") == mysql_
    assert ddl(name, "sqlite") == sqlite_


def test_mysql_keys_of_text_types_are_bounded() -> None:
    assert ddl(DBZ_ENUM, "mysql", key=True) == "VARCHAR(256)"
    assert ddl(DBZ_UUID, "mysql", key=True) == "VARCHAR(36)"


def convert(name: str, value: Any, *, has_tz: bool = False, tz: dt.tzinfo = dt.UTC) -> Any:
    fn = value_converter(debezium_schema(name), tz=tz, column_has_tz=has_tz)
    return value if fn is None else fn(value)


def test_value_conversions() -> None:
    assert convert(DBZ_DATE, 19724) == dt.date(2024, 1, 2)
    assert convert(DBZ_DATE, -719162) == dt.date(1, 1, 1)
    assert convert(DBZ_TIME, 49_890_123) == dt.time(13, 51, 30, 123000)
    assert convert(DBZ_MICRO_TIME, 49_890_123_456) == dt.time(13, 51, 30, 123456)
    assert convert(DBZ_NANO_TIME, 49_890_123_456_789) == dt.time(13, 51, 30, 123456)
    assert convert(DBZ_MICRO_TIME, 86_400_000_000) == dt.time.max  # PostgreSQL's 24:00:00
    wall = dt.datetime(2016, 11, 4, 13, 51, 30, 123456)
    micros = (wall - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    assert convert(DBZ_MICRO_TIMESTAMP, micros) == wall
    assert convert(DBZ_NANO_TIMESTAMP, micros * 1000 + 789) == wall
    assert convert(DBZ_TIMESTAMP, micros // 1000) == wall.replace(microsecond=123000)
    assert convert(DBZ_MICRO_TIMESTAMP, -1) == dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    # a wall-clock time never moves with db.timezone; into a zoned column it is UTC
    kolkata = dt.timezone(dt.timedelta(hours=5, minutes=30))
    assert convert(DBZ_MICRO_TIMESTAMP, micros, tz=kolkata) == wall
    assert convert(DBZ_MICRO_TIMESTAMP, micros, has_tz=True) == wall.replace(tzinfo=dt.UTC)
    # a ZonedTimestamp is an instant: aware for a zoned column, else in db.timezone
    text = "2016-11-04T11:51:30.123456Z"
    instant = dt.datetime(2016, 11, 4, 11, 51, 30, 123456, tzinfo=dt.UTC)
    assert convert(DBZ_ZONED_TIMESTAMP, text, has_tz=True) == instant
    assert convert(DBZ_ZONED_TIMESTAMP, text) == instant.replace(tzinfo=None)
    assert convert(DBZ_ZONED_TIMESTAMP, text, tz=kolkata) == dt.datetime(
        2016, 11, 4, 17, 21, 30, 123456
    )
    assert convert(DBZ_ZONED_TIMESTAMP, "infinity", has_tz=True) == "infinity"
    assert convert(DBZ_ZONED_TIME, "11:51:30.1Z", has_tz=True) == dt.time(
        11, 51, 30, 100000, tzinfo=dt.UTC
    )
    assert convert(DBZ_ZONED_TIME, "11:51:30Z") == dt.time(11, 51, 30)
    scale, unscaled = to_variable_scale_decimal(decimal.Decimal("-10.1100"))
    vsd = Struct(debezium_schema(DBZ_VARIABLE_SCALE_DECIMAL), {"scale": scale, "value": unscaled})
    assert (scale, convert(DBZ_VARIABLE_SCALE_DECIMAL, vsd)) == (2, decimal.Decimal("-10.11"))
    assert convert(DBZ_JSON, '{"a": 1}') == '{"a": 1}'  # JSON text stays text
    assert convert(DBZ_MICRO_DURATION, 5) == 5  # into BIGINT: µs
    interval = value_converter(
        debezium_schema(DBZ_MICRO_DURATION),
        tz=dt.UTC,
        column_has_tz=False,
        column=postgresql.INTERVAL(),
    )
    assert interval is not None and interval(90_061_000_001) == dt.timedelta(1, 3661, 1)


@pytest.mark.parametrize(
    "text", ["0", "1", "-1", "127", "128", "-128", "-129", "10.1111", "1E+3", "-0.000500"]
)
def test_variable_scale_decimal_round_trip(text: str) -> None:
    value = decimal.Decimal(text)
    scale, unscaled = to_variable_scale_decimal(value)
    assert scale >= 0
    back = from_variable_scale_decimal({"scale": scale, "value": unscaled})
    assert back == value
    assert back.as_tuple().exponent == -scale  # trailing zeros stripped, as Debezium


# ---------------------------------------------------------------- end to end

ROW = Schema.struct(
    [
        ("id", INT32_SCHEMA),
        ("day", debezium_schema(DBZ_DATE, optional=True)),
        ("clock", debezium_schema(DBZ_MICRO_TIME, optional=True)),
        ("clock_ms", debezium_schema(DBZ_TIME, optional=True)),
        ("local", debezium_schema(DBZ_MICRO_TIMESTAMP, optional=True)),
        ("local_ms", debezium_schema(DBZ_TIMESTAMP, optional=True)),
        ("at", debezium_schema(DBZ_ZONED_TIMESTAMP, optional=True)),
        ("ratio", debezium_schema(DBZ_VARIABLE_SCALE_DECIMAL, optional=True)),
        ("doc", debezium_schema(DBZ_JSON, optional=True)),
        ("ref", debezium_schema(DBZ_UUID, optional=True)),
        ("took", debezium_schema(DBZ_MICRO_DURATION, optional=True)),
    ],
    name="srv.public.t.Value",
)
_offsets = itertools.count()
_EPOCH = dt.datetime(1970, 1, 1)
_US = dt.timedelta(microseconds=1)


def record(i: int) -> SinkRecord:
    """Row `i` in Debezium's representation (every field set)."""
    local = dt.datetime(1999, 12, 31, 23, 59, 59, 999999) + i * dt.timedelta(seconds=1.5)
    ratio = decimal.Decimal(i) / 7
    scale, unscaled = to_variable_scale_decimal(ratio)
    value = Struct(
        ROW,
        {
            "id": i,
            "day": 19724 + i,
            "clock": 49_890_123_456 + i,
            "clock_ms": 49_890_123 + i,
            "local": (local - _EPOCH) // _US,
            "local_ms": (local - _EPOCH) // _US // 1000,
            "at": f"2024-01-01T00:00:{i % 60:02d}.{i:06d}Z",
            "ratio": Struct(ROW.field("ratio").schema, {"scale": scale, "value": unscaled}),  # type: ignore[union-attr]
            "doc": f'{{"n": {i}, "tags": ["a", "b"]}}',
            "ref": str(uuid.UUID(int=i)),
            "took": 90_061_000_001 * i,
        },
    )
    key_schema = Schema.struct([("id", INT32_SCHEMA)], name="srv.public.t.Key")
    return SinkRecord(
        topic="t",
        kafka_partition=0,
        kafka_offset=next(_offsets),
        key_schema=key_schema,
        key=Struct(key_schema, {"id": i}),
        value_schema=ROW,
        value=value,
    )


def expected(i: int, dialect: str) -> dict[str, Any]:
    """What reading row `i` back through SQLAlchemy gives on `dialect`."""
    local = dt.datetime(1999, 12, 31, 23, 59, 59, 999999) + i * dt.timedelta(seconds=1.5)
    at = dt.datetime(2024, 1, 1, 0, 0, i % 60, i, tzinfo=dt.UTC)
    return {
        "id": i,
        "day": dt.date(2024, 1, 2) + dt.timedelta(days=i),
        "clock": dt.time(13, 51, 30, 123456 + i),
        "clock_ms": dt.time(13, 51, 30, (123 + i) * 1000),
        "local": local,
        "local_ms": local.replace(microsecond=local.microsecond // 1000 * 1000),
        "at": at if dialect == "postgresql" else at.replace(tzinfo=None),
        "ratio": decimal.Decimal(i) / 7
        if dialect in ("postgresql", "mysql")  # MySQL's DECIMAL(65, 30): equal, not the
        else str(decimal.Decimal(i) / 7),  # same scale
        "doc": {"n": i, "tags": ["a", "b"]}
        if dialect == "postgresql"
        else f'{{"n": {i}, "tags": ["a", "b"]}}',
        "ref": uuid.UUID(int=i) if dialect == "postgresql" else str(uuid.UUID(int=i)),
        "took": dt.timedelta(microseconds=90_061_000_001 * i)
        if dialect == "postgresql"
        else 90_061_000_001 * i,
    }


@pytest.fixture
def url(db_url: str) -> str:
    return db_url


@pytest.fixture
def start_task(url: str) -> Iterator[Callable[..., JdbcSinkTask]]:
    tasks: list[JdbcSinkTask] = []

    def factory(**config: str) -> JdbcSinkTask:
        props = {"connection.url": url, "auto.create": "true", "pk.mode": "record_key"}
        props.update({k.replace("_", "."): v for k, v in config.items()})
        task = JdbcSinkTask()
        task.initialize(_Context())  # type: ignore[arg-type]
        task.start(props)
        tasks.append(task)
        return task

    yield factory
    for task in tasks:
        task.stop()


class _Context:
    def timeout(self, timeout_ms: int) -> None:
        pass


def read(url: str) -> tuple[str, dict[int, dict[str, Any]], dict[str, str]]:
    """(dialect, id → row, column → reflected type) of table t."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            table = sa.Table("t", sa.MetaData(), autoload_with=conn)  # typed results
            rows = conn.execute(sa.select(table)).mappings().all()
            types = {c.name: str(c.type) for c in table.columns}
            if engine.dialect.name == "mysql":  # reflection's str() hides the fraction digits
                types = dict(
                    conn.exec_driver_sql(
                        "SELECT column_name, column_type FROM information_schema.columns "
                        "WHERE table_schema = DATABASE() AND table_name = 't'"
                    ).all()
                )
            if engine.dialect.name == "postgresql":  # reflection hides the zone and scale
                types = dict(
                    conn.exec_driver_sql(
                        "SELECT column_name, format_type(atttypid, atttypmod) "
                        "FROM information_schema.columns JOIN pg_attribute "
                        "ON attrelid = 't'::regclass AND attname = column_name "
                        "WHERE table_name = 't'"
                    ).all()
                )
        return engine.dialect.name, {r["id"]: dict(r) for r in rows}, types
    finally:
        engine.dispose()


@pytest.mark.parametrize("mode", ["insert", "upsert"])
def test_debezium_values_written_exactly(
    url: str, start_task: Callable[..., JdbcSinkTask], mode: str
) -> None:
    """`insert` runs executemany with bound values (every database); `upsert` on
    PostgreSQL COPYs into a staging table — both must write the same values."""
    task = start_task(insert_mode=mode)
    task.put([record(i) for i in range(1, 41)])
    task.flush({})
    dialect, rows, types = read(url)
    assert sorted(rows) == list(range(1, 41))
    diff = {
        (i, k): (got, want)
        for i in rows
        for k, want in expected(i, dialect).items()
        if (got := rows[i][k]) != want
    }
    assert diff == {}
    if dialect == "postgresql":
        assert types == {
            "id": "integer",
            "day": "date",
            "clock": "time(6) without time zone",
            "clock_ms": "time(3) without time zone",
            "local": "timestamp(6) without time zone",
            "local_ms": "timestamp(3) without time zone",
            "at": "timestamp(6) with time zone",
            "ratio": "numeric",
            "doc": "jsonb",
            "ref": "uuid",
            "took": "interval",
        }
    elif dialect == "mysql":
        assert types == {
            "id": "int(11)",
            "day": "date",
            "clock": "time(6)",
            "clock_ms": "time(3)",
            "local": "datetime(6)",
            "local_ms": "datetime(3)",
            "at": "datetime(6)",
            "ratio": "decimal(65,30)",
            "doc": "longtext",  # MariaDB's JSON is LONGTEXT checked by JSON_VALID
            "ref": "varchar(36)",
            "took": "bigint(20)",
        }
    else:
        assert types["at"] == "DATETIME" and types["ratio"] == "TEXT"


def test_nulls_and_a_bad_value(url: str, start_task: Callable[..., JdbcSinkTask]) -> None:
    task = start_task()
    rec = record(7)
    rec.value.put("at", None)  # type: ignore[union-attr]
    rec.value.put("ratio", None)  # type: ignore[union-attr]
    task.put([rec])
    task.flush({})
    _, rows, _ = read(url)
    assert rows[7]["at"] is None and rows[7]["ratio"] is None
    bad = record(8)
    bad.value.put("at", "not a timestamp")  # type: ignore[union-attr]
    with pytest.raises(DataError, match="t-0@"):
        task.put([bad])
