"""Routers: transforms that change only the topic.

RegexRouter rewrites a topic that matches `regex` (whole-name match) with
`replacement`, Java-style (`$1`, `${name}` refer to groups). TimestampRouter builds the
topic from `topic.format` with `${topic}` and `${timestamp}` (the record timestamp
formatted with the SimpleDateFormat `timestamp.format`, UTC), which sinks use to
write to time-bucketed tables or indexes.
"""

from __future__ import annotations

import re
from typing import Any

from connect.api import ConfigDef, ConfigError, ConfigType, ConnectRecord, DataError, Importance
from connect.api import Transformation as _Transformation
from connect.transforms._dateformat import DateFormat, DateFormatError
from connect.transforms._util import Configured, java_regex, regex_validator

__all__ = ["RegexRouter", "TimestampRouter", "java_replacement"]

REGEX_CONFIG = "regex"
REPLACEMENT_CONFIG = "replacement"
TOPIC_FORMAT_CONFIG = "topic.format"
TIMESTAMP_FORMAT_CONFIG = "timestamp.format"

_GROUP_REF = re.compile(r"\\g<([^>]*)>")


def java_replacement(name: str, replacement: str) -> str:
    r"""Translate a Java `Matcher.replaceFirst` replacement into a Python template:
    `$n` / `${name}` become group references, `\x` is a literal x, and a backslash
    Python would read as an escape is doubled."""
    out: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\":
            if i + 1 >= n:
                raise ConfigError(name, replacement, "character to be escaped is missing")
            literal = replacement[i + 1]
            out.append("\\\\" if literal == "\\" else literal)
            i += 2
        elif c == "$":
            if i + 1 < n and replacement[i + 1] == "{":
                end = replacement.find("}", i + 2)
                if end < 0:
                    raise ConfigError(name, replacement, "named capturing group is missing }")
                out.append(f"\\g<{replacement[i + 2 : end]}>")
                i = end + 1
            else:
                j = i + 1
                while j < n and replacement[j].isdigit():
                    j += 1
                if j == i + 1:
                    raise ConfigError(name, replacement, "Illegal group reference")
                out.append(f"\\g<{replacement[i + 1 : j]}>")
                i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class RegexRouter(Configured, _Transformation[ConnectRecord]):
    """Rename topics that match `regex` to `replacement`; others pass unchanged."""

    _CONFIG = (
        ConfigDef()
        .define(
            REGEX_CONFIG,
            ConfigType.STRING,
            validator=regex_validator,
            importance=Importance.HIGH,
            documentation="Regular expression to use for matching.",
        )
        .define(
            REPLACEMENT_CONFIG,
            ConfigType.STRING,
            importance=Importance.HIGH,
            documentation="Replacement string.",
        )
    )

    def __init__(self) -> None:
        self._regex: re.Pattern[str] | None = None
        self._template = ""

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._regex = java_regex(REGEX_CONFIG, parsed[REGEX_CONFIG])
        self._template = java_replacement(REPLACEMENT_CONFIG, parsed[REPLACEMENT_CONFIG])
        # A reference to a group the regex lacks fails now, not on the first record.
        for ref in _GROUP_REF.findall(self._template):
            groups = self._regex
            known = int(ref) <= groups.groups if ref.isdigit() else ref in groups.groupindex
            if not known:
                raise ConfigError(REPLACEMENT_CONFIG, parsed[REPLACEMENT_CONFIG], f"No group {ref}")

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        assert self._regex is not None, "configure() first"
        match = self._regex.fullmatch(record.topic)
        if match is None:
            return record
        return record.new_record(topic=match.expand(self._template))  # type: ignore[attr-defined]


class TimestampRouter(Configured, _Transformation[ConnectRecord]):
    """Route to `topic.format` with `${topic}` and `${timestamp}` filled in."""

    _CONFIG = (
        ConfigDef()
        .define(
            TOPIC_FORMAT_CONFIG,
            ConfigType.STRING,
            "${topic}-${timestamp}",
            importance=Importance.HIGH,
            documentation="Format string which can contain ${topic} and ${timestamp} as "
            "placeholders for the topic and timestamp, respectively.",
        )
        .define(
            TIMESTAMP_FORMAT_CONFIG,
            ConfigType.STRING,
            "yyyyMMdd",
            importance=Importance.HIGH,
            documentation="Format string for the timestamp that is compatible with "
            "java.text.SimpleDateFormat.",
        )
    )

    def __init__(self) -> None:
        self._topic_format = ""
        self._format: DateFormat | None = None

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._topic_format = parsed[TOPIC_FORMAT_CONFIG]
        try:
            self._format = DateFormat.compile(parsed[TIMESTAMP_FORMAT_CONFIG])
        except DateFormatError as exc:
            raise ConfigError(
                TIMESTAMP_FORMAT_CONFIG, parsed[TIMESTAMP_FORMAT_CONFIG], str(exc)
            ) from None

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        assert self._format is not None, "configure() first"
        timestamp = record.timestamp
        if timestamp is None:
            raise DataError(f"Timestamp missing on record: {record!r}")
        topic = self._topic_format.replace("${topic}", record.topic).replace(
            "${timestamp}", self._format.format(timestamp)
        )
        return record.new_record(topic=topic)  # type: ignore[attr-defined]
