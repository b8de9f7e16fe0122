"""`SinkBatch`: records of one topic partition handed to a sink as Arrow columns.

Why: a sink that writes columns (Parquet, Arrow IPC, a warehouse's bulk load) gains
nothing from a `SinkRecord` and a Struct per record, and pays for both: building them in
the runtime and regrouping them into columns in the sink cost a large share of such a
sink's time (docs/columnar.md, docs/performance.md). A converter that can decode a run
of messages straight into Arrow (`Converter.to_arrow`) lets the runtime skip both, and
hand the sink this.

When the runtime hands a task batches (all must hold; otherwise it calls `put()`
with SinkRecords exactly as before):
1. the task overrides `SinkTask.put_batches`;
2. the connector has no transforms (they work on records);
3. the value converter's `to_arrow` decodes the partition's polled messages (it does
   not answer None or raise), into rows in offset order, at least one of them.
The choice is made per partition per poll, so one poll may deliver some partitions
as batches and others as records; each partition's order is kept either way.

What a batch holds: values only. Keys and headers are not decoded on this path (a
sink that needs them should not implement `put_batches`). Every record of the
partition from `first_offset` to `last_offset` is either a row (its offset in
`offsets`, its timestamp in `timestamps`) or a record without a value — a tombstone,
or a null payload — whose offset is in `tombstones`, so a sink can account for (or
refuse) those. A compacted topic may have offsets with no record at all. Batches of
one partition arrive in order and never overlap.

Columns follow `connect.api.arrow`: one column per field of the struct
`value_schema`, in field order, of the Arrow type `arrow_type(field.schema)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from connect.api.arrow import to_connect
from connect.api.data import Schema, Type
from connect.api.records import SinkRecord, TopicPartition

__all__ = ["SinkBatch"]

_NO_OFFSETS = np.empty(0, dtype=np.int64)
_NO_OFFSETS.flags.writeable = False


@dataclass(slots=True, kw_only=True)
class SinkBatch:
    topic: str
    partition: int
    value_schema: Schema
    #: One row per record with a value, in offset order.
    values: pa.RecordBatch
    #: The log offset of each row (int64, ascending).
    offsets: np.ndarray
    #: The timestamp (ms) of each row (int64).
    timestamps: np.ndarray
    #: Offsets (int64, ascending) of the records in this batch's range without a value.
    tombstones: np.ndarray = field(default_factory=lambda: _NO_OFFSETS)

    def __post_init__(self) -> None:
        if self.value_schema.type is not Type.STRUCT:
            raise ValueError("a SinkBatch's value schema must be a struct")
        n = self.values.num_rows
        if len(self.offsets) != n or len(self.timestamps) != n:
            raise ValueError(
                f"{n} rows with {len(self.offsets)} offsets and {len(self.timestamps)} timestamps"
            )
        if n == 0 and len(self.tombstones) == 0:
            raise ValueError("a SinkBatch holds at least one record")

    def __len__(self) -> int:
        """Rows (records with a value); `records_in` counts tombstones too."""
        return self.values.num_rows

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def records_in(self) -> int:
        """Records this batch stands for: rows and tombstones."""
        return self.values.num_rows + len(self.tombstones)

    @property
    def first_offset(self) -> int:
        if not len(self.tombstones):
            return int(self.offsets[0])
        if not len(self.offsets):
            return int(self.tombstones[0])
        return int(min(self.offsets[0], self.tombstones[0]))

    @property
    def last_offset(self) -> int:
        if not len(self.tombstones):
            return int(self.offsets[-1])
        if not len(self.offsets):
            return int(self.tombstones[-1])
        return int(max(self.offsets[-1], self.tombstones[-1]))

    def since(self, offset: int) -> SinkBatch | None:
        """The records at or after `offset` (zero copy), or None when none is: what a
        sink keeps of a batch whose head it has already written (a replay)."""
        if offset <= self.first_offset:
            return self
        if offset > self.last_offset:
            return None
        start = int(np.searchsorted(self.offsets, offset))
        cut = int(np.searchsorted(self.tombstones, offset))
        return replace(
            self,
            values=self.values.slice(start),
            offsets=self.offsets[start:],
            timestamps=self.timestamps[start:],
            tombstones=self.tombstones[cut:],
        )

    def records(self) -> list[SinkRecord]:
        """The SinkRecords this batch stands for, in offset order (tombstones with a
        null value and no timestamp): a Python object per value, for a sink's own
        fallbacks and for tests, not for hot paths."""
        struct = pa.StructArray.from_arrays(self.values.columns, fields=list(self.values.schema))
        values: list[Any] = to_connect(self.value_schema, struct)
        out = [
            SinkRecord(
                topic=self.topic,
                kafka_partition=self.partition,
                value_schema=self.value_schema,
                value=value,
                timestamp=timestamp,
                kafka_offset=offset,
            )
            for value, offset, timestamp in zip(
                values, self.offsets.tolist(), self.timestamps.tolist(), strict=True
            )
        ]
        if len(self.tombstones):
            out += [
                SinkRecord(topic=self.topic, kafka_partition=self.partition, kafka_offset=o)
                for o in self.tombstones.tolist()
            ]
            out.sort(key=_offset_of)
        return out


def _offset_of(record: SinkRecord) -> int:
    return record.kafka_offset
