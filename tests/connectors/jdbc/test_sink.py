"""JdbcSinkTask against SQLite, PostgreSQL and MySQL (one suite over `db_url`):
every insert and pk mode, auto-create/evolve, deletes, schemaless values, awkward
values, one transaction per put, and redelivery after a crash made exact by upsert."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from connect.api import (
    BYTES_SCHEMA,
    FLOAT64_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConnectError,
    DataError,
    Date,
    Decimal,
    RetriableError,
    Schema,
    SinkRecord,
    Struct,
    Time,
    Timestamp,
    Type,
)
from connectors.jdbc.sink import JdbcSinkTask
from connectors.jdbc.sink_tables import TableSchemaError

# ------------------------------------------------------------------ fixtures


class Db:
    """A database under test: its URL, an engine to look with, and helpers."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = sa.create_engine(url)
        self.name = self.engine.dialect.name

    def rows(self, table: str, order_by: str = "1") -> list[tuple]:
        quoted = self.engine.dialect.identifier_preparer.quote_identifier(table)
        with self.engine.connect() as conn:
            return [
                tuple(r)
                for r in conn.exec_driver_sql(f"SELECT * FROM {quoted} ORDER BY {order_by}")
            ]

    def columns(self, table: str) -> dict[str, dict[str, Any]]:
        with self.engine.connect() as conn:
            return {c["name"]: c for c in sa.inspect(conn).get_columns(table)}

    def key(self, table: str) -> list[str]:
        with self.engine.connect() as conn:
            return list(sa.inspect(conn).get_pk_constraint(table)["constrained_columns"])

    def execute(self, *statements: str) -> None:
        with self.engine.begin() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)


@pytest.fixture
def db(db_url: str) -> Iterator[Db]:
    database = Db(db_url)
    yield database
    database.engine.dispose()


class Context:
    """The SinkTaskContext calls the task makes: the retry backoff."""

    def __init__(self) -> None:
        self.timeouts: list[int] = []

    def timeout(self, timeout_ms: int) -> None:
        self.timeouts.append(timeout_ms)


@pytest.fixture
def start_task(db: Db) -> Iterator[Callable[..., JdbcSinkTask]]:
    """Started tasks on `db` with the given config keys (`_` for `.`); stopped after."""
    tasks: list[JdbcSinkTask] = []

    def factory(**config: str) -> JdbcSinkTask:
        props = {"connection.url": db.url, "auto.create": "true"}
        props.update({k.replace("_", "."): v for k, v in config.items()})
        task = JdbcSinkTask()
        task.initialize(Context())  # type: ignore[arg-type]
        task.start(props)
        tasks.append(task)
        return task

    yield factory
    for task in tasks:
        task.stop()


ORDER = Schema.struct(
    [
        ("id", INT64_SCHEMA),
        ("name", OPTIONAL_STRING_SCHEMA),
        ("qty", OPTIONAL_INT32_SCHEMA),
    ],
    name="order",
)
_offsets = itertools.count()


def order(
    id_: int,
    name: str | None = "x",
    qty: int | None = 1,
    *,
    topic: str = "orders",
    key: Any = None,
    key_schema: Schema | None = None,
    offset: int | None = None,
    partition: int = 0,
) -> SinkRecord:
    return SinkRecord(
        topic=topic,
        kafka_partition=partition,
        kafka_offset=next(_offsets) if offset is None else offset,
        key_schema=key_schema,
        key=key,
        value_schema=ORDER,
        value=Struct(ORDER, {"id": id_, "name": name, "qty": qty}),
    )


def keyed(id_: int, name: str | None = "x", qty: int | None = 1) -> SinkRecord:
    """An order keyed by its id (a primitive int64 key)."""
    return order(id_, name, qty, key=id_, key_schema=INT64_SCHEMA)


def tombstone(id_: int, *, topic: str = "orders") -> SinkRecord:
    return SinkRecord(
        topic=topic,
        kafka_partition=0,
        kafka_offset=next(_offsets),
        key_schema=INT64_SCHEMA,
        key=id_,
        value_schema=None,
        value=None,
    )


