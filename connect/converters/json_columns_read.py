"""Column-at-a-time decoding of a batch of parsed JSON payloads of one schema.

The reading twin of `json_columns`: `compile_decoder` (connect.api.json_decoders) turns
one payload into Connect values with two Python calls per struct field (the null check
and the type's check). For a batch of one schema — what a sink task reads — a struct
column is split into one column per field (`map(methodcaller("get", name), …)`, a C
loop), each column proven plain with C-level built-ins (`set(map(type, column))`,
`min`/`max`) and passed through untouched, and the Structs are made from the columns
zipped back.

The contract is equality with `compile_decoder`: wherever a column is not of the plain
expected shape (a null in a required field, an int out of range, an int for a float, a
logical type), the column is decoded value by value with that decoder; anything it
would raise makes the whole batch raise `Fallback`, so the caller decodes the batch
value by value and reports the first bad record exactly as before.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from connect.api.data import Schema, Struct, Type
from connect.api.errors import DataError
from connect.api.json_decoders import compile_decoder
from connect.api.json_values import INT_RANGES, NeedsExactDecimal
from connect.converters.json_columns import Fallback, _spread

__all__ = ["BatchDecoder", "compile_batch_decoder"]

#: Struct values here were decoded (and checked) for their fields' schemas already.
_trusted = Struct.trusted

#: A function from a list of parsed JSON values of one schema to their Connect values.
BatchDecoder = Callable[[list[Any]], list[Any]]

_NONE = type(None)
#: (column without None, its value types, the per-value decoder) → decoded column
_Inner = Callable[[list[Any], set[type], Callable[[Any], Any]], list[Any]]


def compile_batch_decoder(schema: Schema, *, replace_null: bool = True) -> BatchDecoder:
    """The column decoder of `schema` (see the module docstring)."""
    one = compile_decoder(schema, replace_null=replace_null)
    inner = _inner(schema, replace_null)
    if schema.default is not None and replace_null:
        nullable, null_out = True, schema.default
    else:
        nullable, null_out = schema.optional, None

    def decode(column: list[Any]) -> list[Any]:
        return _spread(column, inner, one, nullable, null_out)

    return decode


def _each(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
    """The per-value decoder over the column; its errors send the batch back."""
    try:
        return list(map(one, column))
    except (DataError, NeedsExactDecimal, TypeError, ValueError, OverflowError) as exc:
        raise Fallback from exc


def _inner(schema: Schema, replace_null: bool) -> _Inner:
    t = schema.type
    if schema.name is not None and t is not Type.STRUCT:
        return _each  # logical types convert every value
    if t in INT_RANGES:
        low, high = INT_RANGES[t]

        def ints(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
            if types == {int} and low <= min(column) and max(column) <= high:
                return column
            return _each(column, types, one)

        return ints
    plain = {Type.FLOAT32: float, Type.FLOAT64: float, Type.BOOLEAN: bool, Type.STRING: str}
    if t in plain:
        expected = plain[t]

        def same(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
            return column if types == {expected} else _each(column, types, one)

        return same
    if t is Type.STRUCT:
        return _struct(schema, replace_null)
    return _each  # bytes, arrays, maps


def _struct(schema: Schema, replace_null: bool) -> _Inner:
    fields = [
        (
            operator.methodcaller("get", f.name),
            compile_batch_decoder(f.schema, replace_null=replace_null),
        )
        for f in schema.fields
    ]

    def structs(column: list[Any], types: set[type], one: Callable[[Any], Any]) -> list[Any]:
        if types != {dict}:
            return _each(column, types, one)  # which raises the error
        if not fields:
            return [_trusted(schema, []) for _ in column]
        columns = [decode(list(map(get, column))) for get, decode in fields]
        # Each column was decoded (and checked) for its field's schema.
        return [_trusted(schema, list(values)) for values in zip(*columns, strict=True)]

    return structs
