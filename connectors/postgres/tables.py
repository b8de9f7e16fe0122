"""Captured tables: a table's columns as read from the catalog, and the Connect schemas
of its change events.

A `Table` is read from the catalog (`read_table`): its columns in order with their type
OIDs, type modifiers, nullability and enum labels, its primary key and its replica
identity. It builds the Debezium schemas of its events once:

- `value_schema` `<prefix>.<schema>.<table>.Value` (one optional field per column —
  Debezium makes `before`/`after` fields optional, the columns keep their own
  nullability), `key_schema` `<prefix>.<schema>.<table>.Key` (the primary key columns;
  None when the table has none), and `envelope` `<prefix>.<schema>.<table>.Envelope`.

Each column's schema and text converter come from `connectors.postgres.columns`
(Debezium's type mapping); `Table.convert` applies the converters to one row, whole
(`row_schema`: every column in catalog order), and `value_of` / `key_of` make the
event's value and key of it.

Debezium's `column.include.list` / `column.exclude.list` (a `ColumnFilter`) choose the
columns of the value: regular expressions matched case-insensitively against the whole
of `schema.table.column`, as Debezium matches them. The key is the primary key whatever
they say — an excluded key column is left out of `before`/`after` and stays in the key,
as in Debezium — so rows are still read whole and cut to the value's columns; a
column in neither is not converted (its text stays text and is dropped), so excluding a
column whose values have no Connect form (a multi-dimensional array) lets its table
be captured.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from connect.api import OPTIONAL_STRING_SCHEMA, Schema, Struct
from connectors.postgres.columns import DEFAULT_TYPES, TypeOptions, column_type
from connectors.postgres.pgoutput import UNCHANGED_TOAST

__all__ = ["ColumnFilter", "Table", "list_tables", "read_table"]


class ColumnFilter:
    """`column.include.list` / `column.exclude.list`: whether a column is in the
    events' values (see the module docstring; at most one of the lists is given)."""

    def __init__(self, include: Sequence[str], exclude: Sequence[str]) -> None:
        self.include = [re.compile(p, re.IGNORECASE) for p in include]
        self.exclude = [re.compile(p, re.IGNORECASE) for p in exclude]

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude)

    def __call__(self, schema: str, table: str, column: str) -> bool:
        name = f"{schema}.{table}.{column}"
        if self.include:
            return any(p.fullmatch(name) for p in self.include)
        return not any(p.fullmatch(name) for p in self.exclude)


