"""JdbcSource against a real MySQL-protocol server (MariaDB): every mode, with a restart
in the middle, Confluent's partition names (`<database>.<table>`: a MySQL schema is its
database), backticked names, MySQL's column types, time zones, the delay against the
server's clock, and refusals (bad password, missing privileges)."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pytest
import sqlalchemy as sa

from connect.api import ConfigError, ConnectError, Date, Decimal, Time, Timestamp, Type
from tests.connectors.fakes import FakeOffsetReader
from tests.connectors.jdbc.source_helpers import (
    commit,
    drain,
    run,
    source_props,
    start_connector,
    start_task,
    task_props,
    values,
)
from tests.mysql import MysqlServer

pytestmark = pytest.mark.mysql
UTC = dt.UTC


def props(url: str, **extra: str) -> dict[str, str]:
    return source_props(url, "my-", **extra)


def database(url: str) -> str:
    return sa.make_url(url).database or ""


def test_incrementing_on_an_auto_increment_column_resumes_exactly(mysql_url: str) -> None:
    run(
        mysql_url,
        "CREATE TABLE orders (id INT AUTO_INCREMENT PRIMARY KEY, name TEXT NOT NULL)",
        "INSERT INTO orders (name) VALUES " + ", ".join(f"('n{i}')" for i in range(1, 11)),
    )
    reader = FakeOffsetReader()
    (config,) = task_props(props(mysql_url, mode="incrementing"))
    task = start_task(config, reader)
    first = task.poll()
    assert values(first) == [1, 2, 3]
    assert first[0].source_partition == {
        "protocol": "1",
        "table": f"{database(mysql_url)}.orders",
    }
    assert first[0].topic == "my-orders"
    commit(reader, first[:2])
    task.stop()

    task = start_task(config, reader)
    rest = drain(task)
    assert values(rest) == list(range(3, 11))
    commit(reader, rest)
    run(mysql_url, "INSERT INTO orders (name) VALUES ('late')")
    assert values(drain(task)) == [11]
    task.stop()


def test_timestamp_incrementing_on_datetime6_resumes_inside_a_tie_group(mysql_url: str) -> None:
    run(
        mysql_url,
        "CREATE TABLE events (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
        "changed DATETIME(6) NOT NULL, body TEXT)",
        "INSERT INTO events (changed, body) VALUES "
        + ", ".join(f"('2024-03-01 12:00:00.123456', 'e{i}')" for i in range(1, 6)),
        "INSERT INTO events (changed, body) VALUES ('2024-03-01 12:00:00.123457', 'e6')",
    )
    reader = FakeOffsetReader()
    (config,) = task_props(
        props(mysql_url, mode="timestamp+incrementing", timestamp_column_name="changed")
    )
    task = start_task(config, reader)
    first = task.poll()
    assert values(first) == [1, 2, 3]
    stamp = dt.datetime(2024, 3, 1, 12, 0, 0, 123_456, tzinfo=UTC)  # db.timezone: UTC
    assert first[0].value.get("changed") == stamp
    assert first[2].source_offset == {
        "incrementing": 3,
        "timestamp": int(stamp.timestamp() * 1000),
        "timestamp_nanos": 123_456_000,  # microseconds kept in the offset
    }
    commit(reader, first)
    task.stop()

    task = start_task(config, reader)
    rest = drain(task)
    assert values(rest) == [4, 5, 6]  # the rest of the group, then the microsecond after
    commit(reader, rest)
    run(mysql_url, "UPDATE events SET changed = NOW(6), body = 'again' WHERE id = 2")
    assert values(drain(task)) == [2]
    task.stop()


def test_timestamp_mode_with_db_timezone(mysql_url: str) -> None:
    run(
        mysql_url,
        "CREATE TABLE t (id INT PRIMARY KEY, ts DATETIME(6) NOT NULL)",
        "INSERT INTO t VALUES (1, '2024-07-01 12:00:00.000001'), (2, '2024-07-01 13:00:00')",
    )
    reader = FakeOffsetReader()
    config = props(
        mysql_url, mode="timestamp", timestamp_column_name="ts", db_timezone="Europe/Berlin"
    )
    (task_config,) = task_props(config)
    task = start_task(task_config, reader)
    records = drain(task)
    assert values(records) == [1, 2]
    assert records[0].value.get("ts") == dt.datetime(2024, 7, 1, 10, 0, 0, 1, tzinfo=UTC)
    commit(reader, records[:1])
    task.stop()
    task = start_task(task_config, reader)
    assert values(drain(task)) == [2]  # bound as Berlin wall-clock time: compares right
    task.stop()


def test_the_delay_uses_the_servers_clock(mysql_url: str) -> None:
    run(
        mysql_url,
        "CREATE TABLE t (id INT PRIMARY KEY, ts DATETIME(6) NOT NULL)",
        "INSERT INTO t VALUES (1, NOW(6) - INTERVAL 2 HOUR), (2, NOW(6) - INTERVAL 1 MINUTE)",
    )
    config = props(
        mysql_url,
        mode="timestamp",
        timestamp_column_name="ts",
        timestamp_delay_interval_ms=str(3600_000),
    )
    task = start_task(task_props(config)[0])
    assert values(drain(task)) == [1]
    task.stop()


def test_bulk_and_a_custom_query_with_backticked_names(mysql_url: str) -> None:
    run(
        mysql_url,
        "CREATE TABLE `Odd Items` (id INT PRIMARY KEY, `select` DECIMAL(8, 2) NOT NULL, "
        "`we``ird` VARCHAR(10))",
        "INSERT INTO `Odd Items` VALUES (1, 9.99, 'a'), (2, 100.00, NULL)",
    )
    task = start_task(task_props(props(mysql_url, mode="bulk"))[0])
    records = drain(task)
    assert [r.value.get("select") for r in records] == [
        decimal.Decimal("9.99"),
        decimal.Decimal("100.00"),
    ]
    assert [r.value.get("we`ird") for r in records] == ["a", None]
    assert records[0].source_partition["table"] == f"{database(mysql_url)}.Odd Items"
    assert records[0].topic == "my-Odd Items"
    task.stop()

    query = "SELECT id, `select`, `select` * 2 AS doubled, NOW() AS at FROM `Odd Items`"
    config = props(mysql_url, mode="incrementing", query=query, incrementing_column_name="id")
    task = start_task(task_props(config)[0])
    records = drain(task)
    assert values(records) == [1, 2]
    schema = records[0].value_schema
    assert schema.field("select").schema.name == Decimal.LOGICAL_NAME
    assert schema.field("at").schema.name == Timestamp.LOGICAL_NAME
    assert records[0].value.get("select") == decimal.Decimal("9.99")
    assert decimal.Decimal(str(records[0].value.get("doubled"))) == decimal.Decimal("19.98")
    task.stop()


def test_mysql_types_map_to_connect_schemas(mysql_url: str) -> None:
    run(
        mysql_url,
        """CREATE TABLE typed (
            id INT AUTO_INCREMENT PRIMARY KEY,
            ti TINYINT NOT NULL, sm SMALLINT, i INT, b BIGINT, bu BIGINT UNSIGNED,
            r FLOAT, d DOUBLE, n DECIMAL(12, 3), bo BOOLEAN, t TEXT, v VARCHAR(5),
            c CHAR(2), vb VARBINARY(4), bl BLOB, da DATE, tm TIME(6), dt DATETIME(6),
            d0 DATETIME, j JSON
        )""",
        """INSERT INTO typed (ti, sm, i, b, bu, r, d, n, bo, t, v, c, vb, bl, da, tm, dt,
                              d0, j)
           VALUES (-1, 2, 3, 9000000000, 18446744073709551615, 1.5, 2.25, 123456789.125,
                   TRUE, 'text', 'var', 'c', X'00FF', X'0102', '2024-02-29',
                   '13:14:15.123456', '2024-02-29 13:14:15.123456', '2024-02-29 13:14:15',
                   '{"k": [1, 2]}')""",
        "INSERT INTO typed (ti) VALUES (0)",
    )
    task = start_task(task_props(props(mysql_url, mode="bulk"))[0])
    first, second = drain(task)
    schema = first.value_schema
    kinds = {f.name: (f.schema.type, f.schema.name, f.schema.optional) for f in schema.fields}
    assert kinds == {
        "id": (Type.INT32, None, False),
        "ti": (Type.INT8, None, False),
        "sm": (Type.INT16, None, True),
        "i": (Type.INT32, None, True),
        "b": (Type.INT64, None, True),
        "bu": (Type.BYTES, Decimal.LOGICAL_NAME, True),  # past int64: exact, as a decimal
        "r": (Type.FLOAT32, None, True),
        "d": (Type.FLOAT64, None, True),
        "n": (Type.BYTES, Decimal.LOGICAL_NAME, True),
        "bo": (Type.INT8, None, True),  # BOOLEAN is TINYINT(1) in MySQL
        "t": (Type.STRING, None, True),
        "v": (Type.STRING, None, True),
        "c": (Type.STRING, None, True),
        "vb": (Type.BYTES, None, True),
        "bl": (Type.BYTES, None, True),
        "da": (Type.INT32, Date.LOGICAL_NAME, True),
        "tm": (Type.INT32, Time.LOGICAL_NAME, True),
        "dt": (Type.INT64, Timestamp.LOGICAL_NAME, True),
        "d0": (Type.INT64, Timestamp.LOGICAL_NAME, True),
        "j": (Type.STRING, None, True),
    }
    value = first.value
    assert value.get("ti") == -1 and value.get("b") == 9_000_000_000
    assert value.get("bu") == decimal.Decimal(18446744073709551615)
    assert value.get("n") == decimal.Decimal("123456789.125")
    assert value.get("vb") == b"\x00\xff" and value.get("bl") == b"\x01\x02"
    assert value.get("da") == dt.date(2024, 2, 29)
    assert value.get("tm") == dt.time(13, 14, 15, 123_456)
    assert value.get("dt") == dt.datetime(2024, 2, 29, 13, 14, 15, 123_456, tzinfo=UTC)
    assert json.loads(value.get("j")) == {"k": [1, 2]}
    assert second.value.get("i") is None and second.value.get("ti") == 0
    task.stop()


def test_a_wrong_password_is_refused_naming_the_url(
    mysql_server: MysqlServer, mysql_url: str
) -> None:
    mysql_server.execute("CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY 'right'")
    try:
        config = props(mysql_url, mode="bulk") | {
            "connection.user": "reader",
            "connection.password": "wrong",
        }
        with pytest.raises(ConfigError, match="Access denied") as caught:
            start_connector(config)
        assert caught.value.name == "connection.url" and "wrong" not in str(caught.value)
    finally:
        mysql_server.execute("DROP USER 'reader'@'127.0.0.1'")


def test_missing_privileges_are_refused_clearly(mysql_server: MysqlServer, mysql_url: str) -> None:
    name = database(mysql_url)
    run(
        mysql_url,
        "CREATE TABLE secret (id INT AUTO_INCREMENT PRIMARY KEY)",
        "CREATE TABLE open (id INT AUTO_INCREMENT PRIMARY KEY)",
    )
    mysql_server.execute(
        "CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY 'pw'",
        f"GRANT SELECT ON `{name}`.`open` TO 'reader'@'127.0.0.1'",
    )
    try:
        config = props(mysql_url, mode="incrementing") | {
            "connection.user": "reader",
            "connection.password": "pw",
        }
        with pytest.raises(ConfigError, match="secret") as caught:
            start_connector(config | {"table.whitelist": "open,secret"})
        assert caught.value.name == "table.whitelist"

        (task_config,) = task_props(config | {"table.whitelist": "open"})
        task = start_task(task_config | {"tables": json.dumps([[None, "secret"]])})
        with pytest.raises(ConnectError, match=r"secret.*denied"):  # not retried forever
            drain(task)
        task.stop()
    finally:
        mysql_server.execute("DROP USER 'reader'@'127.0.0.1'")
