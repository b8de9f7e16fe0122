"""Captured tables as Connect schemas, and PostgreSQL's text values as Connect values.

A `Table` is read from the catalog (`read_table`): its columns in order with their type
OIDs, type modifiers, nullability and enum labels, its primary key and its replica
identity. It builds the Debezium schemas of its events once:

- `value_schema` `<prefix>.<schema>.<table>.Value` (one optional field per column —
  Debezium makes `before`/`after` fields optional, the columns keep their own
  nullability), `key_schema` `<prefix>.<schema>.<table>.Key` (the primary key columns;
  None when the table has none), and `envelope` `<prefix>.<schema>.<table>.Envelope`.

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
| anything else              | string (PostgreSQL's text)                             |

`time.precision.mode=adaptive_time_microseconds` makes every time a MicroTime;
`connect` uses Connect's Date, Time and Timestamp (ms; values are date, time and aware
datetime). `decimal.handling.mode=double` makes every numeric a float64, `string` its
text. `interval.handling.mode=string` gives io.debezium.time.Interval text
(`P1Y2M3DT4H5M6.78S`). A time without a declared precision has 6 digits, as in
PostgreSQL.

Values arrive as PostgreSQL's text output — from pgoutput tuples and from the
snapshot's `COPY … TO STDOUT` alike — and `Table.convert` turns each into its value
with one function per column, so a snapshot row and a streamed row of the same data
are equal. The functions are the snapshot's hot path: each handles the text sessions
produce (TimeZone UTC, DateStyle ISO, IntervalStyle postgres; see
`connectors.postgres.config`) with a few string operations — a timestamptz of a UTC
session is rewritten, not parsed — and falls back to a full parse for everything else
(other offsets, years before 1 or after 9999, `infinity`).
"""

from __future__ import annotations

import datetime as dt
import decimal
import operator
import re
from collections.abc import Callable, Mapping, Sequence
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
    STRING_SCHEMA,
    DataError,
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
    unscaled_bytes,
)
from connectors.postgres.pgoutput import UNCHANGED_TOAST

__all__ = [
    "DECIMAL_HANDLING_MODES",
    "DEFAULT_TYPES",
    "INTERVAL_HANDLING_MODES",
    "TIME_PRECISION_MODES",
    "Table",
    "TypeOptions",
    "column_type",
    "copy_unescape",
    "list_tables",
    "read_table",
    "text_converter",
]

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


# ------------------------------------------------------------ calendar arithmetic
# Proleptic Gregorian days from 1970-01-01 for any year (Python's dates stop at 1 and
# 9999; PostgreSQL's go from 4713 BC to 294276 AD).

_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_US = dt.timedelta(microseconds=1)
_DAY_US = 86_400_000_000
_MONTH_US = 2_629_800_000_000  # 365.25 / 12 days, Debezium's MicroDuration month
# PgJDBC's DATE_POSITIVE/NEGATIVE_INFINITY, which Debezium emits for ±infinity
_INFINITY_US = 9_223_372_036_825_200_000
_NEG_INFINITY_US = -9_223_372_036_832_400_000


def _days_from_civil(year: int, month: int, day: int) -> int:
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    doe = days - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (month <= 2), month, day


_TIMESTAMP_TEXT = re.compile(
    r"(\d{4,})-(\d\d)-(\d\d)(?: (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?"
    r"(?:([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?)?( BC)?"
)


def _parse_instant(text: str) -> int:
    """µs since the epoch of any date/timestamp text PostgreSQL outputs (an offset, if
    any, applied), ±infinity as Debezium's stand-ins."""
    if text == "infinity":
        return _INFINITY_US
    if text == "-infinity":
        return _NEG_INFINITY_US
    m = _TIMESTAMP_TEXT.fullmatch(text)
    if m is None:
        raise DataError(f"{text!r} is not PostgreSQL's text of a date or timestamp")
    year = int(m[1])
    if m[12]:
        year = 1 - year  # 1 BC is year 0
    days = _days_from_civil(year, int(m[2]), int(m[3]))
    seconds = days * 86400 + int(m[4] or 0) * 3600 + int(m[5] or 0) * 60 + int(m[6] or 0)
    micros = seconds * 1_000_000 + int((m[7] or "0").ljust(6, "0"))
    if m[8]:
        offset = (int(m[9]) * 3600 + int(m[10] or 0) * 60 + int(m[11] or 0)) * 1_000_000
        micros += -offset if m[8] == "+" else offset
    return micros


def _iso_date(days: int) -> str:
    """Java's ISO date: 4-digit year, '+' past 9999, '-' before year 0."""
    year, month, day = _civil_from_days(days)
    if year > 9999:
        y = f"+{year}"
    elif year < 0:
        y = f"-{-year:04d}"
    else:
        y = f"{year:04d}"
    return f"{y}-{month:02d}-{day:02d}"


