"""`spark.read.format("tributary")` and `spark.readStream.format("tributary")`: Spark
reads topics of the embedded log directly, as its Kafka source reads Kafka.

Rows are Kafka's source columns — key, value (binary), topic, partition, offset,
timestamp, timestampType, and headers with `includeHeaders` — or, with
`value.format=json` or `avro`, the value's own columns (JSON decoded by Arrow, see
`connectors.spark.json_batches`; Avro by fastavro with the registry's schemas, see
`connectors.spark.datasource.avro`) followed by `_topic`, `_partition`, `_offset` and
`_timestamp`. Options: `connectors.spark.datasource.options`.

Where things run (PySpark's Python Data Source API): `schema`, the offsets methods
and `partitions` run in the driver's Python process for the query; `read` runs in
Spark's Python workers, once per InputPartition (one per topic partition and offset
range), opening the log directory itself — readers never block the log's writers and
never see a partial batch — and yielding Arrow record batches, never rows.

Streaming offsets are `{"<topic>": {"<partition>": next offset}}`, stored by Spark in
the checkpoint, so a query that is stopped and restarted with the same checkpoint
continues exactly after the last batch it completed (Spark re-runs a batch it had
planned but not finished with the same offsets: the same rows). Partitions that appear
later start at their earliest offset, as in Spark's Kafka source.
`maxRecordsPerTrigger` caps a micro-batch. PySpark 4.1 (the version pyproject pins:
Iceberg's and Delta's Spark packages need it) has no admission-control API for Python
sources: `latestOffset()` is not told where the batch starts. The reader keeps that
position itself — from `initialOffset()` on a fresh query, and from every
`partitions(start, end)` Spark plans, which includes the `partitions(last, last)` call
by which Spark hands a restarted query the last offsets of its checkpoint — and caps
from there. `Trigger.availableNow` drains everything up to the offsets of its start in
one batch (Spark wraps a source without admission control so).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.types import StructType

from connectors.spark.datasource.options import EARLIEST, LATEST, SourceOptions, parse_options

__all__ = ["TributaryDataSource"]

Offsets = dict[str, dict[str, int]]

KAFKA_COLUMNS = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_COLUMN = "headers array<struct<key: string, value: binary>>"
META = pa.schema(
    [
        ("_topic", pa.string()),
        ("_partition", pa.int32()),
        ("_offset", pa.int64()),
        ("_timestamp", pa.timestamp("us", tz="UTC")),
    ]
)
_CHUNK_BYTES = 8 << 20
#: how far back from a partition's end schema inference looks for a committed value
_SCHEMA_LOOKBACK = 64


@dataclass(frozen=True)
class RangePartition(InputPartition):
    """Offsets [start, end) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int


def _open_log(directory: str) -> Any:
    """The log to read; a missing directory is LogNotFoundError ("no log at PATH"),
    never an empty log created by a reader."""
    from log import FileLog

    return FileLog(directory, background=False, create=False)


def _topic_partitions(log: Any, opts: SourceOptions) -> list[tuple[str, int]]:
    topics = [t for t in log.list_topics() if opts.matches(t)]
    if opts.pattern is None:
        missing = [t for t in opts.topics if t not in topics]
        if missing:
            raise ValueError(f"topic {missing[0]!r} does not exist in {opts.log_dir}")
    return [(t, p) for t in sorted(topics) for p in range(log.partition_count(t))]


def _resolve(
    log: Any, tps: list[tuple[str, int]], spec: Any, default: str, stamp: int | None = None
) -> Offsets:
    """Concrete offsets per partition for `earliest`, `latest`, a JSON spec or a time."""
    out: Offsets = {}
    for topic, partition in tps:
        earliest = log.earliest_offset(topic, partition)
        latest = log.latest_offset(topic, partition)
        if stamp is not None:
            found = log.offset_for_timestamp(topic, partition, stamp)
            offset = latest if found is None else found
        else:
            wanted: Any = spec if spec is not None else default
            if isinstance(wanted, dict):
                wanted = wanted.get(topic, {}).get(str(partition), EARLIEST)
            if wanted in ("earliest", EARLIEST):
                offset = earliest
            elif wanted in ("latest", LATEST):
                offset = latest
            else:
                offset = min(max(int(wanted), earliest), latest)
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def _ranges(start: Offsets, end: Offsets) -> list[RangePartition]:
    parts = []
    for topic, ends in sorted(end.items()):
        for p, stop in sorted(ends.items(), key=lambda kv: int(kv[0])):
            begin = start.get(topic, {}).get(p, 0)
            if stop > begin:
                parts.append(RangePartition(topic, int(p), begin, stop))
    return parts


def _kafka_batch(records: list[Any], headers: bool) -> pa.RecordBatch:
    n = len(records)
    columns = [
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.array([r.topic for r in records], pa.string()),
        pa.array([r.partition for r in records], pa.int32()),
        pa.array([r.offset for r in records], pa.int64()),
        pa.array([r.timestamp * 1000 for r in records], pa.int64()).cast(
            pa.timestamp("us", tz="UTC")
        ),
        pa.array([0] * n, pa.int32()),  # CreateTime
    ]
    names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    if headers:
        columns.append(
            pa.array(
                [[{"key": k, "value": v} for k, v in r.headers] for r in records],
                pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
            )
        )
        names.append("headers")
    return pa.RecordBatch.from_arrays(columns, names=names)


