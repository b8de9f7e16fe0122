"""DeltaSink through the plugin API on real Delta tables (tmp_path): offsets in txn
actions, a restart and a stale writer, schema changes, merge mode, maintenance, and
the config's refusals."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from connect.api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConfigError,
    DataError,
    Schema,
    SinkRecord,
    Struct,
    Time,
    TopicPartition,
)
from connectors.delta.config import parse
from connectors.delta.sink import DeltaSinkConnector, DeltaSinkTask
from tests.connectors.fakes import FakeSinkContext
from tests.connectors.spark.helpers import records

TP = TopicPartition("orders", 0)


class SeekingContext(FakeSinkContext):
    """Remembers the seeks a task asks for."""

    def __init__(self, configs: Mapping[str, str]) -> None:
        super().__init__(configs)
        self.seeks: dict[TopicPartition, int] = {}

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.seeks.update(offsets)


def task(tmp_path: Path, **props: str) -> DeltaSinkTask:
    config = {"name": "lake", "delta.table.uri": str(tmp_path / "${topic}"),
              "delta.flush.size": "100", **props}
    t = DeltaSinkTask()
    t.initialize(SeekingContext(config))
    t.start(config)
    return t


def rows(path: Path, *columns: str) -> list[tuple]:
    table = DeltaTable(str(path)).to_pyarrow_table()
    names = columns or tuple(table.column_names)
    return sorted(zip(*(table.column(c).to_pylist() for c in names), strict=True))


def test_a_restarted_task_seeks_to_the_tables_offsets_and_skips_a_replay(tmp_path: Path) -> None:
    first = task(tmp_path)
    first.open([TP])
    first.put(records(range(0, 200)))  # one commit: 200 rows
    first.put(records(range(200, 250)))  # 50 rows wait: under delta.flush.size
    assert first.pre_commit({TP: 250}) == {TP: 200}
    table = DeltaTable(str(tmp_path / "orders"))
    assert table.transaction_version("lake-orders-0") == 200
    # A crash: the 50 waiting rows are lost with their offsets; the group says 0.
    second = task(tmp_path)
    second.open([TP])
    assert second.context.seeks == {TP: 200}  # type: ignore[attr-defined]
    second.put(records(range(0, 100)))  # polled before the seek took effect: dropped
    second.put(records(range(150, 320)))  # a replay of 150..199 is cut off
    second.close([TP])  # a clean hand-over commits what waits
    assert [r[0] for r in rows(tmp_path / "orders", "id")] == list(range(320))
    assert DeltaTable(str(tmp_path / "orders")).transaction_version("lake-orders-0") == 320


def test_a_stale_writer_drops_its_rows_and_rereads_from_the_table(tmp_path: Path) -> None:
    zombie, owner = task(tmp_path), task(tmp_path)
    zombie.open([TP])
    owner.open([TP])
    owner.put(records(range(0, 100)))
    zombie.put(records(range(0, 100)))  # the table's txn moved under it: not written
    assert zombie.context.seeks == {TP: 100}  # type: ignore[attr-defined]
    assert zombie.pre_commit({TP: 100}) == {TP: 100}
    zombie.put(records(range(100, 200)))
    assert [r[0] for r in rows(tmp_path / "orders", "id")] == list(range(200))


def _people(schema: Schema, *values: dict[str, Any], start: int = 0) -> list[SinkRecord]:
    return [
        SinkRecord(topic="people", kafka_partition=0, value_schema=schema,
                   value=Struct(schema, v), kafka_offset=start + i)
        for i, v in enumerate(values)
    ]


PERSON = Schema.struct([("id", INT32_SCHEMA), ("name", STRING_SCHEMA)], name="person")
PERSON_LONG_ID = Schema.struct([("id", INT64_SCHEMA), ("name", STRING_SCHEMA)], name="person")
PERSON_NOTE = Schema.struct(
    [("id", INT32_SCHEMA), ("name", STRING_SCHEMA), ("note", OPTIONAL_STRING_SCHEMA)],
    name="person",
)
PERSON_TEXT_ID = Schema.struct([("id", STRING_SCHEMA), ("name", STRING_SCHEMA)], name="person")


def test_schema_changes_evolve_cast_or_fail_naming_the_column(tmp_path: Path) -> None:
    strict = task(tmp_path, **{"delta.flush.size": "1"})
    strict.put(_people(PERSON, {"id": 1, "name": "a"}))
    with pytest.raises(DataError, match=r"'note'.*delta.schema.evolution.enabled"):
        strict.put(_people(PERSON_NOTE, {"id": 2, "name": "b", "note": "x"}, start=1))
    evolving = task(tmp_path, **{"delta.flush.size": "1",
                                 "delta.schema.evolution.enabled": "true"})
    evolving.put(_people(PERSON_NOTE, {"id": 2, "name": "b", "note": "x"}, start=1))
    # bigint values that fit the table's int are written; one that does not fails
    evolving.put(_people(PERSON_LONG_ID, {"id": 3, "name": "c"}, start=2))
    with pytest.raises(DataError, match=r"'id'.*do not fit"):
        evolving.put(_people(PERSON_LONG_ID, {"id": 2**40, "name": "d"}, start=3))
    with pytest.raises(DataError, match=r"'id'.*incompatible"):
        task(tmp_path, **{"delta.flush.size": "1"}).put(
            _people(PERSON_TEXT_ID, {"id": "x", "name": "e"}, start=3))
    assert rows(tmp_path / "people") == [(1, "a", None), (2, "b", "x"), (3, "c", None)]
    assert DeltaTable(str(tmp_path / "people")).transaction_version("lake-people-0") == 3


FLAT = Schema.struct(
    [("id", INT64_SCHEMA), ("name", OPTIONAL_STRING_SCHEMA), ("__op", STRING_SCHEMA),
     ("__deleted", OPTIONAL_STRING_SCHEMA)], name="flat")
ROW = Schema.struct([("id", INT64_SCHEMA), ("name", OPTIONAL_STRING_SCHEMA)], name="row")
IMAGE = ROW.optional_()
ENVELOPE = Schema.struct(
    [("before", IMAGE), ("after", IMAGE), ("op", STRING_SCHEMA),
     ("ts_ms", OPTIONAL_INT64_SCHEMA)], name="envelope")


def test_merge_mode_applies_flattened_changes_last_change_per_key(tmp_path: Path) -> None:
    sink = task(tmp_path, **{"delta.write.mode": "merge", "delta.id.columns": "id"})
    changes = [(1, "a", "c", None), (2, "b", "r", None), (1, "a2", "u", None),
               (3, "c", "c", None), (2, "b", "d", "true"), (4, "d", "u", "false"),
               (3, "c", "u", "true")]  # rewrite mode: __deleted without __op=d
    sink.put(_people(FLAT, *({"id": i, "name": n, "__op": o, "__deleted": d}
                             for i, n, o, d in changes)))
    sink.close([TopicPartition("people", 0)])
    assert rows(tmp_path / "people") == [(1, "a2"), (4, "d")]
    sink = task(tmp_path, **{"delta.write.mode": "merge", "delta.id.columns": "id"})
    sink.put(_people(FLAT, {"id": 4, "name": None, "__op": "d", "__deleted": None},
                     {"id": 5, "name": "e", "__op": "c", "__deleted": None}, start=7))
    sink.close([TopicPartition("people", 0)])
    assert rows(tmp_path / "people") == [(1, "a2"), (5, "e")]


def test_merge_mode_applies_debezium_envelopes(tmp_path: Path) -> None:
    def change(op: str, before: tuple | None, after: tuple | None) -> dict[str, Any]:
        def image(v: tuple | None) -> Struct | None:
            return None if v is None else Struct(IMAGE, {"id": v[0], "name": v[1]})
        return {"before": image(before), "after": image(after), "op": op, "ts_ms": 1}

    sink = task(tmp_path, **{"delta.write.mode": "merge", "delta.id.columns": "id"})
    events = _people(ENVELOPE, change("r", None, (1, "a")), change("c", None, (2, "b")),
                     change("u", (1, "a"), (1, "a2")), change("d", (2, "b"), None))
    tombstone = SinkRecord(topic="people", kafka_partition=0, kafka_offset=4)
    sink.put([*events, tombstone])
    sink.close([TopicPartition("people", 0)])
    assert rows(tmp_path / "people") == [(1, "a2")]
    assert DeltaTable(str(tmp_path / "people")).transaction_version("lake-people-0") == 5


def test_time_columns_checkpoints_and_vacuum(tmp_path: Path) -> None:
    schema = Schema.struct([("id", INT64_SCHEMA), ("at", Time.schema())], name="t")
    sink = task(tmp_path, **{"delta.flush.size": "1", "delta.checkpoint.interval": "2",
                             "delta.write.mode": "merge", "delta.id.columns": "id",
                             "delta.vacuum.interval.ms": "1",
                             "delta.vacuum.retention.hours": "0"})
    for i in range(4):  # each MERGE rewrites the file before it: vacuum has work
        sink.put(_people(schema, {"id": 1, "at": dt.time(0, 0, i)}, start=i))
    log = tmp_path / "people/_delta_log"
    assert list(log.glob("00000000000000000002.checkpoint.parquet"))
    assert rows(tmp_path / "people") == [(1, 3000)]  # ms since midnight
    assert len(list((tmp_path / "people").glob("*.parquet"))) == 1


def test_a_config_refusal_has_a_line_per_mistake() -> None:
    with pytest.raises(ConfigError) as caught:
        parse({"delta.write.mode": "upsert", "delta.flush.size": "0"})
    lines = str(caught.value).splitlines()
    assert len(lines) == 3
    assert any("delta.table.uri" in line for line in lines)
    assert any("delta.write.mode" in line for line in lines)
    assert any("delta.flush.size" in line for line in lines)
    with pytest.raises(ConfigError, match=r"delta.id.columns.*required"):
        parse({"delta.table.uri": "x", "delta.write.mode": "merge"})
    errors = {v.name: v.errors for v in DeltaSinkConnector().validate(
        {"delta.table.uri": "x", "delta.write.mode": "merge"})}
    assert errors["delta.id.columns"] and not errors["delta.table.uri"]
    settings = parse({"name": "n", "delta.table.uri": "s3://b/${topic}",
                      "delta.storage.AWS_ENDPOINT_URL": "http://127.0.0.1:1"})
    assert settings.storage_options == {"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}
    assert (settings.app_id, settings.uri_for("t")) == ("n", "s3://b/t")


def test_a_task_that_caught_up_commits_a_tenth_of_flush_size_at_once(tmp_path: Path) -> None:
    """An empty poll (put of nothing) with a tenth of delta.flush.size waiting commits
    without waiting out the interval; fewer rows, or a poll that brought rows, wait."""
    t = task(tmp_path, **{"delta.commit.interval.ms": "3600000"})  # flush.size 100
    t.open([TP])
    table = str(tmp_path / "orders")
    t.put(records(range(0, 5)))
    t.put([])  # caught up, 5 rows: under a tenth
    assert not DeltaTable.is_deltatable(table)
    t.put(records(range(5, 30)))  # a poll with rows: not caught up
    assert not DeltaTable.is_deltatable(table)
    t.put([])
    assert DeltaTable(table).transaction_version("lake-orders-0") == 30
    assert [r[0] for r in rows(tmp_path / "orders", "id")] == list(range(30))


def test_the_commit_interval_starts_with_the_first_row_waiting(tmp_path: Path) -> None:
    """A task idle (or paused) for longer than delta.commit.interval.ms does not
    commit its first poll alone: the interval bounds how long rows wait."""
    clock = [0.0]
    config = {"name": "lake", "delta.table.uri": str(tmp_path / "${topic}"),
              "delta.flush.size": "100", "delta.commit.interval.ms": "1000"}
    t = DeltaSinkTask(clock=lambda: clock[0])
    t.initialize(SeekingContext(config))
    t.start(config)
    t.open([TP])
    table = str(tmp_path / "orders")
    clock[0] += 3600  # idle
    t.put(records(range(0, 3)))
    assert not DeltaTable.is_deltatable(table)
    clock[0] += 1.0
    t.put(records(range(3, 5)))
    assert DeltaTable(table).transaction_version("lake-orders-0") == 5
