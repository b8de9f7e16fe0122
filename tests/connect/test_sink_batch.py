"""SinkBatch: its offset range with tombstones, `since` (a replay's head cut), the
records it stands for, and the checks on what it is made of."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pytest

from connect.api import INT64_SCHEMA, OPTIONAL_STRING_SCHEMA, Schema, SinkRecord, Struct
from connect.api.sink_batch import SinkBatch

ROW = Schema.struct([("id", INT64_SCHEMA), ("note", OPTIONAL_STRING_SCHEMA)], name="row")


def batch(offsets: Sequence[int], tombstones: Sequence[int] = ()) -> SinkBatch:
    return SinkBatch(
        topic="t",
        partition=3,
        value_schema=ROW,
        values=pa.record_batch(
            [pa.array(offsets, pa.int64()), pa.array([f"n{o}" for o in offsets])],
            names=["id", "note"],
        ),
        offsets=np.asarray(offsets, np.int64),
        timestamps=np.asarray([1000 + o for o in offsets], np.int64),
        tombstones=np.asarray(tombstones, np.int64),
    )


def test_the_range_counts_tombstones_on_either_side() -> None:
    b = batch([5, 6, 8], [4, 7, 9])
    assert (b.first_offset, b.last_offset, len(b), b.records_in) == (4, 9, 3, 6)
    assert b.topic_partition == ("t", 3)
    assert (batch([5]).first_offset, batch([5]).last_offset) == (5, 5)


def test_since_cuts_a_replayed_head_without_copying() -> None:
    b = batch([5, 6, 8], [4, 7, 9])
    assert b.since(4) is b
    cut = b.since(7)
    assert cut is not None
    assert cut.offsets.tolist() == [8] and cut.tombstones.tolist() == [7, 9]
    assert cut.values.column("id").to_pylist() == [8]
    assert cut.timestamps.tolist() == [1008]
    only_tombstone = b.since(9)
    assert only_tombstone is not None and len(only_tombstone) == 0
    assert only_tombstone.records_in == 1
    assert b.since(10) is None


def test_records_are_the_rows_and_tombstones_in_offset_order() -> None:
    records = batch([5, 6], [4]).records()
    assert [r.kafka_offset for r in records] == [4, 5, 6]
    assert records[0] == SinkRecord(topic="t", kafka_partition=3, kafka_offset=4)
    assert records[1].value == Struct(ROW).put("id", 5).put("note", "n5")
    assert (records[1].timestamp, records[1].value_schema) == (1005, ROW)


def test_what_a_batch_is_made_of_is_checked() -> None:
    with pytest.raises(ValueError, match="struct"):
        SinkBatch(
            topic="t",
            partition=0,
            value_schema=INT64_SCHEMA,
            values=pa.record_batch([pa.array([1])], names=["value"]),
            offsets=np.asarray([0]),
            timestamps=np.asarray([0]),
        )
    good = batch([1, 2])
    with pytest.raises(ValueError, match="offsets"):
        SinkBatch(
            topic="t",
            partition=0,
            value_schema=ROW,
            values=good.values,
            offsets=np.asarray([1]),
            timestamps=good.timestamps,
        )
    with pytest.raises(ValueError, match="at least one record"):
        batch([])
