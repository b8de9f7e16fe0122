"""A sink task's records from the log's: conversion, transformation, Arrow batches.

One job: turn a poll's chunks (one partition's records each, in offset order) into
what the task is handed (`connect.worker.sink_task`, steps 3 of its iteration):
- `batches_of`: a chunk as Arrow `SinkBatch`es through the value converter's
  `to_arrow`, numpy offsets and timestamps made once per chunk and no Python object
  per record; None when the chunk must take the record path;
- `convert_and_transform`: keys, values and headers converted per topic in batches,
  a batch that fails redone record by record under the error policy (failures go to
  the dead-letter topic when tolerated), then each record transformed;
- `context_of`: what the error handler and the dead-letter topic say about a record
  (its original bytes read back from the log).
Everything here runs on the task's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from connect.api import Converter, HeaderConverter, Headers, SchemaAndValue, SinkRecord
from connect.api.data import Type
from connect.errors import RetryWithTolerance, Stage
from log import BatchValues, Log, Record
from log import TopicPartition as LogTopicPartition

if TYPE_CHECKING:  # numpy and pyarrow load with the first batch (a record-only sink never)
    import numpy as np

    from connect.api.sink_batch import SinkBatch

__all__ = ["Chunk", "SinkConverter", "Transform", "chunk_end", "records_of", "sink_records"]

_log = logging.getLogger("connect.worker")
#: A null key converts to null with every converter; records without keys skip it.
_NULL = SchemaAndValue(None, None)

Transform = Callable[[SinkRecord], SinkRecord | None]
#: A poll's records of one partition, in offset order (`Consumer.poll_chunks`), or
#: its batches' values (`Consumer.poll_values`: the Arrow batch path).
Chunk = tuple[LogTopicPartition, list[Record]] | tuple[LogTopicPartition, list[BatchValues]]
# Record fields by position: C-level getters for `map` over a chunk.
_offset_of = itemgetter(2)
_timestamp_of = itemgetter(3)
_value_of = itemgetter(5)


def records_of(chunk: Chunk) -> tuple[LogTopicPartition, list[Record]]:
    """The chunk's records: a chunk read as batches' values decoded into Records, as
    the record path would have read them (when it takes over from the batch path)."""
    tp, polled = chunk
    if polled and isinstance(polled[0], BatchValues):
        return tp, [r for v in polled for r in v.records(tp.topic, tp.partition)]
    return chunk  # type: ignore[return-value]


def chunk_end(chunk: Chunk) -> tuple[int, int]:
    """(how many records, the offset after the last) of a chunk of either kind."""
    polled = chunk[1]
    if polled and isinstance(polled[0], BatchValues):
        return sum(v.count for v in polled), polled[-1].last_offset + 1  # type: ignore[union-attr]
    return len(polled), polled[-1].offset + 1  # type: ignore[union-attr]


def sink_records(
    raw: list[Record],
    keys: list[SchemaAndValue],
    values: list[SchemaAndValue],
    headers: list[Headers],
) -> list[SinkRecord]:
    """SinkRecords for converted log records, made without a keyword call per record.

    A dataclass `__init__` with nine keyword arguments costs several times what
    filling the slots of a bare instance does (docs/performance.md), and this runs
    once per record. The fields a log record does not set keep their defaults."""
    new = object.__new__
    out = []
    append = out.append
    for r, k, v, h in zip(raw, keys, values, headers, strict=True):
        rec = new(SinkRecord)
        rec.topic = r.topic
        rec.kafka_partition = r.partition
        rec.key_schema = k.schema
        rec.key = k.value
        rec.value_schema = v.schema
        rec.value = v.value
        rec.timestamp = r.timestamp
        rec.headers = h
        rec.kafka_offset = r.offset
        rec.timestamp_type = "CreateTime"
        rec.original_topic = None
        rec.original_kafka_partition = None
        rec.original_kafka_offset = None
        append(rec)
    return out


class SinkConverter:
    """The converters, transform chain and error policy of one sink task."""

    def __init__(
        self,
        name: str,
        log: Log,
        *,
        key_converter: Converter,
        value_converter: Converter,
        header_converter: HeaderConverter,
        transform: Transform | None,
        errors: RetryWithTolerance,
    ) -> None:
        self.name = name
        self._data_log = log
        self.key_converter = key_converter
        self.value_converter = value_converter
        self.header_converter = header_converter
        self.transform = transform
        self._errors = errors

    def batches_of(self, tp: LogTopicPartition, polled: list[Record]) -> list[SinkBatch] | None:
        """The chunk as Arrow batches, or None when it takes the record path: the
        converter answers None or raises (the record path then dead-letters what is
        bad, per errors.tolerance), or decodes no row (nothing but tombstones), or
        breaks the contract of `Converter.to_arrow` (rows out of order)."""
        import numpy as np

        if isinstance(polled[0], BatchValues):
            return self.batches_of_values(tp, polled)  # type: ignore[arg-type]
        runs = self._runs(tp, list(map(_value_of, polled)), len(polled))
        if runs is None:
            return None
        n = len(polled)
        first = polled[0].offset
        if polled[-1].offset - first == n - 1:  # no gaps (not compacted): no pass needed
            offsets = np.arange(first, first + n, dtype=np.int64)
        else:
            offsets = np.fromiter(map(_offset_of, polled), np.int64, n)
        stamps = np.fromiter(map(_timestamp_of, polled), np.int64, n)
        return _batches(tp, offsets, stamps, runs)

    def batches_of_values(
        self, tp: LogTopicPartition, polled: list[BatchValues]
    ) -> list[SinkBatch] | None:
        """`batches_of` for a chunk read as its batches' values (`Consumer.poll_values`):
        the values go to the converter as the log stores them, one pyarrow BinaryArray
        over each batch's bytes (no bytes object nor Record per record)."""
        import numpy as np
        import pyarrow as pa

        parts = [_value_columns(v) for v in polled]
        if any(p is None for p in parts):
            return None  # past a binary array's 2 GiB: the record path
        arrays, offsets, stamps = zip(*parts, strict=True)  # type: ignore[misc]
        values = arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
        if not getattr(self.value_converter, "to_arrow_takes_binary_array", False):
            values = values.to_pylist()
        runs = self._runs(tp, values, len(values))
        if runs is None:
            return None
        return _batches(tp, np.concatenate(offsets), np.concatenate(stamps), runs)

    def _runs(self, tp: LogTopicPartition, values: Any, n: int) -> list | None:
        """The converter's checked `to_arrow` runs of a chunk's `n` values (None: the
        record path, see `batches_of`)."""
        import numpy as np

        try:
            runs = self.value_converter.to_arrow(tp.topic, values)
        except Exception as exc:  # the record path says what is wrong, per record
            _log.debug("task %s: to_arrow failed on %s, converting records: %s", self.name, tp, exc)
            return None
        if not runs:
            return None
        last = -1
        for schema, batch, rows in runs:
            if (
                schema is None
                or schema.type is not Type.STRUCT
                or len(rows) == 0
                or len(rows) != batch.num_rows
                or rows[0] <= last
                or (len(rows) > 1 and not (np.diff(rows) > 0).all())
            ):
                return None
            last = rows[-1]
        return None if last >= n else runs

    def convert_and_transform(self, chunks: list[Chunk]) -> list[SinkRecord]:
        out: list[SinkRecord] = []
        for tp, polled in chunks:  # one topic per chunk: it converts as a batch
            out.extend(self._convert_topic(tp.topic, polled))
        if self.transform is None:
            return out
        transformed = []
        for rec in out:
            ok, result = self._errors.transform(
                self.transform, rec, lambda rec=rec: self.context_of(rec)
            )
            if ok and result is not None:
                transformed.append(result)
        return transformed

    def _convert_topic(self, topic: str, raw: list[Record]) -> list[SinkRecord]:
        try:
            raw_keys = [r.key for r in raw]
            if raw_keys.count(None) == len(raw_keys):  # no keys: skip the converter
                keys: list[SchemaAndValue] = [_NULL] * len(raw)
            else:
                keys = self.key_converter.to_connect_batch(topic, raw_keys)
            values = self.value_converter.to_connect_batch(topic, [r.value for r in raw])
            headers = [self._headers(topic, r) if r.headers else Headers() for r in raw]
        except Exception:
            return [rec for rec in map(self._convert_one, raw) if rec is not None]
        return sink_records(raw, keys, values, headers)

    def _convert_one(self, r: Record) -> SinkRecord | None:
        def context() -> dict[str, Any]:
            return {
                "topic": r.topic,
                "partition": r.partition,
                "offset": r.offset,
                "raw_key": r.key,
                "raw_value": r.value,
                "raw_headers": r.headers,
                "record": r,
            }

        ok, key = self._errors.execute(
            Stage.KEY_CONVERTER,
            type(self.key_converter).__name__,
            lambda: self.key_converter.to_connect_data(r.topic, r.key),
            context,
        )
        if not ok:
            return None
        ok, value = self._errors.execute(
            Stage.VALUE_CONVERTER,
            type(self.value_converter).__name__,
            lambda: self.value_converter.to_connect_data(r.topic, r.value),
            context,
        )
        if not ok:
            return None
        ok, headers = self._errors.execute(
            Stage.HEADER_CONVERTER,
            type(self.header_converter).__name__,
            lambda: self._headers(r.topic, r),
            context,
        )
        if not ok:
            return None
        return SinkRecord(
            topic=r.topic,
            kafka_partition=r.partition,
            key_schema=key.schema,
            key=key.value,
            value_schema=value.schema,
            value=value.value,
            timestamp=r.timestamp,
            headers=headers,
            kafka_offset=r.offset,
        )

    def _headers(self, topic: str, r: Record) -> Headers:
        headers = Headers()
        for name, data in r.headers:
            converted = self.header_converter.to_connect_header(topic, name, data)
            headers.add(name, converted.value, converted.schema)
        return headers

    def context_of(self, rec: SinkRecord) -> dict[str, Any]:
        """The error context of a record the task was handed (or a transform made)."""
        raw = self._raw_of(rec)
        return {
            "topic": rec.original_topic or rec.topic,
            "partition": rec.original_kafka_partition
            if rec.original_kafka_partition is not None
            else rec.kafka_partition,
            "offset": rec.original_kafka_offset
            if rec.original_kafka_offset is not None
            else rec.kafka_offset,
            "raw_key": raw.key if raw else None,
            "raw_value": raw.value if raw else None,
            "raw_headers": raw.headers if raw else (),
            "record": rec,
        }

    def _raw_of(self, rec: SinkRecord) -> Record | None:
        """The record's original bytes, read back from the log (for the DLQ)."""
        tp = rec.topic_partition
        offset = (
            rec.original_kafka_offset if rec.original_kafka_offset is not None else rec.kafka_offset
        )
        try:
            found = self._data_log.read(tp.topic, tp.partition, offset, max_records=1)
        except Exception:
            return None
        return found[0] if found and found[0].offset == offset else None

    def close(self) -> None:
        for converter in (self.key_converter, self.value_converter, self.header_converter):
            try:
                converter.close()
            except Exception:  # closing is best effort: the task is going away
                _log.debug("task %s: closing %s failed", self.name, converter, exc_info=True)


