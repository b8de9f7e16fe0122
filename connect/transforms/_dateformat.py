"""Java `SimpleDateFormat` patterns, for the configs that carry them
(`TimestampConverter.format`, `TimestampRouter.timestamp.format`).

Kafka users write these patterns (`yyyy-MM-dd'T'HH:mm:ss.SSSZ`), so we read the same
pattern letters rather than ask for strftime codes. A pattern compiles once into a
formatter (a list of pieces) and a parser (a regular expression); all times are UTC,
as Kafka's transforms format and parse them.

Supported letters: G y Y u M L d D E a H k K h m s S z Z X and quoted text ('' is a
quote). Others are refused when the pattern compiles, so a typo fails at configure
time, not on the first record.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["DateFormat", "DateFormatError"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MONTHS = [
    "January", "February", "March", "April", "May", "June", "July",
    "August", "September", "October", "November", "December",
]  # fmt: skip
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_NUMERIC = set("yYuMLdDHkKhmsS")
_LETTERS = _NUMERIC | set("GEazZX")


class DateFormatError(ValueError):
    """A pattern that cannot be compiled, or a text that does not match it."""


def _tokens(pattern: str) -> list[tuple[str, int] | str]:
    """Split a pattern into (letter, count) fields and literal strings."""
    out: list[tuple[str, int] | str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            if pattern.startswith("''", i):
                out.append("'")
                i += 2
                continue
            end = i + 1
            text = []
            while True:
                if end >= n:
                    raise DateFormatError(f"Unterminated quote in pattern {pattern!r}")
                if pattern[end] == "'":
                    if pattern.startswith("''", end):
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            out.append("".join(text))
            i = end + 1
        elif c.isascii() and c.isalpha():
            if c not in _LETTERS:
                raise DateFormatError(f"Illegal pattern character '{c}' in {pattern!r}")
            j = i
            while j < n and pattern[j] == c:
                j += 1
            out.append((c, j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return out


def _pad(value: int, count: int) -> str:
    return str(value).zfill(count) if value >= 0 else "-" + str(-value).zfill(count)


def _offset(letter: str) -> str:
    # Always UTC: Kafka's transforms format in UTC (ISO 8601 `X` writes it as Z).
    return "Z" if letter == "X" else "+0000"


def _format_field(letter: str, count: int) -> Callable[[_dt.datetime], str]:
    if letter in "yY":
        if count == 2:
            return lambda d: _pad(d.year % 100, 2)
        return lambda d: _pad(d.year, count)
    if letter == "u":
        return lambda d: _pad(d.isoweekday(), count)
    if letter in "ML":
        if count >= 4:
            return lambda d: _MONTHS[d.month - 1]
        if count == 3:
            return lambda d: _MONTHS[d.month - 1][:3]
        return lambda d: _pad(d.month, count)
    simple: dict[str, Callable[[_dt.datetime], int]] = {
        "d": lambda d: d.day,
        "D": lambda d: d.timetuple().tm_yday,
        "H": lambda d: d.hour,
        "k": lambda d: d.hour or 24,
        "K": lambda d: d.hour % 12,
        "h": lambda d: d.hour % 12 or 12,
        "m": lambda d: d.minute,
        "s": lambda d: d.second,
        "S": lambda d: d.microsecond // 1000,
    }
    if letter in simple:
        get = simple[letter]
        return lambda d: _pad(get(d), count)
    if letter == "E":
        if count >= 4:
            return lambda d: _DAYS[d.weekday()]
        return lambda d: _DAYS[d.weekday()][:3]
    if letter == "G":
        return lambda d: "AD"
    if letter == "a":
        return lambda d: "AM" if d.hour < 12 else "PM"
    if letter == "z":
        return lambda d: "UTC"
    return lambda d: _offset(letter)


def _parse_regex(letter: str, count: int, adjacent_numeric: bool) -> str:
    """The regex group for one field; a numeric field followed directly by another
    numeric field takes exactly `count` digits (as SimpleDateFormat does)."""
    if letter in _NUMERIC and not (letter in "ML" and count >= 3):
        if adjacent_numeric:
            return rf"(\d{{{count}}})"
        return r"(-?\d+)" if letter in "yYu" else r"(\d+)"
    if letter in "ML":
        return "(" + "|".join(m if count >= 4 else m[:3] for m in _MONTHS) + ")"
    if letter == "E":
        return "(" + "|".join(d if count >= 4 else d[:3] for d in _DAYS) + ")"
    if letter == "G":
        return "(AD|BC)"
    if letter == "a":
        return "(AM|PM|am|pm)"
    if letter == "z":
        return r"(UTC|GMT|Z|[A-Za-z]+|[+-]\d{2}:?\d{2})"
    return r"(Z|[+-]\d{2}(?::?\d{2})?)"


@dataclass(frozen=True, slots=True)
class DateFormat:
    """A compiled SimpleDateFormat pattern: `format(ms)` and `parse(text) -> ms`."""

    pattern: str
    _format: tuple[Callable[[_dt.datetime], str] | str, ...]
    _regex: re.Pattern[str]
    _fields: tuple[tuple[str, int], ...]

    @classmethod
    def compile(cls, pattern: str) -> DateFormat:
        tokens = _tokens(pattern)
        pieces: list[Callable[[_dt.datetime], str] | str] = []
        regex: list[str] = []
        fields: list[tuple[str, int]] = []
        for i, token in enumerate(tokens):
            if isinstance(token, str):
                pieces.append(token)
                regex.append(re.escape(token))
                continue
            letter, count = token
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            adjacent = (
                isinstance(nxt, tuple)
                and nxt[0] in _NUMERIC
                and not (nxt[0] in "ML" and nxt[1] >= 3)
            )
            pieces.append(_format_field(letter, count))
            regex.append(_parse_regex(letter, count, adjacent))
            fields.append(token)
        return cls(pattern, tuple(pieces), re.compile("".join(regex), re.I), tuple(fields))

    def format(self, epoch_ms: int) -> str:
        moment = _EPOCH + _dt.timedelta(milliseconds=epoch_ms)
        return "".join(p if isinstance(p, str) else p(moment) for p in self._format)

    def parse(self, text: str) -> int:
        """Milliseconds since the epoch for `text` (UTC unless it carries an offset)."""
        match = self._regex.fullmatch(text.strip())
        if match is None:
            raise DateFormatError(f"Unparseable date: {text!r} (pattern {self.pattern!r})")
        year, month, day, yday = 1970, 1, 1, None
        hour, minute, second, ms, pm, offset_min = 0, 0, 0, 0, None, 0
        for (letter, count), raw in zip(self._fields, match.groups(), strict=True):
            if letter in "yY":
                year = int(raw)
                if count == 2 and len(raw) == 2:
                    year += 2000 if year < 80 else 1900  # close to Java's 80/20 window
            elif letter in "ML":
                month = int(raw) if raw.isdigit() else _month_number(raw)
            elif letter == "d":
                day = int(raw)
            elif letter == "D":
                yday = int(raw)
            elif letter in "Hk":
                hour = int(raw) % 24
            elif letter in "Kh":
                hour = int(raw) % 12
            elif letter == "m":
                minute = int(raw)
            elif letter == "s":
                second = int(raw)
            elif letter == "S":
                ms = int(raw)
            elif letter == "a":
                pm = raw.upper() == "PM"
            elif letter in "zZX":
                offset_min = _offset_minutes(raw)
        if pm and hour < 12:  # `h`/`K` give 0-11 here; `H` may already say 13-23
            hour += 12
        try:
            if yday is not None:
                date = _dt.date(year, 1, 1) + _dt.timedelta(days=yday - 1)
            else:
                date = _dt.date(year, month, day)
            moment = _dt.datetime(
                date.year, date.month, date.day, hour, minute, second, tzinfo=_dt.UTC
            )
        except ValueError as exc:
            raise DateFormatError(f"Unparseable date: {text!r}: {exc}") from None
        delta = moment - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1000 + ms - offset_min * 60_000


def _month_number(name: str) -> int:
    folded = name.lower()
    for i, month in enumerate(_MONTHS):
        if month.lower().startswith(folded):
            return i + 1
    raise DateFormatError(f"Unknown month {name!r}")


def _offset_minutes(raw: str) -> int:
    if raw.upper() in ("Z", "UTC", "GMT") or raw.isalpha():
        return 0
    sign = -1 if raw[0] == "-" else 1
    digits = raw[1:].replace(":", "")
    hours = int(digits[:2])
    minutes = int(digits[2:4]) if len(digits) >= 4 else 0
    return sign * (hours * 60 + minutes)
