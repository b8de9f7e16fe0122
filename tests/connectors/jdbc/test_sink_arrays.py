"""JdbcSink and Connect arrays (what PostgresCdcSource emits for a one-dimensional array
column): on PostgreSQL they become array columns (`auto.create`, `auto.evolve`) and are
written through both the COPY path and executemany, every element type round-tripping
with its NULL elements and awkward text; on MariaDB and SQLite they are refused with
one DataError naming the field."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from connect.api import (
    INT32_SCHEMA,
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT8_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    DataError,
    Date,
    Decimal,
    Schema,
    SinkRecord,
    Struct,
    Time,
    Timestamp,
)
from connectors.jdbc.pg_arrays import array_literal
from connectors.jdbc.sink import JdbcSinkTask
from connectors.jdbc.sink_fields import column_type
from connectors.jdbc.types import (
    DBZ_DATE,
    DBZ_JSON,
    DBZ_MICRO_TIMESTAMP,
    DBZ_UUID,
    DBZ_ZONED_TIMESTAMP,
    debezium_schema,
)

_offsets = itertools.count()
_UUID = str(uuid.UUID(int=7))
_INF = float("inf")
_WALL = dt.datetime(2024, 2, 29, 12, 30, 1, 123456)
_MICROS = (_WALL - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)

# field -> (element schema, values written, values read back, PostgreSQL column type)
ELEMENTS: dict[str, tuple[Schema, list[Any], list[Any], str]] = {
    "i8": (OPTIONAL_INT8_SCHEMA, [1, None, -128], [1, None, -128], "smallint[]"),
    "i16": (OPTIONAL_INT16_SCHEMA, [None, 32767], [None, 32767], "smallint[]"),
    "i32": (OPTIONAL_INT32_SCHEMA, [1, 2, None], [1, 2, None], "integer[]"),
    "i64": (OPTIONAL_INT64_SCHEMA, [2**62, None], [2**62, None], "bigint[]"),
    "f32": (OPTIONAL_FLOAT32_SCHEMA, [0.5, None], [0.5, None], "real[]"),
    "f64": (
        OPTIONAL_FLOAT64_SCHEMA,
        [1 / 3, None, _INF, -_INF],
        [1 / 3, None, _INF, -_INF],
        "double precision[]",
    ),
    "flag": (OPTIONAL_BOOLEAN_SCHEMA, [True, None, False], [True, None, False], "boolean[]"),
    "blob": (
        OPTIONAL_BYTES_SCHEMA,
        [b'\x00\\"{,}', None, b""],
        [b'\x00\\"{,}', None, b""],
        "bytea[]",
    ),
    "money": (
        Decimal.schema(2, optional=True),
        [decimal.Decimal("1.25"), None],
        [decimal.Decimal("1.25"), None],
        "numeric[]",
    ),
    "day": (
        Date.schema(optional=True),
        [dt.date(2024, 2, 29), None],
        [dt.date(2024, 2, 29), None],
        "date[]",
    ),
    "clock": (
        Time.schema(optional=True),
        [dt.time(13, 5, 1, 250000), None],
        [dt.time(13, 5, 1, 250000), None],
        "time without time zone[]",
    ),
    "at": (
        Timestamp.schema(optional=True),
        [dt.datetime(2024, 2, 29, 12, 0, 1, 5000, tzinfo=dt.UTC), None],
        [dt.datetime(2024, 2, 29, 12, 0, 1, 5000), None],
        "timestamp without time zone[]",
    ),
    "dbz_day": (
        debezium_schema(DBZ_DATE, optional=True),
        [19782, None],
        [dt.date(2024, 2, 29), None],
        "date[]",
    ),
    "dbz_ts": (
        debezium_schema(DBZ_MICRO_TIMESTAMP, optional=True),
        [_MICROS, None],
        [_WALL, None],
        "timestamp(6) without time zone[]",
    ),
    "dbz_zoned": (
        debezium_schema(DBZ_ZONED_TIMESTAMP, optional=True),
        ["2024-02-29T12:30:01.123456Z", None],
        [_WALL.replace(tzinfo=dt.UTC), None],
        "timestamp(6) with time zone[]",
    ),
    "ref": (
        debezium_schema(DBZ_UUID, optional=True),
        [_UUID, None],
        [uuid.UUID(_UUID), None],
        "uuid[]",
    ),
    "doc": (
        debezium_schema(DBZ_JSON, optional=True),
        ['{"a": [1, "x"]}', None],
        [{"a": [1, "x"]}, None],
        "jsonb[]",
    ),
}
AWKWARD = [
    "",
    "NULL",
    "null",
    'a "quoted" word',
    "back\\slash",
    "trailing\\",
    "comma, and {braces}",
    " spaces ",
    "new\nline\ttab",
    "ünï ✓",
    None,
]


def _schema() -> Schema:
    fields = [("id", INT32_SCHEMA), ("words", Schema.array(OPTIONAL_STRING_SCHEMA, optional=True))]
    fields += [(name, Schema.array(e[0], optional=True)) for name, e in ELEMENTS.items()]
    return Schema.struct(fields)


SCHEMA = _schema()


def _record(topic: str, schema: Schema, values: dict[str, Any]) -> SinkRecord:
    return SinkRecord(
        topic=topic,
        kafka_partition=0,
        kafka_offset=next(_offsets),
        value_schema=schema,
        value=Struct(schema, values),
    )


def _rows() -> list[dict[str, Any]]:
    """Row 1 every element type (with NULL elements); 2 awkward text; 3 empty arrays;
    4 NULL arrays."""
    full = {"id": 1, "words": ["a"], **{n: e[1] for n, e in ELEMENTS.items()}}
    awkward = {"id": 2, "words": AWKWARD, **dict.fromkeys(ELEMENTS)}
    empty = {"id": 3, "words": [], **{n: [] for n in ELEMENTS}}
    nulls = {"id": 4, "words": None, **dict.fromkeys(ELEMENTS)}
    return [full, awkward, empty, nulls]


def _expected() -> dict[int, dict[str, Any]]:
    return {
        1: {"words": ["a"], **{n: e[2] for n, e in ELEMENTS.items()}},
        2: {"words": AWKWARD, **dict.fromkeys(ELEMENTS)},
        3: {"words": [], **{n: [] for n in ELEMENTS}},
        4: {"words": None, **dict.fromkeys(ELEMENTS)},
    }


@pytest.fixture
def start_task() -> Iterator[Callable[..., JdbcSinkTask]]:
    tasks: list[JdbcSinkTask] = []

    def factory(url: str, **config: str) -> JdbcSinkTask:
        props = {"connection.url": url, "auto.create": "true", "auto.evolve": "true"}
        props.update({k.replace("_", "."): v for k, v in config.items()})
        task = JdbcSinkTask()
        task.initialize(None)  # type: ignore[arg-type]
        task.start(props)
        tasks.append(task)
        return task

    yield factory
    for task in tasks:
        task.stop()


def _read(url: str, table: str) -> tuple[dict[int, dict[str, Any]], dict[str, str]]:
    """The table's rows by id, and its columns' types as PostgreSQL names them."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(f"SELECT * FROM {table} ORDER BY id").mappings().all()
            types = dict(
                conn.exec_driver_sql(
                    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                    f"WHERE attrelid = '{table}'::regclass AND attnum > 0 AND NOT attisdropped"
                ).all()
            )
    finally:
        engine.dispose()
    return {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in rows}, types


