"""MySQL / MariaDB column types as Connect schemas, mapped as Debezium's MySQL connector
maps them, and the functions from a driver's value to the event's value.

A column reaches us two ways: the snapshot reads it with PyMySQL (`information_schema`
says its type), the stream decodes it from the binlog with python-mysql-replication (the
table map event says its type). Both become one `ColumnDef`, so a column has one schema
whichever way its value came; the two converters of a column (`snapshot`, `stream`)
differ only where the drivers' values differ (BIT: bytes vs. a string of bits; SET: a
string vs. a Python set; FLOAT: the text's double vs. the float32's double).

| MySQL                       | schema (time.precision.mode adaptive_time_microseconds)  |
| BIT(1) / BIT(n)             | boolean / bytes io.debezium.data.Bits {length}, LE       |
| TINYINT, SMALLINT (signed)  | int16                                                    |
| SMALLINT UNSIGNED, MEDIUMINT, INT | int32                                              |
| INT UNSIGNED, BIGINT        | int64                                                    |
| BIGINT UNSIGNED             | int64 (`long`: above 2^63-1 wraps negative, as Debezium) |
|                             | or Decimal(20, 0) (`precise`)                            |
| FLOAT / DOUBLE              | float32 / float64                                        |
| DECIMAL(p, s)               | Decimal (precise), float64 (double), string (string)     |
| CHAR, VARCHAR, *TEXT, JSON  | string (MariaDB's JSON is a LONGTEXT)                    |
| BINARY, VARBINARY, *BLOB    | bytes                                                    |
| DATE                        | int32 io.debezium.time.Date (days)                       |
| TIME(fsp)                   | int64 io.debezium.time.MicroTime (µs, may be negative)   |
| DATETIME(0-3) / (4-6)       | int64 io.debezium.time.Timestamp (ms) / MicroTimestamp   |
|                             | (µs), the wall clock as if UTC                           |
| TIMESTAMP(fsp)              | string io.debezium.time.ZonedTimestamp, UTC, fsp digits  |
| YEAR                        | int32 io.debezium.time.Year                              |
| ENUM / SET                  | string io.debezium.data.Enum / EnumSet {allowed}         |
| GEOMETRY, POINT, …          | struct io.debezium.data.geometry.Geometry {wkb, srid}    |

`time.precision.mode=adaptive` makes TIME(0-3) an int32 io.debezium.time.Time (ms);
`connect` gives Connect's Date, Time and Timestamp (ms, finer digits lost). TINYINT(1)
is int16, not boolean: the binlog does not carry the display width, so a boolean
mapping could not be the same in the snapshot and in the stream.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from connect.api import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    STRING_SCHEMA,
    Date,
    Decimal,
    Schema,
    Struct,
    Time,
    Timestamp,
)
from connectors.jdbc.types import (
    DBZ_DATE,
    DBZ_ENUM,
    DBZ_MICRO_TIME,
    DBZ_MICRO_TIMESTAMP,
    DBZ_TIME,
    DBZ_TIMESTAMP,
    DBZ_ZONED_TIMESTAMP,
    debezium_schema,
)

__all__ = [
    "BIGINT_UNSIGNED_MODES",
    "DECIMAL_HANDLING_MODES",
    "TIME_PRECISION_MODES",
    "ColumnDef",
    "TypeOptions",
    "column_type",
]

TIME_PRECISION_MODES = ("adaptive_time_microseconds", "adaptive", "connect")
DECIMAL_HANDLING_MODES = ("precise", "double", "string")
BIGINT_UNSIGNED_MODES = ("long", "precise")

DBZ_YEAR = "io.debezium.time.Year"
DBZ_BITS = "io.debezium.data.Bits"
DBZ_ENUM_SET = "io.debezium.data.EnumSet"
DBZ_GEOMETRY = "io.debezium.data.geometry.Geometry"

INTEGERS = ("tinyint", "smallint", "mediumint", "int", "bigint")
TEXTS = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json")
BINARIES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
GEOMETRIES = (
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
)
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_2_63 = 1 << 63
_WIDE = decimal.Context(prec=100)  # DECIMAL has up to 65 digits; the default context 28


@dataclass(frozen=True, slots=True)
class TypeOptions:
    """Debezium's keys that change how column types map."""

    time_precision_mode: str = "adaptive_time_microseconds"
    decimal_handling_mode: str = "precise"
    bigint_unsigned_handling_mode: str = "long"