# ------------------------------------------------------------ insert modes


def test_insert_without_a_key_creates_the_table_from_the_schema(db: Db, start_task) -> None:
    task = start_task()
    task.put([order(1, "a", 2), order(2, None, None)])
    task.put([order(1, "a", 2)])  # no key: a redelivered row is a second row
    assert db.rows("orders", "id, name") == [(1, "a", 2), (1, "a", 2), (2, None, None)]
    columns = db.columns("orders")
    assert list(columns) == ["id", "name", "qty"]
    assert not columns["id"]["nullable"] and columns["name"]["nullable"]
    assert db.key("orders") == []


def test_empty_puts_do_nothing(db: Db, start_task) -> None:
    task = start_task()
    task.put([])
    with db.engine.connect() as conn:
        assert not sa.inspect(conn).has_table("orders")


def test_insert_with_a_record_value_key_refuses_a_duplicate_and_writes_nothing_of_the_put(
    db: Db, start_task
) -> None:
    task = start_task(pk_mode="record_value", pk_fields="id")
    task.put([order(1, "a")])
    with pytest.raises(ConnectError, match="writing 2 records failed"):
        task.put([order(2, "b"), order(1, "again")])
    assert db.rows("orders") == [(1, "a", 1)]
    assert db.key("orders") == ["id"]


def test_upsert_updates_by_key_and_the_last_record_of_a_key_wins(db: Db, start_task) -> None:
    task = start_task(insert_mode="upsert", pk_mode="record_value", pk_fields="id")
    task.put([order(1, "a", 1), order(2, "b", 2)])
    task.put([order(1, "a2", 10), order(3, "c", 3), order(1, "a3", None), order(3, "c2", 4)])
    assert db.rows("orders") == [(1, "a3", None), (2, "b", 2), (3, "c2", 4)]


def test_update_changes_existing_rows_only(db: Db, start_task) -> None:
    start_task(pk_mode="record_value", pk_fields="id").put([order(1, "a"), order(2, "b")])
    task = start_task(insert_mode="update", pk_mode="record_value", pk_fields="id")
    task.put([order(2, "b2", 5), order(9, "nobody"), order(2, "b3", 6)])
    assert db.rows("orders") == [(1, "a", 1), (2, "b3", 6)]


# ---------------------------------------------------------------- pk modes


def test_pk_mode_kafka_keys_rows_by_topic_partition_offset(db: Db, start_task) -> None:
    task = start_task(insert_mode="upsert", pk_mode="kafka")
    batch = [order(7, "a", offset=10), order(7, "b", offset=11, partition=1)]
    task.put(batch)
    task.put(batch)  # redelivered: the same coordinates, the same rows
    assert db.key("orders") == ["__connect_topic", "__connect_partition", "__connect_offset"]
    assert db.rows("orders", "__connect_offset") == [
        ("orders", 0, 10, 7, "a", 1),
        ("orders", 1, 11, 7, "b", 1),
    ]


def test_pk_mode_kafka_with_own_column_names(db: Db, start_task) -> None:
    task = start_task(pk_mode="kafka", pk_fields="t,p,o")
    task.put([order(1, offset=5)])
    assert db.rows("orders") == [("orders", 0, 5, 1, "x", 1)]
    assert db.key("orders") == ["t", "p", "o"]


def test_pk_mode_record_key_primitive(db: Db, start_task) -> None:
    task = start_task(insert_mode="upsert", pk_mode="record_key", pk_fields="order_id")
    task.put(
        [
            order(1, "a", key=100, key_schema=INT64_SCHEMA),
            order(2, "b", key=100, key_schema=INT64_SCHEMA),
        ]
    )
    # The key column comes first; the value's own fields follow.
    assert db.rows("orders") == [(100, 2, "b", 1)]
    assert db.key("orders") == ["order_id"]


def test_pk_mode_record_key_primitive_needs_one_column_name(db: Db, start_task) -> None:
    task = start_task(pk_mode="record_key")
    with pytest.raises(DataError, match="exactly one column"):
        task.put([keyed(1)])


