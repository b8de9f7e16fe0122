"""PostgreSQL column types as Connect schemas: which schema a column of a type gets,
and which function of `connectors.postgres.text_values` turns its text into values.

Column types map as Debezium's PostgreSQL connector maps them, so consumers of
Debezium topics keep working (`TypeOptions` carries the three modes that change it):

| PostgreSQL                 | schema (`time.precision.mode=adaptive`, the default)   |
| boolean, int2/4/8, oid     | boolean, int16/32/64, int64                            |
| real, double precision     | float32, float64                                       |
| numeric(p, s)              | Connect Decimal, scale s, `connect.decimal.precision` p|
| numeric                    | io.debezium.data.VariableScaleDecimal {scale, value}   |
| date                       | int32 io.debezium.time.Date (days since the epoch)     |
| time(0-3) / time(4-6)      | int32 io.debezium.time.Time (ms) / int64 MicroTime (µs)|
| timestamp(0-3) / (4-6)     | int64 io.debezium.time.Timestamp (ms) / MicroTimestamp |
| timestamptz(p)             | string io.debezium.time.ZonedTimestamp, UTC, p digits  |
| timetz                     | string io.debezium.time.ZonedTime, UTC                 |
| interval                   | int64 io.debezium.time.MicroDuration (30.4375-day month)|
| uuid, json/jsonb, enums    | string io.debezium.data.Uuid / Json / Enum (`allowed`) |
| bytea                      | bytes                                                  |
| one-dimensional arrays     | array of the element's schema, optional (`arrays`)     |
| anything else              | string (PostgreSQL's text)                             |

`time.precision.mode=adaptive_time_microseconds` makes every time a MicroTime;
`connect` uses Connect's Date, Time and Timestamp (ms; values are date, time and aware
datetime). `decimal.handling.mode=double` makes every numeric a float64, `string` its
text. `interval.handling.mode=string` gives io.debezium.time.Interval text
(`P1Y2M3DT4H5M6.78S`). A time without a declared precision has 6 digits, as in
PostgreSQL.

The table of a captured table's columns, and the event schemas built from this
mapping, are in `connectors.postgres.tables`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connect.api import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
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
from connectors.jdbc.types import (
    DBZ_DATE,
    DBZ_ENUM,
    DBZ_INTERVAL,
    DBZ_JSON,
    DBZ_MICRO_DURATION,
    DBZ_MICRO_TIME,
    DBZ_MICRO_TIMESTAMP,
    DBZ_TIME,
    DBZ_TIMESTAMP,
    DBZ_UUID,
    DBZ_VARIABLE_SCALE_DECIMAL,
    DBZ_ZONED_TIME,
    DBZ_ZONED_TIMESTAMP,
    debezium_schema,
)
from connectors.postgres import text_values as tv
from connectors.postgres.arrays import ELEMENT_TYPES, array_converter

__all__ = [
    "DECIMAL_HANDLING_MODES",
    "DEFAULT_TYPES",
    "INTERVAL_HANDLING_MODES",
    "TIME_PRECISION_MODES",
    "TypeOptions",
    "column_type",
    "text_converter",
]

#: the type OIDs of pg_type this module maps (a domain is read as its base type)
BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, TEXT, OID = 16, 17, 18, 19, 20, 21, 23, 25, 26
JSON, FLOAT4, FLOAT8, BPCHAR, VARCHAR = 114, 700, 701, 1042, 1043
DATE, TIME, TIMESTAMP, TIMESTAMPTZ, NUMERIC, UUID, JSONB = 1082, 1083, 1114, 1184, 1700, 2950, 3802
INTERVAL, TIMETZ = 1186, 1266

TIME_PRECISION_MODES = ("adaptive", "adaptive_time_microseconds", "connect")
DECIMAL_HANDLING_MODES = ("precise", "double", "string")
INTERVAL_HANDLING_MODES = ("numeric", "string")


@dataclass(frozen=True, slots=True)
class TypeOptions:
    """Debezium's keys that change how column types map (see the module docstring)."""

    time_precision_mode: str = "adaptive"
    decimal_handling_mode: str = "precise"
    interval_handling_mode: str = "numeric"

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> TypeOptions:
        """The options of a parsed config (`connectors.postgres.config.parse_config`)."""
        return cls(
            cfg.get("time.precision.mode", "adaptive"),
            cfg.get("decimal.handling.mode", "precise"),
            cfg.get("interval.handling.mode", "numeric"),
        )


