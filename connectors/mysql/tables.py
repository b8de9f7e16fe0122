"""Captured tables: a table's columns (`ColumnDef`s) and the Connect schemas of its events.

A `Table` comes from one of two places, which describe the same table the same way:

- `read_tables(cursor, …)`: `information_schema` at the snapshot, read inside the
  snapshot's transaction (so the structure is the one the rows were read with);
- `from_table_map(event, …)`: a binlog table map event. With `binlog_row_metadata=FULL`
  the event carries the column names, signedness, ENUM/SET members, character sets and
  the primary key, so each row event is decoded with the table's shape at that point of
  the log, not with the current catalog's (the pitfall of decoding old events after an
  ALTER TABLE). The binlog is its own schema history: a restart replays nothing.

`Table.build` derives `value_schema` `<prefix>.<db>.<table>.Value` (one field per column
the column filter keeps), `key_schema` `<…>.Key` (the primary key; None without one)
and `envelope` `<…>.Envelope`, plus each column's two converters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from connect.api import ConnectError, Schema, Struct
from connectors.mysql.columns import ColumnDef, TypeOptions, column_type
from connectors.mysql.rows import compile_decoder
from connectors.postgres.envelope import envelope_schema
from connectors.postgres.tables import ColumnFilter

__all__ = ["Table", "from_table_map", "read_tables"]


@dataclass(slots=True)
class Table:
    """One captured table and the schemas of its events (see the module docstring)."""

    db: str
    name: str
    columns: list[ColumnDef]
    primary_key: list[str]
    topic: str = ""
    #: the decoder of this table's row images (`connectors.mysql.rows`); None: the
    #: library decodes them
    decoder: Callable[[bytes], list[list[Any]]] | None = None
    value_schema: Schema = field(init=False)
    key_schema: Schema | None = field(init=False)
    envelope: Schema = field(init=False)
    snapshot_converters: list[Callable[[Any], Any]] = field(init=False)
    stream_converters: list[Callable[[Any], Any]] = field(init=False)
    names: list[str] = field(init=False)
    #: each column's Connect schema, in column order (kept by the column filter or not)
    column_schemas: list[Schema] = field(init=False)
    #: (index, stream converter) of the columns whose binlog value needs converting
    converted: list[tuple[int, Callable[[Any], Any]]] = field(init=False)
    key_indexes: list[int] = field(init=False)
    value_indexes: list[int] | None = field(init=False)  # None: every column

    def build(
        self, prefix: str, types: TypeOptions, source: Schema, columns: ColumnFilter | None
    ) -> Table:
        base = f"{prefix}.{self.db}.{self.name}"
        self.topic = base
        fields = []
        self.snapshot_converters, self.stream_converters = [], []
        for col in self.columns:
            schema, snap, stream = column_type(col, types)
            fields.append((col.name, schema))
            self.snapshot_converters.append(snap)
            self.stream_converters.append(stream)
        self.names = [c.name for c in self.columns]
        self.column_schemas = [s for _, s in fields]
        self.converted = [
            (i, c) for i, c in enumerate(self.stream_converters) if c.__name__ != "_same"
        ]
        kept = [
            i
            for i, c in enumerate(self.columns)
            if not columns or columns(self.db, self.name, c.name)
        ]
        self.value_indexes = None if len(kept) == len(fields) else kept
        self.value_schema = Schema.struct(
            [fields[i] for i in kept], name=f"{base}.Value", optional=True
        )
        index = {c: i for i, c in enumerate(self.names)}
        self.key_indexes = [index[c] for c in self.primary_key if c in index]
        self.key_schema = (
            Schema.struct([fields[i] for i in self.key_indexes], name=f"{base}.Key")
            if self.key_indexes
            else None
        )
        self.envelope = envelope_schema(base, self.value_schema, source)
        return self

    def with_decoder(self, columns: Sequence[Any]) -> Table:
        """This table with the decoder of its table map's `columns` compiled."""
        self.decoder = compile_decoder(columns)
        return self

    @property
    def qualified(self) -> str:
        return f"{self.db}.{self.name}"

    def value_of(self, row: Sequence[Any]) -> Struct:
        if self.value_indexes is not None:
            row = [row[i] for i in self.value_indexes]
        return Struct.trusted(self.value_schema, list(row))

    def key_of(self, row: Sequence[Any]) -> Struct | None:
        if self.key_schema is None:
            return None
        return Struct.trusted(self.key_schema, [row[i] for i in self.key_indexes])

    def shape(self) -> tuple[Any, ...]:
        """What the events' schemas depend on (a table map that repeats it reuses us)."""
        return (
            tuple(
                (c.name, c.kind, c.nullable, c.unsigned, c.precision, c.scale, c.values)
                for c in self.columns
            ),
            tuple(self.primary_key),
        )


_COLUMNS_SQL = """
SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE,
       NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION
FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION
"""

_KEYS_SQL = """
SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME
FROM information_schema.STATISTICS
WHERE INDEX_NAME = 'PRIMARY'
  AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
ORDER BY TABLE_SCHEMA, TABLE_NAME, SEQ_IN_INDEX
"""

