"""The sink's Arrow batch path read as batches' values (`Consumer.poll_values`: each
log batch's value bytes handed to the converter as they are stored, no Record made)
gives exactly the `SinkBatch`es the record path gives (`Consumer.poll_chunks`), and
its records when it must fall back: null values, keys and headers, several schema ids,
batches cut at max_poll_records, and transactions read read_committed (an aborted one
left out, control batches skipped) or read_uncommitted."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect.api import INT64_SCHEMA, OPTIONAL_STRING_SCHEMA, Schema, Struct
from connect.api.sink_batch import SinkBatch
from connect.converters.avro import AvroConverter
from connect.converters.avro.client import drop_mock_registry
from connect.errors import ErrorPolicy, RetryWithTolerance
from connect.worker.sink_convert import SinkConverter, records_of
from log import Consumer, FileLog, TopicPartition

TOPIC = "lake"
V1 = Schema.struct([("id", INT64_SCHEMA), ("note", OPTIONAL_STRING_SCHEMA)], name="row")
V2 = Schema.struct(
    [("id", INT64_SCHEMA), ("note", OPTIONAL_STRING_SCHEMA), ("extra", OPTIONAL_STRING_SCHEMA)],
    name="row",
    version=2,
)


@pytest.fixture
def avro() -> Iterator[AvroConverter]:
    scope = f"values-{uuid.uuid4().hex}"
    converter = AvroConverter()
    converter.configure({"schema.registry.url": f"mock://{scope}"}, False)
    yield converter
    drop_mock_registry(scope)


def messages(avro: AvroConverter, ids: list[int], schema: Schema) -> list[bytes | None]:
    """Avro messages of `ids`; a negative id is a null value (a tombstone)."""
    values = []
    for i in ids:
        value = Struct(schema).put("id", abs(i)).put("note", None if i % 3 == 0 else f"n{i}")
        if schema is V2:
            value.put("extra", "x" * (abs(i) % 5))
        values.append(value)
    data = avro.from_connect_batch(TOPIC, [schema] * len(ids), values)
    return [None if i < 0 else d for i, d in zip(ids, data, strict=True)]


def fill(log: FileLog, avro: AvroConverter) -> set[int]:
    """Plain and transactional batches; the ids the aborted transaction wrote."""
    log.append(
        TOPIC, 0, messages(avro, [1, 2, -3, 4, 5], V1), keys=[b"k1", None, b"k3", b"", b"k5"]
    )
    log.append(
        TOPIC,
        0,
        messages(avro, [6, 7, 8], V2),
        headers=[[("h", b"v")], [], [("h", None), ("g", b"w")]],
        timestamps=[1_000, 999, 1_002],
    )
    producer = log.transactional_producer("tx")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append(TOPIC, 0, messages(avro, [100, 101, -102], V2), keys=[b"a", b"b", b"c"])
    producer.abort_transaction()
    producer.begin_transaction()
    producer.append(TOPIC, 0, messages(avro, [9, -10, 11], V1))
    producer.append(TOPIC, 0, messages(avro, [12, 13, 14, 15], V2))
    producer.commit_transaction()
    log.append(TOPIC, 0, messages(avro, [16, 17, -18, 19, 20, 21, 22, 23], V1))
    return {100, 101, 102}


def read_all(log: FileLog, convert: SinkConverter, isolation: str, poll: str) -> tuple:
    """Every SinkBatch and every chunk's records, polling 4 records at a time."""
    consumer = Consumer(
        log,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=4,
        isolation_level=isolation,
    )
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    batches: list[SinkBatch] = []
    records = []
    end = log.latest_offset(TOPIC, 0)
    for _ in range(100):  # bounded: 26 records, 4 a poll
        chunks = getattr(consumer, poll)(0.0)
        for chunk in chunks:
            made = convert.batches_of(*chunk)
            assert made is not None
            batches += made
            records += records_of(chunk)[1]
        if not chunks and consumer.position(tp) == end:
            break
    consumer.close()
    return batches, records


def same(a: SinkBatch, b: SinkBatch) -> bool:
    return (
        a.value_schema == b.value_schema
        and a.values.equals(b.values)
        and a.offsets.tolist() == b.offsets.tolist()
        and a.timestamps.tolist() == b.timestamps.tolist()
        and a.tombstones.tolist() == b.tombstones.tolist()
    )


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_values_make_the_record_paths_batches(
    tmp_path: Path, avro: AvroConverter, isolation: str
) -> None:
    log = FileLog(tmp_path / "log")
    try:
        log.create_topic(TOPIC, 1)
        aborted = fill(log, avro)
        convert = SinkConverter(
            "t",
            log,
            key_converter=avro,
            value_converter=avro,
            header_converter=None,  # type: ignore[arg-type]  # headers are not read here
            transform=None,
            errors=RetryWithTolerance(ErrorPolicy(), connector="lake", task=0),
        )
        by_records, records = read_all(log, convert, isolation, "poll_chunks")
        by_values, decoded = read_all(log, convert, isolation, "poll_values")
    finally:
        log.close()
    assert len(by_values) == len(by_records) > 2  # runs of both schema ids
    assert all(same(a, b) for a, b in zip(by_records, by_values, strict=True))
    assert decoded == records  # the record path's fallback: keys, headers and all
    ids = {i for b in by_values for i in b.values.column(0).to_pylist()}
    tombstones = sum(len(b.tombstones) for b in by_values)
    if isolation == "read_committed":
        assert ids == set(range(1, 24)) - {3, 10, 18} and tombstones == 3
    else:
        assert ids >= aborted - {102} and tombstones == 4
    assert len({len(b.value_schema.fields) for b in by_values}) == 2  # both schema ids