def test_pk_mode_record_key_struct_all_fields_or_the_named_ones(db: Db, start_task) -> None:
    key_schema = Schema.struct([("region", STRING_SCHEMA), ("n", INT32_SCHEMA)])
    value_schema = Schema.struct([("note", OPTIONAL_STRING_SCHEMA)])

    def rec(topic: str, region: str, n: int, note: str) -> SinkRecord:
        return SinkRecord(
            topic=topic,
            kafka_partition=0,
            kafka_offset=next(_offsets),
            key_schema=key_schema,
            key=Struct(key_schema, {"region": region, "n": n}),
            value_schema=value_schema,
            value=Struct(value_schema, {"note": note}),
        )

    start_task(insert_mode="upsert", pk_mode="record_key").put(
        [rec("both", "eu", 1, "a"), rec("both", "us", 1, "b"), rec("both", "eu", 1, "c")]
    )
    assert db.rows("both", "region") == [("eu", 1, "c"), ("us", 1, "b")]
    assert db.key("both") == ["region", "n"]
    start_task(insert_mode="upsert", pk_mode="record_key", pk_fields="n").put(
        [rec("one", "eu", 1, "a"), rec("one", "us", 1, "b")]
    )
    assert db.rows("one") == [(1, "b")]
    with pytest.raises(DataError, match=r"pk\.fields"):
        start_task(pk_mode="record_key", pk_fields="nope").put([rec("bad", "eu", 1, "a")])


def test_pk_mode_record_value_defaults_to_every_field(db: Db, start_task) -> None:
    start_task(insert_mode="upsert", pk_mode="record_value").put([order(1), order(1), order(2)])
    assert db.key("orders") == ["id", "name", "qty"]
    assert db.rows("orders") == [(1, "x", 1), (2, "x", 1)]


def test_fields_whitelist_limits_the_value_columns_not_the_key(db: Db, start_task) -> None:
    task = start_task(pk_mode="record_value", pk_fields="id", fields_whitelist="qty")
    task.put([order(1, "dropped", 3)])
    assert db.rows("orders") == [(1, 3)]
    start_task(table_name_format="inc_${topic}", fields_include_list="name").put([order(4, "kept")])
    assert db.rows("inc_orders") == [("kept",)]


# ------------------------------------------------------------------ deletes


def test_tombstones_delete_rows_in_record_order(db: Db, start_task) -> None:
    task = start_task(
        insert_mode="upsert", pk_mode="record_key", pk_fields="id", delete_enabled="true"
    )
    task.put([keyed(1, "a"), keyed(2, "b"), keyed(3, "c")])
    task.put([tombstone(1), keyed(2, "b2"), tombstone(2), tombstone(3), keyed(3, "back")])
    assert db.rows("orders") == [(3, "back", 1)]  # the key column "id" is the value's "id"
    task.put([tombstone(42)])  # nothing to delete is fine
    task.put([tombstone(5, topic="never_written")])  # no table: nothing to delete
    assert db.rows("orders") == [(3, "back", 1)]  # the key column "id" is the value's "id"


def test_a_tombstone_without_delete_enabled_is_a_data_error(db: Db, start_task) -> None:
    task = start_task(insert_mode="upsert", pk_mode="record_key", pk_fields="id")
    with pytest.raises(DataError, match=r"delete\.enabled"):
        task.put([keyed(1), tombstone(1)])


# --------------------------------------------------------- create / evolve


def test_missing_table_without_auto_create_is_refused(db: Db, start_task) -> None:
    task = start_task(auto_create="false")
    with pytest.raises(TableSchemaError, match=r"auto\.create is disabled"):
        task.put([order(1)])


