"""The predicates Kafka ships (KIP-585): conditions that decide whether a transform
applies to a record (`transforms.<alias>.predicate`, optionally negated)."""

from __future__ import annotations

import re
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    Predicate,
    non_empty_string,
)
from connect.transforms._util import Configured, java_regex, regex_validator

__all__ = ["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"]

PATTERN_CONFIG = "pattern"
NAME_CONFIG = "name"


class TopicNameMatches(Configured, Predicate[ConnectRecord]):
    """True when the whole topic name matches the Java regex `pattern`."""

    _CONFIG = ConfigDef().define(
        PATTERN_CONFIG,
        ConfigType.STRING,
        validator=regex_validator,
        importance=Importance.MEDIUM,
        documentation="A Java regular expression for matching against the name of a "
        "record's topic.",
    )

    def __init__(self) -> None:
        self._pattern: re.Pattern[str] | None = None

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._pattern = java_regex(PATTERN_CONFIG, parsed[PATTERN_CONFIG])

    def test(self, record: ConnectRecord) -> bool:
        assert self._pattern is not None, "configure() first"
        topic = record.topic
        return topic is not None and self._pattern.fullmatch(topic) is not None


class HasHeaderKey(Configured, Predicate[ConnectRecord]):
    """True when the record has at least one header named `name`."""

    _CONFIG = ConfigDef().define(
        NAME_CONFIG,
        ConfigType.STRING,
        validator=non_empty_string,
        importance=Importance.MEDIUM,
        documentation="The header name.",
    )

    def __init__(self) -> None:
        self._name = ""

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._name = parsed[NAME_CONFIG]

    def test(self, record: ConnectRecord) -> bool:
        name = self._name
        return any(header.key == name for header in record.headers)


class RecordIsTombstone(Configured, Predicate[ConnectRecord]):
    """True when the record's value is null (a tombstone)."""

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None
