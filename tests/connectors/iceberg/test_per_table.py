"""Apache Iceberg's per-table keys (`iceberg.table.<table>.*`) and commit branches,
through IcebergSinkTask on a real SQLite catalog and file warehouse: static routing by
`route-regex`, per-table id columns and partition specs, commits to a branch and a
restart that resumes from the branch's offsets, and the keys' refusals."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from connect.api import (
    INT64_SCHEMA,
    STRING_SCHEMA,
    ConfigError,
    Schema,
    SinkRecord,
    Struct,
    TopicPartition,
)
from connectors.iceberg.config import parse, table_keys, validate
from connectors.iceberg.offsets import committed_offsets
from tests.connectors.iceberg.helpers import (
    TP,
    commit,
    load,
    order_schema,
    props,
    read,
    records,
    run_together,
    start,
)

EVENT = Schema.struct([("id", INT64_SCHEMA), ("type", STRING_SCHEMA)], name="events.Value")


def events(types: list[str], *, first: int = 0) -> list[SinkRecord]:
    return [SinkRecord(topic=TP.topic, kafka_partition=TP.partition, value_schema=EVENT,
                       value=Struct(EVENT).put("id", first + n).put("type", t),
                       timestamp=0, kafka_offset=first + n)
            for n, t in enumerate(types)]


def ids(warehouse: Path, table: str) -> list[int]:
    return read(warehouse, table).column("id").to_pylist()


def on_branch(warehouse: Path, branch: str, table: str = "db.orders") -> pa.Table:
    t = load(warehouse, table)
    head = t.metadata.snapshot_by_name(branch)
    assert head is not None, f"no branch {branch}"
    return t.scan(snapshot_id=head.snapshot_id).to_arrow().sort_by("id")


def test_the_apache_docs_static_fan_out_example(tmp_path: Path):
    """Apache Iceberg's docs (docs/docs/kafka-connect.md, "Multi-table fan-out, static
    routing") route by `type` with `route-regex` list and create. Java's
    `matcher().matches()`: the whole value must match (`listing` goes nowhere), and a
    record no regex matches is dropped; its offset still counts as consumed."""
    config = props(tmp_path, **{
        "iceberg.tables": "default.events_list,default.events_create",
        "iceberg.tables.route-field": "type",
        "iceberg.table.default.events_list.route-regex": "list",
        "iceberg.table.default.events_create.route-regex": "create",
    })
    task, _, clock = start(config)
    task.put(events(["list", "create", "other", "listing", "create", "LIST", "list"]))
    commit(task, clock)
    assert ids(tmp_path, "default.events_list") == [0, 6]
    assert ids(tmp_path, "default.events_create") == [1, 4]
    for table in ("default.events_list", "default.events_create"):
        assert committed_offsets(load(tmp_path, table), "ice") == {TP: 7}


def test_a_record_goes_to_every_table_whose_regex_matches(tmp_path: Path):
    """Several matching regexes: the record goes to each. A table with no regex keeps
    our name match (the value lowercased against its full or last name)."""
    config = props(tmp_path, **{
        "iceberg.tables": "db.lists,db.writes,db.audit",
        "iceberg.tables.route-field": "type",
        "iceberg.table.db.lists.route-regex": "list.*",
        "iceberg.table.db.writes.route-regex": "create|update|list-all",
    })
    task, _, clock = start(config)
    task.put(events(["list-all", "update", "AUDIT", "listing", "delete"]))
    commit(task, clock)
    assert ids(tmp_path, "db.lists") == [0, 3]
    assert ids(tmp_path, "db.writes") == [0, 1]
    assert ids(tmp_path, "db.audit") == [2]


def test_per_table_id_columns_partition_by_and_branch_with_upsert(tmp_path: Path):
    """Each table's own id-columns and partition-by over the defaults (auto-create and
    upsert use them), and an upsert committed to a table's own branch, main left
    without a snapshot."""
    config = props(tmp_path, **{
        "iceberg.tables": "db.by_id,db.by_customer",
        "iceberg.tables.upsert-mode-enabled": "true",
        "iceberg.tables.default-id-columns": "qty",
        "iceberg.table.db.by_id.id-columns": "id",
        "iceberg.table.db.by_id.partition-by": "bucket(4,id)",
        "iceberg.table.db.by_customer.id-columns": "customer",
        "iceberg.table.db.by_customer.commit-branch": "staging",
    })
    schema = order_schema()
    task, _, clock = start(config)
    task.put(records(schema, range(14)))
    commit(task, clock)
    task.put(records(schema, range(7), first=14, qty=9))  # an update of ids 0..6
    commit(task, clock)

    by_id = read(tmp_path, "db.by_id")
    assert by_id.column("id").to_pylist() == list(range(14))
    assert by_id.column("qty").to_pylist() == [9] * 7 + [i % 5 for i in range(7, 14)]
    table = load(tmp_path, "db.by_id")
    assert table.schema().identifier_field_names() == {"id"}
    assert [str(f.transform) for f in table.spec().fields] == ["bucket[4]"]

    customers = load(tmp_path, "db.by_customer")
    assert customers.schema().identifier_field_names() == {"customer"}
    assert customers.scan().to_arrow().num_rows == 0  # main: an empty snapshot
    rows = on_branch(tmp_path, "staging", "db.by_customer")
    assert sorted(rows.column("customer").to_pylist()) == [f"c{i}" for i in range(7)]
    assert rows.column("qty").to_pylist() == [9] * 7
    assert committed_offsets(customers, "ice", branch="staging") == {TP: 21}


def test_commits_go_to_the_branch_and_a_restart_resumes_from_its_offsets(tmp_path: Path):
    """A table written on main, then by a config naming a branch: the branch is made
    at main's snapshot, main stays as it was, and a restarted task rewinds to the
    branch's offsets (main's are older), neither losing nor repeating a row."""
    schema = order_schema()
    task, _, clock = start(props(tmp_path))
    task.put(records(schema, range(10)))
    commit(task, clock)

    config = props(tmp_path, **{"iceberg.tables.default-commit-branch": "other",
                                "iceberg.table.db.orders.commit-branch": "staging"})
    task2, context2, clock2 = start(config)
    assert context2.rewinds == {TP: 10}  # no branch yet: it will start at main's head
    task2.put(records(schema, range(10, 30), first=10))
    commit(task2, clock2)
    task2.put(records(schema, range(30, 40), first=30))  # buffered, then a crash

    task3, context3, clock3 = start(config)
    assert context3.rewinds == {TP: 30}  # the branch's head, not main's 10
    task3.put(records(schema, range(25, 45), first=25))  # the group redelivers from 25
    commit(task3, clock3)

    assert on_branch(tmp_path, "staging").column("id").to_pylist() == list(range(45))
    assert ids(tmp_path, "db.orders") == list(range(10))  # main
    table = load(tmp_path)
    assert "other" not in table.metadata.refs
    assert committed_offsets(table, "ice") == {TP: 10}
    assert committed_offsets(table, "ice", branch="staging") == {TP: 45}


def test_tasks_making_and_committing_one_branch_at_once_lose_nothing(tmp_path: Path):
    """Three tasks' first commits to a new table's branch at once: each may find the
    table without a snapshot and the branch missing (the empty snapshot on main, the
    branch and the appends all race); every task's rows and offsets end on the
    branch, none on main."""
    config = props(tmp_path, **{"iceberg.tables.default-commit-branch": "staging"})
    schema = order_schema()
    tasks = []
    for p in range(3):
        tp = TopicPartition("orders", p)
        task, _, clock = start(config, [tp])
        task.put(records(schema, range(p * 100, p * 100 + 20), tp=tp))
        tasks.append((task, clock, tp))
    barrier = threading.Barrier(len(tasks))
    def run(task: Any, clock: Any, tp: TopicPartition) -> None:
        barrier.wait(timeout=60)
        commit(task, clock)
        base = tp.partition * 100 + 20
        task.put(records(schema, range(base, base + 10), first=20, tp=tp))
        commit(task, clock)

    run_together(run, tasks)
    assert on_branch(tmp_path, "staging").column("id").to_pylist() == [
        p * 100 + i for p in range(3) for i in range(30)]
    table = load(tmp_path)
    assert table.scan().to_arrow().num_rows == 0
    assert committed_offsets(table, "ice", branch="staging") == {
        TopicPartition("orders", p): 30 for p in range(3)}


def test_a_main_commit_between_a_branch_commits_load_and_commit_is_a_lost_race(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
):
    """Another job appends to main after the task loaded the table for its commit to
    the branch: the branch's head did not move, so the commit passes its requirements
    and the catalog refuses its sequence number (a ValueError in pyiceberg). The task
    takes it as a lost race and commits again on the refreshed table."""
    import connectors.iceberg.writer as writer_module

    schema = order_schema()
    task, _, clock = start(props(tmp_path))
    task.put(records(schema, range(5)))
    commit(task, clock)  # main has a snapshot: the branch is made from it
    config = props(tmp_path, **{"iceberg.tables.default-commit-branch": "staging"})
    task2, _, clock2 = start(config)
    task2.put(records(schema, range(5, 10), first=5))
    commit(task2, clock2)
    other_rows = read(tmp_path).slice(0, 1)  # another job's row, on main

    real = writer_module._writer_metadata
    interfered: list[int] = []

    def another_job_commits_main(table: Any, write_props: Any) -> Any:
        if not interfered:  # once, after the task's step 2 load
            interfered.append(1)
            load(tmp_path).append(other_rows)
        return real(table, write_props)

    monkeypatch.setattr(writer_module, "_writer_metadata", another_job_commits_main)
    task2.put(records(schema, range(10, 15), first=10))
    commit(task2, clock2)
    assert interfered
    assert on_branch(tmp_path, "staging").column("id").to_pylist() == list(range(15))
    assert ids(tmp_path, "db.orders") == [0, *range(5)]
    assert committed_offsets(load(tmp_path), "ice", branch="staging") == {TP: 15}


def _errors(config: dict[str, Any]) -> dict[str, list[str]]:
    return {r.name: r.errors for r in validate(config) if r.errors}


def test_per_table_keys_parse_dotted_names_and_refuse_mistakes(tmp_path: Path):
    base = props(tmp_path, **{"iceberg.tables": "db.sub.events,db.other",
                              "iceberg.tables.route-field": "type"})
    ok = {**base, "iceberg.table.db.sub.events.route-regex": "a.b",
          "iceberg.table.db.sub.events.partition-by": "day(ts),bucket(16,id)",
          "iceberg.table.db.sub.events.unknown-property": "x"}  # not ours: ignored
    assert table_keys(ok) == {"db.sub.events": {"route-regex": "a.b",
                                                "partition-by": "day(ts),bucket(16,id)"}}
    own = parse(ok).table("db.sub.events")
    assert own.route_regex is not None and own.route_regex.pattern == "a.b"
    assert own.partition_by == (("day", None, "ts"), ("bucket", 16, "id"))
    assert parse(ok).table("db.other").route_regex is None
    assert _errors(ok) == {}

    typo = "iceberg.table.db.evnts.route-regex"
    bad_regex = "iceberg.table.db.other.route-regex"
    bad_spec = "iceberg.table.db.sub.events.partition-by"
    errors = _errors({**base, typo: "x", bad_regex: "list(", bad_spec: "bucket(id)"})
    assert set(errors) == {typo, bad_regex, bad_spec}
    assert "db.evnts is not one of iceberg.tables" in errors[typo][0]
    assert "not a regular expression" in errors[bad_regex][0]
    assert "bucket takes a width" in errors[bad_spec][0]
    with pytest.raises(ConfigError, match=r"db\.evnts is not one of"):
        parse({**base, typo: "x"})

    # A regex without a route field would route nothing by it (Apache's sink then
    # writes every record to every table).
    no_field = {k: v for k, v in base.items() if k != "iceberg.tables.route-field"}
    errors = _errors({**no_field, bad_regex: "list"})
    assert set(errors) == {bad_regex} and "route-field" in errors[bad_regex][0]

    # Dynamic routing: any table may have its keys (names come from the records).
    dynamic = {k: v for k, v in base.items() if k != "iceberg.tables"}
    dynamic.update({"iceberg.tables.dynamic-enabled": "true",
                    "iceberg.table.db.anything.id-columns": "id"})
    assert _errors(dynamic) == {}
    assert parse(dynamic).table("db.anything").id_columns == ("id",)
