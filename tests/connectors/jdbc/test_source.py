"""JdbcSource against SQLite (no server): every mode, restarts in the middle, COALESCE
timestamps, the timestamp delay, custom queries, type mapping, table discovery and
task split, identifier quoting, and bad configs refused with the key named."""

from __future__ import annotations

import datetime as dt
import decimal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from connect.api import ConfigError, ConnectError, Date, Decimal, Time, Timestamp, Type
from connectors import ALIASES
from connectors.jdbc.source import JdbcSourceConnector
from tests.connectors.fakes import FakeOffsetReader
from tests.connectors.jdbc.source_helpers import (
    commit,
    drain,
    start_connector,
    start_task,
    task_props,
    values,
)

UTC = dt.UTC


@pytest.fixture
def db(tmp_path: Path) -> Callable[..., None]:
    """Run SQL on a SQLite file; `db.url` is its SQLAlchemy URL."""
    path = tmp_path / "source.db"

    def run(sql: str, *params: tuple) -> None:
        conn = sqlite3.connect(path)
        try:
            if params:
                conn.executemany(sql, params)
            else:
                conn.executescript(sql)
            conn.commit()
        finally:
            conn.close()

    run.url = f"sqlite:///{path}"  # type: ignore[attr-defined]
    return run


def props(db: Callable[..., None], **extra: str) -> dict[str, str]:
    base = {
        "connection.url": db.url,  # type: ignore[attr-defined]
        "topic.prefix": "db-",
        "poll.interval.ms": "1",
        "batch.max.rows": "2",
    }
    return base | {k.replace("_", "."): v for k, v in extra.items()}


def one_task(db: Callable[..., None], reader: FakeOffsetReader | None = None, **extra: str):
    return start_task(task_props(props(db, **extra))[0], reader)


ORDERS = """
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    ts TIMESTAMP NOT NULL,
    upd TIMESTAMP
);
"""


def insert_orders(db: Callable[..., None], *rows: tuple) -> None:
    db("INSERT INTO orders (id, name, ts, upd) VALUES (?, ?, ?, ?)", *rows)


def test_aliases_name_the_connector():
    for alias in (
        "JdbcSource",
        "JdbcSourceConnector",
        "io.confluent.connect.jdbc.JdbcSourceConnector",
    ):
        assert ALIASES[alias] == "connectors.jdbc.source:JdbcSourceConnector"


# ---------------------------------------------------------------------------- modes


def test_bulk_reads_the_whole_table_every_cycle(db):
    db(ORDERS)
    insert_orders(db, *[(i, f"n{i}", "2024-01-01 00:00:00", None) for i in range(1, 6)])
    task = one_task(db, mode="bulk")
    first = drain(task)
    assert values(first) == [1, 2, 3, 4, 5]
    assert {r.topic for r in first} == {"db-orders"}
    assert all(r.source_offset is None for r in first)
    assert first[0].source_partition == {"protocol": "1", "table": "orders"}
    insert_orders(db, (6, "n6", "2024-01-01 00:00:00", None))
    assert values(drain(task)) == [1, 2, 3, 4, 5, 6]
    task.stop()


def test_incrementing_autodetects_the_rowid_and_resumes_exactly_after_a_restart(db):
    db(ORDERS)
    insert_orders(db, *[(i, f"n{i}", "2024-01-01 00:00:00", None) for i in range(1, 6)])
    reader = FakeOffsetReader()
    task = one_task(db, reader, mode="incrementing")
    batch = task.poll()
    assert values(batch) == [1, 2]
    assert [r.source_offset for r in batch] == [{"incrementing": 1}, {"incrementing": 2}]
    commit(reader, batch[:1])  # the worker had made only the first durable: then a crash
    task.stop()

    task = one_task(db, reader, mode="incrementing")
    rest = drain(task)
    assert values(rest) == [2, 3, 4, 5]  # nothing lost, nothing twice
    commit(reader, rest)
    insert_orders(db, (6, "n6", "2024-01-01 00:00:00", None))
    db("UPDATE orders SET name = 'changed' WHERE id = 1")  # invisible to incrementing
    assert values(drain(task)) == [6]
    task.stop()


def test_incrementing_with_a_named_column(db):
    db("CREATE TABLE events (seq INTEGER NOT NULL, body TEXT)")
    db("INSERT INTO events VALUES (?, ?)", (10, "a"), (30, "c"), (20, "b"))
    task = one_task(db, mode="incrementing", incrementing_column_name="seq")
    assert values(drain(task), "seq") == [10, 20, 30]
    task.stop()


