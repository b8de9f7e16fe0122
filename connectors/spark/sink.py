"""SparkParquetSink: a topic's records as a Parquet data lake that Spark reads as one
table, exactly once — Confluent's HDFS 3 sink (`Hdfs3SinkConnector`) on PySpark.

Where Spark is, and why. Tasks run in processes of their own, and a SparkSession is a
JVM: seconds of both cores to start and about a gigabyte of memory, per task process,
and Spark's own writer (`createDataFrame(arrow)` → `write.parquet`) is several times
slower on a warm JVM than pyarrow writing the same Arrow table (figures, dated:
docs/performance.md). So the hot path never leaves Arrow:

- values arrive as Arrow batches (`put_batches`) when the connector's value.converter
  decodes them into columns (`Converter.to_arrow`: AvroConverter with numpy,
  JsonConverter with schemas by Arrow's JSON reader), with no SinkRecord at all;
  otherwise records become Arrow
  record batches a column at a time (`connect.api.arrow`), or the JSON bytes of
  ByteArrayConverter are decoded by the same reader (`value.format=json`,
  `json_batches`); never a Python dict or Spark Row per record;
- `parquet.writer=arrow` (what `auto` picks for file:// stores on a local master):
  pyarrow writes each file in the task process — no JVM in the task at all;
- `parquet.writer=spark` (what `auto` picks for hdfs:// stores or a cluster master):
  the task starts a SparkSession from `spark.master` and `spark.conf.*`, hands it each
  file's Arrow table (`createDataFrame`) and Spark writes it through Hadoop's file
  system, so the same config runs against HDFS and a cluster.
JsonConverter's record path turns each message into a Struct of Python objects; its
`to_arrow` (or `value.format=json` with ByteArrayConverter) skips them, while the Spark
writer alone would cap the sink below what the columns reach (docs/performance.md).
Either way the files are Spark's: Hive-style directories, types Spark maps one to one
(decimals, dates, timestamps; Debezium's temporal types as dates and timestamps too,
`connect.api.arrow.file_batch`), one schema per file, so
`spark.read.option("mergeSchema", "true").parquet(<store>/<topics.dir>/<topic>)` reads
a topic as one table across schema changes. A change those readers could not merge
(int → long, a decimal → string: both accepted by Avro's rules) stops the task before
any of it is written (`table_schema`), so the table stays one table.

Exactly once (see `topic_writer`): file names carry topic, partition and offset range;
files are written to a temporary place and published by rename under a commit intent;
`open()` recovers each partition from the published files and seeks the consumer
there; `pre_commit` hands the runtime only offsets of published records.
"""

from __future__ import annotations

import logging
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from connect.api import (
    ConfigDef,
    DataError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    TopicPartition,
)
from connectors.spark.config import CONFIG, SinkSettings, parse
from connectors.spark.partitioners import Partitioner

if TYPE_CHECKING:
    from connect.api import SinkBatch
    from connectors.spark.storage import Storage
    from connectors.spark.table_schema import TableSchema
    from connectors.spark.topic_writer import TopicPartitionWriter

__all__ = ["SparkParquetSinkConnector", "SparkParquetSinkTask"]

_log = logging.getLogger(__name__)


class SparkParquetSinkConnector(SinkConnector):
    VERSION = "0.1.0"

    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        Partitioner(parse(props))  # refuses a bad path.format before any task starts
        self._props = dict(props)

    def task_class(self) -> type:
        return SparkParquetSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        return None