def _clock(micros: int) -> tuple[str, int]:
    """('HH:MM:SS', µs) of a time of day in µs."""
    seconds, fraction = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{hour:02d}:{minute:02d}:{second:02d}", fraction


# --------------------------------------------------------------- text converters


def _bool(text: str) -> bool:
    return text == "t"


def _bytea(text: str) -> bytes:
    return bytes.fromhex(text[2:])  # bytea_output = hex: \x0a0b…


_fromdate = dt.date.fromisoformat
_fromdatetime = dt.datetime.fromisoformat


def _epoch_days(text: str) -> int:
    """io.debezium.time.Date."""
    try:
        return _fromdate(text).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        if text.endswith("infinity"):
            raise DataError(f"date {text!r} has no io.debezium.time.Date value") from None
        return _parse_instant(text) // _DAY_US


def _micro_timestamp(text: str) -> int:
    """io.debezium.time.MicroTimestamp: the wall clock as if it were UTC."""
    try:
        return (_fromdatetime(text) - _EPOCH_NAIVE) // _US
    except ValueError:
        return _parse_instant(text)


def _milli_timestamp(text: str) -> int:
    """io.debezium.time.Timestamp (exact: PostgreSQL rounded the value to ≤ 3 digits)."""
    return _micro_timestamp(text) // 1000


def _micro_time(text: str) -> int:
    """io.debezium.time.MicroTime (24:00:00 is a whole day of µs, as in Debezium)."""
    micros = (int(text[:2]) * 3600 + int(text[3:5]) * 60 + int(text[6:8])) * 1_000_000
    if len(text) > 8:
        micros += int(text[9:].ljust(6, "0"))
    return micros


def _milli_time(text: str) -> int:
    """io.debezium.time.Time (exact: PostgreSQL rounded the value to ≤ 3 digits)."""
    return _micro_time(text) // 1000


def _connect_date(text: str) -> dt.date:
    try:
        return _fromdate(text)
    except ValueError:
        raise DataError(f"date {text!r} is outside Connect's Date (years 1 to 9999)") from None