def test_timestamp_mode_sees_updates_and_rereads_a_partly_delivered_tie_group(db):
    db(ORDERS)
    same = "2024-01-01 10:00:00"
    insert_orders(
        db,
        (1, "a", "2024-01-01 09:00:00", None),
        (2, "b", same, None),
        (3, "c", same, None),
        (4, "d", same, None),
        (5, "e", "2024-01-01 11:00:00", None),
    )
    reader = FakeOffsetReader()
    task = one_task(db, reader, mode="timestamp", timestamp_column_name="ts")
    first, second = task.poll(), task.poll()
    assert values(first) == [1, 2] and values(second) == [3, 4]
    nine = int(dt.datetime(2024, 1, 1, 9, tzinfo=UTC).timestamp() * 1000)
    # id 2 shares its timestamp with the next row: its offset stays at the group before
    assert (
        first[1].source_offset
        == first[0].source_offset
        == {
            "timestamp": nine,
            "timestamp_nanos": 0,
        }
    )
    commit(reader, first)
    task.stop()

    task = one_task(db, reader, mode="timestamp", timestamp_column_name="ts")
    again = drain(task)
    assert values(again) == [2, 3, 4, 5]  # the group again (ids 2…4), none lost
    commit(reader, again)
    db("UPDATE orders SET ts = '2024-01-02 00:00:00', name = 'A' WHERE id = 1")
    updated = drain(task)
    assert values(updated) == [1] and updated[0].value.get("name") == "A"
    task.stop()


def test_timestamp_incrementing_restarts_inside_a_tie_group_exactly(db):
    db(ORDERS)
    same = "2024-01-01 10:00:00.250"
    insert_orders(db, *[(i, f"n{i}", same, None) for i in range(1, 6)])
    reader = FakeOffsetReader()
    config = {"mode": "timestamp+incrementing", "timestamp_column_name": "ts"}
    task = one_task(db, reader, **config)
    first = task.poll()
    assert values(first) == [1, 2]
    ms = int(dt.datetime(2024, 1, 1, 10, 0, 0, 250_000, tzinfo=UTC).timestamp() * 1000)
    assert first[1].source_offset == {
        "incrementing": 2,
        "timestamp": ms,
        "timestamp_nanos": 250_000_000,
    }
    commit(reader, first)
    task.stop()

    task = one_task(db, reader, **config)
    rest = drain(task)
    assert values(rest) == [3, 4, 5]
    commit(reader, rest)
    db("UPDATE orders SET ts = '2024-01-01 10:00:01', name = 'x' WHERE id = 2")
    insert_orders(db, (6, "n6", "2024-01-01 10:00:01", None))
    assert values(drain(task)) == [2, 6]  # the update, and the new row
    task.stop()


def test_several_timestamp_columns_are_coalesced(db):
    db(ORDERS)
    insert_orders(
        db,
        (1, "a", "2024-01-01 01:00:00", None),
        (2, "b", "2024-01-01 02:00:00", "2024-01-01 05:00:00"),
        (3, "c", "2024-01-01 03:00:00", None),
    )
    task = one_task(db, mode="timestamp", timestamp_column_name="upd,ts")
    first = drain(task)
    assert values(first) == [1, 3, 2]  # ordered by COALESCE(upd, ts)
    five = int(dt.datetime(2024, 1, 1, 5, tzinfo=UTC).timestamp() * 1000)
    assert first[-1].source_offset == {"timestamp": five, "timestamp_nanos": 0}
    db("UPDATE orders SET upd = '2024-01-01 06:00:00' WHERE id = 1")
    assert values(drain(task)) == [1]
    task.stop()


def test_timestamp_delay_holds_back_rows_younger_than_the_delay(db):
    db(ORDERS)
    now = dt.datetime.now(UTC).replace(tzinfo=None)
    old = (now - dt.timedelta(hours=2)).isoformat(" ")
    young = (now - dt.timedelta(minutes=1)).isoformat(" ")
    insert_orders(db, (1, "old", old, None), (2, "young", young, None))
    task = one_task(
        db, mode="timestamp", timestamp_column_name="ts", timestamp_delay_interval_ms="3600000"
    )
    assert values(drain(task)) == [1]
    task.stop()
    task = one_task(db, mode="timestamp", timestamp_column_name="ts")
    assert values(drain(task)) == [1, 2]  # without the delay both are due
    task.stop()


