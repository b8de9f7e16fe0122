"""How IcebergSinkTask writes its files and commits them: the zombie check also runs
inside pyiceberg's own retries of a commit that lost a race, `write-props` and
`auto-create-props` reach the files and the table, and the sink's default Parquet
dictionary page gives way to the table's own setting and to `write-props`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from connectors.iceberg import writer
from connectors.iceberg.offsets import committed_offsets
from tests.connectors.iceberg.helpers import (
    TP,
    commit,
    load,
    order_schema,
    props,
    read,
    records,
    start,
)


def test_a_zombie_that_loses_the_commit_race_is_stopped_in_pyicebergs_retry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The successor commits after the zombie's check passed and its files were
    written, before its catalog commit: pyiceberg retries that commit on the refreshed
    table, and the check there finds the successor's offsets. Before, the retry
    committed the zombie's rows a second time (20 rows for 10)."""
    config = props(tmp_path)
    schema = order_schema()
    start(config)[0].close([TP])  # the catalog exists before either task commits
    old, _, old_clock = start(config)
    new, _, new_clock = start(config)
    old.put(records(schema, range(10)))
    new.put(records(schema, range(10)))
    real = writer._Written.of.__func__
    raced: list[bool] = []

    def of(cls: Any, table: Any, metadata: Any, rows: Any) -> Any:
        written = real(cls, table, metadata, rows)
        if not raced:  # the zombie's files are written: the successor commits now
            raced.append(True)
            commit(new, new_clock)
        return written

    monkeypatch.setattr(writer._Written, "of", classmethod(of))
    commit(old, old_clock)
    assert raced
    assert old.context.rewinds == {TP: 10}
    assert read(tmp_path).column("id").to_pylist() == list(range(10))
    assert committed_offsets(load(tmp_path), "ice") == {TP: 10}
    assert len(load(tmp_path).snapshots()) == 1


def _chunk(path: str, column: str) -> Any:
    meta = pq.ParquetFile(path.removeprefix("file://")).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    return meta.row_group(0).column(names.index(column))


def test_write_props_and_auto_create_props_reach_files_and_table(tmp_path: Path):
    config = props(tmp_path, **{
        "iceberg.tables.auto-create-props.write.parquet.compression-codec": "gzip",
        "iceberg.tables.auto-create-props.commit.retry.num-retries": "7",
        "iceberg.tables.write-props.write.parquet.compression-codec": "snappy",
    })
    task, _, clock = start(config)
    task.put(records(order_schema(), range(10_000)))
    commit(task, clock)
    table = load(tmp_path)
    assert table.properties["write.parquet.compression-codec"] == "gzip"
    assert table.properties["commit.retry.num-retries"] == "7"
    [task_file] = list(table.scan().plan_files())
    path = task_file.file.file_path
    assert _chunk(path, "id").compression == "SNAPPY"  # write-props over the table's
    assert read(tmp_path).column("id").to_pylist() == list(range(10_000))


def test_file_settings_are_the_sinks_defaults_under_the_tables_under_write_props(
        tmp_path: Path):
    """The 64 KiB dictionary page is the sink's default only: a table's own property
    wins over it, and `write-props` over both."""
    config = props(tmp_path, **{
        "iceberg.tables.auto-create-props.write.parquet.page-row-limit": "5000"})
    task, _, clock = start(config)
    task.put(records(order_schema(), range(3)))
    commit(task, clock)
    table = load(tmp_path)
    files = writer._writer_metadata(table, {}).properties
    assert files["write.parquet.dict-size-bytes"] == str(64 * 1024)
    assert files["write.parquet.page-row-limit"] == "5000"
    assert "write.parquet.dict-size-bytes" not in table.properties  # files only
    with table.transaction() as tx:
        tx.set_properties({"write.parquet.dict-size-bytes": "1000"})
    table = load(tmp_path)
    assert writer._writer_metadata(table, {}).properties[
        "write.parquet.dict-size-bytes"] == "1000"
    assert writer._writer_metadata(table, {"write.parquet.dict-size-bytes": "7"}).properties[
        "write.parquet.dict-size-bytes"] == "7"


