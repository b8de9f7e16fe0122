"""PostgreSQL's text output of a value as its Connect value: one function per type.

Values arrive as PostgreSQL's text output — from pgoutput tuples and from the
snapshot's `COPY … TO STDOUT` alike — and `Table.convert` turns each into its value
with one function per column (chosen by `connectors.postgres.columns.column_type`), so
a snapshot row and a streamed row of the same data are equal. The functions are the
snapshot's hot path: each handles the text sessions produce (TimeZone UTC, DateStyle
ISO, IntervalStyle postgres; see `connectors.postgres.config`) with a few string
operations — a timestamptz of a UTC session is rewritten, not parsed — and falls back
to a full parse (`connectors.postgres.calendar_math`) for everything else (other
offsets, years before 1 or after 9999, `infinity`). A converter that can do a whole
column at once carries that form as its `column` attribute (the snapshot's COPY parser
uses it).
"""

from __future__ import annotations

import datetime as dt
import decimal
import operator
import re
from collections.abc import Callable
from typing import Any

from connect.api import DataError, Decimal, Schema, Struct
from connectors.jdbc.types import unscaled_bytes
from connectors.postgres.calendar_math import DAY_US, iso_date, parse_instant, time_of_day

__all__ = [
    "boolean",
    "bytea",
    "connect_date",
    "connect_time",
    "connect_timestamp",
    "decimal_converter",
    "epoch_days",
    "interval_string",
    "micro_duration",
    "micro_time",
    "micro_timestamp",
    "milli_time",
    "milli_timestamp",
    "variable_scale",
    "zoned_slow",
    "zoned_time",
    "zoned_timestamp",
]

_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_US = dt.timedelta(microseconds=1)
_MONTH_US = 2_629_800_000_000  # 365.25 / 12 days, Debezium's MicroDuration month


def boolean(text: str) -> bool:
    return text == "t"


def bytea(text: str) -> bytes:
    return bytes.fromhex(text[2:])  # bytea_output = hex: \x0a0b…


_fromdate = dt.date.fromisoformat
_fromdatetime = dt.datetime.fromisoformat


def epoch_days(text: str) -> int:
    """io.debezium.time.Date."""
    try:
        return _fromdate(text).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        if text.endswith("infinity"):
            raise DataError(f"date {text!r} has no io.debezium.time.Date value") from None
        return parse_instant(text) // DAY_US


def micro_timestamp(text: str) -> int:
    """io.debezium.time.MicroTimestamp: the wall clock as if it were UTC."""
    try:
        return (_fromdatetime(text) - _EPOCH_NAIVE) // _US
    except ValueError:
        return parse_instant(text)


def milli_timestamp(text: str) -> int:
    """io.debezium.time.Timestamp (exact: PostgreSQL rounded the value to ≤ 3 digits)."""
    return micro_timestamp(text) // 1000


def micro_time(text: str) -> int:
    """io.debezium.time.MicroTime (24:00:00 is a whole day of µs, as in Debezium)."""
    micros = (int(text[:2]) * 3600 + int(text[3:5]) * 60 + int(text[6:8])) * 1_000_000
    if len(text) > 8:
        micros += int(text[9:].ljust(6, "0"))
    return micros


def milli_time(text: str) -> int:
    """io.debezium.time.Time (exact: PostgreSQL rounded the value to ≤ 3 digits)."""
    return micro_time(text) // 1000


def connect_date(text: str) -> dt.date:
    try:
        return _fromdate(text)
    except ValueError:
        raise DataError(f"date {text!r} is outside Connect's Date (years 1 to 9999)") from None


def connect_time(text: str) -> dt.time:
    micros = micro_time(text)
    if micros >= DAY_US:
        return dt.time(23, 59, 59, 999000)
    return (_EPOCH_NAIVE + dt.timedelta(microseconds=micros // 1000 * 1000)).time()


def connect_timestamp(text: str) -> dt.datetime:
    try:
        value = _fromdatetime(text)
    except ValueError:
        raise DataError(
            f"timestamp {text!r} is outside Connect's Timestamp (years 1 to 9999)"
        ) from None
    return value.replace(microsecond=value.microsecond // 1000 * 1000, tzinfo=dt.UTC)


def zoned_slow(text: str, digits: int) -> str:
    if text in ("infinity", "-infinity"):
        return text
    days, micros = divmod(parse_instant(text), DAY_US)
    clock, fraction = time_of_day(micros)
    frac = f".{fraction:06d}"[: digits + 1] if digits else ""
    return f"{iso_date(days)}T{clock}{frac}Z"


def zoned_timestamp(digits: int) -> Callable[[str], str]:
    """io.debezium.time.ZonedTimestamp with exactly `digits` fraction digits (Debezium
    pads to the column's precision). A UTC session's text `2024-01-01 00:00:01.12+00`
    only needs its separators rewritten; any other text is parsed."""
    pad = "0" * digits

    if not digits:

        def whole(text: str) -> str:
            if len(text) == 22 and text[-3:] == "+00" and text[10] == " ":
                return f"{text[:10]}T{text[11:19]}Z"
            return zoned_slow(text, 0)

        whole.column = _zoned_column(whole, 0)  # type: ignore[attr-defined]
        return whole

    def convert(text: str) -> str:
        if text[-3:] == "+00" and text[10:11] == " ":
            if len(text) == 22:
                return f"{text[:10]}T{text[11:19]}.{pad}Z"
            fraction = text[20:-3]
            return f"{text[:10]}T{text[11:19]}.{fraction}{pad[len(fraction) :]}Z"
        return zoned_slow(text, digits)

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


def zoned_time(text: str) -> str:
    """io.debezium.time.ZonedTime: the time in UTC, fraction without trailing zeros
    (Java's ISO offset time; PostgreSQL's text has none either)."""
    if text[-3:] == "+00":
        return text[:-3] + "Z"
    m = _TIMETZ_TEXT.fullmatch(text)
    if m is None:
        raise DataError(f"{text!r} is not PostgreSQL's text of a time with time zone")
    offset = (int(m[3]) * 3600 + int(m[4] or 0) * 60 + int(m[5] or 0)) * 1_000_000
    micros = micro_time(m[1]) + (-offset if m[2] == "+" else offset)
    clock, fraction = time_of_day(micros % DAY_US)
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


def micro_duration(text: str) -> int:
    """io.debezium.time.MicroDuration, computed exactly (Debezium's doubles can be a
    microsecond off for long intervals)."""
    years, months, days, hours, minutes, seconds, micros = _interval_parts(text)
    time_us = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + micros
    return (years * 12 + months) * _MONTH_US + days * DAY_US + time_us


def interval_string(text: str) -> str:
    """io.debezium.time.Interval: every part, seconds without trailing zeros."""
    years, months, days, hours, minutes, seconds, micros = _interval_parts(text)
    secs = decimal.Decimal(seconds * 1_000_000 + micros).scaleb(-6).normalize()
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{secs:f}S"


def decimal_converter(scale: int) -> Callable[[str], Any]:
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


def variable_scale(schema: Schema) -> Callable[[str], Struct]:
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