class SparkParquetSinkTask(SinkTask):
    """See the module docstring. One TopicPartitionWriter per assigned partition."""

    VERSION = "0.1.0"

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.writers: dict[TopicPartition, TopicPartitionWriter] = {}
        #: One per topic, shared by its partitions' writers: the table's schema.
        self.tables: dict[str, TableSchema] = {}
        self._just_opened: set[TopicPartition] = set()
        self.spark: Any = None

    def start(self, props: Mapping[str, str]) -> None:
        # The task's modules load pyarrow and numpy: imported by the task, not with the
        # connector, which the worker's own process imports to validate configs.
        from connectors.spark.json_batches import JsonBatchDecoder

        self.settings: SinkSettings = parse(props)
        self.partitioner = Partitioner(self.settings, clock=self._clock)
        self.storage = self._storage(self.settings)
        self.storage.check_writable()
        self._decoder = JsonBatchDecoder() if self.settings.value_format == "json" else None

    def _storage(self, settings: SinkSettings) -> Storage:
        from connectors.spark.storage import HadoopStorage, LocalStorage

        if settings.writer == "arrow":
            return LocalStorage(settings.local_root)
        from connectors.spark.session import spark_session

        self.spark = spark_session(
            settings.spark_master, settings.spark_app_name, settings.spark_conf
        )
        return HadoopStorage(settings.root, self.spark)

    # ---------------------------------------------------------- partitions

    def open(self, partitions: Sequence[TopicPartition]) -> None:
        from connectors.spark.table_schema import TableSchema
        from connectors.spark.topic_writer import TopicPartitionWriter

        rewinds = {}
        for tp in partitions:
            table = self.tables.get(tp.topic)
            if table is None:
                table = self.tables[tp.topic] = TableSchema(
                    tp.topic, self.storage, self.settings.topics_dir
                )
            writer = TopicPartitionWriter(
                tp, self.settings, self.storage, self.partitioner, table=table, clock=self._clock
            )
            resume = writer.recover()
            self.writers[tp] = writer
            if resume is not None:
                rewinds[tp] = resume
                self._just_opened.add(tp)
        if rewinds:
            self.context.offset(rewinds)

    def close(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            writer = self.writers.pop(tp, None)
            if writer is not None:
                writer.close()
            self._just_opened.discard(tp)

    # ------------------------------------------------------------------ put

    def put(self, records: Sequence[SinkRecord]) -> None:
        if records:
            for tp, recs in _by_partition(records).items():
                self._put_partition(tp, recs)
        # Records consumed before open()'s seek took effect are behind us now.
        self._just_opened.clear()
        for writer in self.writers.values():
            writer.maybe_commit_scheduled()

    def _put_partition(self, tp: TopicPartition, recs: list[SinkRecord]) -> None:
        writer = self._writer_for(tp)
        expected = writer.consumed
        if expected is not None:
            if tp in self._just_opened and recs[0].kafka_offset != expected:
                return  # read before open()'s seek: the seek delivers them again
            if recs[0].kafka_offset < expected:  # already published: a replay
                recs = [r for r in recs if r.kafka_offset >= expected]
        # Consecutive records with one value schema make one batch; a tombstone ends
        # a run, so offsets reach the writer in order.
        run: list[SinkRecord] = []
        current: Any = None
        for rec in recs:
            if rec.value is None:
                if self.settings.on_null == "fail":
                    raise DataError(
                        f"a null value at {tp}@{rec.kafka_offset}; "
                        "behavior.on.null.values=ignore skips such records"
                    )
                self._write_run(writer, run, current)
                run = []
                writer.skip(rec.kafka_offset)
                continue
            schema = rec.value_schema
            if run and schema is not current and schema != current:
                self._write_run(writer, run, current)
                run = []
            current = schema
            run.append(rec)
        self._write_run(writer, run, current)

    def put_batches(self, batches: Sequence[SinkBatch]) -> None:
        """Each batch's rows straight to its partition's writer, under the rules of
        `_put_partition`: a poll from before open()'s seek is dropped, a replayed
        head cut off, tombstones skipped (or refused). The runtime calls `put()`
        right after, which ends the poll as it does for records."""
        from connect.api import file_batch
        for batch in batches:
            tp = TopicPartition(batch.topic, batch.partition)
            writer = self._writer_for(tp)
            expected = writer.consumed
            if expected is not None:
                if tp in self._just_opened and batch.first_offset != expected:
                    continue  # read before open()'s seek: the seek delivers it again
                kept = batch.since(expected)  # what is already published: a replay
                if kept is None:
                    continue
                batch = kept
            if len(batch.tombstones) and self.settings.on_null == "fail":
                raise DataError(
                    f"a null value at {tp}@{int(batch.tombstones[0])}; "
                    "behavior.on.null.values=ignore skips such records"
                )
            if len(batch):
                values = file_batch(batch.value_schema, batch.values)
                writer.write(values, batch.offsets, batch.timestamps)
            if len(batch.tombstones) and int(batch.tombstones[-1]) >= (writer.consumed or 0):
                writer.skip(int(batch.tombstones[-1]))
            # The same partition may come again in this poll (another schema): its
            # next batch continues this one, it was not read before the seek.
            self._just_opened.discard(tp)

    def _writer_for(self, tp: TopicPartition) -> TopicPartitionWriter:
        writer = self.writers.get(tp)
        if writer is None:  # delivered without open() (a test harness): open it now
            self.open([tp])
            self._just_opened.discard(tp)
            writer = self.writers[tp]
        return writer

    def _write_run(self, writer: TopicPartitionWriter, run: list[SinkRecord], schema: Any) -> None:
        if not run:
            return
        import numpy as np

        from connect.api import batch_from_values, file_batch

        n = len(run)
        offsets = np.fromiter((r.kafka_offset for r in run), np.int64, n)
        stamps = np.fromiter((r.timestamp or 0 for r in run), np.int64, n)
        values = [r.value for r in run]
        if self._decoder is None:
            writer.write(file_batch(schema, batch_from_values(schema, values)), offsets, stamps)
            return
        for batch, rows in self._decoder.decode(values):
            writer.write(batch, offsets[rows], stamps[rows])

    # --------------------------------------------------------------- commit

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        safe = {}
        for tp in offsets:
            writer = self.writers.get(tp)
            offset = writer.safe_offset() if writer is not None else None
            if offset is not None:
                safe[tp] = offset
        return safe

    def stop(self) -> None:
        for writer in self.writers.values():
            writer.close()
        self.writers.clear()


def _by_partition(records: Sequence[SinkRecord]) -> dict[TopicPartition, list[SinkRecord]]:
    """Records per log partition, in order. The common case — nothing rerouted by a
    transform, one partition per poll chunk — is found with loops in C, not a
    `topic_partition` property call per record."""
    first = records[0]
    if (
        first.original_topic is None
        and first.original_kafka_partition is None
        and all(r.original_topic is None and r.original_kafka_partition is None for r in records)
    ):
        keys = list(zip(map(_topic, records), map(_partition, records), strict=True))
        if keys.count(keys[0]) == len(keys):
            return {TopicPartition(*keys[0]): list(records)}
        out: dict[TopicPartition, list[SinkRecord]] = {}
        for key, rec in zip(keys, records, strict=True):
            out.setdefault(TopicPartition(*key), []).append(rec)
        return out
    grouped: dict[TopicPartition, list[SinkRecord]] = {}
    for rec in records:
        grouped.setdefault(rec.topic_partition, []).append(rec)
    return grouped


_topic = operator.attrgetter("topic")
_partition = operator.attrgetter("kafka_partition")
