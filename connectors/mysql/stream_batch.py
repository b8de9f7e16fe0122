"""The stream's creates and updates as `SourceBatch`es: consecutive rows events of one
table and one operation in a transaction gathered into Arrow columns.

Why: made one at a time, each change is a key Struct, a value Struct, a source Struct
and a SourceRecord, and then the runtime's JsonConverter walks those Structs again per
record (most of the worker's CPU in the bench's stream: docs/performance.md). A
batch carries the decoded rows as columns: the transposition (`zip(*rows)`) and the
Arrow arrays are built in C, and the converter writes the JSON of a whole column at a
time (`from_arrow`), as for the snapshot's chunks.

What a batch means is what its records would have been (`SourceBatch.records()`), with
one difference the API allows: every record of a batch carries the batch's source
offset, the offset of its last row (the transaction's start, `event` of the last rows
event, `row` of its rows emitted). A restart after the batch's offset was committed
skips all of its rows; before it, the rows come again (at-least-once, as a record
whose offset was not committed). The reader holds the batch back like any last item
of a transaction, so a batch that ends its transaction carries the commit's position.

Not gathered (they go as records): deletes while tombstones are on (a tombstone has no
value, which a batch cannot carry), an update that moves a primary key (delete,
tombstone, create), and tables with a column Arrow does not take (geometry's struct).
"""

from __future__ import annotations

import operator
import time
from typing import Any

import pyarrow as pa

from connect.api import SourceBatch, Struct, Type, arrow
from connectors.mysql.tables import Table
from connectors.postgres.envelope import TRANSACTION_SCHEMA

__all__ = ["RowsBatch", "batchable", "keys_kept"]

#: Rows gathered into one batch at most (a bigger transaction is cut: each batch's
#: offset then points inside the transaction, as a record's would).
MAX_ROWS = 8192


def batchable(table: Table) -> bool:
    """Whether the table's events can travel as Arrow columns (no geometry struct)."""
    return not any(f.schema.type is Type.STRUCT for f in table.value_schema.fields)


def keys_kept(table: Table, befores: list[list[Any]], afters: list[list[Any]]) -> bool:
    """Whether no update of an event changes its row's primary key (compared a whole
    column at a time, not a row at a time)."""
    if table.key_schema is None:
        return True
    pick = operator.itemgetter(*table.key_indexes)
    return list(map(pick, befores)) == list(map(pick, afters))


class RowsBatch:
    """Changes of one table and operation (`c` or `u`, or `d` without tombstones)
    waiting to become one SourceBatch (see the module docstring)."""

    def __init__(self, table: Table, op: str, partition: dict[str, Any]) -> None:
        self.table = table
        self.op = op
        self._partition = partition
        self._befores: list[list[Any]] = []
        self._afters: list[list[Any]] = []
        # (source block values of the rows event, its first row index, row count)
        self._segments: list[tuple[list[Any], int, int]] = []
        self.offset: dict[str, Any] | None = None
        self.rows = 0

    def fits(self, table: Table, op: str) -> bool:
        return table is self.table and op == self.op and self.rows < MAX_ROWS

    def add(
        self,
        source: list[Any],
        first_row: int,
        befores: list[list[Any]],
        afters: list[list[Any]],
        offset: dict[str, Any],
    ) -> None:
        """One rows event's rows from `first_row` on (its converted images: `befores`
        for updates and deletes, `afters` for creates and updates), the offset of its
        last row."""
        n = len(afters) if afters else len(befores)
        self._befores += befores
        self._afters += afters
        self._segments.append((source, first_row, n))
        self.offset = offset
        self.rows += n

    def build(self) -> SourceBatch:
        table = self.table
        env = table.envelope
        n = self.rows
        image_type = arrow.arrow_type(table.value_schema)
        before = self._image(self._befores, image_type)
        after = self._image(self._afters, image_type)
        now_ns = time.time_ns()
        fields = env.fields
        values = pa.RecordBatch.from_arrays(
            [
                pa.nulls(n, image_type) if before is None else before,
                pa.nulls(n, image_type) if after is None else after,
                self._sources(fields[2].schema),
                arrow.repeat(TRANSACTION_SCHEMA, None, n),
                arrow.repeat(fields[4].schema, self.op, n),
                arrow.repeat(fields[5].schema, now_ns // 1_000_000, n),
                arrow.repeat(fields[6].schema, now_ns // 1000, n),
                arrow.repeat(fields[7].schema, now_ns, n),
            ],
            names=[f.name for f in fields],
        )
        keys = None
        if table.key_schema is not None:
            images = self._afters or self._befores
            columns = list(zip(*images, strict=True))
            keys = pa.RecordBatch.from_arrays(
                [
                    pa.array(columns[i], type=arrow.arrow_type(f.schema))
                    for i, f in zip(table.key_indexes, table.key_schema.fields, strict=True)
                ],
                names=[f.name for f in table.key_schema.fields],
            )
        return SourceBatch(
            topic=table.topic,
            value_schema=env,
            values=values,
            key_schema=table.key_schema,
            keys=keys,
            source_partition=self._partition,
            source_offset=self.offset,
        )

    def _image(self, images: list[list[Any]], typ: pa.DataType) -> pa.StructArray | None:
        """The `before` or `after` column of the rows (None: no such image)."""
        if not images:
            return None
        table = self.table
        value_fields = table.value_schema.fields
        if not value_fields:
            return pa.array([{}] * len(images), typ)
        columns = list(zip(*images, strict=True))
        kept = range(len(columns)) if table.value_indexes is None else table.value_indexes
        return pa.StructArray.from_arrays(
            [
                pa.array(columns[i], type=arrow.arrow_type(f.schema))
                for i, f in zip(kept, value_fields, strict=True)
            ],
            fields=list(typ),
        )

    def _sources(self, schema: Any) -> pa.StructArray:
        """The `source` column: each rows event's block, its `row` counting its rows."""
        children = []
        for i, f in enumerate(schema.fields):
            column: list[Any] = []
            if f.name == "row":
                for _, first, count in self._segments:
                    column += range(first, first + count)
            else:
                for values, _, count in self._segments:
                    column += [values[i]] * count
            children.append(pa.array(column, type=arrow.arrow_type(f.schema)))
        return pa.StructArray.from_arrays(children, fields=list(arrow.arrow_type(schema)))


def source_values(block: Struct) -> list[Any]:
    """A source block's values in field order (what `RowsBatch.add` takes)."""
    return list(block.values())