@dataclass(slots=True)
class ColumnDef:
    """One column as both sources describe it: `kind` is information_schema's
    DATA_TYPE (int, varchar, datetime, …); `values` an ENUM's or SET's members."""

    name: str
    kind: str
    nullable: bool = True
    unsigned: bool = False
    precision: int = 0  # DECIMAL's digits, BIT's bits
    scale: int = 0  # DECIMAL's scale, the fraction digits of TIME/DATETIME/TIMESTAMP
    values: tuple[str, ...] = field(default_factory=tuple)


def _days(value: dt.date) -> int:
    return (value - _EPOCH_DATE).days


def _micros_of(delta: dt.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _micro_time(value: dt.timedelta) -> int:
    return _micros_of(value)


def _milli_time(value: dt.timedelta) -> int:
    return _micros_of(value) // 1000


def _connect_time(value: dt.timedelta) -> dt.time:
    micros = _micros_of(value) % 86_400_000_000
    return (
        (dt.datetime.min + dt.timedelta(microseconds=micros))
        .time()
        .replace(microsecond=(micros % 1_000_000) // 1000 * 1000)
    )


def _micro_timestamp(value: dt.datetime) -> int:
    return _micros_of(value - _EPOCH)


def _milli_timestamp(value: dt.datetime) -> int:
    return _micros_of(value - _EPOCH) // 1000


def _connect_timestamp(value: dt.datetime) -> dt.datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000, tzinfo=dt.UTC)


def _connect_date(value: dt.date) -> dt.date:
    return value


def _zoned(fsp: int) -> Callable[[dt.datetime], str]:
    """ISO-8601 UTC text of a TIMESTAMP value (the session's zone is UTC) with the
    column's fraction digits. One `isoformat` and a slice: strftime and a second
    format cost 2.5 us a value, a tenth of a snapshot row's CPU (py-spy, the bench's
    TIMESTAMP column); TIMESTAMP's years (1970-2038) print alike both ways."""
    width = 19 + (fsp + 1 if fsp else 0)  # YYYY-MM-DDTHH:MM:SS[.fraction]

    def convert(value: dt.datetime) -> str:
        return value.isoformat(timespec="microseconds")[:width] + "Z"

    return convert


def _float32(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (what Java's
    Float.toString prints): the binlog's float32 and the snapshot's text agree."""
    rounded = struct.unpack("<f", struct.pack("<f", value))[0]
    for digits in range(6, 10):
        text = f"{rounded:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == rounded:
            return float(text)
    return rounded


def _bits_of_bytes(nbytes: int) -> Callable[[bytes], bytes]:
    def convert(value: bytes) -> bytes:
        return int.from_bytes(value, "big").to_bytes(nbytes, "little")

    return convert


def _bits_of_text(nbytes: int) -> Callable[[str], bytes]:
    def convert(value: str) -> bytes:
        return int(value, 2).to_bytes(nbytes, "little")

    return convert


def _bit1_of_bytes(value: bytes) -> bool:
    return value != b"\x00" and any(value)


def _bit1_of_text(value: str) -> bool:
    return value == "1"


def _set_of_set(members: tuple[str, ...]) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        if isinstance(value, str):
            return value
        return ",".join(m for m in members if m in value)

    return convert


def _unsigned_long(value: int) -> int:
    return value - (1 << 64) if value >= _2_63 else value


def _decimal_precise(scale: int) -> Callable[[Any], decimal.Decimal]:
    quantum = decimal.Decimal(1).scaleb(-scale)

    def convert(value: Any) -> decimal.Decimal:
        return decimal.Decimal(value).quantize(quantum, context=_WIDE)

    return convert


GEOMETRY_SCHEMA = Schema.struct(
    [("wkb", BYTES_SCHEMA), ("srid", OPTIONAL_INT32_SCHEMA)],
    name=DBZ_GEOMETRY,
    version=1,
    optional=True,
)


def _geometry(value: bytes) -> Struct:
    """MySQL's internal geometry: a 4-byte little-endian SRID, then the WKB."""
    srid = int.from_bytes(value[:4], "little")
    return Struct.trusted(GEOMETRY_SCHEMA, [bytes(value[4:]), srid])


def _same(value: Any) -> Any:
    return value


Converter = Callable[[Any], Any]


def column_type(col: ColumnDef, types: TypeOptions) -> tuple[Schema, Converter, Converter]:
    """(schema, snapshot converter, stream converter) of a column (None values never
    reach a converter)."""
    schema, snap, stream = _mapping(col, types)
    if col.nullable:
        schema = schema.optional_()
    return schema, snap, stream


def _mapping(col: ColumnDef, types: TypeOptions) -> tuple[Schema, Converter, Converter]:
    kind = col.kind
    time_mode = types.time_precision_mode
    if kind in INTEGERS:
        if kind == "bigint" and col.unsigned:
            if types.bigint_unsigned_handling_mode == "precise":
                conv = _decimal_precise(0)
                return Decimal.schema(0, precision=20), conv, conv
            return INT64_SCHEMA, _unsigned_long, _unsigned_long
        if kind == "tinyint" or (kind == "smallint" and not col.unsigned):
            schema = INT16_SCHEMA
        elif kind == "bigint" or (kind == "int" and col.unsigned):
            schema = INT64_SCHEMA
        else:
            schema = INT32_SCHEMA
        return schema, _same, _same
    if kind in ("float", "real"):
        return FLOAT32_SCHEMA, _same, _float32
    if kind == "double":
        return FLOAT64_SCHEMA, _same, _same
    if kind in ("decimal", "numeric"):
        mode = types.decimal_handling_mode
        if mode == "double":
            return FLOAT64_SCHEMA, float, float
        if mode == "string":
            return STRING_SCHEMA, str, str
        # the binlog's DECIMALs come with exactly the column's scale: as they are
        conv = _decimal_precise(col.scale)
        return Decimal.schema(col.scale, precision=col.precision or None), conv, _same
    if kind in TEXTS:
        return STRING_SCHEMA, _same, _same
    if kind in BINARIES:
        return BYTES_SCHEMA, bytes, bytes
    if kind == "bit":
        if col.precision <= 1:
            return BOOLEAN_SCHEMA, _bit1_of_bytes, _bit1_of_text
        nbytes = (col.precision + 7) // 8
        schema = BYTES_SCHEMA.with_(
            name=DBZ_BITS, version=1, parameters={"length": str(col.precision)}
        )
        return schema, _bits_of_bytes(nbytes), _bits_of_text(nbytes)
    if kind == "enum":
        schema = debezium_schema(DBZ_ENUM, parameters={"allowed": ",".join(col.values)})
        return schema, _same, _same
    if kind == "set":
        schema = STRING_SCHEMA.with_(
            name=DBZ_ENUM_SET, version=1, parameters={"allowed": ",".join(col.values)}
        )
        conv = _set_of_set(col.values)
        return schema, conv, conv
    if kind == "year":
        return INT32_SCHEMA.with_(name=DBZ_YEAR, version=1), int, int
    if kind == "date":
        if time_mode == "connect":
            return Date.schema(), _connect_date, _connect_date
        return debezium_schema(DBZ_DATE), _days, _days
    if kind == "time":
        if time_mode == "connect":
            return Time.schema(), _connect_time, _connect_time
        if time_mode == "adaptive" and col.scale <= 3:
            return debezium_schema(DBZ_TIME), _milli_time, _milli_time
        return debezium_schema(DBZ_MICRO_TIME), _micro_time, _micro_time
    if kind == "datetime":
        if time_mode == "connect":
            return Timestamp.schema(), _connect_timestamp, _connect_timestamp
        if col.scale <= 3:
            return debezium_schema(DBZ_TIMESTAMP), _milli_timestamp, _milli_timestamp
        return debezium_schema(DBZ_MICRO_TIMESTAMP), _micro_timestamp, _micro_timestamp
    if kind == "timestamp":
        conv = _zoned(col.scale)
        return debezium_schema(DBZ_ZONED_TIMESTAMP), conv, conv
    if kind in GEOMETRIES:
        return GEOMETRY_SCHEMA.with_(optional=False), _geometry, _geometry
    # anything else (a type a newer server adds): its text
    return STRING_SCHEMA, str, str
