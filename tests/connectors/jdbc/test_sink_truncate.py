"""JdbcSink's `truncate.enabled` on SQLite, PostgreSQL and MySQL: a truncate event
(Debezium's envelope with op=t, passed on by ExtractNewRecordState with
`truncate.handling.mode=keep`) empties the table in order with the rows around it,
inside the put's transaction; off, it is a record the sink cannot write."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from connect.api import (
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConnectError,
    Schema,
    SinkRecord,
    Struct,
)
from connect.transforms.unwrap import ExtractNewRecordState
from connectors.jdbc.sink import JdbcSinkTask, RecordWriteError

ROW = Schema.struct(
    [("id", INT64_SCHEMA), ("name", OPTIONAL_STRING_SCHEMA)], name="srv.public.t.Value"
).with_(optional=True)
KEY = Schema.struct([("id", INT64_SCHEMA)], name="srv.public.t.Key")
ENVELOPE = Schema.struct(
    [
        ("before", ROW),
        ("after", ROW),
        ("op", STRING_SCHEMA),
        ("ts_ms", OPTIONAL_INT64_SCHEMA),
    ],
    name="srv.public.t.Envelope",
)
_offset = iter(range(1_000_000))


def change(op: str, id_: int | None = None, name: str | None = None) -> SinkRecord:
    """A Debezium change event on topic `t` (op c, u, d or t)."""
    row = None if id_ is None else Struct(ROW, {"id": id_, "name": name})
    before = row if op == "d" else None
    after = row if op in ("c", "u", "r") else None
    return SinkRecord(
        topic="t",
        kafka_partition=0,
        kafka_offset=next(_offset),
        key_schema=None if op == "t" else KEY,
        key=None if op == "t" else Struct(KEY, {"id": id_}),
        value_schema=ENVELOPE,
        value=Struct(ENVELOPE, {"before": before, "after": after, "op": op, "ts_ms": 1}),
    )


@pytest.fixture
def url(db_url: str) -> str:
    return db_url


def rows(url: str) -> list[tuple] | None:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("t"):
                return None
            return [tuple(r) for r in conn.exec_driver_sql("SELECT * FROM t ORDER BY id")]
    finally:
        engine.dispose()


def start_pipeline(
    url: str, tasks: list[JdbcSinkTask], **config: str
) -> Callable[[list[SinkRecord]], None]:
    """unwrap (truncates kept) + JdbcSinkTask (upsert, deletes, truncates) on `url`: a
    put of change events, as the runtime would make it. The task joins `tasks`."""
    unwrap = ExtractNewRecordState()
    unwrap.configure(
        {"truncate.handling.mode": "keep", "delete.handling.mode": "none"}
        | {k: v for k, v in config.items() if k.startswith("delete")}
    )
    props = {
        "connection.url": url,
        "auto.create": "true",
        "insert.mode": "upsert",
        "pk.mode": "record_key",
        "delete.enabled": "true",
        "truncate.enabled": "true",
    } | {k.replace("_", "."): v for k, v in config.items()}
    task = JdbcSinkTask()
    task.initialize(None)  # type: ignore[arg-type]
    task.start(props)
    tasks.append(task)

    def put(records: list[SinkRecord]) -> None:
        unwrapped: list[Any] = [unwrap.apply(r) for r in records]
        task.put([r for r in unwrapped if r is not None])

    return put


@pytest.fixture
def pipeline(url: str) -> Iterator[Callable[..., Callable[[list[SinkRecord]], None]]]:
    """`start_pipeline` on the database under test; the tasks stop at teardown."""
    tasks: list[JdbcSinkTask] = []
    yield lambda **config: start_pipeline(url, tasks, **config)
    for task in tasks:
        task.stop()


def test_a_truncate_empties_the_table_between_the_rows_around_it(url: str, pipeline) -> None:
    put = pipeline()
    put([change("c", 1, "a"), change("c", 2, "b")])
    put(
        [
            change("u", 1, "a2"),
            change("c", 3, "c"),
            change("t"),
            change("c", 4, "d"),
            change("u", 1, "a3"),  # after the truncate: an upsert inserts it again
            change("t"),
            change("c", 5, "e"),
            change("c", 6, "f"),
            change("d", 5),
        ]
    )
    assert rows(url) == [(6, "f")]
    put([change("c", 7, "g"), change("t")])  # a put that ends with a truncate
    assert rows(url) == []


def test_a_truncate_before_the_table_exists_does_nothing(url: str, pipeline) -> None:
    put = pipeline()
    put([change("t"), change("t")])
    assert rows(url) is None  # no table made from a truncate
    put([change("t"), change("c", 1, "a"), change("t"), change("c", 2, "b")])
    assert rows(url) == [(2, "b")]


def test_a_failed_put_rolls_its_truncate_back(url: str, pipeline) -> None:
    put = pipeline()
    put([change("c", 1, "a"), change("c", 2, "b")])
    bad = change("c", 3, "c")
    bad.key = Struct.trusted(KEY, [None])  # a null primary key: the database refuses it
    with pytest.raises(ConnectError):
        put([change("t"), change("c", 9, "z"), bad])
    assert rows(url) == [(1, "a"), (2, "b")]  # one transaction: the truncate is undone


def test_schemaless_truncate_events_empty_the_table_too(url: str, pipeline) -> None:
    put = pipeline()
    put([change("c", 1, "a")])
    plain = SinkRecord(
        topic="t",
        kafka_partition=0,
        kafka_offset=next(_offset),
        value={"before": None, "after": None, "source": {}, "op": "t", "ts_ms": 1},
    )
    put([plain])
    assert rows(url) == []


def test_without_truncate_enabled_a_truncate_is_a_record_the_sink_cannot_write(
    url: str, pipeline
) -> None:
    put = pipeline(truncate_enabled="false")
    put([change("c", 1, "a")])
    truncate = change("t")
    with pytest.raises(RecordWriteError, match=r"truncate\.enabled") as info:
        put([change("c", 2, "b"), truncate])
    assert info.value.offset == truncate.kafka_offset
    assert rows(url) == [(1, "a")]


@pytest.mark.postgres
def test_truncates_need_no_staging_table_on_the_copy_path(postgres_url: str) -> None:
    """A truncate is one DELETE in the writer's transaction, not a run through COPY: it
    binds no plan, so PostgreSQL gets no (zero-column) staging table for it."""
    staged = (
        "SELECT relnatts FROM pg_class WHERE relpersistence = 't' AND relkind = 'r' "
        "AND starts_with(relname, 'tributary_stage')"
    )
    tasks: list[JdbcSinkTask] = []
    try:
        put = start_pipeline(postgres_url, tasks)
        put([change("c", 1, "a"), change("t"), change("c", 2, "b"), change("t"), change("t")])
        put([change("c", 3, "c")])
        assert rows(postgres_url) == [(3, "c")]
        engine = sa.create_engine(postgres_url)
        try:
            with engine.connect() as conn:  # while the task's session holds its tables
                widths = [n for (n,) in conn.exec_driver_sql(staged)]
        finally:
            engine.dispose()
    finally:
        for task in tasks:
            task.stop()
    assert widths and 0 not in widths  # the rows were staged; nothing for the truncates