def _to_spark_arrow(schema: pa.Schema) -> pa.Schema:
    """Timestamps in microseconds (Spark's unit); everything else as it is."""
    return pa.schema(
        [
            pa.field(f.name, pa.timestamp("us", tz="UTC")) if pa.types.is_timestamp(f.type) else f
            for f in schema
        ]
    )


def _aligned(batch: pa.RecordBatch, target: pa.Schema) -> list[pa.Array]:
    """The batch's columns in the target's order and types; missing ones as nulls."""
    out = []
    for field in target:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            out.append(pa.nulls(batch.num_rows, field.type))
        else:
            out.append(batch.column(index).cast(field.type))
    return out


def _decoded_batch(
    records: list[Any], decoder: Any, value_schema: pa.Schema
) -> pa.RecordBatch | None:
    values = [r.value for r in records]
    kept = [i for i, v in enumerate(values) if v is not None]
    if not kept:
        return None
    if len(kept) != len(values):
        records = [records[i] for i in kept]
        values = [values[i] for i in kept]
    columns: list[pa.Array] = []
    meta_rows: list[Any] = []
    for batch, rows in decoder.decode(values):
        columns.append(pa.Table.from_arrays(_aligned(batch, value_schema), schema=value_schema))
        meta_rows.extend(rows.tolist())
    if not columns:
        return None
    table = pa.concat_tables(columns)
    picked = [records[i] for i in meta_rows]
    meta = [
        pa.array([r.topic for r in picked], pa.string()),
        pa.array([r.partition for r in picked], pa.int32()),
        pa.array([r.offset for r in picked], pa.int64()),
        pa.array([r.timestamp * 1000 for r in picked], pa.int64()).cast(
            pa.timestamp("us", tz="UTC")
        ),
    ]
    arrays = [c.combine_chunks() for c in table.columns] + meta
    return pa.RecordBatch.from_arrays(arrays, schema=pa.unify_schemas([value_schema, META]))


class _AvroBatches:
    """The Avro decoder in the JSON decoder's shape: batches with their row positions."""

    def __init__(self, url: str, log: Any, target: pa.Schema) -> None:
        from connectors.spark.datasource.avro import AvroDecoder

        self._decoder = AvroDecoder(url, log)
        self._target = target

    def decode(self, values: list[bytes]) -> list[tuple[pa.RecordBatch, Any]]:
        import numpy as np

        batch = self._decoder.decode(values, self._target)
        return [(batch, np.arange(len(values), dtype=np.int64))]


def _decoder(opts: SourceOptions, log: Any, value_schema: pa.Schema | None) -> Any:
    if value_schema is None:
        return None
    if opts.value_format == "avro":
        return _AvroBatches(opts.registry_url, log, value_schema)
    from connectors.spark.json_batches import JsonBatchDecoder

    return JsonBatchDecoder()


def read_range(
    opts: SourceOptions, part: RangePartition, value_schema: pa.Schema | None
) -> Iterator[pa.RecordBatch]:
    """The rows of one offset range, as Arrow batches of up to ~8 MB of log data."""
    log = _open_log(opts.log_dir)
    decoder = _decoder(opts, log, value_schema)
    try:
        position = part.start
        while position < part.end:
            records = log.read(part.topic, part.partition, position, max_bytes=_CHUNK_BYTES)
            records = [r for r in records if r.offset < part.end]
            if not records:
                break
            position = records[-1].offset + 1
            if decoder is None:
                yield _kafka_batch(records, opts.include_headers)
            else:
                assert value_schema is not None
                batch = _decoded_batch(records, decoder, value_schema)
                if batch is not None:
                    yield batch
    finally:
        log.close()