def test_auto_evolve_adds_missing_optional_fields_as_nullable_columns(db: Db, start_task) -> None:
    start_task(pk_mode="record_value", pk_fields="id").put([order(1, "a", 1)])
    wider = Schema.struct(
        [
            ("id", INT64_SCHEMA),
            ("name", OPTIONAL_STRING_SCHEMA),
            ("qty", OPTIONAL_INT32_SCHEMA),
            ("note", OPTIONAL_STRING_SCHEMA),
            ("rank", INT32_SCHEMA.with_(default=7)),
        ]
    )
    record = SinkRecord(
        topic="orders",
        kafka_partition=0,
        kafka_offset=99,
        value_schema=wider,
        value=Struct(wider, {"id": 2, "name": "b", "qty": 2, "note": "new"}),
    )
    with pytest.raises(TableSchemaError, match=r"auto\.evolve is disabled"):
        start_task(pk_mode="record_value", pk_fields="id").put([record])
    task = start_task(pk_mode="record_value", pk_fields="id", auto_evolve="true")
    task.put([record])
    columns = db.columns("orders")
    assert list(columns) == ["id", "name", "qty", "note", "rank"]
    assert columns["note"]["nullable"] and columns["rank"]["nullable"]
    # The narrower records still go in; the new columns stay NULL for them.
    task.put([order(3, "c", 3)])
    assert db.rows("orders") == [
        (1, "a", 1, None, None),
        (2, "b", 2, "new", 7),
        (3, "c", 3, None, None),
    ]


def test_auto_evolve_refuses_a_required_field_without_default(db: Db, start_task) -> None:
    start_task().put([order(1)])
    strict = Schema.struct([("id", INT64_SCHEMA), ("must", STRING_SCHEMA)])
    record = SinkRecord(
        topic="orders",
        kafka_partition=0,
        kafka_offset=1,
        value_schema=strict,
        value=Struct(strict, {"id": 1, "must": "x"}),
    )
    with pytest.raises(TableSchemaError, match="neither optional nor has a default"):
        start_task(auto_evolve="true").put([record])
    assert "must" not in db.columns("orders")


def test_types_map_to_sql_types_and_values_round_trip(db: Db, start_task) -> None:
    schema = Schema.struct(
        [
            ("id", Schema(Type.INT8)),
            ("small", Schema(Type.INT16)),
            ("big", INT64_SCHEMA),
            ("f32", Schema(Type.FLOAT32, optional=True)),
            ("f64", OPTIONAL_FLOAT64_SCHEMA),
            ("flag", OPTIONAL_BOOLEAN_SCHEMA),
            ("text", OPTIONAL_STRING_SCHEMA),
            ("raw", OPTIONAL_BYTES_SCHEMA),
            ("money", Decimal.schema(4, optional=True)),
            ("day", Date.schema(optional=True)),
            ("at", Time.schema(optional=True)),
            ("ts", Timestamp.schema(optional=True)),
        ]
    )
    value = {
        "id": 1,
        "small": -300,
        "big": 2**62,
        "f32": 1.5,
        "f64": -2.25,
        "flag": True,
        "text": "héllo",
        "raw": b"\x00\xff\x10",
        "money": decimal.Decimal("123456789012345.6789"),
        "day": dt.date(2024, 2, 29),
        "at": dt.time(13, 14, 15, 123000),
        "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC),
    }
    record = SinkRecord(
        topic="typed",
        kafka_partition=0,
        kafka_offset=0,
        value_schema=schema,
        value=Struct(schema, value),
    )
    start_task(pk_mode="record_value", pk_fields="id").put([record])
    table = sa.Table("typed", sa.MetaData(), autoload_with=db.engine)
    with db.engine.connect() as conn:
        row = conn.execute(sa.select(table)).one()._asdict()
    assert row["id"] == 1 and row["small"] == -300 and row["big"] == 2**62
    assert row["f32"] == 1.5 and row["f64"] == -2.25 and bool(row["flag"]) is True
    assert row["text"] == "héllo" and bytes(row["raw"]) == b"\x00\xff\x10"
    assert decimal.Decimal(str(row["money"])) == value["money"]  # exact, all 19 digits
    assert row["day"] == dt.date(2024, 2, 29) and row["at"] == dt.time(13, 14, 15, 123000)
    assert row["ts"] == dt.datetime(2024, 1, 2, 3, 4, 5, 678000)
    types = {n: str(c["type"]) for n, c in db.columns("typed").items()}
    if db.name == "mysql":  # TIME and DATETIME keep the milliseconds
        with db.engine.connect() as conn:
            declared = dict(
                conn.exec_driver_sql(
                    "SELECT column_name, column_type FROM information_schema.columns "
                    "WHERE table_schema = DATABASE() AND table_name = 'typed'"
                ).all()
            )
        assert (declared["at"], declared["ts"], declared["money"]) == (
            "time(3)",
            "datetime(3)",
            "decimal(65,4)",
        )
    if db.name == "postgresql":
        assert types == {
            "id": "SMALLINT",
            "small": "SMALLINT",
            "big": "BIGINT",
            "f32": "REAL",
            "f64": "DOUBLE PRECISION",
            "flag": "BOOLEAN",
            "text": "TEXT",
            "raw": "BYTEA",
            "money": "NUMERIC",
            "day": "DATE",
            "at": "TIME",
            "ts": "TIMESTAMP",
        }


