"""SQL column types ⇄ Connect schemas, and the conversion of fetched values.

`column_field(name, sa_type, optional=…, dialect=…, numeric_mapping=…, zone=…)` gives a
`ColumnMapping`: the field's Connect schema and a function from the value the driver
returned (through SQLAlchemy's type) to the Connect value. None means the type has no
Connect equivalent; the source skips such columns with a warning, as Confluent's does.

| SQL type                     | Connect schema                                     |
| BOOLEAN                      | boolean                                            |
| TINYINT, SMALLINT            | int8, int16                                        |
| INTEGER, BIGINT              | int32 (SQLite's INTEGER: int64), int64             |
| MySQL's … UNSIGNED           | the next wider; BIGINT UNSIGNED: Decimal scale 0   |
| REAL, DOUBLE PRECISION/FLOAT | float32 (SQLite's REAL: float64), float64          |
| MySQL's FLOAT (bare)         | float32 (MySQL's FLOAT is 4 bytes)                 |
| NUMERIC(p, s), DECIMAL(p, s) | Decimal logical with scale s (exact)               |
| NUMERIC without precision    | string: its exact text (a Decimal has one scale)   |
| CHAR, VARCHAR, TEXT, ENUM    | string                                             |
| UUID, JSON                   | string (JSON as its text)                          |
| BYTEA, BLOB, (VAR)BINARY     | bytes                                              |
| DATE, TIME, TIMESTAMP        | Date, Time, Timestamp logical                      |

`numeric.mapping` (Confluent's): `none` keeps every NUMERIC a Decimal; `precision_only`
maps NUMERIC(p, 0) with p < 19 to the smallest int that holds p digits; `best_fit` also
maps NUMERIC(p, s > 0) with p < 19 to float64; `best_fit_eager_double` maps every
NUMERIC with a scale > 0 to float64.

Timestamps: values without a time zone are wall-clock times in the database's zone
(`db.timezone`); every Timestamp value is an aware UTC datetime with the column's full
precision (microseconds). `epoch_offset` / `from_epoch_offset` turn a timestamp into
Confluent's offset fields (`timestamp` in ms, `timestamp_nanos` within the second) and
back, so offsets keep the precision the Connect Timestamp type (ms) would lose.

Debezium's semantic types (the second half of this module) are what the PostgreSQL CDC
source emits and what the JDBC sink understands. `column_field` above stays
Confluent's Connect mapping for the query-based JDBC source; Debezium's connectors name
plain primitives instead of using Connect's logical types, so their values stay
primitives here too (an int of days, an int of microseconds, an ISO-8601 string):

| name                                   | over   | value                                   |
| io.debezium.time.Date                  | int32  | days since 1970-01-01                   |
| io.debezium.time.Time                  | int32  | ms past midnight                        |
| io.debezium.time.MicroTime             | int64  | µs past midnight                        |
| io.debezium.time.NanoTime              | int64  | ns past midnight                        |
| io.debezium.time.Timestamp             | int64  | ms since the epoch (wall clock, no zone)|
| io.debezium.time.MicroTimestamp        | int64  | µs since the epoch (wall clock, no zone)|
| io.debezium.time.NanoTimestamp         | int64  | ns since the epoch (wall clock, no zone)|
| io.debezium.time.ZonedTimestamp        | string | ISO-8601 in UTC, `…T…[.f]Z`             |
| io.debezium.time.ZonedTime             | string | ISO-8601 time in UTC, `HH:MM:SS[.f]Z`   |
| io.debezium.time.MicroDuration         | int64  | µs, a month counted as 30.4375 days     |
| io.debezium.time.Interval              | string | `P<y>Y<m>M<d>DT<h>H<m>M<s>S`            |
| io.debezium.data.VariableScaleDecimal  | struct | {scale int32, value bytes (unscaled)}   |
| io.debezium.data.Json, …Uuid, …Enum    | string | the text                                |

Every one has schema version 1, as Debezium sets it. `debezium_schema(name)` builds
the schema; the `from_*`/`to_*` helpers convert between these primitives and Python's
date, time, datetime and Decimal values for the sink.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connect.api import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    Date,
    Decimal,
    Schema,
    Time,
    Timestamp,
)

if TYPE_CHECKING:
    import sqlalchemy as sa

__all__ = [
    "DBZ_DATE",
    "DBZ_ENUM",
    "DBZ_INTERVAL",
    "DBZ_JSON",
    "DBZ_MICRO_DURATION",
    "DBZ_MICRO_TIME",
    "DBZ_MICRO_TIMESTAMP",
    "DBZ_NANO_TIME",
    "DBZ_NANO_TIMESTAMP",
    "DBZ_TIME",
    "DBZ_TIMESTAMP",
    "DBZ_UUID",
    "DBZ_VARIABLE_SCALE_DECIMAL",
    "DBZ_ZONED_TIME",
    "DBZ_ZONED_TIMESTAMP",
    "NUMERIC_MAPPINGS",
    "ColumnMapping",
    "column_field",
    "debezium_schema",
    "epoch_offset",
    "from_debezium_date",
    "from_debezium_time",
    "from_debezium_timestamp",
    "from_epoch_offset",
    "from_variable_scale_decimal",
    "from_zoned_time",
    "from_zoned_timestamp",
    "to_utc",
    "to_variable_scale_decimal",
    "unscaled_bytes",
]

NUMERIC_MAPPINGS = ("none", "best_fit", "best_fit_eager_double", "precision_only")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class ColumnMapping:
    """A column as a struct field: its schema and the converter of fetched values."""

    name: str
    schema: Schema
    convert: Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


def _int(value: Any) -> Any:
    return value if type(value) is int else int(value)


def _float(value: Any) -> Any:
    return value if type(value) is float else float(value)


def _str(value: Any) -> Any:
    return value if type(value) is str else str(value)


def _bytes(value: Any) -> Any:
    return value if type(value) is bytes else bytes(value)


def _json(value: Any) -> Any:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _decimal_text(value: Any) -> Any:
    return str(value) if isinstance(value, decimal.Decimal) else str(decimal.Decimal(value))


def _date(value: Any) -> Any:
    return value.date() if isinstance(value, dt.datetime) else value


def to_utc(value: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    """An aware UTC datetime; a naive one is a wall-clock time in `zone`."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone)
    return value.astimezone(dt.UTC)


