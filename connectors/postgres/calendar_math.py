"""Calendar arithmetic for any year: days since 1970-01-01 in the proleptic Gregorian
calendar, and PostgreSQL's date and timestamp text as microseconds since the epoch.

Python's dates stop at years 1 and 9999; PostgreSQL's go from 4713 BC to 294276 AD,
and Debezium gives every one of them a value. The converters in
`connectors.postgres.text_values` try Python's fast parsers first and come here only
for what those refuse (other years, `infinity`, offsets other than UTC), so this
module is the slow path kept apart from the hot one.
"""

from __future__ import annotations

import re

from connect.api import DataError

__all__ = [
    "DAY_US",
    "INFINITY_US",
    "NEG_INFINITY_US",
    "civil_from_days",
    "days_from_civil",
    "iso_date",
    "parse_instant",
    "time_of_day",
]

DAY_US = 86_400_000_000
# PgJDBC's DATE_POSITIVE/NEGATIVE_INFINITY, which Debezium emits for ±infinity
INFINITY_US = 9_223_372_036_825_200_000
NEG_INFINITY_US = -9_223_372_036_832_400_000


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date (year 0 is 1 BC), in
    integers only, so no year is out of range."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count from 1970-01-01: `days_from_civil` undone."""
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


def parse_instant(text: str) -> int:
    """µs since the epoch of any date/timestamp text PostgreSQL outputs (an offset, if
    any, applied), ±infinity as Debezium's stand-ins."""
    if text == "infinity":
        return INFINITY_US
    if text == "-infinity":
        return NEG_INFINITY_US
    m = _TIMESTAMP_TEXT.fullmatch(text)
    if m is None:
        raise DataError(f"{text!r} is not PostgreSQL's text of a date or timestamp")
    year = int(m[1])
    if m[12]:
        year = 1 - year  # 1 BC is year 0
    days = days_from_civil(year, int(m[2]), int(m[3]))
    seconds = days * 86400 + int(m[4] or 0) * 3600 + int(m[5] or 0) * 60 + int(m[6] or 0)
    micros = seconds * 1_000_000 + int((m[7] or "0").ljust(6, "0"))
    if m[8]:
        offset = (int(m[9]) * 3600 + int(m[10] or 0) * 60 + int(m[11] or 0)) * 1_000_000
        micros += -offset if m[8] == "+" else offset
    return micros


def iso_date(days: int) -> str:
    """Java's ISO date: 4-digit year, '+' past 9999, '-' before year 0."""
    year, month, day = civil_from_days(days)
    if year > 9999:
        y = f"+{year}"
    elif year < 0:
        y = f"-{-year:04d}"
    else:
        y = f"{year:04d}"
    return f"{y}-{month:02d}-{day:02d}"


def time_of_day(micros: int) -> tuple[str, int]:
    """('HH:MM:SS', µs) of a time of day in µs."""
    seconds, fraction = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{hour:02d}:{minute:02d}:{second:02d}", fraction
