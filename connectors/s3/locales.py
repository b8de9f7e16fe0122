"""Month and weekday names for `path.format` in the `locale` of the config, from the
Unicode CLDR data that Babel ships.

Java (9 and later) takes its locale data from the CLDR too, so `MMMM` in `fr-FR` or
`de_DE` names a directory here exactly as Confluent's sink names it there (`mars`,
`März`, `So.`). Nothing depends on the operating system's installed locales, which a
container usually lacks.

`locale` takes Java's forms (`fr-FR`, `fr_FR`, `fr`); empty means English, the names
the partitioner always wrote before `locale` was honoured.
"""

from __future__ import annotations

from typing import Any

from babel import Locale, UnknownLocaleError
from babel.dates import get_day_names, get_month_names

__all__ = ["CalendarNames", "calendar_names", "check_locale"]


def _parse(value: str) -> Locale:
    return Locale.parse((value or "en").strip().replace("-", "_"))


def check_locale(value: Any) -> str | None:
    """Why `value` is not a locale, or None when it is one."""
    try:
        _parse(str(value or ""))
    except (UnknownLocaleError, ValueError, TypeError) as exc:
        return f"not a locale known to the CLDR (e.g. en-US, fr_FR, de): {exc}"
    return None


class CalendarNames:
    """The month (1-12) and weekday (Monday first) names of one locale, in the
    formatting context (Joda's `MMMM`, `MMM`, `EEEE`, `EEE`)."""

    __slots__ = ("days", "months", "short_days", "short_months")

    def __init__(self, locale: Locale) -> None:
        wide_months = get_month_names("wide", "format", locale)
        short_months = get_month_names("abbreviated", "format", locale)
        wide_days = get_day_names("wide", "format", locale)
        short_days = get_day_names("abbreviated", "format", locale)
        self.months = tuple(str(wide_months[m]) for m in range(1, 13))
        self.short_months = tuple(str(short_months[m]) for m in range(1, 13))
        self.days = tuple(str(wide_days[d]) for d in range(7))
        self.short_days = tuple(str(short_days[d]) for d in range(7))


def calendar_names(locale: str) -> CalendarNames:
    """The names of `locale` (a config value already checked by `check_locale`)."""
    return CalendarNames(_parse(locale))