def epoch_offset(value: dt.datetime) -> tuple[int, int]:
    """(ms since the epoch, ns within the second) of an aware datetime — Java's
    `Timestamp.getTime()` / `getNanos()`, which Confluent's offsets store."""
    delta = value - _EPOCH
    seconds = delta.days * 86_400 + delta.seconds
    return seconds * 1000 + delta.microseconds // 1000, delta.microseconds * 1000


def from_epoch_offset(ms: int, nanos: int | None) -> dt.datetime:
    """The aware UTC datetime of an offset's `timestamp` (ms) and `timestamp_nanos`."""
    if nanos is None:
        return _EPOCH + dt.timedelta(milliseconds=ms)
    return _EPOCH + dt.timedelta(seconds=ms // 1000, microseconds=nanos // 1000)


def _int_for_digits(precision: int) -> Schema:
    if precision > 9:
        return INT64_SCHEMA
    if precision > 4:
        return INT32_SCHEMA
    if precision > 2:
        return INT16_SCHEMA
    return INT8_SCHEMA


def _numeric(sa_type: sa.Numeric, numeric_mapping: str) -> tuple[Schema, Callable[[Any], Any]]:
    import sqlalchemy as sa  # once per column; see column_field

    precision, scale = sa_type.precision, sa_type.scale
    if precision is None:  # NUMERIC without precision: any scale per value
        return STRING_SCHEMA, _decimal_text
    scale = scale or 0
    is_numeric = not isinstance(sa_type, sa.DECIMAL)  # Confluent maps NUMERIC, not DECIMAL
    if is_numeric and precision < 19:
        if numeric_mapping in ("precision_only", "best_fit") and scale == 0:
            return _int_for_digits(precision), _int
        if numeric_mapping in ("best_fit", "best_fit_eager_double") and scale > 0:
            return FLOAT64_SCHEMA, _float
        if numeric_mapping == "best_fit_eager_double" and scale == 0:
            return _int_for_digits(precision), _int
    elif is_numeric and numeric_mapping == "best_fit_eager_double" and scale > 0:
        return FLOAT64_SCHEMA, _float
    return Decimal.schema(scale), _decimal_converter(scale)


def _decimal_converter(scale: int) -> Callable[[Any], Any]:
    quantum = decimal.Decimal(1).scaleb(-scale)

    def convert(value: Any) -> Any:
        if not isinstance(value, decimal.Decimal):
            value = decimal.Decimal(str(value))
        if value.as_tuple().exponent != -scale:  # type: ignore[comparison-overlap]
            # exact: more digits than the scale never come
            value = value.quantize(quantum, context=Decimal.EXACT)
        return value

    return convert


def _timestamp_converter(zone: dt.tzinfo) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value)
        elif not isinstance(value, dt.datetime):  # a DATE fetched for a timestamp column
            value = dt.datetime(value.year, value.month, value.day)
        return to_utc(value, zone)

    return convert