def _bytes(v: Any) -> Any:
    """bytea elements come back as memoryviews."""
    if isinstance(v, list):
        return [bytes(e) if isinstance(e, memoryview) else e for e in v]
    return v


def test_array_column_types_on_postgresql() -> None:
    dialect = postgresql.dialect()
    for name, (element, *_rest) in ELEMENTS.items():
        sql = column_type(Schema.array(element), "postgresql", key=False, where=name)
        assert sql.compile(dialect=dialect).lower().endswith("[]"), name
    nested = Schema.array(Schema.array(OPTIONAL_INT32_SCHEMA))
    with pytest.raises(DataError, match="'nested': an array of array values"):
        column_type(nested, "postgresql", key=False, where="field 'nested'")


@pytest.mark.parametrize("dialect", ["mysql", "mariadb", "sqlite"])
def test_arrays_are_refused_off_postgresql(dialect: str) -> None:
    with pytest.raises(DataError, match=r"field 'tags'.*PostgreSQL targets take arrays"):
        column_type(Schema.array(OPTIONAL_STRING_SCHEMA), dialect, key=False, where="field 'tags'")


@pytest.mark.mysql
def test_mariadb_refuses_an_array_field_before_writing(mysql_url, start_task) -> None:
    task = start_task(str(mysql_url))
    record = _record("tagged", SCHEMA, _rows()[0])
    with pytest.raises(DataError, match=r"tagged-0@0: field 'words': an array field .*PostgreSQL"):
        task.put([record])
    engine = sa.create_engine(str(mysql_url))
    try:
        assert not sa.inspect(engine).has_table("tagged")  # refused before the DDL
    finally:
        engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("path", ["copy", "executemany"])
