"""JdbcSink and records it cannot write, on SQLite, PostgreSQL and MySQL: with
`errors.tolerance=all` the database's refusals (CHECK, NOT NULL, duplicate keys, a
value the column's type refuses) and unmappable records go to the errant record
reporter while the rest of the put is written in record order; with `none` the task
fails naming the topic, partition and offset, and nothing of the put is written.
Then the same through a real worker: the dead-letter topic holds the bad records."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from connect.api import (
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    ConnectError,
    DataError,
    ErrantRecordReporter,
    RetriableError,
    Schema,
    SinkRecord,
    Struct,
)
from connectors.jdbc.sink import JdbcSinkTask, RecordWriteError
from connectors.jdbc.sink_tables import TableSchemaError
from log import FileLog
from tests.waiting import wait_until

ORDER = Schema.struct(
    [("id", INT64_SCHEMA), ("name", OPTIONAL_STRING_SCHEMA), ("qty", OPTIONAL_INT32_SCHEMA)],
    name="order",
)
TABLE = (
    "CREATE TABLE orders (id BIGINT PRIMARY KEY, name TEXT NOT NULL, qty INTEGER CHECK (qty >= 0))"
)


class Db:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = sa.create_engine(url)
        self.name = self.engine.dialect.name
        with self.engine.begin() as conn:
            conn.exec_driver_sql(TABLE)

    def rows(self) -> list[tuple]:
        with self.engine.connect() as conn:
            return [tuple(r) for r in conn.exec_driver_sql("SELECT * FROM orders ORDER BY id")]


@pytest.fixture
def db(db_url: str) -> Iterator[Db]:
    database = Db(db_url)
    yield database
    database.engine.dispose()


class Reporter(ErrantRecordReporter):
    """Keeps what it is given, as the runtime's reporter would send it to the DLQ."""

    def __init__(self) -> None:
        self.reported: list[tuple[SinkRecord, BaseException]] = []

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        self.reported.append((record, error))
        done: Future[None] = Future()
        done.set_result(None)
        return done

    @property
    def offsets(self) -> list[int]:
        return [r.kafka_offset for r, _ in self.reported]


class Context:
    """The SinkTaskContext calls the task makes: backoff and the errant reporter."""

    def __init__(self, reporter: ErrantRecordReporter | None) -> None:
        self.timeouts: list[int] = []
        self.errant_record_reporter = reporter

    def timeout(self, timeout_ms: int) -> None:
        self.timeouts.append(timeout_ms)


@pytest.fixture
def start_task(db: Db) -> Iterator[Callable[..., tuple[JdbcSinkTask, Reporter]]]:
    """Upserting tasks on `db` (config keys with `_` for `.`), each with a Reporter."""
    tasks: list[JdbcSinkTask] = []

    def factory(**config: str) -> tuple[JdbcSinkTask, Reporter]:
        props = {
            "connection.url": db.url,
            "insert.mode": "upsert",
            "pk.mode": "record_key",
            "pk.fields": "id",
            "delete.enabled": "true",
            "errors.tolerance": "all",
        }
        props.update({k.replace("_", "."): v for k, v in config.items()})
        reporter = Reporter()
        task = JdbcSinkTask()
        task.initialize(Context(reporter))  # type: ignore[arg-type]
        task.start(props)
        tasks.append(task)
        return task, reporter

    yield factory
    for task in tasks:
        task.stop()


def rec(
    offset: int, id_: int, name: Any = "x", qty: Any = 1, *, schemaless: bool = False
) -> SinkRecord:
    value: Any = {"id": id_, "name": name, "qty": qty}
    return SinkRecord(
        topic="orders",
        kafka_partition=0,
        kafka_offset=offset,
        key_schema=INT64_SCHEMA,
        key=id_,
        value_schema=None if schemaless else ORDER,
        value=value if schemaless else Struct(ORDER, value),
    )


