"""Arrow data made fit for a Delta table: types Delta has, the table's schema, changes.

All of it works on whole columns (pyarrow compute), never a Python object per row:
a commit's rows are one Arrow table by the time they get here.

- `delta_types`: Delta has no time-of-day type and no unsigned integers; Connect's Time
  (time32[ms]) is written as its milliseconds since midnight (int32), unsigned
  integers as the next signed type up. Timestamps are Delta's microseconds in UTC
  (delta-rs casts the millisecond ones Connect's Timestamp maps to).
- `conform`: rows against the table's schema. A column of a narrower type than the
  table's is cast up (int32 into bigint, float into double, a decimal of less
  precision); a wider one is cast down only when every value fits, since delta-rs 1.6
  cannot write Delta's type-widening feature, and otherwise fails naming the column;
  a column the table lacks is added (nullable) only with schema evolution on; a column
  the table has and the rows lack is written as nulls. Anything else (text into a
  number column, a struct into a string) is incompatible and fails naming the column.
- `changes` and `last_per_key`: a Debezium envelope or flattened change rows as the
  row images to merge with an operation column, the last change of each key kept.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connect.api import DataError

__all__ = ["OP", "changes", "conform", "delta_types", "last_per_key"]

#: The operation column of merge sources: "d" deletes, anything else upserts.
OP = "__tributary_op"
_DELETED = "__deleted"
_UNSIGNED = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(),
             pa.uint64(): pa.int64()}


class SchemaChangeError(DataError):
    """Rows whose column cannot be written to the table as it is."""

    def __init__(self, table: str, column: str, reason: str) -> None:
        self.table = table
        self.column = column
        super().__init__(f"column {column!r} of {table}: {reason}")


def delta_types(data: pa.Table) -> pa.Table:
    """`data` with the top-level columns Delta cannot hold turned into ones it can."""
    for i, f in enumerate(data.schema):
        t = f.type
        if pa.types.is_time(t):
            ms = pc.cast(data.column(i), pa.time32("ms"))
            data = data.set_column(i, f.name, pc.cast(ms, pa.int32()))
        elif t in _UNSIGNED:
            data = data.set_column(i, f.name, pc.cast(data.column(i), _UNSIGNED[t]))
    return data


def _fits(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether a column of `have` may be cast to `want` at all (values aside)."""
    kinds = (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal,
             pa.types.is_timestamp, pa.types.is_date, pa.types.is_boolean)
    for kind in kinds:
        if kind(have) and kind(want):
            return True
    if pa.types.is_integer(have) and (pa.types.is_floating(want) or pa.types.is_decimal(want)):
        return True
    text = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    raw = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view)
    if any(k(have) for k in text) and any(k(want) for k in text):
        return True
    if any(k(have) for k in raw) and any(k(want) for k in raw):
        return True
    nested = (pa.types.is_struct, pa.types.is_list, pa.types.is_large_list, pa.types.is_map)
    return any(k(have) and k(want) for k in nested)


def conform(
    data: pa.Table, schema: pa.Schema | None, *, evolve: bool, table: str,
    keep: tuple[str, ...] = (),
) -> tuple[pa.Table, bool]:
    """`data` cast to the table's `schema` (None: a new table), and whether it brings
    columns the table lacks (so the write must merge the schema). `keep`: columns that
    are not the table's (a merge's operation column), left as they are."""
    if schema is None:
        return data, False
    wanted = {f.name: f.type for f in schema}
    new = False
    for i, f in enumerate(data.schema):
        if f.name in keep:
            continue
        want = wanted.get(f.name)
        if want is None:
            if not evolve:
                raise SchemaChangeError(table, f.name, "not in the table; "
                                        "delta.schema.evolution.enabled=true adds it")
            new = True
            continue
        if f.type == want:
            continue
        if not _fits(f.type, want):
            raise SchemaChangeError(table, f.name, f"{f.type} cannot be written to the "
                                    f"table's {want} (an incompatible change)")
        try:
            column = pc.cast(data.column(i), want, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaChangeError(table, f.name, f"{f.type} values do not fit the table's "
                                    f"{want} (delta-rs cannot widen a column's type): "
                                    f"{exc}") from None
        data = data.set_column(i, f.name, column)
    for f in schema:
        if f.name not in data.column_names:
            data = data.append_column(f.name, pa.nulls(data.num_rows, f.type))
    return data, new


def changes(data: pa.Table, *, cdc_field: str) -> pa.Table:
    """The row image of each change and its operation (column OP): the `after` image
    of a Debezium envelope's create, read and update, the `before` of a delete (only
    the key columns need to be there); flattened rows as they are, without the
    `cdc_field` and `__deleted` columns. A truncate ('t') or a change with neither
    image is dropped: it names no row."""
    names = set(data.column_names)
    if {"before", "after", "op"} <= names and pa.types.is_struct(data.schema.field("after").type):
        op = pc.fill_null(data.column("op"), "")
        deleted = pc.equal(op, "d")
        after = data.column("after").combine_chunks()
        before = data.column("before").combine_chunks()
        before_fields = {before.type.field(i).name for i in range(before.type.num_fields)}
        columns, fields = [], []
        for i in range(after.type.num_fields):
            field = after.type.field(i)
            image = pc.struct_field(after, [i])
            if field.name in before_fields:
                image = pc.if_else(deleted, pc.struct_field(before, [field.name]), image)
            columns.append(image)
            fields.append(field.with_nullable(True))
        out = pa.Table.from_arrays(columns, schema=pa.schema(fields))
        out = out.append_column(OP, pc.if_else(deleted, "d", "u"))
        named = pc.or_(pc.is_valid(after), pc.and_(deleted, pc.is_valid(before)))
        return out.filter(pc.and_(named, pc.not_equal(op, "t")))
    delete = pa.repeat(False, data.num_rows) if data.num_rows else pa.array([], pa.bool_())
    drop = []
    if cdc_field in names:
        op = pc.fill_null(pc.cast(data.column(cdc_field), pa.string()), "")
        delete = pc.or_(delete, pc.equal(op, "d"))
        drop.append(cdc_field)
    if _DELETED in names:
        flag = pc.fill_null(pc.equal(pc.cast(data.column(_DELETED), pa.string()), "true"), False)
        delete = pc.or_(delete, flag)
        drop.append(_DELETED)
    out = data.drop_columns(drop)
    return out.append_column(OP, pc.if_else(delete, "d", "u"))


def last_per_key(data: pa.Table, keys: tuple[str, ...]) -> pa.Table:
    """The last row of each key, in the order those rows came: a MERGE may match a
    target row once, and the last change is the row's state."""
    missing = [k for k in keys if k not in data.column_names]
    if missing:
        raise DataError(f"the id column(s) {', '.join(missing)} are not in the records")
    n = data.num_rows
    index = "__tributary_row"
    with_index = data.select(list(keys)).append_column(index, pa.array(np.arange(n)))
    last = with_index.group_by(list(keys), use_threads=False).aggregate([(index, "max")])
    rows = np.sort(last.column(f"{index}_max").to_numpy())
    if len(rows) == n:
        return data
    return data.take(pa.array(rows))
