"""Config checks the log-based CDC sources (PostgresCdcSource, MySqlCdcSource) share,
as Debezium's connectors share them: table/column include and exclude lists are
regular expressions, `skipped.operations` names Debezium's operations, and
`topic.prefix` becomes the first part of every topic name."""

from __future__ import annotations

import re
from typing import Any

from connect.api import ConfigError, non_empty_string

__all__ = ["OPERATIONS", "operations", "regexes", "topic_prefix"]

#: Debezium's operations (`skipped.operations`): create, update, delete, truncate.
OPERATIONS = ("c", "u", "d", "t", "none")


def regexes(name: str, value: Any) -> None:
    for entry in value or []:
        try:
            re.compile(entry)
        except re.error as exc:
            raise ConfigError(name, entry, f"not a regular expression ({exc})") from None


def operations(name: str, value: Any) -> None:
    for op in value or []:
        if op not in OPERATIONS:
            raise ConfigError(name, ",".join(value), f"{op!r} is not one of c, u, d, t, none")


def topic_prefix(name: str, value: Any) -> None:
    non_empty_string(name, value)
    if value is not None and not re.fullmatch(r"[a-zA-Z0-9._-]+", str(value)):
        raise ConfigError(name, value, "topic names allow only letters, digits, '.', '_', '-'")
