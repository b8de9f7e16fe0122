"""The values the log hands out and takes in.

`Record` is a named tuple on purpose: the read path builds millions of them per
second with C-level `map`/`zip`, which a class with an `__init__` would not allow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "Fetched",
    "Header",
    "OffsetAndMetadata",
    "PartitionDescription",
    "Record",
    "TopicDescription",
    "TopicPartition",
]

#: A record header: name and value (None is a null header value, as in Kafka).
Header = tuple[str, bytes | None]


class Record(NamedTuple):
    """One record as read from the log."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A consumer group's committed position: the offset of the next record to read."""

    offset: int
    metadata: str = ""
    commit_timestamp: int = 0


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    partition: int
    earliest_offset: int
    latest_offset: int
    size_bytes: int
    segments: int

    @property
    def records(self) -> int:
        """Offsets spanned (after compaction some of them may hold no record)."""
        return self.latest_offset - self.earliest_offset


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    config: dict[str, object]
    partitions: list[PartitionDescription] = field(default_factory=list)

    @property
    def size_bytes(self) -> int:
        return sum(p.size_bytes for p in self.partitions)


class Fetched(list[Record]):
    """Records of a read whose last batches were skipped (control batches, aborted
    transactions): `next_offset` is where the next read starts, past them. Why a
    list: callers that only want the records need not know (read returns a list)."""

    next_offset: int