def column_field(
    name: str,
    sa_type: Any,
    *,
    optional: bool,
    integer_bits: int = 32,
    real_is_double: bool = False,
    numeric_mapping: str = "none",
    zone: dt.tzinfo = dt.UTC,
) -> ColumnMapping | None:
    """The field for a column of SQLAlchemy type `sa_type` (an instance), or None when
    the type has no Connect equivalent.

    SQLAlchemy is imported here, once per column, not with the module: PostgresCdcSource
    uses this module's Debezium names and value helpers and never a SQLAlchemy type."""
    import sqlalchemy as sa

    schema: Schema
    convert: Callable[[Any], Any]
    visit = getattr(sa_type, "__visit_name__", "").upper()
    if isinstance(sa_type, sa.Boolean):
        schema, convert = BOOLEAN_SCHEMA, _same
    elif isinstance(sa_type, sa.Integer):
        convert = _int
        if isinstance(sa_type, sa.BigInteger):
            schema = INT64_SCHEMA
        elif visit == "TINYINT":
            schema = INT8_SCHEMA
        elif isinstance(sa_type, sa.SmallInteger):
            schema = INT16_SCHEMA
        elif visit == "MEDIUMINT":
            schema = INT32_SCHEMA
        else:
            schema = INT64_SCHEMA if integer_bits > 32 else INT32_SCHEMA
        if getattr(sa_type, "unsigned", False):
            # MySQL's unsigned integers reach twice as far: the next wider type holds
            # them, and BIGINT UNSIGNED (up to 2^64 - 1) only an exact decimal.
            wider = {INT8_SCHEMA: INT16_SCHEMA, INT16_SCHEMA: INT32_SCHEMA}
            if schema is INT64_SCHEMA:
                schema, convert = Decimal.schema(0), _decimal_converter(0)
            else:
                schema = wider.get(schema, INT64_SCHEMA)
    elif isinstance(sa_type, sa.Float):
        single = isinstance(sa_type, sa.REAL) and not real_is_double
        # FLOAT(p) is single precision up to p = 24; a bare FLOAT is a double, except
        # in MySQL, whose FLOAT is 4 bytes.
        bare = 24 if type(sa_type).__module__.startswith("sqlalchemy.dialects.mysql") else 53
        single = single or (visit == "FLOAT" and (sa_type.precision or bare) <= 24)
        schema, convert = (FLOAT32_SCHEMA if single else FLOAT64_SCHEMA), _float
    elif isinstance(sa_type, sa.Numeric):
        schema, convert = _numeric(sa_type, numeric_mapping)
    elif isinstance(sa_type, sa.DateTime):
        schema, convert = Timestamp.schema(), _timestamp_converter(zone)
    elif isinstance(sa_type, sa.Date):
        schema, convert = Date.schema(), _date
    elif isinstance(sa_type, sa.Time):
        schema, convert = Time.schema(), _same
    elif isinstance(sa_type, sa.JSON):
        schema, convert = STRING_SCHEMA, _json
    elif isinstance(sa_type, (sa.String, sa.Uuid, sa.Enum)):
        schema, convert = STRING_SCHEMA, _str
    elif isinstance(sa_type, (sa.LargeBinary, sa.BINARY, sa.VARBINARY)):
        schema, convert = BYTES_SCHEMA, _bytes
    else:
        return None
    return ColumnMapping(name, schema.optional_() if optional else schema, convert)


# ------------------------------------------------------------ Debezium's semantic types

DBZ_DATE = "io.debezium.time.Date"
DBZ_TIME = "io.debezium.time.Time"
DBZ_MICRO_TIME = "io.debezium.time.MicroTime"
DBZ_NANO_TIME = "io.debezium.time.NanoTime"
DBZ_TIMESTAMP = "io.debezium.time.Timestamp"
DBZ_MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"
DBZ_NANO_TIMESTAMP = "io.debezium.time.NanoTimestamp"
DBZ_ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
DBZ_ZONED_TIME = "io.debezium.time.ZonedTime"
DBZ_MICRO_DURATION = "io.debezium.time.MicroDuration"
DBZ_INTERVAL = "io.debezium.time.Interval"
DBZ_VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
DBZ_JSON = "io.debezium.data.Json"
DBZ_UUID = "io.debezium.data.Uuid"
DBZ_ENUM = "io.debezium.data.Enum"