def _value_columns(v: BatchValues) -> tuple | None:
    """One batch's values as a pyarrow BinaryArray over the batch's own bytes (a
    null where the batch has no value), with their offsets and timestamps (int64);
    None when the bytes lie past what int32 offsets reach."""
    import numpy as np
    import pyarrow as pa

    lengths = np.frombuffer(v.value_lengths, np.int32)
    bounds = np.empty(len(lengths) + 1, np.int64)
    bounds[0] = v.value_start
    np.cumsum(np.maximum(lengths, 0), out=bounds[1:])
    bounds[1:] += v.value_start
    if bounds[-1] >= 2**31:
        return None
    lo, hi = v.lo, v.hi
    mine = lengths[lo:hi]
    valid = None
    if (mine < 0).any():
        valid = pa.py_buffer(np.packbits(mine >= 0, bitorder="little"))
    array = pa.Array.from_buffers(
        pa.binary(),
        hi - lo,
        [valid, pa.py_buffer(bounds[lo : hi + 1].astype(np.int32)), pa.py_buffer(v.data)],
    )
    rows = v.offsets[lo:hi]
    if isinstance(rows, range):
        offsets = np.arange(rows.start, rows.stop, dtype=np.int64)
    else:
        offsets = np.asarray(rows, np.int64)
    if v.timestamps is None:
        stamps = np.full(hi - lo, v.header.first_timestamp, np.int64)
    else:
        stamps = np.frombuffer(v.timestamps, np.int64)[lo:hi]
    return array, offsets, stamps