AWKWARD = [
    "",
    'comma, and "quotes"',
    "new\nline\r\nand\ttab",
    "back\\slash \\N",
    "\\N",
    "NULL",
    "ünïcødé ✓",
]


def test_awkward_strings_nulls_and_floats_survive(db: Db, start_task) -> None:
    schema = Schema.struct(
        [
            ("id", INT32_SCHEMA),
            ("s", OPTIONAL_STRING_SCHEMA),
            ("f", OPTIONAL_FLOAT64_SCHEMA),
            ("b", OPTIONAL_BYTES_SCHEMA),
        ]
    )
    values: list[dict[str, Any]] = [
        {"id": i, "s": s, "f": float(i) / 3, "b": s.encode()} for i, s in enumerate(AWKWARD)
    ]
    values.append({"id": 100, "s": None, "f": None, "b": None})
    values.append({"id": 101, "s": "inf", "f": 1e308, "b": b""})
    values.append({"id": 102, "s": "-inf", "f": -1e308, "b": b"\\x"})
    if db.name != "mysql":  # MySQL has no infinities (test_mysql_sink: refused)
        values[-2]["f"], values[-1]["f"] = float("inf"), float("-inf")
    records = [
        SinkRecord(
            topic="odd",
            kafka_partition=0,
            kafka_offset=i,
            value_schema=schema,
            value=Struct(schema, v),
        )
        for i, v in enumerate(values)
    ]
    task = start_task(insert_mode="upsert", pk_mode="record_value", pk_fields="id")
    task.put(records)
    task.put(records)
    got = [(i, s, f, None if b is None else bytes(b)) for i, s, f, b in db.rows("odd", "id")]
    assert got == [(v["id"], v["s"], v["f"], v["b"]) for v in values]


def test_db_timezone_writes_timestamps_as_local_time(db: Db, start_task) -> None:
    schema = Schema.struct([("id", INT32_SCHEMA), ("ts", Timestamp.schema())])
    instant = dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.UTC)
    record = SinkRecord(
        topic="tz",
        kafka_partition=0,
        kafka_offset=0,
        value_schema=schema,
        value=Struct(schema, {"id": 1, "ts": instant}),
    )
    start_task(db_timezone="Europe/Berlin").put([record])
    table = sa.Table("tz", sa.MetaData(), autoload_with=db.engine)
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(table.c.ts)).scalar() == dt.datetime(2024, 7, 1, 14, 0)


def test_schema_defaults_replace_nulls(db: Db, start_task) -> None:
    schema = Schema.struct(
        [("id", INT32_SCHEMA), ("n", INT32_SCHEMA.with_(default=5, optional=True))]
    )
    record = SinkRecord(
        topic="dflt",
        kafka_partition=0,
        kafka_offset=0,
        value_schema=schema,
        value=Struct(schema, {"id": 1}),
    )
    start_task().put([record])
    start_task(replace_null_with_default="false").put([record])
    assert sorted(db.rows("dflt"), key=lambda r: r[1] is None) == [(1, 5), (1, None)]


