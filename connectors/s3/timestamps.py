"""Timestamp extractors: the time of a record, for time-based directories and for
`rotate.interval.ms`.

- `Record`: the record's own timestamp (the log's, set by the producer or the log);
- `RecordField`: a field of the value (`timestamp.field`, dotted for nested fields),
  holding epoch milliseconds, a Connect Timestamp (datetime), or an ISO-8601 string;
- `Wallclock`: the time now — the only one that makes a replay differ from the first
  run, so it is never deterministic (see docs/s3.md).
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Sequence
from typing import Any

from connect.api import DataError, SinkRecord, Struct

__all__ = ["TimestampExtractor", "field_value", "make_extractor"]

#: Timestamps (epoch ms) of a batch of records.
TimestampExtractor = Callable[[Sequence[SinkRecord]], list[int]]


def field_value(value: Any, path: str) -> Any:
    """The value at a dotted `path` of a Struct or dict value; KeyError when absent."""
    for part in path.split("."):
        if isinstance(value, Struct):
            if value.schema.field(part) is None:
                raise KeyError(path)
            value = value.get(part)
        elif isinstance(value, dict):
            value = value[part]
        else:
            raise KeyError(path)
    return value


def _to_ms(value: Any, field: str) -> int:
    if isinstance(value, bool):
        raise DataError(f"timestamp field {field!r} holds a boolean")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, str):
        try:
            parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise DataError(f"timestamp field {field!r}: {value!r} is not ISO-8601") from None
        return _to_ms(parsed, field)
    raise DataError(f"timestamp field {field!r} holds a {type(value).__name__}, not a time")


def make_extractor(kind: str, field: str) -> TimestampExtractor:
    """The extractor named by `timestamp.extractor` (already resolved to a kind)."""
    if kind == "wallclock":
        return lambda records: [int(time.time() * 1000)] * len(records)
    if kind == "record":

        def record_time(records: Sequence[SinkRecord]) -> list[int]:
            stamps = [r.timestamp for r in records]
            if None in stamps:
                bad = records[stamps.index(None)]
                raise DataError(
                    f"record {bad.topic}-{bad.kafka_partition}@{bad.kafka_offset} has no "
                    "timestamp (timestamp.extractor=Record)"
                )
            return stamps  # type: ignore[return-value]

        return record_time

    def field_time(records: Sequence[SinkRecord]) -> list[int]:
        out = []
        for r in records:
            try:
                out.append(_to_ms(field_value(r.value, field), field))
            except KeyError:
                raise DataError(
                    f"record {r.topic}-{r.kafka_partition}@{r.kafka_offset} has no field "
                    f"{field!r} (timestamp.field)"
                ) from None
        return out

    return field_time