_TABLES_SQL = """
SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
WHERE TABLE_TYPE = 'BASE TABLE'
  AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
"""

_MEMBERS = re.compile(r"'((?:[^']|'')*)'")


def _members(column_type: str) -> tuple[str, ...]:
    """The members of `enum('a','b')` / `set('x','y')` as COLUMN_TYPE spells them."""
    inner = column_type[column_type.index("(") + 1 : column_type.rindex(")")]
    return tuple(m.replace("''", "'") for m in _MEMBERS.findall(inner))


def _column(row: Sequence[Any]) -> ColumnDef:
    _, _, name, kind, ctype, nullable, precision, scale, fsp = row
    kind = kind.lower()
    ctype = ctype.lower()
    if kind == "bit":
        precision = int(ctype[ctype.index("(") + 1 : ctype.index(")")]) if "(" in ctype else 1
    return ColumnDef(
        name=name,
        kind=kind,
        nullable=nullable == "YES",
        unsigned="unsigned" in ctype,
        precision=int(precision or 0),
        scale=int(fsp if kind in ("time", "datetime", "timestamp") else scale or 0) or 0,
        values=_members(ctype) if kind in ("enum", "set") else (),
    )


def read_tables(cursor: Any, selected: Callable[[str, str], bool]) -> list[Table]:
    """Every base table `selected(db, table)` keeps, as the catalog says now (unbuilt)."""
    cursor.execute(_TABLES_SQL)
    wanted = {(d, t) for d, t in cursor.fetchall() if selected(d, t)}
    cursor.execute(_COLUMNS_SQL)
    columns: dict[tuple[str, str], list[ColumnDef]] = {}
    for row in cursor.fetchall():
        if (row[0], row[1]) in wanted:
            columns.setdefault((row[0], row[1]), []).append(_column(row))
    cursor.execute(_KEYS_SQL)
    keys: dict[tuple[str, str], list[str]] = {}
    for db, table, column in cursor.fetchall():
        keys.setdefault((db, table), []).append(column)
    return [
        Table(db=db, name=name, columns=cols, primary_key=keys.get((db, name), []))
        for (db, name), cols in sorted(columns.items())
    ]


# python-mysql-replication's FIELD_TYPE codes → information_schema's DATA_TYPE
_KINDS = {
    1: "tinyint",
    2: "smallint",
    3: "int",
    4: "float",
    5: "double",
    7: "timestamp",
    8: "bigint",
    9: "mediumint",
    10: "date",
    11: "time",
    12: "datetime",
    13: "year",
    15: "varchar",
    16: "bit",
    17: "timestamp",
    18: "datetime",
    19: "time",
    245: "json",
    246: "decimal",
    247: "enum",
    248: "set",
    252: "blob",
    253: "varchar",
    254: "char",
    255: "geometry",
}


def _stream_column(col: Any, nullable: bool) -> ColumnDef:
    kind = _KINDS.get(col.type, "varchar")
    binary = getattr(col, "character_set_name", None) == "binary"
    if kind in ("blob", "varchar", "char"):
        kind = ("varbinary" if kind != "blob" else "blob") if binary else "text"
    precision = scale = 0
    values: tuple[str, ...] = ()
    if kind == "decimal":
        precision, scale = col.precision, col.decimals
    elif kind in ("time", "datetime", "timestamp"):
        scale = getattr(col, "fsp", 0) or 0
    elif kind == "bit":
        precision = col.bits
    elif kind == "enum":
        values = tuple(col.enum_values or ())[1:]  # [0] is the library's '' for index 0
    elif kind == "set":
        values = tuple(col.set_values or ())
    return ColumnDef(
        name=col.name,
        kind=kind,
        nullable=nullable,
        unsigned=bool(col.unsigned),
        precision=precision,
        scale=scale,
        values=values,
    )


def from_table_map(event: Any, *, decoder: bool = True) -> Table:
    """The table a table map event describes (unbuilt; see the module docstring), with
    the decoder of its row images unless `decoder` is False (the stream compiles one
    only for a shape it has not seen: a table map precedes every rows event)."""
    if any(col.name is None for col in event.columns):
        raise ConnectError(
            f"the binlog's table map of {event.schema}.{event.table} names no columns: it "
            "was written before binlog_row_metadata=FULL was set; start from a later "
            "position (snapshot.mode=when_needed with the offsets deleted)"
        )
    bitmask = event.null_bitmask
    columns = [
        _stream_column(col, bool(bitmask[i // 8] & (1 << (i % 8))))
        for i, col in enumerate(event.columns)
    ]
    meta = event.optional_metadata
    key_indexes = list(meta.simple_primary_key_list or []) or list(
        (meta.primary_keys_with_prefix or {}).keys()
    )
    return Table(
        db=event.schema,
        name=event.table,
        columns=columns,
        primary_key=[columns[i].name for i in key_indexes],
        decoder=compile_decoder(event.columns) if decoder else None,
    )
