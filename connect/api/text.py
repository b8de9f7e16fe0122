"""Connect values as Kafka Connect's Java workers print them (`String.valueOf`).

Kafka's FileStreamSink writes `println(record.value())`, so every file a Kafka
pipeline writes holds Java's text forms, and a pipeline moved here should write the
same bytes. `java_string(value, schema)` gives that text:

| Python value (schema)        | Java object (Connect)  | text                                  |
| None                         | null                   | `null`                                |
| str                          | String                 | as is                                 |
| bool                         | Boolean                | `true`, `false`                       |
| int (int8 … int64, none)     | Byte … Long            | `42`                                  |
| float (float64, none)        | Double                 | `Double.toString`: `1.0`, `1.0E10`    |
| float, int (float32)         | Float                  | `Float.toString` of the float32 value |
| decimal.Decimal              | BigDecimal             | `BigDecimal.toString`: `1.50`, `1E+3` |
| date, time, datetime         | java.util.Date         | `Thu Jan 01 00:00:00 UTC 1970`        |
| Struct                       | Struct                 | `Struct{a=1,b=x}`, null fields left out |
| list                         | ArrayList              | `[a, b]`                              |
| dict                         | HashMap                | `{k=v, k2=v2}` in HashMap order       |
| bytes, inside a value        | byte[]                 | base64 (Java: `[B@<identity hash>`)   |

Where each form comes from (Apache Kafka sources):
- `connect/file/.../FileStreamSinkTask.java`: `outputStream.println(record.value())`.
- `connect/api/.../data/Struct.java` `toString()`: `Struct{`, set fields only, `name=value`
  joined by `,` without a space, `}`.
- `java.util.AbstractCollection.toString` (`[a, b]`) and `AbstractMap.toString`
  (`{k=v, k2=v2}`); the map is a `java.util.HashMap` because that is what
  `connect/json/.../JsonConverter.java` builds for every map, schemaless objects
  included, and what most SMTs copy a map into.
- `Double.toString` / `Float.toString` (JDK 19+, the shortest decimal that reads
  back, at least two digits when one would be farther from the value: `4.9E-324`),
  `BigDecimal.toString` (the same rule as Python's `str(Decimal)`), `Date.toString`
  (`EEE MMM dd HH:mm:ss zzz yyyy` in the JVM's default time zone: here the process's
  local zone, its abbreviation from the system's zone database; the Julian calendar
  before 1582-10-15, as `java.util.Date` does). In UTC every date reads as Java's;
  in other zones, dates before 1970 may not (Java knows no local mean time: it
  prints 1582 in New York as EST, the system's database as LMT).

HashMap order. Java iterates a HashMap bucket by bucket: bucket `spread(hash) &
(capacity - 1)`, `spread(h) = h ^ (h >>> 16)`, capacity 16 doubling whenever the
entries pass 3/4 of it (or, below 64 buckets, when one bucket reaches 9 entries), and
in insertion order within a bucket. Keys hash as their Java types do (String over
UTF-16 units, Long, Integer, Double, Float, Boolean; null 0). This is exact for a map
built by inserting into a new HashMap, as JsonConverter does. Maps whose keys have no
Java hash here (structs, lists, bytes, dates, decimals) keep their insertion order, and
so do the entries of one bucket after it grew to a tree (9+ colliding keys in a map of
64+ buckets: Java then orders that bucket by its tree).

The text of a value is per-record Python work: callers keep plain strings and bytes on
their own fast path and come here only for structured values.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal as _decimal
import math
import struct as _struct
import time as _time
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from connect.api.data import Schema, Struct, Type

__all__ = ["java_string"]

_FLOATS = (Type.FLOAT32, Type.FLOAT64)
#: A Struct's field values as set (no defaults): what Struct.toString prints.
_raw_values = Struct.values


def java_string(value: Any, schema: Schema | None = None) -> str:
    """`String.valueOf(value)` of the Java object Kafka Connect would hold for this
    Connect value (see the module docstring); `schema` decides the cases Python's type
    alone cannot (float32 against float64, a map key's Java type)."""
    if value is None:
        return "null"
    if type(value) is str:
        return value
    return _text(value, schema)


def _text(value: Any, schema: Schema | None) -> str:
    if value is None:
        return "null"
    t = type(value)
    if t is str:
        return value
    if t is Struct:
        return _struct_text(value)
    if t is bool:
        return "true" if value else "false"
    if t is int:
        if schema is not None and schema.type in _FLOATS:
            return _float_text(float(value), schema)
        return str(value)
    if t is float:
        return _float_text(value, schema)
    if isinstance(value, Struct):
        return _struct_text(value)
    if isinstance(value, Mapping):
        return _map_text(value, schema)
    if isinstance(value, (list, tuple)):
        elem = schema.value_schema if schema is not None else None
        return "[" + ", ".join([_text(v, elem) for v in value]) + "]"
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return _float_text(float(value), schema)
    if isinstance(value, _decimal.Decimal):
        return _big_decimal(value)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)  # naive is UTC, as Timestamp reads it
        delta = value - _EPOCH
        ms = (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
        return _java_date(ms)
    if isinstance(value, _dt.date):
        return _java_date((value - _EPOCH_DATE).days * 86_400_000)
    if isinstance(value, _dt.time):
        ms = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000
        return _java_date(ms + value.microsecond // 1000)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def _struct_text(value: Struct) -> str:
    # Struct.toString: only the fields that hold a value, "," without a space.
    parts = [
        f"{f.name}={_text(v, f.schema)}"
        for f, v in zip(value.schema.fields, _raw_values(value), strict=True)
        if v is not None
    ]
    return "Struct{" + ",".join(parts) + "}"


# ------------------------------------------------------------------ numbers


def _float_text(value: float, schema: Schema | None) -> str:
    if schema is not None and schema.type is Type.FLOAT32:
        return _java_float32(value)
    return _java_double(value)


def _java_double(value: float) -> str:
    """Double.toString (JDK 19+)."""
    if 1e-3 <= abs(value) < 1e7:
        # Python's repr is the same shortest decimal, written plainly in this range as
        # Java writes it (`2.5`, `100.0`, `0.001`); the two-digit rule never applies
        # to a normal double.
        return repr(value)
    special = _special(value)
    if special is not None:
        return special
    digits, exponent = _digits(repr(value))
    return _java_layout(*_two_digit_rule(value, digits, exponent))


def _java_float32(value: float) -> str:
    """Float.toString (JDK 19+) of the float32 nearest to `value`."""
    f32 = _to_float32(value)
    special = _special(f32)
    if special is not None:
        return special
    for precision in range(1, 10):  # the shortest decimal that reads back as f32
        text = f"{f32:.{precision - 1}e}"
        if _to_float32(float(text)) == f32:
            break
    digits, exponent = _digits(text)
    return _java_layout(*_two_digit_rule(f32, digits, exponent, float32=True))


def _to_float32(value: float) -> float:
    """The float32 nearest to `value` (infinite past float32's range, as Java's cast)."""
    try:
        return _struct.unpack("<f", _struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _special(value: float) -> str | None:
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return None


def _digits(text: str) -> tuple[str, int]:
    """(significant digits with the sign, decimal exponent of the first digit) of a
    Python float text such as '-1.25e-07' or '123.5'."""
    d = _decimal.Decimal(text)
    sign, digit_tuple, exp = d.as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exp, int)
    exponent = exp + len(digit_tuple) - 1
    return ("-" if sign else "") + digits, exponent


def _two_digit_rule(
    value: float, digits: str, exponent: int, *, float32: bool = False
) -> tuple[str, int]:
    """Java renders at least two digits when the shortest decimal has one and a
    two-digit decimal is closer to the value (Double.MIN_VALUE is `4.9E-324`, not
    `5.0E-324`)."""
    if len(digits.lstrip("-")) != 1:
        return digits, exponent
    two = f"{value:.1e}"
    back = float(two)
    if float32:
        back = _to_float32(back)
    if back != value:
        return digits, exponent
    exact = _decimal.Decimal(value)
    one = _decimal.Decimal(f"{digits}e{exponent}")
    if abs(_decimal.Decimal(two) - exact) < abs(one - exact):
        return _digits(two)
    return digits, exponent


def _java_layout(digits: str, exponent: int) -> str:
    """Java's layout of a decimal: plain within [1e-3, 1e7), else `d.dddE±n`, with at
    least one digit after the point either way."""
    sign = "-" if digits.startswith("-") else ""
    digits = digits.lstrip("-")
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            return f"{sign}{whole}.{digits[exponent + 1 :] or '0'}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _big_decimal(value: _decimal.Decimal) -> str:
    # BigDecimal.toString and Python's str(Decimal) follow the same rule (plain when
    # the exponent is <= 0 and the adjusted exponent >= -6, else scientific with an
    # explicit sign); BigDecimal has no negative zero.
    if value.is_zero() and value.is_signed():
        value = value.copy_abs()
    return str(value)


# -------------------------------------------------------------------- dates

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
#: 1582-10-15T00:00 (local wall clock): java.util.Date's Gregorian cutover.
_CUTOVER_S = -12_219_292_800


def _java_date(ms: int) -> str:
    """java.util.Date.toString of `ms` since the epoch, in the local time zone."""
    seconds = ms // 1000
    local = _time.localtime(seconds)
    wall = seconds + local.tm_gmtoff
    if wall < _CUTOVER_S:
        year, month, day = _julian(wall // 86_400)
    else:
        year, month, day = local.tm_year, local.tm_mon, local.tm_mday
    weekday = _DAYS[(wall // 86_400 + 3) % 7]  # 1970-01-01 was a Thursday
    return (
        f"{weekday} {_MONTHS[month - 1]} {day:02d} {local.tm_hour:02d}:{local.tm_min:02d}:"
        f"{local.tm_sec:02d} {local.tm_zone} {year}"
    )


def _julian(days: int) -> tuple[int, int, int]:
    """(year, month, day) in the Julian calendar of a day counted from 1970-01-01."""
    c = days + 2_440_588 + 32_082  # the Julian day number, shifted to a March year
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    return d - 4800 + m // 10, m + 3 - 12 * (m // 10), e - (153 * m + 2) // 5 + 1


# --------------------------------------------------------------------- maps


def _map_text(value: Mapping[Any, Any], schema: Schema | None) -> str:
    key_schema = value_schema = None
    if schema is not None and schema.type is Type.MAP:
        key_schema, value_schema = schema.key_schema, schema.value_schema
    items = list(value.items())
    order = _hashmap_order(items, key_schema)
    parts = [
        f"{_text(k, key_schema)}={_text(v, value_schema)}"
        for k, v in (items if order is None else [items[i] for i in order])
    ]
    return "{" + ", ".join(parts) + "}"


def _hashmap_order(items: list[tuple[Any, Any]], key_schema: Schema | None) -> list[int] | None:
    """The positions of `items` in java.util.HashMap's iteration order, or None to keep
    their order (a key with no Java hash here)."""
    if len(items) < 2:
        return None
    keys = [k for k, _ in items]
    if all(type(k) is str for k in keys):
        return _string_key_order(tuple(keys))
    hasher = _key_hasher(key_schema)
    hashes = []
    for k in keys:
        h = hasher(k)
        if h is None:
            return None
        hashes.append(h)
    return _order(hashes)


@lru_cache(maxsize=1024)
def _string_key_order(keys: tuple[str, ...]) -> list[int]:
    # The same keys in the same order, record after record: computed once.
    return _order([_string_hash(k) for k in keys])


def _order(hashes: list[int]) -> list[int]:
    spread = [h ^ (h >> 16) for h in hashes]
    capacity = 16
    buckets: dict[int, int] = {}
    for size, h in enumerate(spread, 1):
        b = h & (capacity - 1)
        buckets[b] = buckets.get(b, 0) + 1
        if buckets[b] >= 9 and capacity < 64:  # treeifyBin grows a small table instead
            capacity *= 2
            buckets = _counts(spread[:size], capacity)
        if size > capacity * 3 // 4:
            capacity *= 2
            buckets = _counts(spread[:size], capacity)
    mask = capacity - 1
    return sorted(range(len(spread)), key=lambda i: spread[i] & mask)  # stable


def _counts(spread: list[int], capacity: int) -> dict[int, int]:
    counts: dict[int, int] = {}
    for h in spread:
        b = h & (capacity - 1)
        counts[b] = counts.get(b, 0) + 1
    return counts


@lru_cache(maxsize=4096)
def _string_hash(s: str) -> int:
    """String.hashCode as an unsigned 32-bit int (over UTF-16 code units)."""
    units = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for (u,) in _struct.iter_unpack("<H", units):
        h = (31 * h + u) & 0xFFFFFFFF
    return h


def _long_hash(v: int) -> int:
    v &= 0xFFFFFFFFFFFFFFFF
    return (v ^ (v >> 32)) & 0xFFFFFFFF


def _double_hash(v: float) -> int:
    bits = 0x7FF8000000000000 if v != v else _struct.unpack("<Q", _struct.pack("<d", v))[0]
    return _long_hash(bits)


def _float32_hash(v: float) -> int:
    if v != v:
        return 0x7FC00000
    return _struct.unpack("<I", _struct.pack("<f", v))[0]


def _key_hasher(key_schema: Schema | None) -> Callable[[Any], int | None]:
    key_type = None if key_schema is None or key_schema.name else key_schema.type

    def hasher(k: Any) -> int | None:
        if k is None:
            return 0
        if isinstance(k, str):
            return _string_hash(k)
        if isinstance(k, bool):
            return 1231 if k else 1237
        if isinstance(k, int):
            if key_type in (Type.INT8, Type.INT16, Type.INT32):
                return k & 0xFFFFFFFF  # Byte, Short, Integer: the value
            if key_type is Type.FLOAT32:
                return _float32_hash(float(k))
            if key_type is Type.FLOAT64:
                return _double_hash(float(k))
            return _long_hash(k)  # Long (schemaless integers are Longs)
        if isinstance(k, float):
            return _float32_hash(k) if key_type is Type.FLOAT32 else _double_hash(k)
        return None

    return hasher
