"""`SourceBatch`: many source records of one topic as Arrow columns.

Why: a source that reads a table (a snapshot, a bulk query, a Parquet file) has its rows
a column at a time already. Making a Struct and a SourceRecord per row, running each
through the transforms and the converter, and hashing each key in Python costs
microseconds per row; the same work done on columns costs a small fraction of that
(figures: docs/performance.md). So `poll()` may return `SourceBatch`es beside (or
instead of) `SourceRecord`s, and the runtime keeps them columnar as far as every stage
allows:

- each transform in the connector's chain either maps the batch (`apply_batch`) or
  answers NotImplemented;
- the key and value converters either encode the columns (`from_arrow`) or answer
  None;
- keys are hashed to partitions a batch at a time.

Wherever a stage cannot, the runtime calls `records()` and the batch goes the way of
ordinary records from there, so a batch always means exactly the records `records()`
returns: the same topic, keys, values, partition, timestamp, source partition and
offset. Error handling (`errors.tolerance`, the dead-letter queue) works on records:
a batch a stage refuses with an error is retried record by record.

Columns follow `connect.api.arrow`: one column per field of the struct schema, in
field order, of the Arrow type `arrow_type(field.schema)` (nested structs as struct
arrays). Every record of a batch carries the batch's `source_offset`: a batch is a
unit of progress, as a chunk of a snapshot is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from connect.api.data import Schema, Type
from connect.api.records import SourceRecord

if TYPE_CHECKING:  # pyarrow loads with the first batch: a worker whose sources emit
    import pyarrow as pa  # records only never imports it

__all__ = ["SourceBatch"]


@dataclass(slots=True, kw_only=True)
class SourceBatch:
    topic: str
    value_schema: Schema
    values: pa.RecordBatch
    key_schema: Schema | None = None
    keys: pa.RecordBatch | None = None
    kafka_partition: int | None = None
    #: Every record's timestamp (ms); None: the time the runtime appends them.
    timestamp: int | None = None
    source_partition: Mapping[str, Any] | None = None
    source_offset: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.value_schema.type is not Type.STRUCT:
            raise ValueError("a SourceBatch's value schema must be a struct")
        if self.values.num_columns != len(self.value_schema.fields):
            raise ValueError(
                f"{self.values.num_columns} value columns for "
                f"{len(self.value_schema.fields)} fields"
            )
        if (self.keys is None) != (self.key_schema is None):
            raise ValueError("keys and key_schema come together")
        if self.keys is not None and self.keys.num_rows != self.values.num_rows:
            raise ValueError(f"{self.keys.num_rows} keys for {self.values.num_rows} values")

    def __len__(self) -> int:
        return self.values.num_rows

    def with_(self, **changes: Any) -> SourceBatch:
        """A copy with the given fields replaced (what a transform returns)."""
        return replace(self, **changes)

    def slice(self, start: int, stop: int | None = None) -> SourceBatch:
        """Rows [start, stop) as a batch of their own (zero copy)."""
        length = (len(self) if stop is None else stop) - start
        return replace(
            self,
            values=self.values.slice(start, length),
            keys=None if self.keys is None else self.keys.slice(start, length),
        )

    def filter(self, mask: Any) -> SourceBatch:
        """The rows where `mask` (a boolean array) is true, as a batch of their own."""
        return replace(
            self,
            values=self.values.filter(mask),
            keys=None if self.keys is None else self.keys.filter(mask),
        )

    def records(self) -> list[SourceRecord]:
        """The records this batch stands for, one Python object per value: the way
        every stage that cannot work on columns takes it."""
        from connect.api.arrow import to_connect

        values = to_connect(self.value_schema, _as_struct(self.values))
        keys = (
            to_connect(self.key_schema, _as_struct(self.keys))
            if self.keys is not None and self.key_schema is not None
            else None
        )
        out = SourceRecord.batch(
            self.topic,
            values,
            value_schema=self.value_schema,
            keys=keys,
            key_schema=self.key_schema,
            source_partition=self.source_partition,
            source_offsets=[self.source_offset] * len(values),
        )
        if self.kafka_partition is not None or self.timestamp is not None:
            for rec in out:
                rec.kafka_partition = self.kafka_partition
                rec.timestamp = self.timestamp
        return out


def _as_struct(batch: pa.RecordBatch) -> pa.StructArray:
    import pyarrow as pa

    return pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))