def test_refused_records_are_reported_and_the_rest_written_in_order(db: Db, start_task) -> None:
    task, reporter = start_task()
    records = [rec(i, i, f"n{i}", i) for i in range(40)]
    records[3] = rec(3, 3, "bad", -1)  # CHECK
    records[11] = rec(11, 11, None, 5)  # NOT NULL
    # Key 20: written at 20; 21 would be refused, but 22 supersedes it in the same write
    # (an upsert keeps the last row per key), so 21 is never tried, nor reported: a
    # dead-lettered row replayed later would overwrite the newer one anyway.
    records[21] = rec(21, 20, "bad", -5)
    records[22] = rec(22, 20, "third", 22)
    # Key 30: written at 30, refused at 31 (the last of the key): 30's row stays.
    records[31] = rec(31, 30, "bad", -1)
    task.put(records)
    assert reporter.offsets == [3, 11, 31]
    assert all(r is records[r.kafka_offset] for r, _ in reporter.reported)
    assert all(isinstance(e, Exception) and str(e) for _, e in reporter.reported)
    expected = {i: (i, f"n{i}", i) for i in range(40) if i not in (3, 11, 21, 22, 31)}
    expected[20] = (20, "third", 22)
    assert db.rows() == sorted(expected.values())
    # The task goes on: the next put is written as usual.
    task.put([rec(40, 3, "fixed", 3)])
    assert (3, "fixed", 3) in db.rows()


def test_duplicate_keys_in_insert_mode_are_reported(db: Db, start_task) -> None:
    task, reporter = start_task(insert_mode="insert")
    task.put([rec(0, 1, "a"), rec(1, 2, "b")])
    task.put([rec(2, 3, "c"), rec(3, 1, "again"), rec(4, 4, "d"), rec(5, 3, "again")])
    assert reporter.offsets == [3, 5]
    assert db.rows() == [(1, "a", 1), (2, "b", 1), (3, "c", 1), (4, "d", 1)]


def test_unmappable_records_are_reported_without_touching_the_database(db: Db, start_task) -> None:
    task, reporter = start_task(delete_enabled="false")
    tombstone = SinkRecord(
        topic="orders", kafka_partition=0, kafka_offset=1, key_schema=INT64_SCHEMA, key=9
    )
    task.put([rec(0, 1), tombstone, rec(2, 2)])
    assert reporter.offsets == [1]
    assert isinstance(reporter.reported[0][1], DataError)
    assert "delete.enabled" in str(reporter.reported[0][1])
    assert db.rows() == [(1, "x", 1), (2, "x", 1)]


@pytest.mark.postgres
def test_a_value_the_column_type_refuses_is_reported(postgres_url: str) -> None:
    """Schemaless values into an existing table: 'many' is no integer, and PostgreSQL's
    COPY refuses it (SQLite's columns take any value: there the CHECKs refuse)."""
    db = Db(postgres_url)
    reporter = Reporter()
    task = JdbcSinkTask()
    task.initialize(Context(reporter))  # type: ignore[arg-type]
    task.start(
        {
            "connection.url": postgres_url,
            "insert.mode": "upsert",
            "pk.mode": "record_key",
            "pk.fields": "id",
            "errors.tolerance": "all",
        }
    )
    try:
        task.put([rec(0, 1, schemaless=True), rec(1, 2, "x", "many", schemaless=True)])
    finally:
        task.stop()
        db.engine.dispose()
    assert reporter.offsets == [1]
    assert "many" in str(reporter.reported[0][1])
    assert Db.rows(db) == [(1, "x", 1)]


def test_tolerance_none_fails_naming_the_record_and_writes_nothing(db: Db, start_task) -> None:
    task, reporter = start_task(errors_tolerance="none")
    task.put([rec(0, 1, "kept")])
    with pytest.raises(RecordWriteError) as single:
        task.put([rec(7, 2, "bad", -1)])
    assert (single.value.topic, single.value.partition, single.value.offset) == ("orders", 0, 7)
    assert "orders-0@7" in str(single.value)
    with pytest.raises(ConnectError, match=r"orders-0@8\.\.10") as many:
        task.put([rec(8, 3), rec(9, 4, "bad", -1), rec(10, 5)])
    assert not isinstance(many.value, RetriableError)
    assert reporter.reported == []
    assert db.rows() == [(1, "kept", 1)]  # nothing of the failed puts


def test_tolerance_none_names_an_unmappable_record(db: Db, start_task) -> None:
    task, reporter = start_task(errors_tolerance="none", delete_enabled="false")
    tombstone = SinkRecord(
        topic="orders", kafka_partition=3, kafka_offset=12, key_schema=INT64_SCHEMA, key=9
    )
    with pytest.raises(RecordWriteError, match=r"orders-3@12.*delete\.enabled") as info:
        task.put([rec(11, 1), tombstone])
    assert isinstance(info.value, DataError) and info.value.offset == 12
    assert reporter.reported == [] and db.rows() == []