DEFAULT_TYPES = TypeOptions()


def _precision(typmod: int) -> int:
    """Fraction digits of a time/timestamp column: its typmod, else PostgreSQL's 6."""
    return typmod if 0 <= typmod <= 6 else 6


def column_type(
    type_oid: int,
    typmod: int,
    types: TypeOptions = DEFAULT_TYPES,
    *,
    optional: bool = True,
    enum_values: str | None = None,
) -> tuple[Schema, Callable[[str], Any]]:
    """The schema of a column and the function from its text to its value."""
    schema: Schema
    convert: Callable[[str], Any]
    time_mode = types.time_precision_mode
    if type_oid in (INT2, INT4, INT8, OID):
        schema = {INT2: INT16_SCHEMA, INT4: INT32_SCHEMA}.get(type_oid, INT64_SCHEMA)
        convert = int
    elif type_oid in (FLOAT4, FLOAT8):
        schema, convert = (FLOAT32_SCHEMA if type_oid == FLOAT4 else FLOAT64_SCHEMA), float
    elif type_oid == BOOL:
        schema, convert = BOOLEAN_SCHEMA, tv.boolean
    elif type_oid == NUMERIC:
        mode = types.decimal_handling_mode
        if mode == "double":
            schema, convert = FLOAT64_SCHEMA, float
        elif mode == "string":
            schema, convert = STRING_SCHEMA, str
        elif typmod < 4:  # no declared precision: a scale per value
            schema = debezium_schema(DBZ_VARIABLE_SCALE_DECIMAL, optional=optional)
            convert = tv.variable_scale(schema)
        else:
            precision, scale = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
            schema = Decimal.schema(scale, precision=precision)
            convert = tv.decimal_converter(scale)
    elif type_oid == BYTEA:
        schema, convert = BYTES_SCHEMA, tv.bytea
    elif type_oid == DATE:
        if time_mode == "connect":
            schema, convert = Date.schema(), tv.connect_date
        else:
            schema, convert = debezium_schema(DBZ_DATE), tv.epoch_days
    elif type_oid == TIME:
        if time_mode == "connect":
            schema, convert = Time.schema(), tv.connect_time
        elif time_mode == "adaptive" and _precision(typmod) <= 3:
            schema, convert = debezium_schema(DBZ_TIME), tv.milli_time
        else:
            schema, convert = debezium_schema(DBZ_MICRO_TIME), tv.micro_time
    elif type_oid == TIMESTAMP:
        if time_mode == "connect":
            schema, convert = Timestamp.schema(), tv.connect_timestamp
        elif _precision(typmod) <= 3:
            schema, convert = debezium_schema(DBZ_TIMESTAMP), tv.milli_timestamp
        else:
            schema, convert = debezium_schema(DBZ_MICRO_TIMESTAMP), tv.micro_timestamp
    elif type_oid == TIMESTAMPTZ:
        schema = debezium_schema(DBZ_ZONED_TIMESTAMP)
        convert = tv.zoned_timestamp(_precision(typmod))
    elif type_oid == TIMETZ:
        schema, convert = debezium_schema(DBZ_ZONED_TIME), tv.zoned_time
    elif type_oid == INTERVAL:
        if types.interval_handling_mode == "string":
            schema, convert = debezium_schema(DBZ_INTERVAL), tv.interval_string
        else:
            schema, convert = debezium_schema(DBZ_MICRO_DURATION), tv.micro_duration
    elif type_oid == UUID:
        schema, convert = debezium_schema(DBZ_UUID), str
    elif type_oid in (JSON, JSONB):
        schema, convert = debezium_schema(DBZ_JSON), str
    elif enum_values is not None:
        schema = debezium_schema(DBZ_ENUM, parameters={"allowed": enum_values})
        convert = str
    elif type_oid in ELEMENT_TYPES:  # a one-dimensional array of a type mapped here
        element, convert_element = column_type(ELEMENT_TYPES[type_oid], typmod, types)
        schema, convert = Schema.array(element), array_converter(convert_element)
    else:  # text, varchar, char, name, inet, other arrays, …: PostgreSQL's text
        schema, convert = STRING_SCHEMA, str
    return (schema.optional_() if optional else schema), convert


def text_converter(
    type_oid: int, typmod: int, types: TypeOptions = DEFAULT_TYPES, *, optional: bool = True
) -> Callable[[str], Any]:
    """The function from PostgreSQL's text output of a value to its Connect value."""
    return column_type(type_oid, typmod, types, optional=optional)[1]
