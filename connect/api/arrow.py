"""Connect schemas ⇄ Arrow (and so Parquet and Spark) types; Connect values ⇄ Arrow
arrays, a column at a time.

The runtime's one mapping: source tasks that emit `SourceBatch`es, converters that
encode or decode Arrow columns, and sinks that write Arrow data all use it, so a
column means the same thing at every hop.

| Connect                     | Arrow                     | Spark            |
| int8 / int16 / int32 / int64| int8 / int16 / int32 / int64 | Byte/Short/Integer/LongType |
| float / double              | float32 / float64         | Float/DoubleType |
| boolean / string / bytes    | bool / string / binary    | Boolean/String/BinaryType |
| Decimal (scale s)           | decimal128(p, s)          | DecimalType(p, s) |

(p: the schema's `connect.decimal.precision`, else 38, Spark's largest)
| Date                        | date32                    | DateType         |
| Time                        | time32[ms]                | (read as long/time) |
| Timestamp                   | timestamp[ms, UTC]        | TimestampType    |
| array / map / struct        | list / map / struct       | Array/Map/StructType |

Why column-wise: building a Python dict or Spark Row per record costs microseconds per
field; `zip(*rows)` transposes the field lists in C, and `pa.array(column, type)`
converts each column in C (decimals, dates and datetimes included). Records reach Spark
(or the Parquet writer) as Arrow data only.

Optional-ness: every column is nullable in Arrow. Spark reads Parquet columns as
nullable anyway, and a required field turned optional (a compatible evolution) must not
change the file schema in a way `mergeSchema` refuses.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from connect.api.data import Schema, Struct, Type
from connect.api.errors import DataError
from connect.api.logical import Date, Decimal, Time, Timestamp

__all__ = [
    "TIMESTAMP",
    "arrow_type",
    "batch_from_values",
    "decimal_type",
    "schema_of",
    "to_connect",
]

_PRIMITIVES: dict[Type, pa.DataType] = {
    Type.INT8: pa.int8(),
    Type.INT16: pa.int16(),
    Type.INT32: pa.int32(),
    Type.INT64: pa.int64(),
    Type.FLOAT32: pa.float32(),
    Type.FLOAT64: pa.float64(),
    Type.BOOLEAN: pa.bool_(),
    Type.STRING: pa.string(),
    Type.BYTES: pa.binary(),
}
TIMESTAMP = pa.timestamp("ms", tz="UTC")
#: Struct's field values in order. The project's converters and transforms read the
#: slot the same way: Struct.get() per field would cost a method call per cell.
_struct_values = operator.attrgetter("_values")


def decimal_type(scale: int, precision: int | None) -> pa.DataType:
    return pa.decimal128(min(precision or 38, 38), scale)


def arrow_type(schema: Schema) -> pa.DataType:
    """The Arrow type of a Connect schema (see the module table)."""
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        precision = schema.parameters.get("connect.decimal.precision")
        return decimal_type(Decimal.scale(schema), int(precision) if precision else None)
    if name == Date.LOGICAL_NAME:
        return pa.date32()
    if name == Time.LOGICAL_NAME:
        return pa.time32("ms")
    if name == Timestamp.LOGICAL_NAME:
        return TIMESTAMP
    t = schema.type
    if t in _PRIMITIVES:
        return _PRIMITIVES[t]
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        return pa.list_(arrow_type(schema.value_schema))
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        return pa.map_(arrow_type(schema.key_schema), arrow_type(schema.value_schema))
    if t is Type.STRUCT:
        return pa.struct([pa.field(f.name, arrow_type(f.schema)) for f in schema.fields])
    raise DataError(f"no Arrow type for {schema!r}")


def schema_of(schema: Schema) -> pa.Schema:
    """The Arrow schema of a struct value schema, or one `value` column otherwise."""
    if schema.type is Type.STRUCT:
        return pa.schema([pa.field(f.name, arrow_type(f.schema)) for f in schema.fields])
    return pa.schema([pa.field("value", arrow_type(schema))])


def _plain(value: Any) -> Any:
    """Nested Connect values as pyarrow takes them (structs as dicts, maps as pairs)."""
    if isinstance(value, Struct):
        return {f.name: _plain(v) for f, v in zip(value.schema.fields, value._values, strict=True)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return [(k, _plain(v)) for k, v in value.items()]
    return value


def _column(values: Sequence[Any], schema: Schema, typ: pa.DataType) -> pa.Array:
    if schema.type in (Type.STRUCT, Type.MAP) or (
        schema.type is Type.ARRAY
        and schema.value_schema is not None
        and schema.value_schema.type in (Type.STRUCT, Type.MAP)
    ):
        values = [None if v is None else _plain(v) for v in values]
    try:
        return pa.array(values, type=typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise DataError(f"cannot write a {schema.type} column as {typ}: {exc}") from exc


def batch_from_values(
    schema: Schema | None, values: Sequence[Any], arrow_schema: pa.Schema | None = None
) -> pa.RecordBatch:
    """One record batch for values that share one Connect schema (None: schemaless
    dicts, whose types Arrow infers)."""
    if schema is None:
        if not all(isinstance(v, dict) for v in values):
            raise DataError("schemaless values must be maps (JSON objects) to become columns")
        return pa.RecordBatch.from_pylist(list(values))
    target = arrow_schema if arrow_schema is not None else schema_of(schema)
    if schema.type is not Type.STRUCT:
        return pa.record_batch([_column(values, schema, target.field(0).type)], schema=target)
    fields = schema.fields
    if not values:
        return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in target], schema=target)
    columns = list(zip(*map(_struct_values, values), strict=True))
    arrays = [
        _column(col, f.schema, target.field(f.index).type)
        for f, col in zip(fields, columns, strict=True)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def to_connect(schema: Schema, array: pa.Array | pa.ChunkedArray) -> list[Any]:
    """The Connect values of an Arrow column of `schema` (see the module table): the
    inverse of `batch_from_values`'s columns. Structs become `Struct`s, maps dicts;
    decimals, dates, times and timestamps come back as their Python types. A Python
    object per value: for fallbacks and tests, not for hot paths."""
    values = array.to_pylist()
    convert = _to_connect(schema)
    return values if convert is None else [None if v is None else convert(v) for v in values]


def _to_connect(schema: Schema) -> Any:
    """A function for one non-null value of `schema`, or None when `to_pylist` already
    gives the Connect value."""
    t = schema.type
    if t is Type.STRUCT:
        fields = [(f.name, _to_connect(f.schema)) for f in schema.fields]

        def struct(value: dict[str, Any]) -> Struct:
            out = object.__new__(Struct)
            out.schema = schema
            out._values = [
                v if (v := value[name]) is None or conv is None else conv(v)
                for name, conv in fields
            ]
            return out

        return struct
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        item = _to_connect(schema.value_schema)
        return None if item is None else lambda v: [None if x is None else item(x) for x in v]
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        key = _to_connect(schema.key_schema) or _same
        value = _to_connect(schema.value_schema) or _same
        return lambda v: {key(k): None if x is None else value(x) for k, x in v}
    return None


def _same(value: Any) -> Any:
    return value


def repeat(schema: Schema, value: Any, n: int) -> pa.Array:
    """A column of `n` copies of one Connect value of `schema` (a constant field of a
    batch, such as an envelope's `source` block): converted once, then repeated in C."""
    one = _column([value], schema, arrow_type(schema))
    return one.take(np.zeros(n, np.uint8)) if n else one.slice(0, 0)
