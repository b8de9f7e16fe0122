"""Spark's rows (Arrow record batches) → the log's records, a column at a time.

A task of the writer hands each Arrow batch Spark gives it to `Encoder.encode`, which
answers the records per (topic, partition) as Arrow batches of the staging layout
(`STAGED`: topic, partition, key, value, timestamp, headers), ready to append:

1. The topic of each row: the `topic` option, else the `topic` column (a null one is
   a DataError naming the row, as Spark's Kafka sink fails the task).
2. The value: the `value` column as bytes, or with `value.format` json/avro the value
   struct (the `value` column, else the other columns) as a Connect struct schema
   (`connectors.s3.formats.parquet.from_arrow_schema`, Arrow's nullable fields
   optional) encoded by the converter's `from_arrow` — the columnar path, no Python
   object per row — or, where it declines, `from_connect_batch` on the values
   `connect.api.to_connect` reads from the same columns.
3. The partition: the `partition` column where it is not null, else Kafka's murmur2
   of the key (`log.KeyPartitioner.partitions`, numpy over the batch: the partition a
   Connect source gives the same key), else, for null keys, one partition per task
   (the Spark partition id modulo the count: a task's unkeyed rows stay together, as
   a sticky partitioner keeps them).
4. The timestamp (ms): the `timestamp` column (a null in it: now), else null, which
   the commit's append stamps with its own time; headers as given.

The converter is loaded by its dotted path (`value.converter`), the way a worker
loads a plugin by class name: connectors import nothing of the runtime but its API.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connectors.spark.datasource.writer_options import ROW_COLUMNS, WriterOptions

__all__ = ["STAGED", "Encoder"]

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
STAGED = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("timestamp", pa.int64()),
        ("headers", HEADERS_TYPE),
    ]
)


def _bytes_column(batch: pa.RecordBatch, name: str) -> pa.Array:
    index = batch.schema.get_field_index(name)
    if index < 0:
        return pa.nulls(batch.num_rows, pa.binary())
    column = batch.column(index)
    if pa.types.is_large_binary(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.large_binary()).cast(pa.binary())
    if not (pa.types.is_binary(column.type) or pa.types.is_string(column.type)):
        raise TypeError(f"column {name!r} must be string or binary, not {column.type}")
    return column.cast(pa.binary())


def _connect_layout(array: pa.Array) -> pa.Array:
    """Spark's Arrow types in connect.api.arrow's layout: timestamps in ms (Spark's
    are µs: the sub-millisecond part is dropped, as Connect's Timestamp holds ms),
    decimals at precision 38 (what `from_arrow_schema`'s Decimal schema, which
    carries no precision, maps to), large strings and binaries as plain ones,
    struct fields likewise."""
    t = array.type
    if pa.types.is_timestamp(t):
        return array.cast(pa.timestamp("ms", tz="UTC"), safe=False)
    if pa.types.is_decimal(t) and t.precision != 38:
        return array.cast(pa.decimal128(38, t.scale))  # a Decimal schema without precision
    if pa.types.is_large_string(t):
        return array.cast(pa.string())
    if pa.types.is_large_binary(t):
        return array.cast(pa.binary())
    if pa.types.is_struct(t):
        children = [_connect_layout(array.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(
            children, fields=[pa.field(f.name, c.type) for f, c in zip(t, children, strict=True)],
            mask=array.is_null() if array.null_count else None,
        )
    return array


class Encoder:
    """One task's encoding (see the module docstring); opened in the executor."""

    def __init__(self, opts: WriterOptions, log: Any, task_partition: int) -> None:
        self._opts = opts
        self._log = log
        self._task = task_partition
        self._counts: dict[str, int] = {}
        self._converter: Any = None
        from log import KeyPartitioner

        self._keys = KeyPartitioner()
        if opts.value_format != "none" or opts.converter_class is not None:
            self._converter = self._load_converter()

    def _load_converter(self) -> Any:
        path = self._opts.converter_class
        assert path is not None
        module, _, name = path.rpartition(".")
        converter = getattr(importlib.import_module(module), name)()
        if self._opts.converter_config.get("schema.registry.url") == "embedded":
            # The embedded registry serves the log a worker names; the writer names
            # its own, as a worker of this log would.
            local = importlib.import_module("connect.registry.local")
            local.set_local_log(self._log)
        converter.configure(self._opts.converter_config, False)
        return converter

    def close(self) -> None:
        if self._converter is not None:
            self._converter.close()

    def partition_count(self, topic: str) -> int:
        """The topic's partitions, the topic created (`topic.partitions`,
        `topic.config.*`) when missing; several tasks may race to create it."""
        count = self._counts.get(topic)
        if count is None:
            from log import TopicExistsError, UnknownTopicOrPartitionError

            try:
                count = self._log.partition_count(topic)
            except UnknownTopicOrPartitionError:
                with contextlib.suppress(TopicExistsError):
                    self._log.create_topic(
                        topic, self._opts.topic_partitions, config=self._opts.topic_config
                    )
                # Another task's topic, on Kafka, may not be in this client's metadata yet.
                deadline = time.monotonic() + 30
                while True:
                    try:
                        count = self._log.partition_count(topic)
                        break
                    except UnknownTopicOrPartitionError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.1)
            self._counts[topic] = count
        return count

    def encode(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Step 1: the rows by topic; steps 2–4 per topic, then split by partition."""
        n = batch.num_rows
        if n == 0:
            return
        if self._opts.topic is not None:
            yield from self._encode_topic(self._opts.topic, batch)
            return
        index = batch.schema.get_field_index("topic")
        if index < 0:
            raise ValueError("no topic: give the topic option or a topic column")
        topics = batch.column(index).cast(pa.string())
        if topics.null_count:
            row = pc.index(pc.is_null(topics), True).as_py()
            raise ValueError(f"null topic in row {row} of a batch (a topic column needs one)")
        uniques = pc.unique(topics).to_pylist()
        if len(uniques) == 1:
            yield from self._encode_topic(uniques[0], batch)
            return
        for topic in uniques:
            yield from self._encode_topic(topic, batch.filter(pc.equal(topics, topic)))

    def _values(self, topic: str, batch: pa.RecordBatch) -> pa.Array:
        """Step 2."""
        if self._converter is None:
            return _bytes_column(batch, "value")
        index = batch.schema.get_field_index("value")
        if index >= 0 and pa.types.is_struct(batch.column(index).type):
            struct = _connect_layout(batch.column(index))
            fields = pa.RecordBatch.from_struct_array(struct)
        else:
            names = [n for n in batch.schema.names if n not in ROW_COLUMNS]
            fields = pa.RecordBatch.from_arrays(
                [_connect_layout(batch.column(n)) for n in names], names=names
            )
        from connect.api import to_connect
        from connectors.s3.formats.parquet import from_arrow_schema

        schema = from_arrow_schema(fields.schema)
        messages = self._converter.from_arrow(topic, schema, fields)
        if messages is None:
            values = to_connect(schema, pa.StructArray.from_arrays(
                fields.columns, fields=list(fields.schema)))
            messages = self._converter.from_connect_batch(topic, [schema] * len(values), values)
        return pa.array(messages, pa.binary())

    def _partitions(self, topic: str, batch: pa.RecordBatch, keys: pa.Array) -> np.ndarray:
        """Step 3."""
        count = self.partition_count(topic)
        out = np.full(batch.num_rows, self._task % count, dtype=np.int32)
        if keys.null_count < len(keys):
            keyed = np.flatnonzero(keys.is_valid().to_numpy(zero_copy_only=False))
            hashed = self._keys.partitions(keys.take(pa.array(keyed)).to_pylist(), count)
            out[keyed] = hashed
        index = batch.schema.get_field_index("partition")
        if index >= 0:
            given = batch.column(index).cast(pa.int32())
            valid = given.is_valid().to_numpy(zero_copy_only=False)
            values = given.fill_null(0).to_numpy(zero_copy_only=False)
            bad = valid & ((values < 0) | (values >= count))
            if bad.any():
                raise ValueError(
                    f"partition {int(values[bad][0])} of topic {topic!r} does not exist "
                    f"(it has {count})"
                )
            out[valid] = values[valid]
        return out

    def _encode_topic(self, topic: str, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        n = batch.num_rows
        keys = _bytes_column(batch, "key")
        values = self._values(topic, batch)
        partitions = self._partitions(topic, batch, keys)
        # Step 4
        index = batch.schema.get_field_index("timestamp")
        if index >= 0:
            stamps = pc.fill_null(
                batch.column(index).cast(pa.timestamp("ms", tz="UTC"), safe=False).cast(
                    pa.int64()), int(time.time() * 1000))
        else:
            # Null: stamped when appended (the commit's time), with no column to carry.
            stamps = pa.nulls(n, pa.int64())
        index = batch.schema.get_field_index("headers")
        headers = batch.column(index).cast(HEADERS_TYPE) if index >= 0 else pa.nulls(
            n, HEADERS_TYPE)
        staged = pa.RecordBatch.from_arrays(
            [pa.repeat(topic, n).cast(pa.string()), pa.array(partitions, pa.int32()), keys,
             values, stamps, headers],
            schema=STAGED,
        )
        distinct = np.unique(partitions)
        if len(distinct) == 1:
            yield staged
            return
        for p in distinct:
            yield staged.filter(pa.array(partitions == p))
