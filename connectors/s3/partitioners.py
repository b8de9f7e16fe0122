"""Partitioners: which directory (the "encoded partition") a record's object goes to.

- Default: `partition=<kafka partition>` — one directory per topic partition;
- Field: `<field>=<value>` per `partition.field.name`, joined by `directory.delim`;
- TimeBased: the record's time (per `timestamp.extractor`) floored to
  `partition.duration.ms` in `timezone`, written with `path.format`, a Joda-Time
  pattern as Confluent's configs have them (`'year'=YYYY/'month'=MM/'day'=dd`), with
  month and weekday names in `locale` (locales.py);
- Daily / Hourly: TimeBased with the year/month/day(/hour) pattern and duration.

Only Field and TimeBased look at each record; Default is constant per topic partition,
which lets the writer skip per-record work (see writer.py).
"""

from __future__ import annotations

import datetime as _dt
import re
import zoneinfo
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from connect.api import DataError, SinkRecord, Struct
from connectors.s3.config import LayoutSettings
from connectors.s3.timestamps import TimestampExtractor, field_value, make_extractor

if TYPE_CHECKING:
    from connectors.s3.locales import CalendarNames

__all__ = ["Partitioner", "compile_path_format", "make_partitioner"]

_DAILY = "'year'=YYYY/'month'=MM/'day'=dd"
_HOURLY = _DAILY + "/'hour'=HH"


def compile_path_format(pattern: str, locale: str = "") -> Callable[[_dt.datetime], str]:
    """A formatter for a Joda-Time pattern: quoted literals ('' is a quote) and the
    letters y/Y (year), M (month), d (day), H (hour), m (minute), s (second), S (ms),
    E (weekday name); a letter's repeat count is its zero-padded width (yy: two digits),
    and for M from three on a name (MMM short, MMMM full), for E up to three a short
    name and from four the full one — names in `locale` (English when empty)."""
    parts: list[Callable[[_dt.datetime], str]] = []
    for match in re.finditer(r"'((?:[^']|'')*)'|([A-Za-z])\2*|[^A-Za-z']+", pattern):
        text = match.group(0)
        if match.group(1) is not None or text == "''":
            literal = (match.group(1) or "").replace("''", "'") if text != "''" else "'"
            parts.append(lambda _d, s=literal: s)
        elif match.group(2):
            parts.append(_field(match.group(2), len(text), pattern, locale))
        else:
            parts.append(lambda _d, s=text: s)

    def render(moment: _dt.datetime) -> str:
        return "".join(p(moment) for p in parts)

    return render


def _field(letter: str, width: int, pattern: str, locale: str) -> Callable[[_dt.datetime], str]:
    if letter in "yY":
        if width == 2:
            return lambda d: f"{d.year % 100:02d}"
        return lambda d: f"{d.year:0{width}d}"
    if letter == "M":
        if width >= 3:
            names = _names(locale)
            months = names.months if width >= 4 else names.short_months
            return lambda d: months[d.month - 1]
        return lambda d: f"{d.month:0{width}d}"
    if letter == "E":
        names = _names(locale)
        days = names.days if width >= 4 else names.short_days
        return lambda d: days[d.weekday()]
    attr = {"d": "day", "H": "hour", "m": "minute", "s": "second"}.get(letter)
    if attr is not None:
        return lambda d: f"{getattr(d, attr):0{width}d}"
    if letter == "S":
        return lambda d: f"{d.microsecond // 1000:03d}"[:width]
    raise DataError(f"path.format {pattern!r}: unsupported pattern letter {letter!r}")


def _names(locale: str) -> CalendarNames:
    """Babel (slow to import: docs/performance.md) is loaded only by a path format
    that names months or weekdays."""
    from connectors.s3.locales import calendar_names

    return calendar_names(locale)