_DBZ_PRIMITIVES = {
    DBZ_DATE: INT32_SCHEMA,
    DBZ_TIME: INT32_SCHEMA,
    DBZ_MICRO_TIME: INT64_SCHEMA,
    DBZ_NANO_TIME: INT64_SCHEMA,
    DBZ_TIMESTAMP: INT64_SCHEMA,
    DBZ_MICRO_TIMESTAMP: INT64_SCHEMA,
    DBZ_NANO_TIMESTAMP: INT64_SCHEMA,
    DBZ_ZONED_TIMESTAMP: STRING_SCHEMA,
    DBZ_ZONED_TIME: STRING_SCHEMA,
    DBZ_MICRO_DURATION: INT64_SCHEMA,
    DBZ_INTERVAL: STRING_SCHEMA,
    DBZ_JSON: STRING_SCHEMA,
    DBZ_UUID: STRING_SCHEMA,
    DBZ_ENUM: STRING_SCHEMA,
}
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)


def debezium_schema(
    name: str, *, optional: bool = False, parameters: dict[str, str] | None = None
) -> Schema:
    """The schema of one of Debezium's semantic types (version 1, as Debezium sets)."""
    if name == DBZ_VARIABLE_SCALE_DECIMAL:
        return Schema.struct(
            [("scale", INT32_SCHEMA), ("value", BYTES_SCHEMA)],
            name=name,
            version=1,
            doc="Variable scaled decimal",
            optional=optional,
        )
    base = _DBZ_PRIMITIVES[name]
    return base.with_(name=name, version=1, optional=optional, parameters=dict(parameters or {}))


def unscaled_bytes(unscaled: int) -> bytes:
    """Java's `BigInteger.toByteArray()`: big-endian two's complement, fewest bytes."""
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def to_variable_scale_decimal(value: decimal.Decimal) -> tuple[int, bytes]:
    """(scale, unscaled bytes) of a finite decimal, trailing zeros stripped and never a
    negative scale — how Debezium writes NUMERIC columns without a declared scale."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int), "a finite decimal"
    unscaled = int("".join(map(str, digits)) or "0")
    scale = -exponent
    while scale > 0 and unscaled % 10 == 0:
        unscaled //= 10
        scale -= 1
    if scale < 0:
        unscaled *= 10**-scale
        scale = 0
    return scale, unscaled_bytes(-unscaled if sign else unscaled)


def from_variable_scale_decimal(value: Any) -> decimal.Decimal:
    """The Decimal of a VariableScaleDecimal struct (or a {scale, value} mapping)."""
    scale = value["scale"]
    unscaled = int.from_bytes(value["value"], "big", signed=True)
    return decimal.Decimal(unscaled).scaleb(-scale, Decimal.EXACT)


def from_debezium_date(days: int) -> dt.date:
    """io.debezium.time.Date (days since the epoch) as a date."""
    return _EPOCH_DATE + dt.timedelta(days=days)


_TIME_UNITS = {DBZ_TIME: 1000, DBZ_MICRO_TIME: 1, DBZ_NANO_TIME: -1000}
_TIMESTAMP_UNITS = {DBZ_TIMESTAMP: 1000, DBZ_MICRO_TIMESTAMP: 1, DBZ_NANO_TIMESTAMP: -1000}


def _micros(value: int, unit: int) -> int:
    """µs of a count in ms (unit 1000), µs (1) or ns (-1000, truncated as a database
    with µs precision stores it)."""
    return value * unit if unit > 0 else value // -unit


def from_debezium_time(name: str, value: int) -> dt.time:
    """Time, MicroTime or NanoTime (past midnight) as a time. PostgreSQL's 24:00:00
    has no Python time: it becomes the last microsecond of the day."""
    micros = _micros(value, _TIME_UNITS[name])
    if micros >= 86_400_000_000:
        return dt.time.max
    return (_EPOCH_NAIVE + dt.timedelta(microseconds=micros)).time()


def from_debezium_timestamp(name: str, value: int) -> dt.datetime:
    """Timestamp, MicroTimestamp or NanoTimestamp as a naive datetime: the wall-clock
    time the source column held (Debezium's timestamps without a zone are local)."""
    return _EPOCH_NAIVE + dt.timedelta(microseconds=_micros(value, _TIMESTAMP_UNITS[name]))


def from_zoned_timestamp(text: str) -> dt.datetime:
    """An aware datetime of a ZonedTimestamp's ISO-8601 text."""
    return dt.datetime.fromisoformat(text)


def from_zoned_time(text: str) -> dt.time:
    """An aware time of a ZonedTime's ISO-8601 text."""
    return dt.time.fromisoformat(text)