def test_nested_fields_are_refused_naming_the_field(db: Db, start_task) -> None:
    # a map (arrays go to PostgreSQL's array columns: test_sink_arrays.py)
    schema = Schema.struct(
        [("id", INT32_SCHEMA), ("tags", Schema.map(STRING_SCHEMA, STRING_SCHEMA))]
    )
    record = SinkRecord(
        topic="nested",
        kafka_partition=0,
        kafka_offset=0,
        value_schema=schema,
        value=Struct(schema, {"id": 1, "tags": {"a": "b"}}),
    )
    with pytest.raises(DataError, match="'tags'"):
        start_task().put([record])


# --------------------------------------------------------------- schemaless


def test_schemaless_map_values_go_into_an_existing_table(db: Db, start_task) -> None:
    db.execute("CREATE TABLE loose (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER)")

    def rec(value: Mapping[str, Any], key: Any = None) -> SinkRecord:
        return SinkRecord(
            topic="loose", kafka_partition=0, kafka_offset=next(_offsets), key=key, value=value
        )

    task = start_task(insert_mode="upsert", pk_mode="record_value", pk_fields="id")
    task.put(
        [
            rec({"id": 1, "name": "a", "qty": 1}),
            rec({"id": 2, "qty": 5}),
            rec({"id": 1, "name": "a2", "qty": 2}),
        ]
    )
    assert db.rows("loose") == [(1, "a2", 2), (2, None, 5)]
    by_key = start_task(
        insert_mode="upsert", pk_mode="record_key", pk_fields="id", delete_enabled="true"
    )
    by_key.put(
        [
            rec({"name": "b"}, key=2),
            SinkRecord(topic="loose", kafka_partition=0, kafka_offset=1, key=1, value=None),
        ]
    )
    assert db.rows("loose") == [(2, "b", 5)]
    with pytest.raises(TableSchemaError, match="schemaless"):
        task.put([rec({"id": 3, "unknown": 1})])
    with pytest.raises(TableSchemaError, match="schemaless"):
        task.put([SinkRecord(topic="nowhere", kafka_partition=0, kafka_offset=0, value={"id": 1})])
    with pytest.raises(DataError, match="struct value with a schema"):
        task.put([SinkRecord(topic="loose", kafka_partition=0, kafka_offset=0, value="text")])


# -------------------------------------------------------------- identifiers


def test_identifiers_are_quoted_and_dots_in_topics_stay_in_the_table_name(
    db: Db, start_task
) -> None:
    schema = Schema.struct([("select", INT32_SCHEMA), ("Mixed Case", OPTIONAL_STRING_SCHEMA)])
    record = SinkRecord(
        topic="shop.Orders-v1",
        kafka_partition=0,
        kafka_offset=0,
        value_schema=schema,
        value=Struct(schema, {"select": 1, "Mixed Case": "ok"}),
    )
    task = start_task(insert_mode="upsert", pk_mode="record_value", pk_fields="select")
    task.put([record])
    task.put([record])
    assert db.rows("shop.Orders-v1") == [(1, "ok")]


def test_unquoted_identifiers_with_quote_never(db: Db, start_task) -> None:
    schema = Schema.struct([("Id", INT32_SCHEMA), ("Name", OPTIONAL_STRING_SCHEMA)])
    record = SinkRecord(
        topic="Plain",
        kafka_partition=0,
        kafka_offset=0,
        value_schema=schema,
        value=Struct(schema, {"Id": 1, "Name": "n"}),
    )
    task = start_task(
        quote_sql_identifiers="never", insert_mode="upsert", pk_mode="record_value", pk_fields="Id"
    )
    task.put([record])
    task.put([record])
    folded = "plain" if db.name == "postgresql" else "Plain"
    assert db.rows(folded) == [(1, "n")]


def test_a_topic_that_makes_a_bad_table_name_is_refused(db: Db, start_task) -> None:
    if db.name == "postgresql":  # 63 bytes at most; SQLite has no limit
        with pytest.raises(DataError, match=r"table\.name\.format"):
            start_task().put([order(1, topic="x" * 64)])
    with pytest.raises(DataError, match=r"table\.name\.format"):
        start_task().put([order(1, topic='bad"name')])


