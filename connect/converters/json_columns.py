"""Column-at-a-time JSON encoding of a batch of Connect values of one schema.

`compile_encoder` (connect.api.json_values) walks one value at a time: every field of
every struct costs two Python calls (the null check and the type's check), and every
struct a dict.
For a batch that shares a schema — what a source task hands the worker — the checks can
be made once per *column* with built-ins that loop in C: `set(map(type, column))`
proves a column of strings is all `str`, `min`/`max` prove a column of ints fits its
type, and the column then goes through untouched.

`compile_batch_writer` goes one step further and writes the JSON text itself. A column
of JSON-ready values becomes its texts with one `orjson.dumps` of the whole column, the
values separated by a NUL byte (an `orjson.Fragment`, copied verbatim), which orjson
never writes otherwise (it escapes control characters inside strings), so splitting at
it is exact. A struct column is transposed (`zip(*values)`), each field column written
the same way, and the rows assembled by interleaving the field texts with the constant
`{"name":` pieces in one flat list — one `b"".join` and one `split` for the batch, no
dict per row. A struct column whose entries are a few shared objects (a CDC envelope's
`source` block, shared by a whole snapshot batch) is written once per object.

The contract is equality with the per-value encoder followed by `orjson.dumps`:
wherever a column is not of the plain expected shape (a subclass, a None in a required
field, an int out of range, a float outside the range orjson and Java print alike, a
struct of another schema), the column is encoded value by value with that encoder, and
anything that encoder would raise makes the whole batch raise `Fallback`, so the caller
redoes the batch value by value and reports the first bad record exactly as before.
"""

from __future__ import annotations

import binascii
import datetime as _dt
import decimal as _decimal
import operator
from collections.abc import Callable
from itertools import repeat
from typing import Any

import orjson

from connect.api.data import Schema, Struct, Type
from connect.api.errors import DataError
from connect.api.json_values import INT_RANGES, compile_encoder
from connect.api.logical import Date, Decimal, Time, Timestamp

__all__ = [
    "BatchEncoder",
    "BatchWriter",
    "Fallback",
    "compile_batch_encoder",
    "compile_batch_writer",
    "dump_column",
]

#: A function from a list of values of one schema to their JSON-ready forms.
BatchEncoder = Callable[[list[Any]], list[Any]]

_NONE = type(None)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_MS = _dt.timedelta(milliseconds=1)
_get_schema = operator.attrgetter("schema")
_get_values = Struct.values
_get_days = operator.attrgetter("days")


class Fallback(Exception):
    """The batch needs the value-by-value path (which says what is wrong, if anything)."""


def compile_batch_encoder(
    schema: Schema, *, numeric_decimals: bool = False, replace_null: bool = True
) -> BatchEncoder:
    """The column encoder of `schema` (see the module docstring)."""
    one = compile_encoder(schema, numeric_decimals=numeric_decimals, replace_null=replace_null)
    inner = _inner(schema, numeric_decimals, replace_null)
    nullable, null_out = _null_rule(schema, one, replace_null)

    def encode(column: list[Any]) -> list[Any]:
        return _spread(column, inner, one, nullable, null_out)

    return encode


def _null_rule(schema: Schema, one: Callable[[Any], Any], replace_null: bool) -> tuple[bool, Any]:
    """(whether a None is allowed, what it encodes to): the schema's default when
    `replace_null`, else None for an optional schema; a required one refuses it."""
    if schema.default is not None and replace_null:
        return True, one(None)
    return schema.optional, None


def _spread(
    column: list[Any],
    inner: _Inner,
    one: Callable[[Any], Any],
    nullable: bool,
    null_item: Any,
) -> list[Any]:
    """`inner` over the values that are not None; `null_item` where they are."""
    types = set(map(type, column))
    if _NONE not in types:
        return inner(column, types, one)
    if not nullable:
        raise Fallback
    types.discard(_NONE)
    if not types:
        return [null_item] * len(column)
    present = [i for i, v in enumerate(column) if v is not None]
    encoded = inner([column[i] for i in present], types, one)
    out = [null_item] * len(column)
    for i, v in zip(present, encoded, strict=True):
        out[i] = v
    return out


#: (column without None, its value types, the per-value encoder) → encoded column
_Inner = Callable[[list[Any], set[type], Callable[[Any], Any]], list[Any]]


