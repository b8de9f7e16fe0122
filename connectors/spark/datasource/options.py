"""The data source's options, after Spark's Kafka source.

- `log.dir` (required): the embedded log's directory. A relative one is made absolute
  here, against the working directory of the driver that parses the options: the
  reader is built there and pickled to the executors, whose Python workers run in
  directories of their own (a standalone worker's `work/<app>/<executor>`), where the
  relative path would name nothing. Spark resolves its own file sources' relative
  paths in the driver the same way. On a cluster of several machines the directory
  must be on a file system every executor mounts at that path.
- `topic` / `topics` (a comma list) or `topic.pattern` (a regex over topic names);
  Kafka's `subscribe` / `subscribePattern` are accepted too.
- `startingOffsets`: `earliest`, `latest`, or JSON `{"topic": {"0": 23, "1": -2}}`
  (-2 earliest, -1 latest); default `earliest` for batch reads, `latest` for
  streams. Only for a new query: a restarted one resumes from its checkpoint.
- `startingTimestamp`: ms since the epoch; each partition starts at its first record
  at or after it (wins over startingOffsets).
- `endingOffsets`: batch reads only, `latest` (default) or JSON as above.
- `maxRecordsPerTrigger` (or `maxOffsetsPerTrigger`): at most this many records per
  micro-batch, shared among partitions in proportion to their backlog.
- `includeHeaders`: add the `headers` column (default false).
- `value.format`: `none` (default), `json` (JsonConverter values) or `avro`
  (Confluent wire format) decoded into columns; the columns come from the newest
  record's schema (its envelope, or its registry schema), or from `.schema(...)`.
- `schema.registry.url`: where `avro` finds schemas by id: `embedded` (default: the
  log's own `_schemas` topic) or a registry's http(s) URL.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["EARLIEST", "LATEST", "SourceOptions", "parse_options"]

EARLIEST = -2
LATEST = -1


class OptionError(ValueError):
    """A bad option; the message names it."""

    def __init__(self, name: str, value: Any, reason: str) -> None:
        self.name = name
        super().__init__(f"invalid value {value!r} for option {name}: {reason}")


@dataclass(frozen=True, slots=True)
class SourceOptions:
    log_dir: str
    topics: tuple[str, ...]
    pattern: str | None
    starting: str | dict[str, dict[str, int]] | None
    starting_timestamp: int | None
    ending: str | dict[str, dict[str, int]]
    max_records: int | None
    include_headers: bool
    value_format: str
    registry_url: str

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics


def _get(options: Mapping[str, str], *names: str) -> str | None:
    lowered = {k.lower(): v for k, v in options.items()}
    for name in names:
        value = lowered.get(name.lower())
        if value not in (None, ""):
            return str(value)
    return None


def _offsets(name: str, value: str | None) -> str | dict[str, dict[str, int]] | None:
    if value is None:
        return None
    if value.lower() in ("earliest", "latest"):
        return value.lower()
    try:
        parsed = json.loads(value)
        if not isinstance(parsed, dict):
            raise ValueError
        return {str(t): {str(p): int(o) for p, o in parts.items()} for t, parts in parsed.items()}
    except (ValueError, AttributeError, TypeError):
        raise OptionError(name, value, 'earliest, latest or {"topic": {"0": offset}}') from None


def parse_options(options: Mapping[str, str]) -> SourceOptions:
    log_dir = _get(options, "log.dir", "logDir", "path")
    if log_dir is None:
        raise OptionError("log.dir", None, "the log directory is required")
    topic = _get(options, "topic", "topics", "subscribe")
    pattern = _get(options, "topic.pattern", "topicPattern", "subscribePattern")
    if (topic is None) == (pattern is None):
        raise OptionError("topic", topic, "give exactly one of topic/topics or topic.pattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError("topic.pattern", pattern, str(exc)) from None
    stamp = _get(options, "startingTimestamp")
    limit = _get(options, "maxRecordsPerTrigger", "maxOffsetsPerTrigger")
    try:
        max_records = int(limit) if limit is not None else None
        if max_records is not None and max_records <= 0:
            raise ValueError
    except ValueError:
        raise OptionError("maxRecordsPerTrigger", limit, "a positive number") from None
    try:
        starting_timestamp = int(stamp) if stamp is not None else None
    except ValueError:
        raise OptionError("startingTimestamp", stamp, "ms since the epoch") from None
    value_format = (_get(options, "value.format", "valueFormat") or "none").lower()
    if value_format not in ("none", "json", "avro"):
        raise OptionError("value.format", value_format, "none, json or avro")
    ending = _offsets("endingOffsets", _get(options, "endingOffsets")) or "latest"
    if ending == "earliest":
        raise OptionError("endingOffsets", "earliest", "latest or per-partition JSON")
    return SourceOptions(
        log_dir=os.path.abspath(log_dir),
        topics=tuple(t.strip() for t in topic.split(",") if t.strip()) if topic else (),
        pattern=pattern,
        starting=_offsets("startingOffsets", _get(options, "startingOffsets")),
        starting_timestamp=starting_timestamp,
        ending=ending,
        max_records=max_records,
        include_headers=(_get(options, "includeHeaders") or "false").lower() == "true",
        value_format=value_format,
        registry_url=_get(options, "schema.registry.url") or "embedded",
    )