class Partitioner:
    """Maps records to encoded partitions (directories below the topic's)."""

    #: False when every record of a topic partition maps to the same directory.
    per_record = True
    #: True when the directory comes from the record's time.
    time_based = False

    def encode(self, records: Sequence[SinkRecord], stamps: list[int] | None) -> list[str]:
        raise NotImplementedError


class DefaultPartitioner(Partitioner):
    per_record = False

    def encode(self, records: Sequence[SinkRecord], stamps: list[int] | None) -> list[str]:
        return [f"partition={records[0].kafka_partition}"] * len(records)


class FieldPartitioner(Partitioner):
    def __init__(self, fields: Sequence[str], delim: str) -> None:
        self.fields = tuple(fields)
        self.delim = delim

    def _one(self, record: SinkRecord) -> str:
        value = record.value
        if not isinstance(value, (Struct, dict)):
            raise DataError(
                f"record {record.topic}-{record.kafka_partition}@{record.kafka_offset}: the "
                f"FieldPartitioner needs a struct or map value, not {type(value).__name__}"
            )
        out = []
        for name in self.fields:
            try:
                v = field_value(value, name)
            except KeyError:
                raise DataError(
                    f"record {record.topic}-{record.kafka_partition}@{record.kafka_offset} "
                    f"has no field {name!r} (partition.field.name)"
                ) from None
            if isinstance(v, bool):
                v = str(v).lower()
            elif not isinstance(v, (str, int)):
                raise DataError(
                    f"field {name!r} of a record is a {type(v).__name__}: the "
                    "FieldPartitioner takes strings, integers and booleans"
                )
            out.append(f"{name}={v}")
        return self.delim.join(out)

    def encode(self, records: Sequence[SinkRecord], stamps: list[int] | None) -> list[str]:
        return [self._one(r) for r in records]


class TimeBasedPartitioner(Partitioner):
    time_based = True

    def __init__(
        self, path_format: str, duration_ms: int, timezone: str, delim: str, locale: str = ""
    ) -> None:
        self.duration_ms = duration_ms
        self.zone = zoneinfo.ZoneInfo(timezone)
        pattern = path_format.replace("/", delim) if delim != "/" else path_format
        self._render = compile_path_format(pattern, locale)
        self._cache: dict[int, str] = {}

    def directory(self, ts: int) -> str:
        """The directory of epoch-ms `ts`: local wall time floored to the duration."""
        local = _dt.datetime.fromtimestamp(ts / 1000, self.zone)
        offset = local.utcoffset()
        offset_ms = int(offset.total_seconds() * 1000) if offset else 0
        adjusted = ts + offset_ms
        floored = adjusted - adjusted % self.duration_ms
        cached = self._cache.get(floored)
        if cached is None:
            moment = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=floored)
            cached = self._cache[floored] = self._render(moment)
            if len(self._cache) > 4096:
                self._cache.clear()
        return cached

    def encode(self, records: Sequence[SinkRecord], stamps: list[int] | None) -> list[str]:
        assert stamps is not None
        return [self.directory(ts) for ts in stamps]


def make_partitioner(layout: LayoutSettings) -> tuple[Partitioner, TimestampExtractor]:
    """The partitioner and timestamp extractor of a layout."""
    extractor = make_extractor(layout.timestamp_extractor, layout.timestamp_field)
    kind = layout.partitioner
    delim = layout.directory_delim
    if kind == "field":
        return FieldPartitioner(layout.partition_fields, delim), extractor
    if kind == "daily":
        return TimeBasedPartitioner(_DAILY, 86_400_000, layout.timezone, delim), extractor
    if kind == "hourly":
        return TimeBasedPartitioner(_HOURLY, 3_600_000, layout.timezone, delim), extractor
    if kind == "time":
        return TimeBasedPartitioner(
            layout.path_format,
            layout.partition_duration_ms,
            layout.timezone,
            delim,
            layout.locale,
        ), extractor
    return DefaultPartitioner(), extractor
