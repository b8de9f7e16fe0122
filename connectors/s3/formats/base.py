"""The format interface: how records become an object's bytes, and back.

A `Format` makes one `FileWriter` per object. The writer takes the values of a batch
of records at once (`write(values)`) — one Python call per batch, not per record — and
streams its bytes into the object's upload as they are ready (`Sink.write` for a
block, `Sink.extend` for many small pieces, which the sink takes in a C-level loop);
`finish()` writes what is left (a gzip trailer, a Parquet footer). Writers must be
deterministic: the same values give the same bytes (no random Avro sync markers, no
gzip timestamps), because exactly-once rests on a replay producing identical objects.

`read(data)` is the inverse for the source: an object's bytes to (schema, values).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from connect.api import Schema

__all__ = ["FileWriter", "Format", "Sink"]


class Sink(Protocol):
    """Where a writer's bytes go (an ObjectUpload)."""

    key: str

    def write(self, data: bytes | bytearray | memoryview) -> None: ...

    def extend(self, pieces: Iterable[bytes | bytearray | memoryview]) -> None: ...


class FileWriter(ABC):
    @abstractmethod
    def write(self, values: Sequence[Any]) -> None: ...

    @abstractmethod
    def finish(self) -> None: ...


class Format(ABC):
    #: Whether records need a value schema (Avro, Parquet).
    needs_schema = False

    @property
    @abstractmethod
    def extension(self) -> str: ...

    @abstractmethod
    def writer(self, sink: Sink, schema: Schema | None) -> FileWriter: ...

    @abstractmethod
    def read(self, data: bytes) -> tuple[Schema | None, list[Any]]: ...
