"""JdbcSink on a real MySQL-protocol server (MariaDB), beyond the suites every dialect
runs (test_sink*.py take `db_url`): backticked names, INSERT … ON DUPLICATE KEY UPDATE
with keys only, MySQL's key column types, a connection killed in the middle of a put
(nothing of it stays, the retry is exact), values MySQL cannot hold, which errors are
retried, and `mariadb+pymysql://` URLs."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pymysql
import pytest
import sqlalchemy as sa

from connect.api import (
    BYTES_SCHEMA,
    FLOAT64_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    RetriableError,
    Schema,
    SinkRecord,
    Struct,
    Timestamp,
)
from connectors.jdbc.dialects import is_transient
from connectors.jdbc.sink import JdbcSinkTask, RecordWriteError
from tests.mysql import MysqlServer

pytestmark = pytest.mark.mysql


class _Context:
    def __init__(self) -> None:
        self.timeouts: list[int] = []

    def timeout(self, timeout_ms: int) -> None:
        self.timeouts.append(timeout_ms)


@pytest.fixture
def start_task(mysql_url: str) -> Iterator[Callable[..., JdbcSinkTask]]:
    tasks: list[JdbcSinkTask] = []

    def factory(url: str = mysql_url, **config: str) -> JdbcSinkTask:
        props = {"connection.url": url, "auto.create": "true"}
        props.update({k.replace("_", "."): v for k, v in config.items()})
        task = JdbcSinkTask()
        task.initialize(_Context())  # type: ignore[arg-type]
        task.start(props)
        tasks.append(task)
        return task

    yield factory
    for task in tasks:
        task.stop()


def query(url: str, sql: str) -> list[tuple]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.exec_driver_sql(sql)]
    finally:
        engine.dispose()


def record(schema: Schema, value: dict[str, Any], *, topic: str, offset: int = 0) -> SinkRecord:
    return SinkRecord(
        topic=topic,
        kafka_partition=0,
        kafka_offset=offset,
        value_schema=schema,
        value=Struct(schema, value),
    )


def test_backticks_and_reserved_words_in_names_survive_create_upsert_and_evolve(
    mysql_url: str, start_task: Callable[..., JdbcSinkTask]
) -> None:
    narrow = Schema.struct([("we`ird", INT32_SCHEMA), ("select", OPTIONAL_STRING_SCHEMA)])
    wide = Schema.struct(
        [
            ("we`ird", INT32_SCHEMA),
            ("select", OPTIONAL_STRING_SCHEMA),
            ("Mixed Case``2", OPTIONAL_STRING_SCHEMA),
        ]
    )
    config = {
        "insert_mode": "upsert",
        "pk_mode": "record_value",
        "pk_fields": "we`ird",
        "auto_evolve": "true",
    }
    task = start_task(**config)
    task.put([record(narrow, {"we`ird": 1, "select": "a"}, topic="order.lines-v1")])
    task.put(
        [record(wide, {"we`ird": 1, "select": "b", "Mixed Case``2": "c"}, topic="order.lines-v1")]
    )
    task.put([record(narrow, {"we`ird": 2, "select": "d"}, topic="order.lines-v1")])
    again = start_task(**config)  # a new task reflects the table with its odd names
    again.put(
        [record(wide, {"we`ird": 2, "select": "e", "Mixed Case``2": "f"}, topic="order.lines-v1")]
    )
    assert query(mysql_url, "SELECT * FROM `order.lines-v1` ORDER BY 1") == [
        (1, "b", "c"),
        (2, "e", "f"),
    ]
    create = query(mysql_url, "SHOW CREATE TABLE `order.lines-v1`")[0][1]
    assert "`we``ird`" in create and "`Mixed Case````2`" in create
    assert "PRIMARY KEY (`we``ird`)" in create


def test_upsert_with_only_key_columns_and_string_and_bytes_keys(
    mysql_url: str, start_task: Callable[..., JdbcSinkTask]
) -> None:
    """ON DUPLICATE KEY UPDATE needs something to set: with every column in the key a
    no-op assignment keeps a redelivered row from failing. String and bytes keys get
    MySQL's indexable VARCHAR(256)/VARBINARY(767) (a TEXT or BLOB key is refused)."""
    schema = Schema.struct([("name", STRING_SCHEMA), ("raw", BYTES_SCHEMA)])
    task = start_task(insert_mode="upsert", pk_mode="record_value")
    long_name = "ü" * 256
    rows = [
        record(schema, {"name": long_name, "raw": b"\x00" * 767}, topic="keys"),
        record(schema, {"name": "a", "raw": b"\xff"}, topic="keys"),
    ]
    task.put(rows)
    task.put(rows + rows)
    assert sorted(query(mysql_url, "SELECT name, raw FROM `keys`")) == [
        ("a", b"\xff"),
        (long_name, b"\x00" * 767),
    ]
    types = dict(
        query(
            mysql_url,
            "SELECT column_name, column_type FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name = 'keys'",
        )
    )
    assert types == {"name": "varchar(256)", "raw": "varbinary(767)"}


ORDER = Schema.struct([("id", INT64_SCHEMA), ("qty", INT32_SCHEMA)])