def _batches(
    tp: LogTopicPartition, offsets: np.ndarray, stamps: np.ndarray, runs: list
) -> list[SinkBatch]:
    """`SinkBatch`es of checked `to_arrow` runs (`SinkConverter.batches_of`) of a
    chunk's records at `offsets` (int64) stamped `stamps`."""
    import numpy as np

    from connect.api.sink_batch import SinkBatch

    n = len(offsets)
    # Records without a value are in no run; each goes with the batch whose rows
    # follow it (trailing ones with the last), so batches do not overlap.
    owner = tombstones = None
    if sum(len(rows) for _, _, rows in runs) != n:
        missing = np.ones(n, dtype=bool)
        for _, _, rows in runs:
            missing[rows] = False
        tombstones = np.flatnonzero(missing)
        lasts = np.array([rows[-1] for _, _, rows in runs], dtype=np.int64)
        owner = np.minimum(np.searchsorted(lasts, tombstones), len(runs) - 1)
    out = []
    for k, (schema, values, rows) in enumerate(runs):
        every = len(rows) == n  # the usual case: one run, no tombstones, no copy
        batch = SinkBatch(
            topic=tp.topic,
            partition=tp.partition,
            value_schema=schema,
            values=values,
            offsets=offsets if every else offsets[rows],
            timestamps=stamps if every else stamps[rows],
        )
        if tombstones is not None:
            batch.tombstones = offsets[tombstones[owner == k]]
        out.append(batch)
    return out
