"""JdbcSource against a real PostgreSQL server: the main modes with a restart in the
middle, Confluent's partition names, every column type, time zones, the delay against
the server's clock, and refusals (bad password, missing privileges)."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pytest

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

pytestmark = pytest.mark.postgres
UTC = dt.UTC


def props(url: str, **extra: str) -> dict[str, str]:
    return source_props(url, "pg-", **extra)


def database(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_incrementing_on_a_serial_column_resumes_exactly(postgres_url):
    run(
        postgres_url,
        "CREATE TABLE orders (id serial PRIMARY KEY, name text NOT NULL)",
        "INSERT INTO orders (name) SELECT 'n' || g FROM generate_series(1, 10) g",
    )
    reader = FakeOffsetReader()
    (config,) = task_props(props(postgres_url, mode="incrementing"))
    task = start_task(config, reader)
    first = task.poll()
    assert values(first) == [1, 2, 3]
    assert first[0].source_partition == {
        "protocol": "1",
        "table": f"{database(postgres_url)}.public.orders",
    }
    assert first[0].topic == "pg-orders"
    commit(reader, first[:2])
    task.stop()

    task = start_task(config, reader)
    rest = drain(task)
    assert values(rest) == list(range(3, 11))
    commit(reader, rest)
    run(postgres_url, "INSERT INTO orders (name) VALUES ('late')")
    assert values(drain(task)) == [11]
    task.stop()


def test_timestamp_incrementing_with_timestamptz_resumes_inside_a_tie_group(postgres_url):
    run(
        postgres_url,
        "CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
        "changed timestamptz NOT NULL, body text)",
        "INSERT INTO events (changed, body) SELECT "
        "'2024-03-01 12:00:00.123456+02', 'e' || g FROM generate_series(1, 5) g",
        "INSERT INTO events (changed, body) VALUES ('2024-03-01 12:00:00.123457+02', 'e6')",
    )
    reader = FakeOffsetReader()
    (config,) = task_props(
        props(postgres_url, mode="timestamp+incrementing", timestamp_column_name="changed")
    )
    task = start_task(config, reader)
    first = task.poll()
    assert values(first) == [1, 2, 3]
    stamp = dt.datetime(2024, 3, 1, 10, 0, 0, 123_456, tzinfo=UTC)
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
    run(postgres_url, "UPDATE events SET changed = now(), body = 'again' WHERE id = 2")
    assert values(drain(task)) == [2]
    task.stop()


def test_timestamp_mode_on_naive_timestamps_with_db_timezone(postgres_url):
    run(
        postgres_url,
        "CREATE TABLE t (id int PRIMARY KEY, ts timestamp(6) NOT NULL)",
        "INSERT INTO t VALUES (1, '2024-07-01 12:00:00.000001'), (2, '2024-07-01 13:00:00')",
    )
    reader = FakeOffsetReader()
    config = props(
        postgres_url, mode="timestamp", timestamp_column_name="ts", db_timezone="Europe/Berlin"
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


def test_the_delay_uses_the_servers_clock(postgres_url):
    run(
        postgres_url,
        "CREATE TABLE t (id int PRIMARY KEY, ts timestamptz NOT NULL)",
        "INSERT INTO t VALUES (1, now() - interval '2 hours'), (2, now() - interval '1 minute')",
    )
    config = props(
        postgres_url,
        mode="timestamp",
        timestamp_column_name="ts",
        timestamp_delay_interval_ms=str(3600_000),
    )
    task = start_task(task_props(config)[0])
    assert values(drain(task)) == [1]
    task.stop()


def test_bulk_and_a_custom_query(postgres_url):
    run(
        postgres_url,
        "CREATE SCHEMA shop",
        'CREATE TABLE shop."Items" (id int PRIMARY KEY, price numeric(8, 2) NOT NULL)',
        'INSERT INTO shop."Items" VALUES (1, 9.99), (2, 100.00)',
    )
    task = start_task(task_props(props(postgres_url, mode="bulk"))[0])
    records = drain(task)
    assert [r.value.get("price") for r in records] == [
        decimal.Decimal("9.99"),
        decimal.Decimal("100.00"),
    ]
    assert records[0].source_partition["table"] == f"{database(postgres_url)}.shop.Items"
    assert records[0].topic == "pg-Items"
    task.stop()

    query = 'SELECT id, price, price * 2 AS doubled, now() AS at FROM shop."Items"'
    config = props(postgres_url, mode="incrementing", query=query, incrementing_column_name="id")
    task = start_task(task_props(config)[0])
    records = drain(task)
    assert values(records) == [1, 2]
    schema = records[0].value_schema
    assert schema.field("price").schema.name == Decimal.LOGICAL_NAME
    assert schema.field("doubled").schema.type is Type.STRING  # no declared scale
    assert schema.field("at").schema.name == Timestamp.LOGICAL_NAME
    assert records[0].value.get("price") == decimal.Decimal("9.99")
    assert records[0].value.get("doubled") == "19.98"
    task.stop()


def test_postgres_types_map_to_connect_schemas(postgres_url):
    run(
        postgres_url,
        """CREATE TABLE typed (
            id serial PRIMARY KEY,
            sm smallint NOT NULL, i int, b bigint, r real, d double precision,
            n numeric(12, 3), nu numeric, bo boolean, t text, v varchar(5), c char(2),
            by bytea, da date, ti time, ts timestamp, tz timestamptz, u uuid, j jsonb,
            iv interval
        )""",
        """INSERT INTO typed (sm, i, b, r, d, n, nu, bo, t, v, c, by, da, ti, ts, tz, u, j, iv)
           VALUES (1, 2, 9000000000, 1.5, 2.25, 123456789.125, 1.0000000000000000001, true,
                   'text', 'var', 'c', '\\x00ff', '2024-02-29', '13:14:15.123456',
                   '2024-02-29 13:14:15.123456', '2024-02-29 13:14:15.5+01',
                   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"k": [1, 2]}', '1 day')""",
        "INSERT INTO typed (sm) VALUES (0)",
    )
    task = start_task(task_props(props(postgres_url, mode="bulk"))[0])
    first, second = drain(task)
    schema = first.value_schema
    assert schema.name == "typed"
    kinds = {f.name: (f.schema.type, f.schema.name, f.schema.optional) for f in schema.fields}
    assert kinds == {
        "id": (Type.INT32, None, False),
        "sm": (Type.INT16, None, False),
        "i": (Type.INT32, None, True),
        "b": (Type.INT64, None, True),
        "r": (Type.FLOAT32, None, True),
        "d": (Type.FLOAT64, None, True),
        "n": (Type.BYTES, Decimal.LOGICAL_NAME, True),
        "nu": (Type.STRING, None, True),  # no fixed scale: its exact text
        "bo": (Type.BOOLEAN, None, True),
        "t": (Type.STRING, None, True),
        "v": (Type.STRING, None, True),
        "c": (Type.STRING, None, True),
        "by": (Type.BYTES, None, True),
        "da": (Type.INT32, Date.LOGICAL_NAME, True),
        "ti": (Type.INT32, Time.LOGICAL_NAME, True),
        "ts": (Type.INT64, Timestamp.LOGICAL_NAME, True),
        "tz": (Type.INT64, Timestamp.LOGICAL_NAME, True),
        "u": (Type.STRING, None, True),
        "j": (Type.STRING, None, True),
    }  # interval has no Connect type: left out
    value = first.value
    assert value.get("b") == 9_000_000_000
    assert value.get("n") == decimal.Decimal("123456789.125")
    assert value.get("nu") == "1.0000000000000000001"
    assert value.get("by") == b"\x00\xff"
    assert value.get("ti") == dt.time(13, 14, 15, 123_456)
    assert value.get("ts") == dt.datetime(2024, 2, 29, 13, 14, 15, 123_456, tzinfo=UTC)
    assert value.get("tz") == dt.datetime(2024, 2, 29, 12, 14, 15, 500_000, tzinfo=UTC)
    assert uuid.UUID(value.get("u")) == uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    assert value.get("j") == '{"k":[1,2]}'
    assert second.value.get("i") is None and second.value.get("sm") == 0
    task.stop()


