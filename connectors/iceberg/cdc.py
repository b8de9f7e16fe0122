"""Upsert mode: change events → the rows to write and the keys to remove, a batch at a time.

What a change looks like (the first that fits decides, per batch):
1. `iceberg.tables.cdc-field` names a field: its value is the operation, Tabular's
   letters or Debezium's (`D`/`d` delete, anything else insert or update);
2. Debezium's envelope (fields `op` and `after`, with `before`): the row is `after`;
   a delete (`op = d`) carries its key in `before`;
3. ExtractNewRecordState's flattening: `__deleted = true` (delete.handling.mode=
   rewrite) or `__op = d` (add.fields=op) marks a delete;
4. otherwise every record is an insert or update.
Fields named `__op`, `__deleted` and the cdc field are markers, not columns.

Within one commit, only the last change of each key counts (a key inserted, updated
and deleted in one interval is deleted), so the commit removes every changed key's old
row and writes the surviving rows: the table then equals the source table as of the
last change read. All of it in Arrow compute (a group-by for the last change per key),
with no Python step per record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from connect.api import DataError

__all__ = ["Changes", "changes"]

_MARKERS = ("__op", "__deleted")
_INDEX = "__tributary_row"


@dataclass(frozen=True, slots=True)
class Changes:
    #: The rows to write (inserts and updates), one per key, in the records' columns.
    rows: pa.Table
    #: Every changed key (the rows' and the deleted ones'): one column per id column.
    keys: pa.Table


def _is_delete(data: pa.Table, cdc_field: str | None) -> tuple[pa.Table, pa.Array | None, bool]:
    """(row columns, delete mask or None, whether the keys of deletes come from `before`)."""
    names = set(data.column_names)
    if cdc_field is not None:
        if cdc_field not in names:
            raise DataError(f"iceberg.tables.cdc-field={cdc_field} is not a field of the records")
        op = pc.utf8_lower(data.column(cdc_field).cast(pa.string()))
        return data.drop_columns([cdc_field]), pc.equal(op, "d"), False
    if "op" in names and "after" in names:
        after = data.column("after").combine_chunks()
        rows = pa.Table.from_arrays(after.flatten(), names=[f.name for f in after.type])
        return rows, pc.equal(data.column("op"), "d"), True
    mask = None
    if "__deleted" in names:
        mask = pc.equal(pc.utf8_lower(data.column("__deleted").cast(pa.string())), "true")
    if "__op" in names:
        op_d = pc.equal(data.column("__op").cast(pa.string()), "d")
        mask = op_d if mask is None else pc.or_(mask, op_d)
    return data.drop_columns([m for m in _MARKERS if m in names]), mask, False


def changes(data: pa.Table, id_columns: Sequence[str], cdc_field: str | None) -> Changes:
    """The batch's net effect per key (see the module docstring)."""
    rows, deleted, keys_in_before = _is_delete(data, cdc_field)
    if deleted is not None:
        deleted = pc.fill_null(deleted, False)
    missing = [c for c in id_columns if c not in rows.column_names]
    if missing:
        raise DataError(f"upsert mode: the records have no id column {missing[0]}")
    key_columns = [rows.column(c) for c in id_columns]
    if keys_in_before and deleted is not None and pc.any(deleted).as_py():
        before = data.column("before").combine_chunks()
        key_columns = [
            pc.if_else(deleted, pc.struct_field(before, [before.type.get_field_index(c)]), col)
            for c, col in zip(id_columns, key_columns, strict=True)
        ]
    for c, col in zip(id_columns, key_columns, strict=True):
        if col.null_count:
            raise DataError(f"upsert mode: a change without a value for the id column {c}")
    keyed = pa.table(
        {**{c: col for c, col in zip(id_columns, key_columns, strict=True)},
         _INDEX: pa.array(range(data.num_rows), pa.int64())}
    )
    # The last change of each key wins.
    last = keyed.group_by(list(id_columns), use_threads=False).aggregate([(_INDEX, "max")])
    if last.num_rows == data.num_rows:
        # Every key changed once (a commit's changes usually spread over the table):
        # the rows are their own net effect, in their order; no copy of every column.
        keys, kept = keyed.select(list(id_columns)), rows
        if deleted is not None:
            kept = kept.filter(pc.invert(deleted))
        return Changes(rows=kept, keys=keys)
    winners = pc.sort_indices(last.column(_INDEX + "_max"))
    index = pc.take(last.column(_INDEX + "_max"), winners)
    keys = last.select(list(id_columns)).take(winners)
    kept = rows.take(index)
    if deleted is not None:
        kept = kept.filter(pc.invert(pc.take(deleted, index)))
    return Changes(rows=kept, keys=keys)