def test_a_table_problem_fails_the_task_instead_of_reporting_every_record(
    db: Db, start_task
) -> None:
    task, reporter = start_task(table_name_format="missing")  # auto.create is off
    with pytest.raises(TableSchemaError, match=r"auto\.create"):
        task.put([rec(0, 1), rec(1, 2)])
    assert reporter.reported == []


def test_without_a_reporter_tolerated_records_are_skipped(db: Db) -> None:
    task = JdbcSinkTask()
    task.initialize(Context(None))  # type: ignore[arg-type]
    task.start(
        {
            "connection.url": db.url,
            "insert.mode": "upsert",
            "pk.mode": "record_key",
            "pk.fields": "id",
            "errors.tolerance": "all",
        }
    )
    try:
        task.put([rec(0, 1), rec(1, 2, "bad", -1), rec(2, 3)])
    finally:
        task.stop()
    assert [r[0] for r in db.rows()] == [1, 3]


# ------------------------------------------------------- through a real worker

JSON = "org.apache.kafka.connect.json.JsonConverter"
VALUE_SCHEMA = {
    "type": "struct",
    "name": "order",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "name", "type": "string", "optional": True},
        {"field": "qty", "type": "int32", "optional": True},
    ],
}


def _produce(log: FileLog, values: list[Mapping[str, Any]]) -> None:
    keys = [json.dumps({"schema": {"type": "int64"}, "payload": v["id"]}).encode() for v in values]
    payloads = [json.dumps({"schema": VALUE_SCHEMA, "payload": v}).encode() for v in values]
    log.append("orders", 0, payloads, keys=keys)


def _task_state(herder: Any) -> tuple[str, str]:
    tasks = herder.connector_status("jdbc").tasks
    return (tasks[0].state, tasks[0].trace or "") if tasks else ("", "")


@pytest.fixture
def json_herder(start_herder: Callable[..., Any]) -> Callable[[], Any]:
    return functools.partial(start_herder, {"key.converter": JSON, "value.converter": JSON})


@pytest.mark.slow
@pytest.mark.parametrize("tolerance", ["all", "none"])
def test_the_worker_dead_letters_what_the_sink_reports(
    json_herder: Callable[[], Any], tmp_path: Path, tolerance: str
) -> None:
    url = f"sqlite:///{tmp_path / 'sink.db'}"
    Db(url).engine.dispose()  # the table, with its CHECK and NOT NULL
    herder = json_herder()
    herder.log.create_topic("orders", 1)
    good = [{"id": i, "name": f"n{i}", "qty": i} for i in range(30)]
    values = [*good[:10], {"id": 100, "name": "bad", "qty": -1}, *good[10:]]
    values.insert(25, {"id": 101, "name": None, "qty": 1})
    _produce(herder.log, values)
    config = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "topics": "orders",
        "connection.url": url,
        "insert.mode": "upsert",
        "pk.mode": "record_key",
        "pk.fields": "id",
        "errors.tolerance": tolerance,
    }
    if tolerance == "all":
        config["errors.deadletterqueue.topic.name"] = "dlq"
        config["errors.deadletterqueue.context.headers.enable"] = "true"
    herder.put_connector_config("jdbc", config, allow_replace=False)
    engine = sa.create_engine(url)
    try:
        if tolerance == "none":
            state = wait_until(
                lambda: (s := _task_state(herder))[0] == "FAILED" and s, 30, "task FAILED"
            )
            assert "orders-0@" in state[1], state[1]
            with engine.connect() as conn:
                assert conn.exec_driver_sql("SELECT count(*) FROM orders").scalar() == 0
            return

        def written() -> int:
            with engine.connect() as conn:
                return int(conn.exec_driver_sql("SELECT count(*) FROM orders").scalar() or 0)

        wait_until(lambda: written() == 30, 30, "the 30 good rows")
        log = herder.log
        wait_until(
            lambda: "dlq" in log.list_topics() and log.latest_offset("dlq", 0) == 2, 30, "2 in DLQ"
        )
        dead = log.read("dlq", 0, 0, max_records=10)
        assert [json.loads(r.value)["payload"]["id"] for r in dead] == [100, 101]
        headers = [dict(r.headers) for r in dead]
        assert [h["__connect.errors.offset"] for h in headers] == [b"10", b"25"]
        assert {h["__connect.errors.stage"] for h in headers} == {b"TASK_PUT"}
        assert {h["__connect.errors.topic"] for h in headers} == {b"orders"}
        assert _task_state(herder)[0] == "RUNNING"
    finally:
        engine.dispose()