@pytest.mark.parametrize("mode", ["insert", "upsert"])
def test_every_element_type_round_trips(postgres_url, start_task, path: str, mode: str) -> None:
    table = f"arr_{path}_{mode}"
    task = start_task(str(postgres_url), insert_mode=mode, pk_mode="record_value", pk_fields="id")
    if path == "executemany":
        # The generic path, as PostgreSQL through a driver without COPY takes it (only
        # psycopg2 and psycopg 3 are installed here, and both COPY).
        task.writer._copy = False
    rows = _rows()
    task.put([_record(table, SCHEMA, r) for r in rows])
    if mode == "upsert":  # a second write of the same keys replaces the arrays
        task.put([_record(table, SCHEMA, r) for r in rows])
    got, types = _read(str(postgres_url), table)
    assert {i: {k: _bytes(v) for k, v in r.items()} for i, r in got.items()} == _expected()
    assert types["words"] == "text[]"
    assert {n: types[n] for n in ELEMENTS} == {n: e[3] for n, e in ELEMENTS.items()}
    staged = bool(task.writer._bound) and all(
        b.copy_formatters is not None for b in task.writer._bound.values()
    )
    assert staged == (path == "copy")


@pytest.mark.postgres
def test_auto_evolve_adds_an_array_column(postgres_url, start_task) -> None:
    task = start_task(
        str(postgres_url), insert_mode="upsert", pk_mode="record_value", pk_fields="id"
    )
    before = Schema.struct([("id", INT32_SCHEMA), ("name", OPTIONAL_STRING_SCHEMA)])
    task.put([_record("evolving", before, {"id": 1, "name": "one"})])
    after = Schema.struct(
        [
            ("id", INT32_SCHEMA),
            ("name", OPTIONAL_STRING_SCHEMA),
            ("scores", Schema.array(OPTIONAL_INT64_SCHEMA, optional=True)),
        ]
    )
    task.put([_record("evolving", after, {"id": 2, "name": "two", "scores": [3, None, 5]})])
    got, types = _read(str(postgres_url), "evolving")
    assert types["scores"] == "bigint[]"
    assert got == {
        1: {"name": "one", "scores": None},
        2: {"name": "two", "scores": [3, None, 5]},
    }


def test_array_literal_quotes_as_array_out_does() -> None:
    assert array_literal([1, None, -3]) == "{1,NULL,-3}"
    assert array_literal([]) == "{}"
    assert array_literal([True, False, b"\x01\xff"]) == '{t,f,"\\\\x01ff"}'
    assert array_literal(["a b", "", "null", "NULLS", 'q"', "x\\y", "{", ",", "\t"]) == (
        '{"a b","","null",NULLS,"q\\"","x\\\\y","{",",","\t"}'
    )


@pytest.mark.postgres
@pytest.mark.parametrize("path", ["copy", "executemany"])
def test_an_existing_text_column_gets_the_array_text(postgres_url, start_task, path) -> None:
    """A pipeline whose table was created when PostgresCdcSource sent arrays as text
    keeps working: the TEXT column gets the array's text as PostgreSQL prints it."""
    url = str(postgres_url)
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE legacy (id int PRIMARY KEY, words text)")
        task = start_task(url, insert_mode="upsert", pk_mode="record_value", pk_fields="id")
        if path == "executemany":
            task.writer._copy = False
        schema = Schema.struct(
            [("id", INT32_SCHEMA), ("words", Schema.array(OPTIONAL_STRING_SCHEMA, optional=True))]
        )
        rows = [{"id": 1, "words": AWKWARD}, {"id": 2, "words": []}, {"id": 3, "words": None}]
        task.put([_record("legacy", schema, r) for r in rows])
        with engine.connect() as conn:
            got = dict(conn.exec_driver_sql("SELECT id, words FROM legacy").all())
            printed = conn.exec_driver_sql(
                "SELECT CAST(%(a)s AS text[])::text", {"a": AWKWARD}
            ).scalar_one()
    finally:
        engine.dispose()
    assert got == {1: printed, 2: "{}", 3: None}
