"""Captured tables as Connect schemas, and PostgreSQL's text values as Connect values.

A `Table` is read from the catalog (`read_table`): its columns in order with their type
OIDs, type modifiers and nullability, its primary key and its replica identity. It
builds the Debezium schemas of its events once:

- `value_schema` `<prefix>.<schema>.<table>.Value` (one optional field per column —
  Debezium makes `before`/`after` fields optional, the columns keep their own
  nullability), `key_schema` `<prefix>.<schema>.<table>.Key` (the primary key columns;
  None when the table has none), and `envelope` `<prefix>.<schema>.<table>.Envelope`.

Column types map to Connect through `connectors.jdbc.types.column_field` (the same
table as the JDBC source: exact decimals, NUMERIC without a precision as its text,
Timestamp/Date/Time logical types, JSON/UUID/enums as strings, bytea as bytes), chosen
here by the type OID. Values arrive as PostgreSQL's text output — from pgoutput
tuples and from the snapshot's `COPY … TO STDOUT` alike — and `Table.convert` turns
each into the Connect value with one function per column, so a snapshot row and a
streamed row of the same data are equal. Sessions run with TimeZone UTC and DateStyle
ISO, so timestamps parse with `datetime.fromisoformat`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from connect.api import Schema, Struct
from connectors.jdbc.types import column_field
from connectors.postgres.pgoutput import UNCHANGED_TOAST

__all__ = [
    "Table",
    "copy_unescape",
    "list_tables",
    "make_struct",
    "read_table",
    "text_converter",
]

BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, TEXT, OID = 16, 17, 18, 19, 20, 21, 23, 25, 26
JSON, FLOAT4, FLOAT8, BPCHAR, VARCHAR = 114, 700, 701, 1042, 1043
DATE, TIME, TIMESTAMP, TIMESTAMPTZ, NUMERIC, UUID, JSONB = 1082, 1083, 1114, 1184, 1700, 2950, 3802


def make_struct(schema: Schema, values: list[Any]) -> Struct:
    """A Struct over values already converted for its fields (no second validation:
    this is the per-row hot path of the snapshot and the stream)."""
    struct = Struct.__new__(Struct)
    struct.schema = schema
    struct._values = values
    return struct


def _numeric_type(typmod: int) -> sa.types.TypeEngine:
    if typmod < 4:
        return sa.Numeric()
    precision = ((typmod - 4) >> 16) & 0xFFFF
    scale = (typmod - 4) & 0xFFFF
    return sa.Numeric(precision, scale)


def _sa_type(type_oid: int, typmod: int) -> sa.types.TypeEngine:
    """The SQLAlchemy type that `column_field` maps the way this column should map."""
    simple: dict[int, sa.types.TypeEngine] = {
        BOOL: sa.Boolean(),
        INT2: sa.SmallInteger(),
        INT4: sa.Integer(),
        INT8: sa.BigInteger(),
        OID: sa.BigInteger(),
        FLOAT4: sa.REAL(),
        FLOAT8: sa.Float(),
        BYTEA: sa.LargeBinary(),
        DATE: sa.Date(),
        TIME: sa.Time(),
        TIMESTAMP: sa.DateTime(),
        TIMESTAMPTZ: sa.DateTime(timezone=True),
        JSON: sa.JSON(),
        JSONB: sa.JSON(),
    }
    if type_oid == NUMERIC:
        return _numeric_type(typmod)
    return simple.get(type_oid, sa.String())  # text, varchar, uuid, enums, arrays, …


def _bool(text: str) -> bool:
    return text == "t"


def _bytea(text: str) -> bytes:
    return bytes.fromhex(text[2:])  # bytea_output = hex: \x0a0b…


def _timestamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def _timestamptz(text: str) -> dt.datetime:
    value = dt.datetime.fromisoformat(text)
    return value if value.utcoffset() == dt.timedelta(0) else value.astimezone(dt.UTC)


def _decimal(scale: int) -> Callable[[str], Any]:
    quantum = decimal.Decimal(1).scaleb(-scale)
    Dec = decimal.Decimal

    def convert(text: str) -> Any:
        value = Dec(text)
        if value.as_tuple().exponent != -scale:
            value = value.quantize(quantum)
        return value

    return convert


def text_converter(type_oid: int, typmod: int) -> Callable[[str], Any]:
    """The function from PostgreSQL's text output of a value to its Connect value."""
    if type_oid in (INT2, INT4, INT8, OID):
        return int
    if type_oid in (FLOAT4, FLOAT8):
        return float
    if type_oid == BOOL:
        return _bool
    if type_oid == NUMERIC:
        if typmod < 4:
            return str  # no precision: the exact text
        return _decimal((typmod - 4) & 0xFFFF)
    if type_oid == BYTEA:
        return _bytea
    if type_oid == DATE:
        return dt.date.fromisoformat
    if type_oid == TIME:
        return dt.time.fromisoformat
    if type_oid == TIMESTAMP:
        return _timestamp
    if type_oid == TIMESTAMPTZ:
        return _timestamptz
    return str


_COPY_ESCAPES = {
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)")


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group(1)
    if code in _COPY_ESCAPES:
        return _COPY_ESCAPES[code]
    if code[0] == "x" and len(code) > 1:
        return chr(int(code[1:], 16))
    if code[0].isdigit():
        return chr(int(code, 8))
    return code


def copy_unescape(text: str) -> str:
    """A field of COPY's text format without its backslash escapes."""
    return _ESCAPE.sub(_unescape_one, text) if "\\" in text else text


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
    value_schema: Schema = field(init=False)
    key_schema: Schema | None = field(init=False)
    converters: list[Callable[[str], Any]] = field(init=False)
    key_indexes: list[int] = field(init=False)

    def build(self, prefix: str) -> Table:
        """Derive the schemas for topic prefix `prefix` (returns self)."""
        base = f"{prefix}.{self.schema}.{self.name}"
        self.topic = base
        fields = []
        for name, oid, typmod, not_null in zip(
            self.columns, self.type_oids, self.typmods, self.not_null, strict=True
        ):
            mapping = column_field(name, _sa_type(oid, typmod), optional=not not_null)
            assert mapping is not None  # every OID maps (unknown ones to string)
            fields.append((name, mapping.schema))
        self.value_schema = Schema.struct(fields, name=f"{base}.Value", optional=True)
        self.converters = [
            text_converter(o, m) for o, m in zip(self.type_oids, self.typmods, strict=True)
        ]
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
       array_position(i.indkey::int2[], a.attnum)
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


def read_table(cursor: Any, schema: str, name: str, prefix: str) -> Table | None:
    """The table from the catalog (None when it does not exist), schemas built."""
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
    ).build(prefix)