@dataclass(slots=True)
class Table:
    """One captured table and the schemas of its events (see the module docstring)."""

    oid: int
    schema: str
    name: str
    columns: list[str]
    type_oids: list[int]
    typmods: list[int]
    not_null: list[bool]
    primary_key: list[str]
    replica_identity: str
    topic: str = ""
    enum_values: list[str | None] | None = None  # per column: its labels, comma-joined
    types: TypeOptions = DEFAULT_TYPES
    column_filter: ColumnFilter | None = None
    value_schema: Schema = field(init=False)
    row_schema: Schema = field(init=False)  # every column; value_schema when unfiltered
    key_schema: Schema | None = field(init=False)
    converters: list[Callable[[str], Any]] = field(init=False)
    key_indexes: list[int] = field(init=False)
    value_indexes: list[int] | None = field(init=False)  # None: every column

    def build(
        self, prefix: str, types: TypeOptions | None = None, *, columns: ColumnFilter | None = None
    ) -> Table:
        """Derive the schemas for topic prefix `prefix` (returns self); `types` and
        `columns` replace the table's type options and column filter when given."""
        if types is not None:
            self.types = types
        if columns is not None:
            self.column_filter = columns
        base = f"{prefix}.{self.schema}.{self.name}"
        self.topic = base
        enums = self.enum_values or [None] * len(self.columns)
        keep = self.column_filter
        kept = [
            i for i, c in enumerate(self.columns) if not keep or keep(self.schema, self.name, c)
        ]
        needed = set(kept) | {self.columns.index(c) for c in self.primary_key}
        fields = []
        converters: list[Callable[[str], Any]] = []
        for i, (name, oid, typmod, not_null, labels) in enumerate(
            zip(self.columns, self.type_oids, self.typmods, self.not_null, enums, strict=True)
        ):
            if i in needed:
                schema, convert = column_type(
                    oid, typmod, self.types, optional=not not_null, enum_values=labels
                )
            else:  # in no event: its text is left as it is (a value no converter takes,
                # a multi-dimensional array, is what a user excludes a column for)
                schema, convert = OPTIONAL_STRING_SCHEMA, str
            fields.append((name, schema))
            converters.append(convert)
        self.value_indexes = None if len(kept) == len(fields) else kept
        self.value_schema = Schema.struct(
            [fields[i] for i in kept], name=f"{base}.Value", optional=True
        )
        self.row_schema = self.value_schema if self.value_indexes is None else Schema.struct(fields)
        self.converters = converters
        index = {c: i for i, c in enumerate(self.columns)}
        self.key_indexes = [index[c] for c in self.primary_key]
        self.key_schema = (
            Schema.struct([fields[i] for i in self.key_indexes], name=f"{base}.Key")
            if self.primary_key
            else None
        )
        return self

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    def convert(self, texts: Sequence[Any]) -> list[Any]:
        """Connect values of one row's text values (None stays None; an unchanged
        TOASTed value stays `UNCHANGED_TOAST` for the caller to resolve)."""
        out = []
        for conv, text in zip(self.converters, texts, strict=True):
            if text is None or text is UNCHANGED_TOAST:
                out.append(text)
            else:
                out.append(conv(text))
        return out

    def value_of(self, row: Sequence[Any]) -> Struct:
        """The value (`before`/`after`) of a converted row: the filter's columns."""
        if self.value_indexes is not None:
            row = [row[i] for i in self.value_indexes]
        return Struct.trusted(self.value_schema, row)

    def key_of(self, row: Sequence[Any]) -> Struct | None:
        """The key of a converted row (None for a table without a primary key)."""
        if self.key_schema is None:
            return None
        return Struct.trusted(self.key_schema, [row[i] for i in self.key_indexes])

    def same_shape(self, columns: Sequence[str], type_oids: Sequence[int]) -> bool:
        return list(columns) == self.columns and list(type_oids) == self.type_oids


_TABLES_SQL = """
SELECT n.nspname, c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_%%'
ORDER BY 1, 2
"""

_TABLE_SQL = """
SELECT c.oid, c.relreplident,
       a.attname,
       CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END,
       CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END,
       a.attnotnull,
       array_position(i.indkey::int2[], a.attnum),
       (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
        FROM pg_enum e
        WHERE e.enumtypid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
WHERE n.nspname = %s AND c.relname = %s
ORDER BY a.attnum
"""


def list_tables(cursor: Any) -> list[tuple[str, str]]:
    """(schema, table) of every user table, in order."""
    cursor.execute(_TABLES_SQL)
    return [(s, t) for s, t in cursor.fetchall()]


def read_table(
    cursor: Any,
    schema: str,
    name: str,
    prefix: str,
    *,
    types: TypeOptions = DEFAULT_TYPES,
    columns: ColumnFilter | None = None,
) -> Table | None:
    """The table from the catalog (None when it does not exist), schemas built with
    `types`, values of the columns `columns` keeps."""
    cursor.execute(_TABLE_SQL, (schema, name))
    rows = cursor.fetchall()
    if not rows:
        return None
    pk = sorted((r[6], r[2]) for r in rows if r[6] is not None)
    return Table(
        oid=rows[0][0],
        schema=schema,
        name=name,
        columns=[r[2] for r in rows],
        type_oids=[r[3] for r in rows],
        typmods=[r[4] for r in rows],
        not_null=[r[5] for r in rows],
        primary_key=[c for _, c in pk],
        replica_identity=rows[0][1],
        enum_values=[r[7] for r in rows],
        column_filter=columns,
    ).build(prefix, types)