def test_a_task_that_caught_up_commits_a_tenth_of_max_buffered_at_once(tmp_path: Path):
    """An empty poll (put of nothing, no batch before it) with a tenth of
    max-buffered-records waiting commits without waiting out the interval; fewer rows,
    or a poll that brought rows, wait for it."""
    from connectors.iceberg.tables import load_table

    config = props(tmp_path, **{"iceberg.commit.max-buffered-records": "100",
                                "iceberg.control.commit.interval-ms": "3600000"})
    schema = order_schema()
    task, _, _ = start(config)
    task.put(records(schema, range(5)))
    task.put([])  # caught up, 5 rows: under a tenth
    assert load_table(task.catalog, "db.orders") is None
    task.put(records(schema, range(5, 30), first=5))  # a poll with rows: not caught up
    assert load_table(task.catalog, "db.orders") is None
    task.put([])
    assert read(tmp_path).column("id").to_pylist() == list(range(30))
    assert committed_offsets(load(tmp_path), "ice") == {TP: 30}


def test_schema_force_optional_and_case_insensitive_fields(tmp_path: Path):
    """schema-force-optional: the records' required fields become optional columns
    (the identifier column stays required); schema-case-insensitive: fields ID and
    Customer write the columns id and customer, and a new field keeps its name."""
    from connect.api import (
        INT64_SCHEMA,
        OPTIONAL_STRING_SCHEMA,
        STRING_SCHEMA,
        Schema,
        SinkRecord,
        Struct,
    )

    config = props(tmp_path, **{
        "iceberg.tables.default-id-columns": "id",
        "iceberg.tables.schema-force-optional": "true",
        "iceberg.tables.schema-case-insensitive": "true",
        "iceberg.tables.evolve-schema-enabled": "true",
    })
    task, _, clock = start(config)
    task.put(records(order_schema(), range(2)))
    commit(task, clock)
    schema = load(tmp_path).schema()
    assert schema.find_field("id").required
    assert not schema.find_field("customer").required
    assert not schema.find_field("qty").required

    upper = Schema.struct([("ID", INT64_SCHEMA), ("Customer", STRING_SCHEMA),
                           ("Note", OPTIONAL_STRING_SCHEMA)], name="orders.Value")
    value = Struct(upper)
    for name, v in (("ID", 2), ("Customer", "c9"), ("Note", "hi")):
        value.put(name, v)
    task.put([SinkRecord(topic=TP.topic, kafka_partition=TP.partition, value_schema=upper,
                         value=value, timestamp=0, kafka_offset=2)])
    commit(task, clock)
    rows = read(tmp_path)
    assert [f.name for f in load(tmp_path).schema().fields] == [
        "id", "customer", "qty", "Note"]
    assert rows.column("id").to_pylist() == [0, 1, 2]
    assert rows.column("customer").to_pylist()[-1] == "c9"
    assert rows.column("Note").to_pylist() == [None, None, "hi"]


def test_the_commit_interval_starts_with_the_first_row_buffered(tmp_path: Path):
    """A task idle (or paused) for longer than the interval does not commit its first
    poll alone: the interval bounds how long rows wait."""
    from connectors.iceberg.tables import load_table

    task, _, clock = start(props(tmp_path))  # interval 1 s
    clock.now += 3600  # idle
    task.put(records(order_schema(), range(3)))
    assert load_table(task.catalog, "db.orders") is None
    clock.now += 0.5
    task.put(records(order_schema(), range(3, 5), first=3))
    assert load_table(task.catalog, "db.orders") is None
    clock.now += 0.5
    task.put([])
    assert read(tmp_path).column("id").to_pylist() == list(range(5))
