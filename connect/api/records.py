"""Records as connectors see them.

`SourceRecord`: what a source task's `poll()` returns — the data plus where it came
from (`source_partition`, a dict naming the source's unit of order, e.g. a file or a
table) and how far it got (`source_offset`, e.g. a byte position or a last id). The
runtime commits the offset once the record is durable in the log.

`SinkRecord`: what a sink task's `put()` receives — the data plus its log position
(`kafka_partition`, `kafka_offset`) and, since transforms may change topic and
partition, the position before transforms (`original_*`).

Records are plain slotted objects built per record on hot paths, so they are not
frozen; treat them as immutable all the same: transforms return `new_record(...)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

from connect.api.data import Schema
from connect.api.headers import Headers

__all__ = ["ConnectRecord", "RecordMetadata", "SinkRecord", "SourceRecord", "TopicPartition"]

_UNSET: Any = object()


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class RecordMetadata(NamedTuple):
    """Where a source record landed in the log (handed to `commit_record`)."""

    topic: str
    partition: int
    offset: int
    timestamp: int


@dataclass(slots=True, kw_only=True, eq=True)
class ConnectRecord:
    topic: str
    kafka_partition: int | None = None
    key_schema: Schema | None = None
    key: Any = None
    value_schema: Schema | None = None
    value: Any = None
    timestamp: int | None = None
    headers: Headers = field(default_factory=Headers)

    def _replaced(
        self,
        topic: Any,
        kafka_partition: Any,
        key_schema: Any,
        key: Any,
        value_schema: Any,
        value: Any,
        timestamp: Any,
        headers: Any,
    ) -> dict[str, Any]:
        """The common fields for `new_record`: each given one, else this record's
        (headers copied, so the new record can change its own)."""
        return {
            "topic": self.topic if topic is _UNSET else topic,
            "kafka_partition": self.kafka_partition
            if kafka_partition is _UNSET
            else kafka_partition,
            "key_schema": self.key_schema if key_schema is _UNSET else key_schema,
            "key": self.key if key is _UNSET else key,
            "value_schema": self.value_schema if value_schema is _UNSET else value_schema,
            "value": self.value if value is _UNSET else value,
            "timestamp": self.timestamp if timestamp is _UNSET else timestamp,
            "headers": self.headers.copy() if headers is _UNSET else headers,
        }


@dataclass(slots=True, kw_only=True, eq=True)
class SourceRecord(ConnectRecord):
    source_partition: Mapping[str, Any] | None = None
    source_offset: Mapping[str, Any] | None = None

    @classmethod
    def of(
        cls,
        topic: str,
        key_schema: Schema | None,
        key: Any,
        value_schema: Schema | None,
        value: Any,
        source_partition: Mapping[str, Any] | None,
        source_offset: Mapping[str, Any] | None,
        /,
    ) -> SourceRecord:
        """`SourceRecord(topic=…, key_schema=…, …)` without the dataclass keyword call,
        at a fraction of its cost (docs/performance.md): a source that emits hundreds
        of thousands of records a second should make them with this (or `batch`)."""
        rec = object.__new__(cls)
        rec.topic = topic
        rec.kafka_partition = None
        rec.key_schema = key_schema
        rec.key = key
        rec.value_schema = value_schema
        rec.value = value
        rec.timestamp = None
        rec.headers = Headers()
        rec.source_partition = source_partition
        rec.source_offset = source_offset
        return rec

    @classmethod
    def batch(
        cls,
        topic: str,
        values: Sequence[Any],
        *,
        value_schema: Schema | None = None,
        keys: Sequence[Any] | None = None,
        key_schema: Schema | None = None,
        source_partition: Mapping[str, Any] | None = None,
        source_offsets: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> list[SourceRecord]:
        """Records for many values (and keys) of one topic and source partition, each
        with its own offset (or none): what most `poll()` implementations build, made
        with `of`."""
        n = len(values)
        for name, given in (("keys", keys), ("source_offsets", source_offsets)):
            if given is not None and len(given) != n:
                raise ValueError(f"{len(given)} {name} for {n} values")
        return list(
            map(
                cls.of,
                repeat(topic, n),
                repeat(key_schema, n),
                keys if keys is not None else repeat(None, n),
                repeat(value_schema, n),
                values,
                repeat(source_partition, n),
                source_offsets if source_offsets is not None else repeat(None, n),
            )
        )

    def new_record(
        self,
        *,
        topic: str = _UNSET,
        kafka_partition: int | None = _UNSET,
        key_schema: Schema | None = _UNSET,
        key: Any = _UNSET,
        value_schema: Schema | None = _UNSET,
        value: Any = _UNSET,
        timestamp: int | None = _UNSET,
        headers: Headers = _UNSET,
    ) -> SourceRecord:
        """A copy with the given fields replaced (source partition/offset kept)."""
        return SourceRecord(
            **self._replaced(
                topic, kafka_partition, key_schema, key, value_schema, value, timestamp, headers
            ),
            source_partition=self.source_partition,
            source_offset=self.source_offset,
        )


@dataclass(slots=True, kw_only=True, eq=True)
class SinkRecord(ConnectRecord):
    kafka_offset: int = -1
    timestamp_type: str = "CreateTime"
    original_topic: str | None = None
    original_kafka_partition: int | None = None
    original_kafka_offset: int | None = None

    def new_record(
        self,
        *,
        topic: str = _UNSET,
        kafka_partition: int | None = _UNSET,
        key_schema: Schema | None = _UNSET,
        key: Any = _UNSET,
        value_schema: Schema | None = _UNSET,
        value: Any = _UNSET,
        timestamp: int | None = _UNSET,
        headers: Headers = _UNSET,
    ) -> SinkRecord:
        """A copy with the given fields replaced; the log position and the
        original (pre-transform) position are kept."""
        return SinkRecord(
            **self._replaced(
                topic, kafka_partition, key_schema, key, value_schema, value, timestamp, headers
            ),
            kafka_offset=self.kafka_offset,
            timestamp_type=self.timestamp_type,
            original_topic=self.original_topic if self.original_topic is not None else self.topic,
            original_kafka_partition=(
                self.original_kafka_partition
                if self.original_kafka_partition is not None
                else self.kafka_partition
            ),
            original_kafka_offset=(
                self.original_kafka_offset
                if self.original_kafka_offset is not None
                else self.kafka_offset
            ),
        )

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(
            self.original_topic or self.topic,
            self.original_kafka_partition
            if self.original_kafka_partition is not None
            else self.kafka_partition or 0,
        )