def _connect_time(text: str) -> dt.time:
    micros = _micro_time(text)
    if micros >= _DAY_US:
        return dt.time(23, 59, 59, 999000)
    return (_EPOCH_NAIVE + dt.timedelta(microseconds=micros // 1000 * 1000)).time()


def _connect_timestamp(text: str) -> dt.datetime:
    try:
        value = _fromdatetime(text)
    except ValueError:
        raise DataError(
            f"timestamp {text!r} is outside Connect's Timestamp (years 1 to 9999)"
        ) from None
    return value.replace(microsecond=value.microsecond // 1000 * 1000, tzinfo=dt.UTC)


def _zoned_slow(text: str, digits: int) -> str:
    if text in ("infinity", "-infinity"):
        return text
    days, micros = divmod(_parse_instant(text), _DAY_US)
    clock, fraction = _clock(micros)
    frac = f".{fraction:06d}"[: digits + 1] if digits else ""
    return f"{_iso_date(days)}T{clock}{frac}Z"


def _zoned_timestamp(digits: int) -> Callable[[str], str]:
    """io.debezium.time.ZonedTimestamp with exactly `digits` fraction digits (Debezium
    pads to the column's precision). A UTC session's text `2024-01-01 00:00:01.12+00`
    only needs its separators rewritten; any other text is parsed."""
    pad = "0" * digits

    if not digits:

        def whole(text: str) -> str:
            if len(text) == 22 and text[-3:] == "+00" and text[10] == " ":
                return f"{text[:10]}T{text[11:19]}Z"
            return _zoned_slow(text, 0)

        whole.column = _zoned_column(whole, 0)  # type: ignore[attr-defined]
        return whole

    def convert(text: str) -> str:
        if text[-3:] == "+00" and text[10:11] == " ":
            if len(text) == 22:
                return f"{text[:10]}T{text[11:19]}.{pad}Z"
            fraction = text[20:-3]
            return f"{text[:10]}T{text[11:19]}.{fraction}{pad[len(fraction) :]}Z"
        return _zoned_slow(text, digits)

    convert.column = _zoned_column(convert, digits)  # type: ignore[attr-defined]
    return convert


def _zoned_column(convert: Callable[[str], str], digits: int) -> Callable[[list[str]], list[str]]:
    """The snapshot's column form of a ZonedTimestamp converter: when every text of the
    column is a UTC instant of one length (all whole seconds, or all with every
    fraction digit), the separators of the whole column are rewritten by two
    `str.replace`s over its joined text."""
    suffix = {22: "Z" if not digits else f".{'0' * digits}Z"}
    if digits:
        suffix[23 + digits] = "Z"
    at_ten = operator.itemgetter(10)

    def column(texts: list[str]) -> list[str]:
        lengths = set(map(len, texts))
        if len(lengths) == 1 and (end := suffix.get(lengths.pop())) is not None:
            joined = "\n".join(texts)
            n = len(texts)
            if (
                joined.count(" ") == n
                and joined.count("+00") == n
                and set(map(at_ten, texts)) == {" "}
            ):
                return joined.replace(" ", "T").replace("+00", end).split("\n")
        return list(map(convert, texts))

    return column


_TIMETZ_TEXT = re.compile(r"(\d\d:\d\d:\d\d(?:\.\d{1,6})?)([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?")


def _zoned_time(text: str) -> str:
    """io.debezium.time.ZonedTime: the time in UTC, fraction without trailing zeros
    (Java's ISO offset time; PostgreSQL's text has none either)."""
    if text[-3:] == "+00":
        return text[:-3] + "Z"
    m = _TIMETZ_TEXT.fullmatch(text)
    if m is None:
        raise DataError(f"{text!r} is not PostgreSQL's text of a time with time zone")
    offset = (int(m[3]) * 3600 + int(m[4] or 0) * 60 + int(m[5] or 0)) * 1_000_000
    micros = _micro_time(m[1]) + (-offset if m[2] == "+" else offset)
    clock, fraction = _clock(micros % _DAY_US)
    frac = f".{fraction:06d}".rstrip("0") if fraction else ""
    return f"{clock}{frac}Z"


_INTERVAL_TEXT = re.compile(
    r"(?:([+-]?\d+) years? ?)?(?:([+-]?\d+) mons? ?)?(?:([+-]?\d+) days? ?)?"
    r"(?:([+-])?(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?"
)


def _interval_parts(text: str) -> tuple[int, int, int, int, int, int, int]:
    """(years, months, days, hours, minutes, seconds, µs) of IntervalStyle postgres
    text; the time parts carry the time's sign."""
    m = _INTERVAL_TEXT.fullmatch(text)
    if m is None or not text:
        raise DataError(
            f"{text!r} is not PostgreSQL's text of an interval (IntervalStyle postgres)"
        )
    sign = -1 if m[4] == "-" else 1
    return (
        int(m[1] or 0),
        int(m[2] or 0),
        int(m[3] or 0),
        sign * int(m[5] or 0),
        sign * int(m[6] or 0),
        sign * int(m[7] or 0),
        sign * int((m[8] or "0").ljust(6, "0")),
    )


def _micro_duration(text: str) -> int:
    """io.debezium.time.MicroDuration, computed exactly (Debezium's doubles can be a
    microsecond off for long intervals)."""
    years, months, days, hours, minutes, seconds, micros = _interval_parts(text)
    time_us = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + micros
    return (years * 12 + months) * _MONTH_US + days * _DAY_US + time_us


def _interval_string(text: str) -> str:
    """io.debezium.time.Interval: every part, seconds without trailing zeros."""
    years, months, days, hours, minutes, seconds, micros = _interval_parts(text)
    secs = decimal.Decimal(seconds * 1_000_000 + micros).scaleb(-6).normalize()
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{secs:f}S"


def _decimal(scale: int) -> Callable[[str], Any]:
    quantum = decimal.Decimal(1).scaleb(-scale)
    Dec = decimal.Decimal

    def convert(text: str) -> Any:
        value = Dec(text)
        if value.as_tuple().exponent != -scale:
            if not value.is_finite():
                raise DataError(
                    f"numeric {text} has no Decimal value; set decimal.handling.mode=string"
                )
            value = value.quantize(quantum, context=Decimal.EXACT)
        return value

    point = operator.itemgetter(-scale - 1)

    def column(texts: list[str]) -> list[Any]:
        # PostgreSQL prints a numeric(p, s) with exactly s fraction digits, never an
        # exponent: when every text shows its point in that place (or, for s = 0, no
        # point), Decimal(text) has the exponent -s already
        joined = "".join(texts)
        try:
            exact = set(map(point, texts)) == {"."} if scale else "." not in joined
        except IndexError:  # a text shorter than its fraction: NaN, say
            exact = False
        if exact and "N" not in joined and "I" not in joined:  # NaN, Infinity
            return list(map(Dec, texts))
        return list(map(convert, texts))

    convert.column = column  # type: ignore[attr-defined]
    return convert


def _variable_scale(schema: Schema) -> Callable[[str], Struct]:
    """io.debezium.data.VariableScaleDecimal of numeric text: trailing zeros stripped,
    never a negative scale (as Debezium writes it)."""

    def convert(text: str) -> Struct:
        whole, _, fraction = text.partition(".")
        fraction = fraction.rstrip("0")
        try:
            unscaled = int(whole + fraction)
        except ValueError:
            raise DataError(
                f"numeric {text} has no VariableScaleDecimal value; "
                "set decimal.handling.mode=string"
            ) from None
        return Struct.trusted(schema, [len(fraction), unscaled_bytes(unscaled)])

    return convert


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
        schema, convert = BOOLEAN_SCHEMA, _bool
    elif type_oid == NUMERIC:
        mode = types.decimal_handling_mode
        if mode == "double":
            schema, convert = FLOAT64_SCHEMA, float
        elif mode == "string":
            schema, convert = STRING_SCHEMA, str
        elif typmod < 4:  # no declared precision: a scale per value
            schema = debezium_schema(DBZ_VARIABLE_SCALE_DECIMAL, optional=optional)
            convert = _variable_scale(schema)
        else:
            precision, scale = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
            schema, convert = Decimal.schema(scale, precision=precision), _decimal(scale)
    elif type_oid == BYTEA:
        schema, convert = BYTES_SCHEMA, _bytea
    elif type_oid == DATE:
        if time_mode == "connect":
            schema, convert = Date.schema(), _connect_date
        else:
            schema, convert = debezium_schema(DBZ_DATE), _epoch_days
    elif type_oid == TIME:
        if time_mode == "connect":
            schema, convert = Time.schema(), _connect_time
        elif time_mode == "adaptive" and _precision(typmod) <= 3:
            schema, convert = debezium_schema(DBZ_TIME), _milli_time
        else:
            schema, convert = debezium_schema(DBZ_MICRO_TIME), _micro_time
    elif type_oid == TIMESTAMP:
        if time_mode == "connect":
            schema, convert = Timestamp.schema(), _connect_timestamp
        elif _precision(typmod) <= 3:
            schema, convert = debezium_schema(DBZ_TIMESTAMP), _milli_timestamp
        else:
            schema, convert = debezium_schema(DBZ_MICRO_TIMESTAMP), _micro_timestamp
    elif type_oid == TIMESTAMPTZ:
        schema = debezium_schema(DBZ_ZONED_TIMESTAMP)
        convert = _zoned_timestamp(_precision(typmod))
    elif type_oid == TIMETZ:
        schema, convert = debezium_schema(DBZ_ZONED_TIME), _zoned_time
    elif type_oid == INTERVAL:
        if types.interval_handling_mode == "string":
            schema, convert = debezium_schema(DBZ_INTERVAL), _interval_string
        else:
            schema, convert = debezium_schema(DBZ_MICRO_DURATION), _micro_duration
    elif type_oid == UUID:
        schema, convert = debezium_schema(DBZ_UUID), str
    elif type_oid in (JSON, JSONB):
        schema, convert = debezium_schema(DBZ_JSON), str
    elif enum_values is not None:
        schema = debezium_schema(DBZ_ENUM, parameters={"allowed": enum_values})
        convert = str
    else:  # text, varchar, char, name, inet, arrays, …: PostgreSQL's text
        schema, convert = STRING_SCHEMA, str
    return (schema.optional_() if optional else schema), convert


def text_converter(
    type_oid: int, typmod: int, types: TypeOptions = DEFAULT_TYPES, *, optional: bool = True
) -> Callable[[str], Any]:
    """The function from PostgreSQL's text output of a value to its Connect value."""
    return column_type(type_oid, typmod, types, optional=optional)[1]


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
    enum_values: list[str | None] | None = None  # per column: its labels, comma-joined
    types: TypeOptions = DEFAULT_TYPES
    value_schema: Schema = field(init=False)
    key_schema: Schema | None = field(init=False)
    converters: list[Callable[[str], Any]] = field(init=False)
    key_indexes: list[int] = field(init=False)

    def build(self, prefix: str, types: TypeOptions | None = None) -> Table:
        """Derive the schemas for topic prefix `prefix` (returns self); `types` replaces
        the table's type options when given."""
        if types is not None:
            self.types = types
        base = f"{prefix}.{self.schema}.{self.name}"
        self.topic = base
        enums = self.enum_values or [None] * len(self.columns)
        fields = []
        converters = []
        for name, oid, typmod, not_null, labels in zip(
            self.columns, self.type_oids, self.typmods, self.not_null, enums, strict=True
        ):
            schema, convert = column_type(
                oid, typmod, self.types, optional=not not_null, enum_values=labels
            )
            fields.append((name, schema))
            converters.append(convert)
        self.value_schema = Schema.struct(fields, name=f"{base}.Value", optional=True)
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
    cursor: Any, schema: str, name: str, prefix: str, *, types: TypeOptions = DEFAULT_TYPES
) -> Table | None:
    """The table from the catalog (None when it does not exist), schemas built with
    `types`."""
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
    ).build(prefix, types)