def test_a_wrong_password_is_refused_naming_the_url(postgres_server, postgres_url):
    postgres_server.execute("CREATE ROLE reader LOGIN PASSWORD 'right'")
    try:
        config = props(postgres_url, mode="bulk") | {
            "connection.user": "reader",
            "connection.password": "wrong",
        }
        with pytest.raises(ConfigError, match="password authentication failed") as caught:
            start_connector(config)
        assert caught.value.name == "connection.url" and "wrong" not in str(caught.value)
    finally:
        postgres_server.execute("DROP ROLE reader")


def test_missing_privileges_are_refused_clearly(postgres_server, postgres_url):
    run(
        postgres_url,
        "CREATE TABLE secret (id serial PRIMARY KEY)",
        "CREATE TABLE open (id serial PRIMARY KEY)",
        "CREATE ROLE reader LOGIN PASSWORD 'pw'",
        "GRANT SELECT ON open TO reader",
    )
    try:
        config = props(postgres_url, mode="incrementing") | {
            "connection.user": "reader",
            "connection.password": "pw",
        }
        with pytest.raises(ConfigError, match="permission denied for table secret") as caught:
            start_connector(config | {"table.whitelist": "open,secret"})
        assert caught.value.name == "table.whitelist"

        (task_config,) = task_props(config)  # every table: the task finds out
        task = start_task(json_tables(task_config, ["secret"]))
        with pytest.raises(ConnectError, match=r"secret.*permission denied"):
            drain(task)
        task.stop()
    finally:
        run(postgres_url, "DROP OWNED BY reader", "DROP ROLE reader")


def json_tables(config: dict[str, str], names: list[str]) -> dict[str, str]:
    import json

    return config | {"tables": json.dumps([["public", n] for n in names])}