def test_a_connection_killed_mid_put_leaves_nothing_of_it_and_the_retry_is_exact(
    mysql_server: MysqlServer, mysql_url: str, start_task: Callable[..., JdbcSinkTask]
) -> None:
    """The second put writes `orders` and then `audit`, whose trigger sleeps; the server
    kills the sink's connection meanwhile, as a crash of the database connection would.
    The put's transaction dies with it: none of its rows in either table, the error is
    retriable, and the redelivered put (upsert) ends exact."""
    database = sa.make_url(mysql_url).database
    task = start_task(insert_mode="upsert", pk_mode="record_value", pk_fields="id")
    first = [record(ORDER, {"id": i, "qty": i}, topic="orders", offset=i) for i in range(3)]
    first.append(record(ORDER, {"id": 100, "qty": 0}, topic="audit", offset=0))
    task.put(first)
    engine = sa.create_engine(mysql_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TRIGGER slow BEFORE INSERT ON audit FOR EACH ROW "
            "SET NEW.qty = NEW.qty + SLEEP(2)"
        )
    engine.dispose()
    second = [
        record(ORDER, {"id": i, "qty": 10 + i}, topic="orders", offset=10 + i) for i in range(5)
    ]
    second.append(record(ORDER, {"id": 101, "qty": 1}, topic="audit", offset=1))

    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 20
        conn = pymysql.connect(unix_socket=str(mysql_server.socket), user="root", autocommit=True)
        try:
            with conn.cursor() as cur:
                while time.monotonic() < deadline and not killed:
                    cur.execute(
                        "SELECT id FROM information_schema.processlist "
                        "WHERE db = %s AND info LIKE %s",
                        (database, "%INSERT INTO `audit`%"),
                    )
                    for (session,) in cur.fetchall():
                        cur.execute(f"KILL CONNECTION {int(session)}")
                        killed.append(int(session))
                    time.sleep(0.02)
        finally:
            conn.close()

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        with pytest.raises(RetriableError, match="transient"):
            task.put(second)
    finally:
        thread.join(30)
    assert killed, "the sink's statement was never seen on the server"
    assert query(mysql_url, "SELECT id, qty FROM orders ORDER BY id") == [(0, 0), (1, 1), (2, 2)]
    assert query(mysql_url, "SELECT id, qty FROM audit") == [(100, 0)]
    query(mysql_url, "SELECT 1")  # the server lives on
    engine = sa.create_engine(mysql_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TRIGGER slow")
    engine.dispose()
    task.put(first)  # redelivery from the last committed offsets
    task.put(second)
    assert query(mysql_url, "SELECT id, qty FROM orders ORDER BY id") == [
        (i, 10 + i) for i in range(5)
    ]
    assert query(mysql_url, "SELECT id, qty FROM audit ORDER BY id") == [(100, 0), (101, 1)]


def test_infinities_are_a_record_error_not_a_retry(
    mysql_url: str, start_task: Callable[..., JdbcSinkTask]
) -> None:
    """MySQL's DOUBLE has no infinity: the record is refused, named, and nothing of the
    put is written (never silently NULL)."""
    schema = Schema.struct([("id", INT32_SCHEMA), ("f", FLOAT64_SCHEMA)])
    task = start_task(pk_mode="record_value", pk_fields="id")
    task.put([record(schema, {"id": 1, "f": 1.5}, topic="floats")])
    with pytest.raises(RecordWriteError) as refused:
        task.put([record(schema, {"id": 2, "f": float("inf")}, topic="floats", offset=7)])
    assert (refused.value.topic, refused.value.offset) == ("floats", 7)
    assert query(mysql_url, "SELECT * FROM floats") == [(1, 1.5)]


def test_mysql_errors_are_retried_by_their_code() -> None:
    """PyMySQL raises OperationalError for data errors too (a failed CHECK is 4025):
    only connection loss, deadlocks, lock timeouts and the like are transient."""
    dialect = sa.create_engine("mysql+pymysql://u@127.0.0.1/d").dialect

    def wrapped(code: int) -> sa.exc.OperationalError:
        return sa.exc.OperationalError("INSERT …", {}, pymysql.err.OperationalError(code, "x"))

    for code in (1205, 1213, 2006, 2013, 1927):
        assert is_transient(wrapped(code), dialect), code
        assert is_transient(pymysql.err.OperationalError(code, "x"), dialect), code
    for code in (4025, 1366, 1142, 1054):
        assert not is_transient(wrapped(code), dialect), code
    assert is_transient(pymysql.err.InterfaceError(0, ""), dialect)
    assert not is_transient(pymysql.err.IntegrityError(1062, "dup"), dialect)
    postgres = sa.create_engine("postgresql+psycopg2://u@127.0.0.1/d").dialect
    assert is_transient(wrapped(4025), postgres)  # elsewhere the class decides


def test_a_mariadb_url_maps_types_as_mysql_does(
    mysql_server: MysqlServer, mysql_url: str, start_task: Callable[..., JdbcSinkTask]
) -> None:
    """SQLAlchemy names the dialect `mariadb` for a mariadb:// URL: the same DDL."""
    url = mysql_url.replace("mysql+pymysql://", "mariadb+pymysql://", 1)
    schema = Schema.struct([("k", STRING_SCHEMA), ("ts", Timestamp.schema())])
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)
    task = start_task(url, insert_mode="upsert", pk_mode="record_value", pk_fields="k")
    task.put([record(schema, {"k": "a", "ts": at}, topic="m")])
    task.put([record(schema, {"k": "a", "ts": at}, topic="m")])
    assert query(mysql_url, "SELECT k, ts FROM m") == [("a", at.replace(tzinfo=None))]
    types = dict(
        query(
            mysql_url,
            "SELECT column_name, column_type FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name = 'm'",
        )
    )
    assert types == {"k": "varchar(256)", "ts": "datetime(3)"}
