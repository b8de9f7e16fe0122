"""IcebergSink: topics into Apache Iceberg tables through pyiceberg, exactly once —
Apache Iceberg's Kafka Connect sink (`org.apache.iceberg.connect.IcebergSinkConnector`)
and its keys, with Tabular's upsert mode for CDC.

How a record reaches a table (numbered as in the code):
1. `open(partitions)`: each known table's snapshots say up to which offset it holds
   each partition (offsets.py); when every table the task may write holds one, the
   task moves the consumer to the lowest of them (`SinkTaskContext.offset`), and it
   remembers, per table, what that table already has.
2. `put_batches` / `put`: values come as Arrow columns (the converters' `to_arrow`, or
   the records turned a column at a time), never a row at a time. A record at an
   offset before the partition's next expected one is a replay (read before the
   rewind took effect, or redelivered) and is dropped; the rows are routed to their
   tables (all configured tables; with a route field, dynamically the one it names,
   statically each table whose `route-regex` matches it whole, or, for a table with
   no regex, equals its full or last name lowercased; no table: dropped), each table
   skipping what its own snapshots say it holds, and buffered.
3. Once rows have waited `iceberg.control.commit.interval-ms` (from the first one
   buffered; or once `iceberg.commit.max-buffered-records` wait, or when a poll
   brings nothing while a tenth of that waits: `_CAUGHT_UP`), each table with
   buffered rows gets one
   catalog commit carrying the task's consumed offsets in its snapshot summary
   (writer.py); tables new to the connector first, so that a crash between the
   tables' commits never leaves a table without offsets behind one that has them.
4. `pre_commit` hands the runtime, per partition, the lowest offset the tables
   recorded: the consumer group never runs ahead of the tables.
5. `close` (partitions revoked, or the task stopping) commits what is buffered.

Why no coordinator, unlike Apache's sink (a control topic, one coordinator task
committing every task's files): the table's own optimistic commit is the arbiter
here. Each task commits its own files with its own partitions' offsets; a commit
that lost a race is retried on the refreshed table (writer.py, step 5), so tasks
never lose each other's files, and one table gets a snapshot per task per interval.
"""

from __future__ import annotations

import logging
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from connect.api import (
    ConfigDef,
    ConfigValue,
    DataError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    TopicPartition,
)
from connectors.iceberg.config import CONFIG, IcebergSettings, parse, validate

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from connect.api import SinkBatch
    from connectors.iceberg.writer import TableWriter

__all__ = ["IcebergSinkConnector", "IcebergSinkTask"]

_log = logging.getLogger("connectors.iceberg")
_OFFSET = operator.attrgetter("kafka_offset")
VERSION = "0.1.0"
#: Step 3: a task whose poll brought nothing (it has caught up with its partitions)
#: commits at once when at least this share of `max-buffered-records` waits. Why: the
#: end of a backlog (a backfill, a burst) otherwise waited out the commit interval
#: with nothing left to read: up to a second of a 1 M-row run's ~4 in the lake bench,
#: and the whole interval (5 minutes by default) for the last rows of a burst. A
#: trickle (fewer rows than that between intervals) still commits on the interval,
#: so it makes no more snapshots than before.
_CAUGHT_UP = 0.1


class IcebergSinkConnector(SinkConnector):
    """Apache Iceberg's `IcebergSinkConnector`, same keys (see the module docstring)."""

    VERSION = VERSION

    def config(self) -> ConfigDef:
        return CONFIG

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        return validate(props)

    def start(self, props: Mapping[str, str]) -> None:
        parse(props)  # refuse a bad config before any task starts
        self._props = dict(props)

    def task_class(self) -> type:
        return IcebergSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass


class IcebergSinkTask(SinkTask):
    """See the module docstring."""

    VERSION = VERSION

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.writers: dict[str, TableWriter] = {}
        #: Per partition, the next offset to take (anything before it is a replay).
        self.next_offset: dict[TopicPartition, int] = {}
        self._failed = False

    def start(self, props: Mapping[str, str]) -> None:
        from connectors.iceberg.tables import load_catalog

        self.settings: IcebergSettings = parse(props)
        self.catalog = load_catalog(self.settings)
        # Why here: pyiceberg imports its Arrow FileIO, Parquet writer and pyarrow.dataset
        # on a table's first load and append; that was 35% of a task's samples after its
        # start in bench/lakehouse_bench.py (py-spy), delaying the first commit by a
        # second or more on a loaded machine. A task starts once and commits often.
        # (rich: every append's schema check makes a rich Console, imported then.)
        import pyiceberg.io.pyarrow  # noqa: F401
        import rich.console
        import rich.table  # noqa: F401
        for name in self.settings.tables:
            self._writer(name)
        #: Static routing by a field: each table and its route-regex (None: by name).
        self._routes = [(name, self.writers[name].own.route_regex)
                        for name in self.settings.tables]
        self._waiting_since = self._clock()
        self._buffered = 0
        #: Rows came through put_batches since the last put() (the poll was not empty).
        self._polled = False

    def _writer(self, name: str) -> TableWriter:
        from connectors.iceberg.writer import TableWriter

        writer = self.writers.get(name)
        if writer is None:
            writer = self.writers[name] = TableWriter(name, self.catalog, self.settings)
        return writer

    # ---------------------------------------------------------- partitions

    def open(self, partitions: Sequence[TopicPartition]) -> None:
        self._resume_from_tables(partitions, stale=False)

    def _resume_from_tables(self, partitions: Sequence[TopicPartition], *, stale: bool) -> None:
        # Step 1
        from connectors.iceberg.offsets import committed_offsets
        from connectors.iceberg.tables import load_table

        if self.settings.dynamic:
            for name in self._catalog_tables():
                self._writer(name)
        for writer in self.writers.values():
            table = load_table(self.catalog, writer.name)
            if table is not None:
                writer.committed.update(committed_offsets(
                    table, self.settings.connector, partitions, branch=writer.branch))
        rewinds = {}
        for tp in partitions:
            held = [w.committed.get(tp) for w in self.writers.values()]
            known = [h for h in held if h is not None]
            if not known:
                continue
            # Skip ahead to the tables' offsets only when every table the task may write
            # holds the partition: a table with none yet (new to the connector, its first
            # commit lost to a crash after another table's commit in the same round, or
            # with dynamic routing one not created yet) needs the rows from the group's
            # offsets, which pre_commit never let run ahead of any table; the tables
            # that hold them skip them (step 2). After a stale commit the task drops its
            # buffer and must read again from the tables' offsets.
            if not stale and (self.settings.dynamic or None in held):
                continue
            rewinds[tp] = self.next_offset[tp] = min(known)
        if rewinds:
            _log.info("resuming from the tables' offsets %s", rewinds)
            self.context.offset(rewinds)

    def _catalog_tables(self) -> list[str]:
        names = []
        for namespace in self.catalog.list_namespaces():
            names.extend(".".join(ident) for ident in self.catalog.list_tables(namespace))
        return names

    def close(self, partitions: Sequence[TopicPartition]) -> None:
        # Step 5
        if not self._failed:
            self._commit()
        for tp in partitions:
            self.next_offset.pop(tp, None)

    def stop(self) -> None:
        pass  # called from another thread: close() on the task's thread commits

    # ------------------------------------------------------------------ put

    def put_batches(self, batches: Sequence[SinkBatch]) -> None:
        # Step 2
        from connect.api import file_batch

        for batch in batches:
            tp = TopicPartition(batch.topic, batch.partition)
            expected = self.next_offset.get(tp)
            if expected is not None:
                kept = batch.since(expected)
                if kept is None:
                    continue
                batch = kept
            if len(batch):
                self._route(tp, file_batch(batch.value_schema, batch.values), batch.offsets)
            self.next_offset[tp] = batch.last_offset + 1
            self._polled = True

    def put(self, records: Sequence[SinkRecord]) -> None:
        # Step 2
        if records:
            by_tp: dict[TopicPartition, list[SinkRecord]] = {}
            for rec in records:
                by_tp.setdefault(rec.topic_partition, []).append(rec)
            for tp, recs in by_tp.items():
                self._put_partition(tp, recs)
        # Step 3
        caught_up = not records and not self._polled
        self._polled = False
        due = self._clock() - self._waiting_since >= self.settings.commit_interval_ms / 1000
        limit = self.settings.max_buffered
        if self._buffered and (due or self._buffered >= limit
                               or (caught_up and self._buffered >= limit * _CAUGHT_UP)):
            self._commit()
            self.context.request_commit()

    def _put_partition(self, tp: TopicPartition, recs: list[SinkRecord]) -> None:
        import numpy as np

        from connect.api import batch_from_values, file_batch

        expected = self.next_offset.get(tp)
        if expected is not None and recs[0].kafka_offset < expected:
            recs = [r for r in recs if r.kafka_offset >= expected]
            if not recs:
                return
        run: list[SinkRecord] = []
        for rec in [*recs, None]:
            if run and (rec is None or rec.value is None
                        or rec.value_schema != run[0].value_schema):
                schema = run[0].value_schema
                values = file_batch(schema, batch_from_values(schema, [r.value for r in run]))
                self._route(tp, values, np.fromiter(map(_OFFSET, run), np.int64, len(run)))
                run = []
            if rec is not None and rec.value is not None:
                run.append(rec)
        self.next_offset[tp] = recs[-1].kafka_offset + 1

    def _route(self, tp: TopicPartition, batch: pa.RecordBatch, offsets: np.ndarray) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        data = pa.Table.from_batches([batch])
        field = self.settings.route_field
        if field is None:
            targets = [(name, data, offsets) for name in self.settings.tables]
        else:
            if field not in data.column_names:
                raise DataError(f"iceberg.tables.route-field={field} is not a field of the "
                                f"records of {tp}")
            route = data.column(field).cast(pa.string())
            # Tables are chosen per distinct value, not per record.
            chosen: dict[str, list[str]] = {}
            for value in pc.unique(route).to_pylist():
                if value is None:
                    raise DataError(f"a record of {tp} has no value for the route field {field}")
                names = [value.lower()] if self.settings.dynamic else self._static_tables(value)
                for name in names:  # none: Apache's sink drops the record too
                    chosen.setdefault(name, []).append(value)
            targets = []
            for name, values in chosen.items():
                mask = pc.is_in(route, value_set=pa.array(values, pa.string()))
                targets.append((name, data.filter(mask), offsets[mask.to_numpy(False)]))
        for name, rows, where in targets:
            writer = self._writer(name)
            held = writer.committed.get(tp)
            if held is not None and len(where) and where[0] < held:
                rows = rows.filter(pa.array(where >= held))
            if not self._buffered and rows.num_rows:
                # The interval bounds how long rows wait: it starts with the first row
                # buffered, not at the last commit (a task resumed after a pause, or
                # busy again after an idle spell, committed its first poll alone).
                self._waiting_since = self._clock()
            writer.add(rows)
            self._buffered += rows.num_rows

    def _static_tables(self, value: str) -> list[str]:
        """The tables a route field's `value` goes to with static routing: those whose
        `route-regex` matches it whole (Java's `matcher().matches()`, what Apache's
        sink calls), and those with no regex whose full or last name it equals
        lowercased (ours; Apache's sink sends nothing to a table without a regex)."""
        lower = value.lower()
        return [name for name, regex in self._routes
                if (regex.fullmatch(value) is not None if regex is not None
                    else lower in (name.lower(), name.rsplit(".", 1)[-1].lower()))]

    # --------------------------------------------------------------- commit

    def _commit(self) -> None:
        # Step 3
        pending = [w for w in self.writers.values() if w.batches]
        pending.sort(key=lambda w: bool(w.committed))  # new to the connector first
        from connectors.iceberg.writer import StaleWriterError

        try:
            for writer in pending:
                offsets = {
                    tp: max(offset, writer.committed.get(tp, offset))
                    for tp, offset in self.next_offset.items()
                }
                writer.commit(offsets)
        except StaleWriterError as exc:
            _log.warning("%s; dropping the buffered rows and reading again from the "
                         "table's offsets", exc)
            for writer in self.writers.values():
                writer.drop()
            self._resume_from_tables(list(self.next_offset), stale=True)
        except Exception:
            self._failed = True
            raise
        self._buffered = 0
        self._waiting_since = self._clock()

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        # Step 4
        safe = {}
        for tp in offsets:
            held = [w.committed[tp] for w in self.writers.values() if tp in w.committed]
            if held:
                safe[tp] = min(held)
        return safe