def test_timestamp_initial_starts_from_the_given_time(db):
    db(ORDERS)
    insert_orders(db, (1, "a", "2023-01-01 00:00:00", None), (2, "b", "2025-01-01 00:00:00", None))
    start = int(dt.datetime(2024, 1, 1, tzinfo=UTC).timestamp() * 1000)
    task = one_task(db, mode="timestamp", timestamp_column_name="ts", timestamp_initial=str(start))
    assert values(drain(task)) == [2]
    task.stop()


def test_db_timezone_reads_naive_timestamps_in_that_zone(db):
    db(ORDERS)
    insert_orders(db, (1, "a", "2024-07-01 12:00:00", None))
    task = one_task(db, mode="bulk", db_timezone="Europe/Berlin")
    (record,) = drain(task)
    assert record.value.get("ts") == dt.datetime(2024, 7, 1, 10, 0, tzinfo=UTC)
    task.stop()


def test_an_offset_stored_under_the_older_partition_is_read(db):
    db(ORDERS)
    insert_orders(db, *[(i, f"n{i}", "2024-01-01 00:00:00", None) for i in range(1, 4)])
    reader = FakeOffsetReader()
    reader.put({"table": "orders"}, {"incrementing": 2})
    task = one_task(db, reader, mode="incrementing")
    records = drain(task)
    assert values(records) == [3]
    assert records[0].source_partition == {"protocol": "1", "table": "orders"}
    task.stop()


# ------------------------------------------------------------------- custom query


def test_a_custom_query_with_incrementing_mode_and_a_suffix(db):
    db(ORDERS)
    insert_orders(db, *[(i, f"n{i}", "2024-01-01 00:00:00", None) for i in range(1, 6)])
    reader = FakeOffsetReader()
    config = {
        "mode": "incrementing",
        "query": "SELECT id, upper(name) AS big, ts FROM orders WHERE id <> 3",
        "incrementing_column_name": "id",
        "topic_prefix": "big-names",
    }
    (cfg,) = task_props(props(db, **config), max_tasks=4)
    task = start_task(cfg, reader)
    first = task.poll()
    assert [r.value.get("big") for r in first] == ["N1", "N2"]
    assert {r.topic for r in first} == {"big-names"}
    assert first[0].source_partition == {"query": "query"}
    assert first[0].value_schema.name is None
    assert first[0].value_schema.field("ts").schema.name == Timestamp.LOGICAL_NAME
    assert first[0].value_schema.field("big").schema.type is Type.STRING
    commit(reader, first)
    task.stop()
    task = start_task(cfg, reader)
    assert values(drain(task)) == [4, 5]
    task.stop()

    limited = start_task(dict(cfg, **{"query.suffix": "LIMIT 1"}))
    assert values(limited.poll()) == [1]
    limited.stop()


def test_a_custom_query_in_bulk_mode(db):
    db(ORDERS)
    insert_orders(db, *[(i, f"n{i}", "2024-01-01 00:00:00", None) for i in range(1, 4)])
    task = start_task(
        task_props(props(db, mode="bulk", query="SELECT count(*) AS n FROM orders"))[0]
    )
    (record,) = drain(task)
    assert record.value.get("n") == 3
    assert record.value_schema.field("n").schema.type is Type.INT64
    task.stop()


# --------------------------------------------------------------------------- types


