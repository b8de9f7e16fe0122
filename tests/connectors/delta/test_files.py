"""The Delta sink's own Parquet files (`connectors.delta.files`): their add actions'
stats are delta-rs's for the same rows, the rows read back the same, and the tables
it leaves to delta-rs's writer are left to it."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

from connectors.delta import files
from connectors.delta.files import TableFiles, writable
from tests.connectors.delta.test_sink import task
from tests.connectors.spark.helpers import records


def _rows() -> pa.Table:
    """Every type the stats cover, with negatives, nulls, NaN and infinities, a wide
    decimal (Parquet's bytes), non-ASCII text, and columns that get no bounds."""
    n = 12
    return pa.table({
        "id": pa.array([-5 + i for i in range(n)], pa.int64()),
        "small": pa.array([None, *range(-3, n - 4)], pa.int8()),
        "half": pa.array(range(n), pa.int16()),
        "f32": pa.array([1.5 * i - 4 for i in range(n)], pa.float32()),
        "f64": pa.array([float("nan"), *(0.25 * i for i in range(n - 1))]),
        "inf": pa.array([float("inf"), *(1.0 * i for i in range(n - 1))]),
        "amount": pa.array([decimal.Decimal(i * 125 - 700).scaleb(-2) for i in range(n)],
                           pa.decimal128(10, 2)),
        "wide": pa.array([decimal.Decimal(-10**25 + i).scaleb(-3) for i in range(n)],
                         pa.decimal128(30, 3)),
        "text": pa.array([None, "zz", "é", *(f"name-{i}" for i in range(n - 3))]),
        "nothing": pa.nulls(n, pa.string()),
        "paid": pa.array([i % 2 == 0 for i in range(n)]),
        "day": pa.array([dt.date(1969, 12, 25) + dt.timedelta(days=i) for i in range(n)]),
        "at": pa.array([-1_500 + 1_000_123 * i for i in range(n)], pa.timestamp("us", "UTC")),
        "raw": pa.array([b"ab"] * n),
        "nested": pa.array([{"a": i, "b": "x"} for i in range(n)]),
        "items": pa.array([[i, i + 1] for i in range(n)]),
    })


def _stats(path: Path) -> dict[str, Any]:
    for entry in sorted((path / "_delta_log").glob("*.json")):
        for line in entry.read_text().splitlines():
            add = json.loads(line).get("add")
            if add:
                return json.loads(add["stats"])
    raise AssertionError(f"no add action in {path}")


def test_stats_are_delta_rs_stats_and_the_rows_read_back(tmp_path: Path) -> None:
    data = _rows()
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    for path in (theirs, ours):
        DeltaTable.create(str(path), data.schema)
    write_deltalake(str(theirs), data, mode="append")
    table = DeltaTable(str(ours))
    rows = data.cast(pa.schema(table.schema().to_arrow()))
    assert writable(table, rows)
    table.create_write_transaction([TableFiles(str(ours), None).write(table, rows)],
                                   "append", table.schema())
    expected, got = _stats(theirs), _stats(ours)
    assert got["numRecords"] == expected["numRecords"] == data.num_rows
    # What we leave out: nested columns' bounds (delta-rs writes them per field) and
    # an infinite bound (delta-rs writes null: both say "unknown"). Binary columns have
    # a null count from us, none from delta-rs.
    for part in ("minValues", "maxValues", "nullCount"):
        expected[part].pop("nested")
    assert expected["maxValues"].pop("inf") is None
    assert "inf" not in got["maxValues"]
    assert got["nullCount"].pop("raw") == 0
    assert expected == got
    assert got["minValues"]["at"] == "1969-12-31T23:59:59.998Z"  # cut to the ms below
    assert got["maxValues"]["wide"] == -9999999999999999999999.989
    back = [DeltaTable(str(p)).to_pyarrow_table().drop_columns(["f64"]) for p in (theirs, ours)]
    assert back[0].equals(back[1])


def test_bounds_over_several_row_groups_are_the_files(tmp_path: Path) -> None:
    data = _rows()
    collected: list[pq.FileMetaData] = []
    pq.write_table(data, tmp_path / "one.parquet", metadata_collector=collected)
    pq.write_table(data, tmp_path / "many.parquet", row_group_size=5,
                   metadata_collector=collected)
    one, many = collected
    assert many.num_row_groups == 3
    names = set(data.column_names)
    assert files._stats(one, data.schema, names) == files._stats(many, data.schema, names)
    limited = json.loads(files._stats(many, data.schema, {"id", "text"}))
    assert set(limited["minValues"]) == {"id", "text"}


def test_tables_left_to_delta_rs(tmp_path: Path) -> None:
    """Partitioned tables, later writer features (a CHECK constraint) and nulls for a
    non-null column go through delta-rs's writer; the sink still appends to them."""
    data = _rows().select(["id", "text"])
    DeltaTable.create(str(tmp_path / "parts"), data.schema, partition_by=["text"])
    assert not writable(DeltaTable(str(tmp_path / "parts")), data)
    write_deltalake(str(tmp_path / "checked"), data)
    checked = DeltaTable(str(tmp_path / "checked"))
    assert writable(checked, data)
    checked.alter.add_constraint({"positive": "id > -100"})
    assert not writable(DeltaTable(str(tmp_path / "checked")), data)
    DeltaTable.create(str(tmp_path / "strict"), pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("text", pa.string())]))
    strict = DeltaTable(str(tmp_path / "strict"))
    assert writable(strict, data)
    assert not writable(strict, pa.table({"id": pa.array([1, None]), "text": ["a", "b"]}))

    sink = task(tmp_path, **{"delta.partition.by": "region"})
    sink.open([records(range(1))[0].topic_partition])
    sink.put(records(range(150)))
    sink.stop()
    table = DeltaTable(str(tmp_path / "orders"))
    assert table.metadata().partition_columns == ["region"]
    assert table.to_pyarrow_table().num_rows == 150
    assert table.transaction_version("lake-orders-0") == 150
    assert {p.parent.name for p in (tmp_path / "orders").rglob("*.parquet")} == {
        "region=eu", "region=us", "region=apac"}