@pytest.mark.postgres
def test_table_name_format_with_a_schema(postgres_url: str) -> None:
    db = Db(postgres_url)
    db.execute("CREATE SCHEMA archive")
    task = JdbcSinkTask()
    task.initialize(Context())  # type: ignore[arg-type]
    task.start(
        {
            "connection.url": postgres_url,
            "auto.create": "true",
            "table.name.format": "archive.${topic}_copy",
        }
    )
    try:
        task.put([order(1, topic="a.b")])
    finally:
        task.stop()
    with db.engine.connect() as conn:
        assert sa.inspect(conn).get_table_names(schema="archive") == ["a.b_copy"]
        assert conn.exec_driver_sql('SELECT id FROM archive."a.b_copy"').all() == [(1,)]
    db.engine.dispose()


# --------------------------------------------- transactions, crashes, retries


def test_a_failing_put_leaves_only_whole_committed_puts_and_upsert_redelivery_is_exact(
    db: Db, start_task
) -> None:
    """Put 1 commits; put 2 fails half-way (its second table refuses a row), so none of
    put 2 is in either table. The runtime then redelivers from the last commit — put 1
    again and put 2 — and upsert makes the result exact."""
    db.execute(
        "CREATE TABLE audit (id BIGINT PRIMARY KEY, name TEXT, qty INTEGER CHECK (qty >= 0))"
    )
    config = {"insert_mode": "upsert", "pk_mode": "record_value", "pk_fields": "id"}
    first = [order(i, f"v{i}", i) for i in range(5)] + [order(100, topic="audit", qty=1)]
    second = [order(i, f"w{i}", i + 10) for i in range(3, 8)] + [
        order(101, topic="audit", qty=-1),  # the CHECK fails: the whole put rolls back
        order(6, "late", 1),
    ]
    task = start_task(**config)
    task.put(first)
    with pytest.raises(ConnectError):
        task.put(second)
    assert db.rows("orders") == [(i, f"v{i}", i) for i in range(5)]
    assert db.rows("audit") == [(100, "x", 1)]
    fixed = [r if r.topic != "audit" else order(101, topic="audit", qty=2) for r in second]
    again = start_task(**config)  # a restarted task: redelivery from the last commit
    again.put(first)
    again.put(fixed)
    expected = {i: (i, f"v{i}", i) for i in range(3)}
    expected.update({i: (i, f"w{i}", i + 10) for i in range(3, 8)})
    expected[6] = (6, "late", 1)
    assert db.rows("orders") == sorted(expected.values())
    assert db.rows("audit") == [(100, "x", 1), (101, "x", 2)]


def test_a_put_is_one_transaction_even_across_batch_size_chunks(db: Db, start_task) -> None:
    task = start_task(pk_mode="record_value", pk_fields="id", batch_size="2")
    task.put([order(0)])
    with pytest.raises(ConnectError):
        task.put([order(1), order(2), order(3), order(4), order(0)])  # the last is a duplicate
    assert db.rows("orders") == [(0, "x", 1)]
    task.put([order(i) for i in range(1, 8)])
    assert [r[0] for r in db.rows("orders")] == list(range(8))


def test_transient_errors_are_retriable_until_max_retries(tmp_path: Path) -> None:
    """A locked SQLite database (another writer holds it) is a transient error: put()
    raises RetriableError with the backoff set, then fails once the retries are spent,
    and succeeds when the lock is gone."""
    path = tmp_path / "locked.db"
    url = f"sqlite:///{path}?timeout=0.05"
    task = JdbcSinkTask()
    context = Context()
    task.initialize(context)  # type: ignore[arg-type]
    task.start(
        {
            "connection.url": url,
            "auto.create": "true",
            "max.retries": "2",
            "retry.backoff.ms": "123",
        }
    )
    try:
        task.put([order(1)])
        blocker = sa.create_engine(f"sqlite:///{path}").connect()
        blocker.exec_driver_sql("BEGIN EXCLUSIVE")
        for _ in range(2):
            with pytest.raises(RetriableError, match="transient"):
                task.put([order(2)])
        assert context.timeouts == [123, 123]
        with pytest.raises(ConnectError) as failed:
            task.put([order(2)])
        assert not isinstance(failed.value, RetriableError)
        blocker.rollback()
        blocker.close()
        task.put([order(2)])
        with pytest.raises(RetriableError):  # the retries were reset by the success
            blocker = sa.create_engine(f"sqlite:///{path}").connect()
            blocker.exec_driver_sql("BEGIN EXCLUSIVE")
            task.put([order(3)])
        blocker.rollback()
        blocker.close()
    finally:
        task.stop()
    assert Db(f"sqlite:///{path}").rows("orders") == [(1, "x", 1), (2, "x", 1)]