def test_sqlite_types_map_to_connect_schemas(db):
    db(
        """
        CREATE TABLE typed (
            id INTEGER PRIMARY KEY,
            i INTEGER NOT NULL, s SMALLINT, b BIGINT, r REAL, d DOUBLE, f FLOAT,
            n NUMERIC(12, 3), dec DECIMAL(5, 2), bo BOOLEAN, t TEXT, v VARCHAR(10),
            bl BLOB, da DATE, ti TIME, ts TIMESTAMP, dtm DATETIME, untyped
        );
        INSERT INTO typed VALUES (1, 9007199254740993, 7, -5, 1.5, 2.25, 0.5,
            '123456789.125', 1.5, 1, 'text', 'var', x'00ff', '2024-02-29', '13:14:15.5',
            '2024-02-29 13:14:15.123456', '2024-02-29T01:02:03', 'x');
        INSERT INTO typed (id, i) VALUES (2, 0);
        """
    )
    task = one_task(db, mode="bulk")
    first, second = drain(task)
    schema = first.value_schema
    assert schema.name == "typed"
    kinds = {f.name: (f.schema.type, f.schema.name, f.schema.optional) for f in schema.fields}
    assert kinds == {
        "id": (Type.INT64, None, False),  # the rowid: never null
        "i": (Type.INT64, None, False),  # SQLite's INTEGER is 64 bits
        "s": (Type.INT16, None, True),
        "b": (Type.INT64, None, True),
        "r": (Type.FLOAT64, None, True),  # SQLite's REAL is a double
        "d": (Type.FLOAT64, None, True),
        "f": (Type.FLOAT64, None, True),
        "n": (Type.BYTES, Decimal.LOGICAL_NAME, True),
        "dec": (Type.BYTES, Decimal.LOGICAL_NAME, True),
        "bo": (Type.BOOLEAN, None, True),
        "t": (Type.STRING, None, True),
        "v": (Type.STRING, None, True),
        "bl": (Type.BYTES, None, True),
        "da": (Type.INT32, Date.LOGICAL_NAME, True),
        "ti": (Type.INT32, Time.LOGICAL_NAME, True),
        "ts": (Type.INT64, Timestamp.LOGICAL_NAME, True),
        "dtm": (Type.INT64, Timestamp.LOGICAL_NAME, True),
    }  # `untyped` has no SQL type: left out
    assert schema.field("n").schema.parameters["scale"] == "3"
    value = first.value
    assert value.get("i") == 9007199254740993
    assert value.get("n") == decimal.Decimal("123456789.125")
    assert value.get("dec") == decimal.Decimal("1.50")
    assert value.get("bo") is True and value.get("bl") == b"\x00\xff"
    assert value.get("da") == dt.date(2024, 2, 29)
    assert value.get("ti") == dt.time(13, 14, 15, 500_000)
    assert value.get("ts") == dt.datetime(2024, 2, 29, 13, 14, 15, 123_456, tzinfo=UTC)
    assert value.get("dtm") == dt.datetime(2024, 2, 29, 1, 2, 3, tzinfo=UTC)
    assert second.value.get("s") is None and second.value.get("ts") is None
    task.stop()


@pytest.mark.parametrize(
    ("mapping", "n_type", "dec_type"),
    [
        ("none", Type.BYTES, Type.BYTES),
        ("precision_only", Type.INT32, Type.BYTES),
        ("best_fit", Type.INT32, Type.FLOAT64),
        ("best_fit_eager_double", Type.INT32, Type.FLOAT64),
    ],
)
def test_numeric_mapping(db, mapping, n_type, dec_type):
    db("CREATE TABLE nums (id INTEGER PRIMARY KEY, n NUMERIC(9, 0), x NUMERIC(10, 2))")
    db("INSERT INTO nums VALUES (1, 123456789, 12.25)")
    task = one_task(db, mode="bulk", numeric_mapping=mapping)
    (record,) = drain(task)
    assert record.value_schema.field("n").schema.type is n_type
    assert record.value_schema.field("x").schema.type is dec_type
    assert record.value.get("n") == 123456789
    assert record.value.get("x") == (
        12.25 if dec_type is Type.FLOAT64 else decimal.Decimal("12.25")
    )
    task.stop()


def test_identifiers_are_always_quoted(db):
    db('CREATE TABLE "select" ("Weird ""id""" INTEGER NOT NULL, "from" TEXT)')
    db('INSERT INTO "select" VALUES (?, ?)', (1, "a"), (2, "b"))
    task = one_task(db, mode="incrementing", incrementing_column_name='Weird "id"')
    records = drain(task)
    assert [r.value.get("from") for r in records] == ["a", "b"]
    assert {r.topic for r in records} == {"db-select"}
    task.stop()


# ----------------------------------------------------------------- tables and tasks


