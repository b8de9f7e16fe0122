"""DeltaSink: topics into Delta Lake tables with delta-rs (`deltalake`), exactly once.

How a record reaches the table (numbered as in the code; the commit protocol itself
is `connectors.delta.table`'s docstring):
1. `open(partitions)`: each partition's table (`delta.table.uri`, `${topic}` filled
   in) reads the partition's `txn` version, and the consumer is sought there.
2. `put_batches` (values as Arrow columns straight from the converter: JsonConverter
   with schemas, AvroConverter) or `put` (SinkRecords, a column at a time through
   `connect.api.arrow`): a partition's rows go to its table's writer; what the table
   holds already (a replay) is cut off, and a poll read before a seek took effect is
   dropped, since the seek delivers it again.
3. The end of every `put` (after every poll, so it is the timer too): each table with
   enough rows waiting, or waiting long enough, commits them with its offsets; so
   does one with a tenth of `delta.flush.size` waiting when the poll brought nothing
   (the task caught up with the log: `connectors.delta.table._CAUGHT_UP`).
4. `pre_commit` hands the runtime the offsets the tables hold; `close` commits what
   the closed partitions have waiting first, so a clean rebalance replays nothing.

Records without a value (tombstones, or Debezium's after a delete) hold no row: they
only move the partition's offset on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from connect.api import (
    ConfigDef,
    ConfigValue,
    SinkConnector,
    SinkRecord,
    SinkTask,
    TopicPartition,
)
from connectors.delta.config import APP_ID, CONFIG, parse, validate

if TYPE_CHECKING:
    from connect.api import SinkBatch
    from connectors.delta.config import DeltaSettings
    from connectors.delta.table import DeltaTableWriter

__all__ = ["DeltaSinkConnector", "DeltaSinkTask"]

_log = logging.getLogger(__name__)
VERSION = "0.1.0"


class DeltaSinkConnector(SinkConnector):
    """See the module docstring; keys in `connectors.delta.config`."""

    VERSION = VERSION

    def config(self) -> ConfigDef:
        return CONFIG

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        return validate(props)

    def start(self, props: Mapping[str, str]) -> None:
        settings = parse(props)  # refuse a bad config before any task starts
        # Every task commits under the same app id, so a partition's offsets are found
        # whichever task has it next.
        self._props = {**props, APP_ID: settings.app_id}

    def task_class(self) -> type:
        return DeltaSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        return None


class DeltaSinkTask(SinkTask):
    """See the module docstring. One DeltaTableWriter per table."""

    VERSION = VERSION

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.tables: dict[str, DeltaTableWriter] = {}
        self._just_opened: set[TopicPartition] = set()
        #: Batches came through put_batches since the last put() (the poll brought some).
        self._polled = False

    def start(self, props: Mapping[str, str]) -> None:
        self.settings: DeltaSettings = parse(props)
        # Why here: what the first rows would import otherwise — delta-rs, pyarrow's
        # Parquet writer, and pandas, which pyarrow imports on its first array made from
        # numpy (its pandas shim: the converters' first batch). That was ~0.3 s of a
        # core per task process, a fifth of a task's samples in the lake bench's 1 M-row
        # run (py-spy), taken from its first poll. A task starts once and polls often
        # (the Iceberg sink's start imports pyiceberg's FileIO, and pandas with it).
        import deltalake  # noqa: F401
        import numpy as np
        import pyarrow as pa

        import connectors.delta.table  # noqa: F401

        pa.array(np.zeros(1))

    def _table(self, tp: TopicPartition) -> DeltaTableWriter:
        # delta-rs, pyarrow and numpy load with the task, not with the connector, which
        # the worker's own process imports to validate configs.
        from connectors.delta.table import DeltaTableWriter

        uri = self.settings.uri_for(tp.topic)
        writer = self.tables.get(uri)
        if writer is None:
            writer = self.tables[uri] = DeltaTableWriter(
                uri, self.settings, rewind=self._rewind, clock=self._clock)
        if tp not in writer.committed:
            self._rewind(writer.open([tp]))  # delivered without open(): a test harness
        return writer

    def _rewind(self, offsets: dict[TopicPartition, int]) -> None:
        if offsets:
            self.context.offset(offsets)
            self._just_opened.update(offsets)

    def open(self, partitions: Sequence[TopicPartition]) -> None:
        # Step 1
        from connectors.delta.table import DeltaTableWriter

        by_uri: dict[str, list[TopicPartition]] = {}
        for tp in partitions:
            by_uri.setdefault(self.settings.uri_for(tp.topic), []).append(tp)
        for uri, tps in by_uri.items():
            writer = self.tables.get(uri)
            if writer is None:
                writer = self.tables[uri] = DeltaTableWriter(
                    uri, self.settings, rewind=self._rewind, clock=self._clock)
            self._rewind(writer.open(tps))

    def put_batches(self, batches: Sequence[SinkBatch]) -> None:
        # Step 2
        self._polled = self._polled or bool(batches)
        for batch in batches:
            tp = TopicPartition(batch.topic, batch.partition)
            writer = self._table(tp)
            expected = writer.expected(tp)
            if expected is not None:
                if tp in self._just_opened and batch.first_offset != expected:
                    continue  # read before the seek took effect: it comes again
                kept = batch.since(expected)
                if kept is None:
                    continue  # the table holds it already
                batch = kept
            rows = batch.values if len(batch) else None
            if rows is not None:
                from connect.api import file_batch

                rows = file_batch(batch.value_schema, rows)
            writer.add(tp, rows, batch.first_offset, batch.last_offset + 1)
            self._just_opened.discard(tp)

    def put(self, records: Sequence[SinkRecord]) -> None:
        if records:
            for tp, run in _runs(records):
                self._put_run(tp, run)
        # Step 3: every poll ends here; seeks asked for from now on apply to the next.
        self._just_opened.clear()
        caught_up = not records and not self._polled
        self._polled = False
        for writer in self.tables.values():
            if writer.due(caught_up=caught_up):
                writer.commit()

    def _put_run(self, tp: TopicPartition, run: Sequence[SinkRecord]) -> None:
        """Step 2 for records: consecutive records of one value schema become one
        Arrow batch (a column at a time); a record without a value ends a run.
        Schemaless values (JsonConverter without schemas: dicts) become columns of the
        types Arrow infers from them, a Python step per value (this path's cost)."""
        from connect.api import batch_from_values, file_batch

        writer = self._table(tp)
        expected = writer.expected(tp)
        if expected is not None:
            if tp in self._just_opened and run[0].kafka_offset != expected:
                return
            run = [r for r in run if r.kafka_offset >= expected]
        i, n = 0, len(run)
        while i < n:
            first = run[i]
            if first.value is None:
                writer.add(tp, None, first.kafka_offset, first.kafka_offset + 1)
                i += 1
                continue
            schema = first.value_schema
            j = i + 1
            while j < n and run[j].value is not None and (
                    run[j].value_schema is schema or run[j].value_schema == schema):
                j += 1
            values = [r.value for r in run[i:j]]
            if schema is None:  # schemaless JSON (dicts): Arrow infers the columns
                import pyarrow as pa

                rows = pa.RecordBatch.from_pylist(values)
            else:
                rows = file_batch(schema, batch_from_values(schema, values))
            writer.add(tp, rows, first.kafka_offset, run[j - 1].kafka_offset + 1)
            i = j

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        # Step 4
        safe = {}
        for writer in self.tables.values():
            for tp, offset in writer.committed.items():
                if offset is not None and tp in offsets:
                    safe[tp] = offset
        return safe

    def close(self, partitions: Sequence[TopicPartition]) -> None:
        # Step 4: a clean hand-over commits first (a failure here is only a replay).
        for writer in self.tables.values():
            mine = [tp for tp in partitions if tp in writer.committed]
            if not mine:
                continue
            try:
                writer.commit()
            except Exception:
                _log.exception("%s: the rows waiting at close are read again", writer.uri)
            writer.forget(mine)
        self._just_opened.difference_update(partitions)

    def stop(self) -> None:
        self.tables.clear()


def _runs(records: Sequence[SinkRecord]) -> list[tuple[TopicPartition, Sequence[SinkRecord]]]:
    """Runs of consecutive records of one topic partition."""
    out: list[tuple[TopicPartition, Sequence[SinkRecord]]] = []
    start = 0
    for i in range(1, len(records) + 1):
        if i == len(records) or (
            records[i].kafka_partition != records[start].kafka_partition
            or records[i].topic != records[start].topic
        ):
            out.append((records[start].topic_partition, records[start:i]))
            start = i
    return out
