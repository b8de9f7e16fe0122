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

Files hold time as time (`file_batch`). Some well-known semantic types travel as
numbers or text — Debezium's, which its connectors and ours (PostgreSQL CDC, the JDBC
source's Debezium modes) send — and stay so everywhere above, since converters must
write them to the log as Debezium does. A sink that writes files read as tables
(Parquet for Spark) turns them into Arrow's dates and timestamps, so a `timestamp`
column lands as a timestamp and not as a bigint of microseconds:

| semantic type (travels as)                    | in files           | Spark         |
| io.debezium.time.Date (int32 days)            | date32             | DateType      |
| io.debezium.time.Timestamp (int64 ms)         | timestamp[ms, UTC] | TimestampType |
| io.debezium.time.MicroTimestamp (int64 µs)    | timestamp[us, UTC] | TimestampType |
| io.debezium.time.NanoTimestamp (int64 ns)     | timestamp[us, UTC] | TimestampType |
| io.debezium.time.ZonedTimestamp (ISO-8601)    | timestamp[us, UTC] | TimestampType |

(nanoseconds are floored to µs, Spark's precision)

A timestamp without a zone (Timestamp, MicroTimestamp, NanoTimestamp: the wall clock
as if it were UTC) is labelled UTC, as Connect's own Timestamp is, so a lake gets one
kind of timestamp whatever the source. A ZonedTimestamp of `infinity` / `-infinity`
becomes the stand-in a MicroTimestamp of the same value carries (PgJDBC's). Fields of
nested structs (an envelope's `before` / `after`) are turned too; arrays and maps keep
their values.

Optional-ness: every column is nullable in Arrow. Spark reads Parquet columns as
nullable anyway, and a required field turned optional (a compatible evolution) must not
change the file schema in a way `mergeSchema` refuses.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connect.api.data import Schema, Struct, Type
from connect.api.errors import DataError
from connect.api.logical import Date, Decimal, Time, Timestamp

__all__ = [
    "TIMESTAMP",
    "arrow_type",
    "batch_from_values",
    "decimal_type",
    "file_batch",
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
#: Struct's field values in order, one call per struct (Struct.get() per field would
#: cost a method call per cell).
_struct_values = Struct.values


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
        return {f.name: _plain(v) for f, v in zip(value.schema.fields, value.values(), strict=True)}
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
        trusted = Struct.trusted  # each value came from a column of its field's type

        def struct(value: dict[str, Any]) -> Struct:
            return trusted(
                schema,
                [
                    v if (v := value[name]) is None or conv is None else conv(v)
                    for name, conv in fields
                ],
            )

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


# ------------------------------------------------------------------ files


_ZONED = pa.timestamp("us", tz="UTC")
#: Semantic types that travel as numbers or text: (the primitive they travel as,
#: their type in files). See the module docstring.
_FILE_TEMPORAL: dict[str, tuple[Type, pa.DataType]] = {
    "io.debezium.time.Date": (Type.INT32, pa.date32()),
    "io.debezium.time.Timestamp": (Type.INT64, pa.timestamp("ms", tz="UTC")),
    "io.debezium.time.MicroTimestamp": (Type.INT64, pa.timestamp("us", tz="UTC")),
    "io.debezium.time.NanoTimestamp": (Type.INT64, pa.timestamp("us", tz="UTC")),
    "io.debezium.time.ZonedTimestamp": (Type.STRING, _ZONED),
}
_NANO = "io.debezium.time.NanoTimestamp"
# PgJDBC's ±infinity stand-ins, which a MicroTimestamp carries for ±infinity
# (`connectors.postgres.calendar_math`): a ZonedTimestamp's `infinity` lands as the same.
_INFINITY_US = 9_223_372_036_825_200_000
_NEG_INFINITY_US = -9_223_372_036_832_400_000
_ISO = re.compile(
    r"([+-]?\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?"
    r"(?:Z|([+-])(\d\d):(\d\d)(?::(\d\d))?)"
)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_CYCLE_DAYS = 146_097  # the Gregorian calendar repeats every 400 years


def file_batch(schema: Schema | None, batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` (of `schema`, as `batch_from_values` makes it) as a file of columns
    should hold it: semantic temporal types as Arrow dates and timestamps
    (see the module docstring). The batch itself when no field has one; the plan is
    made once per schema, and the columns are turned in C (a ZonedTimestamp that
    Arrow's parser refuses — a year past 9999, nanoseconds, `infinity` — is parsed
    in Python, for its column only). Raises DataError naming the field for a text
    that is no ISO-8601 timestamp."""
    if schema is None or schema.type is not Type.STRUCT:  # schemaless, or one value
        return batch
    plan = _file_plan(schema)
    if plan is None:
        return batch
    types, fields = plan
    columns = [
        column if typ is None else _to_file(f.schema, column, f.name)
        for f, typ, column in zip(fields, types, batch.columns, strict=True)
    ]
    target = pa.schema(
        [
            field if typ is None else pa.field(field.name, typ)
            for field, typ in zip(batch.schema, types, strict=True)
        ]
    )
    return pa.RecordBatch.from_arrays(columns, schema=target)


@functools.lru_cache(maxsize=256)
def _file_plan(schema: Schema) -> tuple[list[pa.DataType | None], tuple[Any, ...]] | None:
    """Per field, its type in files when it differs from `arrow_type`'s (else None);
    None when no field's does."""
    types = [_file_type(f.schema) for f in schema.fields]
    return None if all(t is None for t in types) else (types, schema.fields)


def _file_type(schema: Schema) -> pa.DataType | None:
    """A field's Arrow type in files when it differs from `arrow_type(schema)`."""
    known = _FILE_TEMPORAL.get(schema.name or "")
    if known is not None and known[0] is schema.type:
        return known[1]
    if schema.type is Type.STRUCT:
        inner = [_file_type(f.schema) for f in schema.fields]
        if any(t is not None for t in inner):
            return pa.struct(
                [
                    pa.field(f.name, arrow_type(f.schema) if t is None else t)
                    for f, t in zip(schema.fields, inner, strict=True)
                ]
            )
    return None


def _to_file(schema: Schema, array: pa.Array, where: str) -> pa.Array:
    """One column of `schema` with its `_file_type` (see `file_batch`)."""
    name = schema.name
    if schema.type is Type.STRUCT:
        children = [
            child
            if _file_type(f.schema) is None
            else _to_file(f.schema, child, f"{where}.{f.name}")
            for f, child in zip(schema.fields, array.flatten(), strict=True)
        ]
        typ = _file_type(schema)
        return pa.StructArray.from_arrays(
            children,
            fields=list(typ),
            mask=array.is_null() if array.null_count else None,
        )
    typ = _FILE_TEMPORAL[name][1]  # type: ignore[index]
    if name == _NANO:
        nanos = array.view(pa.timestamp("ns", tz="UTC"))
        return pc.floor_temporal(nanos, unit="microsecond").cast(typ)
    if schema.type is Type.STRING:
        return _zoned(array, where)
    return array.view(typ)


def _zoned(array: pa.Array, where: str) -> pa.Array:
    try:
        return array.cast(_ZONED)
    except pa.ArrowInvalid:
        micros = [None if v is None else _zoned_micros(v, where) for v in array.to_pylist()]
        return pa.array(micros, pa.int64()).view(_ZONED)


def _zoned_micros(text: str, where: str) -> int:
    """µs since the epoch of one ZonedTimestamp text (any year, offset and up to nine
    fraction digits, floored to µs), or ±infinity's stand-in."""
    if text == "infinity":
        return _INFINITY_US
    if text == "-infinity":
        return _NEG_INFINITY_US
    m = _ISO.fullmatch(text)
    if m is None:
        raise DataError(
            f"field {where!r}: {text!r} is not an ISO-8601 timestamp "
            "(io.debezium.time.ZonedTimestamp)"
        )
    # Step the year into Python's 1..400 by whole 400-year cycles, which have the same
    # days: any year PostgreSQL (4713 BC to 294276 AD) or Java prints is reached.
    cycles, year = divmod(int(m[1]) - 1, 400)
    days = (
        dt.date(year + 1, int(m[2]), int(m[3])).toordinal() - _EPOCH_ORDINAL + cycles * _CYCLE_DAYS
    )
    seconds = days * 86_400 + int(m[4]) * 3600 + int(m[5]) * 60 + int(m[6])
    if m[8]:
        offset = int(m[9]) * 3600 + int(m[10]) * 60 + int(m[11] or 0)
        seconds -= offset if m[8] == "+" else -offset
    return seconds * 1_000_000 + int((m[7] or "0")[:6].ljust(6, "0"))