def test_upsert_is_idempotent_under_redelivery(db_url: str) -> None:
    """The same stream, delivered once, or with every put delivered twice and the whole
    stream again, ends in the same table (COPY + ON CONFLICT on PostgreSQL, ON CONFLICT
    on SQLite, ON DUPLICATE KEY UPDATE on MySQL)."""

    def run(table: str, puts: Sequence[Sequence[SinkRecord]]) -> list[tuple]:
        task = JdbcSinkTask()
        task.initialize(Context())  # type: ignore[arg-type]
        task.start(
            {
                "connection.url": db_url,
                "auto.create": "true",
                "insert.mode": "upsert",
                "pk.mode": "record_key",
                "pk.fields": "id",
                "delete.enabled": "true",
                "table.name.format": table,
            }
        )
        try:
            for records in puts:
                task.put(records)
        finally:
            task.stop()
        db = Db(db_url)
        try:
            return db.rows(table)
        finally:
            db.engine.dispose()

    stream = []
    for i in range(3000):
        n = (i * 7919) % 500
        stream.append(tombstone(n) if i % 11 == 0 else keyed(n, f"v{i}", i))
    puts = [stream[s : s + 700] for s in range(0, len(stream), 700)]
    once = run("once", puts)
    twice = run("twice", [p for p in puts for _ in range(2)] + puts)
    assert once == twice and len(once) > 100
    model: dict[int, tuple] = {}
    for r in stream:
        if r.value is None:
            model.pop(r.key, None)
        else:
            model[r.key] = (r.key, r.value["name"], r.value["qty"])
    assert once == sorted(model.values())


@pytest.mark.postgres
def test_postgres_timestamptz_columns_keep_the_instant(postgres_url: str) -> None:
    db = Db(postgres_url)
    db.execute("CREATE TABLE tzcol (id INT PRIMARY KEY, ts TIMESTAMPTZ)")
    schema = Schema.struct([("id", INT32_SCHEMA), ("ts", Timestamp.schema())])
    instant = dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.UTC)
    task = JdbcSinkTask()
    task.initialize(Context())  # type: ignore[arg-type]
    task.start({"connection.url": postgres_url, "db.timezone": "Asia/Tokyo"})
    try:
        task.put(
            [
                SinkRecord(
                    topic="tzcol",
                    kafka_partition=0,
                    kafka_offset=0,
                    value_schema=schema,
                    value=Struct(schema, {"id": 1, "ts": instant}),
                )
            ]
        )
    finally:
        task.stop()
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT ts FROM tzcol").scalar() == instant
    db.engine.dispose()


def test_floats_and_bytes_required_fields(db: Db, start_task) -> None:
    schema = Schema.struct([("id", INT32_SCHEMA), ("f", FLOAT64_SCHEMA), ("b", BYTES_SCHEMA)])
    record = SinkRecord(
        topic="req",
        kafka_partition=0,
        kafka_offset=0,
        value_schema=schema,
        value=Struct(schema, {"id": 1, "f": 0.1, "b": memoryview(b"mv")}),
    )
    start_task().put([record])
    assert [(i, f, bytes(b)) for i, f, b in db.rows("req")] == [(1, 0.1, b"mv")]
    assert not db.columns("req")["b"]["nullable"]