class _Reading:
    """What the batch and the stream reader share: options and the decoded schema."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.opts = parse_options(options)
        self.value_schema: pa.Schema | None = None
        if self.opts.value_format != "none":
            from pyspark.sql.pandas.types import to_arrow_schema

            full = to_arrow_schema(schema, timestamp_utc=True)  # PySpark 4.1
            names = [n for n in full.names if n not in META.names]
            self.value_schema = _to_spark_arrow(pa.schema([full.field(n) for n in names]))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return  # no ranges: Spark still reads one default (empty) partition
        yield from read_range(self.opts, partition, self.value_schema)


class TributaryBatchReader(_Reading, DataSourceReader):
    def partitions(self) -> list[InputPartition]:
        log = _open_log(self.opts.log_dir)
        try:
            tps = _topic_partitions(log, self.opts)
            start = _resolve(log, tps, self.opts.starting, "earliest", self.opts.starting_timestamp)
            end = _resolve(log, tps, self.opts.ending, "latest")
        finally:
            log.close()
        return list(_ranges(start, end))


class TributaryStreamReader(_Reading, DataSourceStreamReader):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        super().__init__(options, schema)
        self._log: Any = None
        # Where the next micro-batch starts (see the module docstring): a restarted
        # query's checkpoint says before the first latestOffset(), a new query starts
        # at initialOffset().
        self._position: Offsets | None = None

    @property
    def log(self) -> Any:
        if self._log is None:
            self._log = _open_log(self.opts.log_dir)
        return self._log

    def initialOffset(self) -> dict:
        tps = _topic_partitions(self.log, self.opts)
        start = _resolve(self.log, tps, self.opts.starting, "latest", self.opts.starting_timestamp)
        self._position = start
        return start

    def _latest(self) -> Offsets:
        tps = _topic_partitions(self.log, self.opts)
        return _resolve(self.log, tps, "latest", "latest")

    def latestOffset(self) -> dict:
        latest = self._latest()
        # Spark 4.1 asks for the latest offset of a new query before its initial one.
        start = self._position if self._position is not None else self.initialOffset()
        begin: Offsets = {}
        for topic, parts in latest.items():
            for p in parts:
                known = start.get(topic, {}).get(p)
                if known is None:  # a partition that appeared since: from its start
                    known = self.log.earliest_offset(topic, int(p))
                begin.setdefault(topic, {})[p] = known
        end = {t: {p: max(o, begin[t][p]) for p, o in parts.items()} for t, parts in latest.items()}
        if self.opts.max_records is not None:
            end = _capped(begin, end, self.opts.max_records)
        # Partitions the start knows but the log no longer lists keep their offsets.
        for topic, parts in start.items():
            for p, o in parts.items():
                end.setdefault(topic, {}).setdefault(p, o)
        return end

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        self._position = end
        return list(_ranges(start, end))

    def commit(self, end: dict) -> None:
        return None  # progress lives in Spark's checkpoint, nothing to acknowledge

    def stop(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def _capped(begin: Offsets, end: Offsets, max_rows: int) -> Offsets:
    """At most `max_rows` records in all, shared in proportion to each backlog."""
    backlog = {(t, p): end[t][p] - begin[t][p] for t in end for p in end[t]}
    total = sum(backlog.values())
    if total <= max_rows:
        return end
    share = {tp: lag * max_rows // total for tp, lag in backlog.items()}
    left = max_rows - sum(share.values())
    for tp in sorted(backlog, key=lambda k: backlog[k] - share[k], reverse=True):
        if left <= 0:
            break
        if backlog[tp] > share[tp]:
            share[tp] += 1
            left -= 1
    return {t: {p: begin[t][p] + share[(t, p)] for p in end[t]} for t in end}


class TributaryDataSource(DataSource):
    """The `tributary` format (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return "tributary"

    def schema(self) -> StructType | str:
        opts = parse_options(self.options)
        if opts.value_format == "none":
            return KAFKA_COLUMNS + (", " + HEADERS_COLUMN if opts.include_headers else "")
        from pyspark.sql.pandas.types import from_arrow_schema

        value = _to_spark_arrow(_infer_value_schema(opts))
        return from_arrow_schema(pa.unify_schemas([value, META]))

    def reader(self, schema: StructType) -> DataSourceReader:
        return TributaryBatchReader(dict(self.options), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return TributaryStreamReader(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        """`df.write.format("tributary")` (connectors.spark.datasource.writer)."""
        from connectors.spark.datasource.writer import TributaryBatchWriter

        return TributaryBatchWriter(dict(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        """`df.writeStream.format("tributary")`: each micro-batch exactly once."""
        from connectors.spark.datasource.writer import TributaryStreamWriter

        return TributaryStreamWriter(dict(self.options))


def _infer_value_schema(opts: SourceOptions) -> pa.Schema:
    """The value columns, from the newest record of the first partition with data.

    Newest committed record with a value, among the partition's last few: on a
    transactional topic (the tributary writer's) the last offset is a commit marker,
    and an aborted record is no schema of the topic's."""
    from connectors.spark.json_batches import JsonBatchDecoder

    log = _open_log(opts.log_dir)
    try:
        for topic, partition in _topic_partitions(log, opts):
            latest = log.latest_offset(topic, partition)
            earliest = log.earliest_offset(topic, partition)
            if latest <= earliest:
                continue
            records = log.read(
                topic, partition, max(earliest, latest - _SCHEMA_LOOKBACK),
                max_records=_SCHEMA_LOOKBACK, isolation_level="read_committed",
            )
            values = [r.value for r in records if r.value is not None][-1:]
            if values and opts.value_format == "avro":
                from connectors.spark.datasource.avro import AvroDecoder, arrow_schema_of

                return arrow_schema_of(AvroDecoder(opts.registry_url, log).writer_schema(values[0]))
            if values:
                return JsonBatchDecoder().decode(values)[0][0].schema
    finally:
        log.close()
    raise ValueError(
        f"value.format={opts.value_format}: no record to take the value schema from; "
        "give it with .schema()"
    )
