"""The worker's hand-made fast paths agree with the plain API they stand in for."""

from __future__ import annotations

from dataclasses import fields

from connect.api import STRING_SCHEMA, Headers, SchemaAndValue, SinkRecord
from connect.worker.sink_convert import sink_records as _sink_records
from log.records import Record


def test_fast_sink_records_equal_the_dataclass_built_ones() -> None:
    raw = [
        Record("t", 2, 7, 1_700_000_000_000, b"k", b"v", [("h", b"1")]),
        Record("t", 2, 8, 1_700_000_000_001, None, None, []),
    ]
    keys = [SchemaAndValue(STRING_SCHEMA, "k"), SchemaAndValue(None, None)]
    values = [SchemaAndValue(STRING_SCHEMA, "v"), SchemaAndValue(None, None)]
    headers = [Headers([("h", "1", STRING_SCHEMA)]), Headers()]
    fast = _sink_records(raw, keys, values, headers)
    plain = [
        SinkRecord(
            topic=r.topic,
            kafka_partition=r.partition,
            key_schema=k.schema,
            key=k.value,
            value_schema=v.schema,
            value=v.value,
            timestamp=r.timestamp,
            headers=h,
            kafka_offset=r.offset,
        )
        for r, k, v, h in zip(raw, keys, values, headers, strict=True)
    ]
    assert fast == plain
    # Every field is set (a field added to SinkRecord must be added to the fast path).
    for rec in fast:
        for f in fields(SinkRecord):
            getattr(rec, f.name)
