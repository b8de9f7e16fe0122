"""Interfaces of the smaller plugins: converters, header converters, transforms and
predicates. Each is configured once with its own keys (prefix removed) and may
declare them in `config()`.

Converters turn Connect data into bytes for the log and back. They have batch entry
points because the per-record Python cost, not I/O, limits throughput: the default
batch methods loop, and a converter overrides them when it can do better.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from connect.api.config import ConfigDef
from connect.api.data import Schema
from connect.api.headers import Headers
from connect.api.records import ConnectRecord

__all__ = [
    "Converter",
    "HeaderConverter",
    "Predicate",
    "SchemaAndValue",
    "Transformation",
]

R = TypeVar("R", bound=ConnectRecord)


class SchemaAndValue(NamedTuple):
    schema: Schema | None
    value: Any


class Converter(ABC):
    """Connect data ⇄ bytes for record keys or values."""

    #: Whether `to_arrow` also takes its messages as one `pyarrow.BinaryArray` (null
    #: entries: null messages), the way the log stores a batch's values: the runtime
    #: then hands them over so, no bytes object made per message. Else it gives a list.
    to_arrow_takes_binary_array: bool = False

    def config(self) -> ConfigDef:
        return ConfigDef()

    @abstractmethod
    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None: ...

    @abstractmethod
    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: Headers | None = None,
    ) -> bytes | None: ...

    @abstractmethod
    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue: ...

    def from_connect_batch(
        self, topic: str, schemas: Sequence[Schema | None], values: Sequence[Any]
    ) -> list[bytes | None]:
        """Many values of one topic at once; override to avoid per-record overhead."""
        return [self.from_connect_data(topic, s, v) for s, v in zip(schemas, values, strict=True)]

    def to_connect_batch(self, topic: str, data: Sequence[bytes | None]) -> list[SchemaAndValue]:
        return [self.to_connect_data(topic, d) for d in data]

    def from_arrow(self, topic: str, schema: Schema, columns: Any) -> list[bytes] | None:
        """The messages of a struct schema's values given as Arrow columns (a
        `pyarrow.RecordBatch` laid out as `connect.api.arrow` says), byte for byte what
        `from_connect_batch` writes for the same values; None when this converter
        cannot (the default), and then the runtime converts record by record."""
        return None

    def to_arrow(self, topic: str, data: Sequence[bytes | None] | Any) -> list[Any] | None:
        """Messages decoded straight into Arrow columns, never a Python object per
        value (`data` may be a `pyarrow.BinaryArray`: `to_arrow_takes_binary_array`):
        a list of `(schema, batch, rows)`, one per run of messages of one schema, in
        order — the Connect schema, a `pyarrow.RecordBatch` laid out as
        `connect.api.arrow` says (one column per struct field), and the positions in
        `data` of its rows (a numpy int64 array); a null message (a tombstone) is in no
        run. None when this converter cannot (the default): the runtime then converts
        record by record."""
        return None

    def close(self) -> None:
        """Release resources (default: nothing)."""


class HeaderConverter(ABC):
    """Connect header values ⇄ bytes."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None: ...

    @abstractmethod
    def from_connect_header(
        self, topic: str, key: str, schema: Schema | None, value: Any
    ) -> bytes | None: ...

    @abstractmethod
    def to_connect_header(self, topic: str, key: str, data: bytes | None) -> SchemaAndValue: ...

    def close(self) -> None:
        """Release resources (default: nothing)."""


class Transformation(ABC, Generic[R]):
    """A single message transform: one record in, one record (or None: drop) out."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None: ...

    @abstractmethod
    def apply(self, record: R) -> R | None: ...

    def apply_batch(self, batch: Any) -> Any:
        """A `connect.api.batches.SourceBatch` transformed as `apply` transforms each
        of its records, row for row in order (None: every record dropped), or
        NotImplemented (the default) when this transform cannot work on the batch's
        columns — or would drop only some rows — and then the runtime applies it
        record by record."""
        return NotImplemented

    def close(self) -> None:
        """Release resources (default: nothing)."""


class Predicate(ABC, Generic[R]):
    """A condition on a record that decides whether a transform applies."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None: ...

    @abstractmethod
    def test(self, record: R) -> bool: ...

    def close(self) -> None:
        """Release resources (default: nothing)."""