def _each(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
    """The per-value encoder over the column; its errors send the batch back."""
    try:
        return list(map(one, column))
    except (DataError, TypeError, ValueError, OverflowError) as exc:
        raise Fallback from exc


def _inner(schema: Schema, numeric: bool, replace_null: bool) -> _Inner:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return _each if numeric else _decimals(Decimal.scale(schema))
    if name == Timestamp.LOGICAL_NAME:
        return _timestamps
    if name == Date.LOGICAL_NAME:
        return _dates
    if name == Time.LOGICAL_NAME:
        return _each
    t = schema.type
    if t in INT_RANGES:
        return _ints(*INT_RANGES[t])
    if t in (Type.FLOAT32, Type.FLOAT64):
        return _floats
    if t is Type.BOOLEAN:
        return _same({bool})
    if t is Type.STRING:
        return _same({str})
    if t is Type.STRUCT:
        return _struct(schema, numeric, replace_null)
    return _each  # bytes, arrays, maps: rare in bulk, and nested


def _same(expected: set[type]) -> _Inner:
    def same(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
        return column if types <= expected else _each(column, types, one)

    return same


def _ints(low: int, high: int) -> _Inner:
    def ints(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
        if types == {int} and low <= min(column) and max(column) <= high:
            return column
        return _each(column, types, one)

    return ints


def _floats(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
    # orjson prints a float as Java does for magnitudes in [1e-3, 1e7) (and for 0.0);
    # elsewhere the per-value encoder writes Java's form. A NaN makes the sum NaN.
    if types == {float}:
        magnitudes = list(map(abs, column))
        total = sum(column)
        if total == total and max(magnitudes) < 1e7:
            if min(magnitudes) >= 1e-3:
                return column
            nonzero = [m for m in magnitudes if m]
            if not nonzero or min(nonzero) >= 1e-3:
                return column
    return _each(column, types, one)


def _decimals(scale: int) -> _Inner:
    unscale = operator.methodcaller("scaleb", scale, Decimal.EXACT)

    def decimals(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
        if types == {_decimal.Decimal}:
            scaled = list(map(unscale, column))  # exactly, as per value
            try:
                unscaled = list(map(int, scaled))
            except (ValueError, OverflowError):  # NaN, infinities
                return _each(column, types, one)
            if unscaled == scaled:  # each exact at this scale
                return list(map(_unscaled_base64, unscaled))
        return _each(column, types, one)

    return decimals


def _unscaled_base64(n: int) -> str:
    """A Decimal's JSON form (without decimal.format=NUMERIC): the base64 of its
    unscaled value's shortest big-endian two's complement."""
    raw = n.to_bytes((n + (n < 0)).bit_length() // 8 + 1, "big", signed=True)
    return binascii.b2a_base64(raw, newline=False).decode("ascii")


def _timestamps(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
    if types == {_dt.datetime}:
        try:  # a naive datetime cannot be subtracted from an aware one: value by value
            deltas = map(operator.sub, column, repeat(_EPOCH))
            return list(map(operator.floordiv, deltas, repeat(_MS)))
        except TypeError:
            pass
    return _each(column, types, one)


def _dates(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
    if types == {_dt.date}:
        return list(map(_get_days, map(operator.sub, column, repeat(_EPOCH_DATE))))
    return _each(column, types, one)


def _struct(schema: Schema, numeric: bool, replace_null: bool) -> _Inner:
    writer = _StructWriter(schema, numeric, replace_null)
    fragment = orjson.Fragment

    def structs(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
        return list(map(fragment, writer.write(column)))

    return structs


# ------------------------------------------------------------------ JSON text

#: A function from a list of values of one schema to the JSON text of each.
BatchWriter = Callable[[list[Any]], list[bytes]]

_SEP = b"\x00"
_SEP_ITEM = orjson.Fragment(_SEP)
_SPLIT = b"," + _SEP + b","


def dump_column(values: list[Any]) -> list[bytes]:
    """`orjson.dumps` of each JSON-ready value, in one call (see the module docstring)."""
    n = len(values)
    if n <= 1:
        return [orjson.dumps(v) for v in values]
    items = [_SEP_ITEM] * (2 * n - 1)
    items[::2] = values
    return orjson.dumps(items)[1:-1].split(_SPLIT)


def compile_batch_writer(
    schema: Schema, *, numeric_decimals: bool = False, replace_null: bool = True
) -> BatchWriter:
    """The JSON texts of a column of values of `schema` (see the module docstring)."""
    if schema.type is Type.STRUCT:
        return _StructWriter(schema, numeric_decimals, replace_null).write
    encode = compile_batch_encoder(
        schema, numeric_decimals=numeric_decimals, replace_null=replace_null
    )
    if schema.type in _COMMALESS and schema.name != Decimal.LOGICAL_NAME:
        return lambda column: _dump_commaless(encode(column))
    return lambda column: dump_column(encode(column))


#: Types whose JSON texts never hold a comma (numbers, booleans, null): their column is
#: one plain `dumps` split at the commas, with no separator items.
_COMMALESS = frozenset(
    {Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64, Type.BOOLEAN}
)


def _dump_commaless(values: list[Any]) -> list[bytes]:
    if len(values) <= 1:
        return [orjson.dumps(v) for v in values]
    return orjson.dumps(values)[1:-1].split(b",")


#: A column's texts in pieces: each piece is one bytes shared by every row, or a list
#: of one bytes per row; a row's text is its pieces joined.
_Pieces = list[bytes | list[bytes]]


def _same_object(column: list[Any]) -> bool:
    """Whether every entry is one object (a CDC batch's `op`, `ts_ms`, `source`)."""
    first = column[0]
    return first is column[-1] and len(set(map(id, column))) == 1


class _StructWriter:
    """The JSON texts of a column of structs. Nested structs are flattened into one
    list of pieces, so a row's text is made by one join however deep it nests, and a
    field holding one object in every row is written once, as a constant piece merged
    with its neighbours."""

    def __init__(self, schema: Schema, numeric: bool, replace_null: bool) -> None:
        self.schema = schema
        self.one = compile_encoder(schema, numeric_decimals=numeric, replace_null=replace_null)
        self.nullable, null_out = _null_rule(schema, self.one, replace_null)
        self.null_text = orjson.dumps(null_out)
        self.fields: list[tuple[bytes, _StructWriter | BatchWriter]] = [
            (
                (b"{" if i == 0 else b",") + orjson.dumps(f.name) + b":",
                _StructWriter(f.schema, numeric, replace_null)
                if f.schema.type is Type.STRUCT
                else compile_batch_writer(
                    f.schema, numeric_decimals=numeric, replace_null=replace_null
                ),
            )
            for i, f in enumerate(schema.fields)
        ]

    def write(self, column: list[Any]) -> list[bytes]:
        return _assemble(self.pieces(column), len(column))

    def pieces(self, column: list[Any]) -> _Pieces:
        types = set(map(type, column))
        if _NONE not in types:
            return self._present(column, types)
        if not self.nullable:
            raise Fallback
        if types == {_NONE}:
            return [self.null_text]
        present = [v for v in column if v is not None]
        texts = iter(_assemble(self._present(present, types - {_NONE}), len(present)))
        return [[self.null_text if v is None else next(texts) for v in column]]

    def _present(self, column: list[Any], types: set[type]) -> _Pieces:
        schema, one = self.schema, self.one
        if types != {Struct}:
            return [dump_column(_each(column, types, one))]  # subclasses
        if set(map(id, map(_get_schema, column))) != {id(schema)}:
            schemas = list(map(_get_schema, column))
            distinct = dict(zip(map(id, schemas), schemas, strict=True)).values()
            if not all(s == schema for s in distinct):
                return [dump_column(_each(column, types, one))]  # which raises the mismatch
        n = len(column)
        if not self.fields:
            return [b"{}"]
        if n > 8 and len(set(map(id, column[:8]))) <= 2:
            # a few structs shared across the batch: each distinct one written once
            ids = list(map(id, column))
            unique = dict(zip(ids, column, strict=True))
            texts = self.write(list(unique.values()))
            if len(texts) == 1:
                return [texts[0]]
            once = dict(zip(unique, texts, strict=True))
            return [list(map(once.__getitem__, ids))]
        try:  # rows of another width than the schema's make strict zips fail
            columns = list(zip(*map(_get_values, column), strict=True))
        except ValueError:
            raise Fallback from None
        if len(columns) != len(self.fields):
            raise Fallback
        out: _Pieces = []
        for (head, field), values in zip(self.fields, columns, strict=True):
            out.append(head)
            part = list(values)
            if n > 1 and _same_object(part):
                part = part[:1]
                written = field.write(part) if isinstance(field, _StructWriter) else field(part)
                out.append(written[0])
            elif isinstance(field, _StructWriter):
                out.extend(field.pieces(part))
            else:
                out.append(field(part))
        out.append(b"}")
        return out


def _assemble(pieces: _Pieces, n: int) -> list[bytes]:
    """The `n` row texts of `pieces`: neighbouring constants merged, then every row's
    pieces and a separator in one flat list, one join, one split."""
    merged: _Pieces = []
    for piece in pieces:
        if type(piece) is bytes and merged and type(merged[-1]) is bytes:
            merged[-1] = merged[-1] + piece  # type: ignore[operator]
        else:
            merged.append(piece)
    if len(merged) == 1 and type(merged[0]) is bytes:
        return [merged[0]] * n  # type: ignore[list-item]
    if type(merged[-1]) is bytes:
        merged[-1] = merged[-1] + _SEP  # type: ignore[operator]
    else:
        merged.append(_SEP)
    stride = len(merged)
    flat: list[Any] = [None] * (n * stride)
    for k, piece in enumerate(merged):
        flat[k::stride] = [piece] * n if type(piece) is bytes else piece
    out = b"".join(flat).split(_SEP)
    out.pop()  # after the last separator
    return out