def test_tables_are_split_among_tasks_and_lists_filter_them(db):
    db("".join(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY);" for i in range(5)))
    configs = task_props(props(db, mode="bulk"), max_tasks=2)
    assert [c["tables"] for c in configs] == [
        '[[null, "t0"], [null, "t2"], [null, "t4"]]',
        '[[null, "t1"], [null, "t3"]]',
    ]
    assert len(task_props(props(db, mode="bulk"), max_tasks=10)) == 5
    only = task_props(props(db, mode="bulk", table_whitelist="t1,t3"), max_tasks=10)
    assert [c["tables"] for c in only] == ['[[null, "t1"]]', '[[null, "t3"]]']
    but = task_props(props(db, mode="bulk", table_exclude_list="t0,t1,t2"), max_tasks=10)
    assert [c["tables"] for c in but] == ['[[null, "t3"]]', '[[null, "t4"]]']
    views = task_props(
        props(db, mode="bulk", table_types="VIEW") | {"table.whitelist": ""}, max_tasks=1
    )
    assert views == []  # no views yet: no tasks


def test_new_tables_are_discovered_while_running(db):
    db("CREATE TABLE first (id INTEGER PRIMARY KEY)")
    connector = start_connector(props(db, mode="bulk", table_poll_interval_ms="20"))
    try:
        assert [c["tables"] for c in connector.task_configs(4)] == ['[[null, "first"]]']
        db("CREATE TABLE second (id INTEGER PRIMARY KEY)")
        assert connector.context.reconfigured.wait(10)
        assert [c["tables"] for c in connector.task_configs(4)] == [
            '[[null, "first"]]',
            '[[null, "second"]]',
        ]
    finally:
        connector.stop()


# ---------------------------------------------------------------- bad configs, errors


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("not a url", "not a database URL"),
        ("nosuchdb://host/db", "no SQLAlchemy dialect"),
        ("sqlite:////nonexistent/dir/x.db", "cannot connect"),
    ],
)
def test_bad_connection_urls_are_refused_naming_the_key(url, reason):
    with pytest.raises(ConfigError, match=reason) as caught:
        start_connector({"connection.url": url, "mode": "bulk", "topic.prefix": "x-"})
    assert caught.value.name == "connection.url"


def test_a_password_never_shows_in_the_error(db):
    with pytest.raises(ConfigError) as caught:
        start_connector(
            {
                "connection.url": "nosuchdb://u@host/db",
                "connection.password": "s3cret",
                "mode": "bulk",
                "topic.prefix": "x-",
            }
        )
    assert "s3cret" not in str(caught.value)


def test_missing_whitelisted_tables_are_refused(db):
    db("CREATE TABLE here (id INTEGER PRIMARY KEY)")
    with pytest.raises(ConfigError, match="no table gone") as caught:
        start_connector(props(db, mode="bulk", table_whitelist="here,gone"))
    assert caught.value.name == "table.whitelist"


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"mode": "sometimes"}, "mode"),
        ({"mode": "timestamp"}, "timestamp.column.name"),
        ({"mode": "bulk", "table.whitelist": "a", "table.blacklist": "b"}, "table.blacklist"),
        ({"mode": "bulk", "table.whitelist": "a", "table.include.list": "b"}, "table.include.list"),
        ({"mode": "incrementing", "query": "SELECT 1 AS x"}, "incrementing.column.name"),
        ({"mode": "bulk", "db.timezone": "Mars/Olympus"}, "db.timezone"),
        ({"mode": "bulk", "numeric.mapping": "exact"}, "numeric.mapping"),
        ({"mode": "bulk", "batch.max.rows": "0"}, "batch.max.rows"),
    ],
)
def test_bad_configs_name_the_key(db, extra, key):
    config = props(db) | extra
    with pytest.raises(ConfigError) as caught:
        start_connector(config)
    assert caught.value.name == key
    errors = {r.name: r.errors for r in JdbcSourceConnector().validate(config)}
    assert errors[key], errors


def test_missing_or_nullable_mode_columns_fail_the_task_clearly(db):
    db(ORDERS)
    insert_orders(db, (1, "a", "2024-01-01 00:00:00", None))
    task = one_task(db, mode="timestamp", timestamp_column_name="nope")
    with pytest.raises(ConnectError, match=r"column\(s\) nope not found in orders"):
        task.poll()
    task.stop()
    task = one_task(db, mode="timestamp", timestamp_column_name="upd")
    with pytest.raises(ConnectError, match="nullable"):
        task.poll()
    task.stop()
    task = one_task(db, mode="timestamp", timestamp_column_name="upd", validate_non_null="false")
    assert drain(task) == []  # rows with NULL in upd are never read: what the check warns of
    task.stop()
    db("CREATE TABLE noauto (v TEXT)")
    task = one_task(db, mode="incrementing", table_whitelist="noauto")
    with pytest.raises(ConnectError, match="no autoincrement column in noauto"):
        task.poll()
    task.stop()


def test_a_dropped_table_fails_the_task_naming_it(db):
    db(ORDERS)
    task = one_task(db, mode="bulk")
    db("DROP TABLE orders")
    with pytest.raises(ConnectError, match="orders"):
        task.poll()
    task.stop()


def test_stop_returns_while_the_task_waits(db):
    db(ORDERS)
    task = one_task(db, mode="bulk", poll_interval_ms="60000")
    drain(task)
    began = time.monotonic()
    task.stop()
    assert task.poll() is None
    assert time.monotonic() - began < 2
