"""JdbcSink: writes records into database tables, as Confluent's JdbcSinkConnector.

Configs and semantics are Confluent's (see `sink_config` for every key):
`connection.url` (a JDBC or SQLAlchemy URL) with `connection.user`/`connection.password`;
`insert.mode` insert | upsert | update; `pk.mode` none | kafka | record_key |
record_value with `pk.fields`; `fields.whitelist`; `table.name.format` (`${topic}`);
`auto.create`, `auto.evolve`; `delete.enabled` (a tombstone deletes its key's row);
`truncate.enabled` (a truncate event empties the table, as Debezium's JDBC sink);
`batch.size`; `db.timezone`; `max.retries`/`retry.backoff.ms`; `quote.sql.identifiers`.

Values are Connect structs with a schema, or — into a table that exists — schemaless
maps (dicts), whose keys name the columns. What goes into which column is
`sink_fields`; how it gets there is `sink_writer` (the transaction), `sink_tables` (DDL),
`sink_statements` (per-dialect statements) and `sink_copy` (the PostgreSQL COPY fast
path).

Delivery: each `put()` is written in one database transaction, committed before
`put()` returns, so the offsets the runtime commits afterwards never point past rows a
crash could lose, and a crash never leaves part of a put behind. After a crash the
records since the last offset commit come again: with `insert.mode=upsert` (and a real
key) writing them again changes nothing, which makes the pipeline exactly-once in
effect. Within a put, each table's records are written in order; consecutive records
of one shape and operation go together, so a delete between two upserts of a key is
applied between them, and a truncate empties the table exactly where it stands. With
`insert.mode=upsert`, a stretch of upserts of one shape and deletes is written as the
last operation per key (`sink_writer.reduce_runs`): the same table, in two statements
instead of one per change of operation (a CDC stream changes it in every transaction).

Truncates. A truncate event is a Debezium change event (a struct or map with `op`,
`before`, `after`) whose `op` is `t`; ExtractNewRecordState passes it on unchanged with
`truncate.handling.mode=keep`. With `truncate.enabled` it deletes every row of its
topic's table (DELETE, not TRUNCATE: it must stay inside the put's transaction on every
database, and SQLite has no TRUNCATE); without, it is a record the sink cannot write.

Errors: a transient database error (connection lost, server shutting down, deadlock or
serialization failure: OperationalError and InterfaceError, SQLAlchemy's or the
driver's; on MySQL, whose drivers raise OperationalError for data errors too, the
error code decides — `dialects.is_transient`) raises RetriableError, so the runtime
delivers the same records again after `retry.backoff.ms`, up to `max.retries` times in
a row; then the task fails. A table the config may not create or change
(TableSchemaError) and a misconfiguration fail the task at once. Every other failure
belongs to records — a value the column refuses, a constraint violation, a record the
sink cannot map (no schema and no table, a nested field, a tombstone without
`delete.enabled`):

1. A record that cannot be mapped to a row is known at once. A put that the database
   refuses is split in halves, each written in a transaction of its own, in record
   order, recursively, until the records it refuses alone are found (bisection: k bad
   records among n cost about k·log2(n) extra writes, nothing while no record is bad).
2. With `errors.tolerance=all`, each such record goes to the runtime's errant record
   reporter (the dead-letter topic `errors.deadletterqueue.topic.name` and/or the log),
   and every other record of the put is written. The put is then no longer one
   transaction: a crash in the middle brings the whole put again (at least once; with
   upsert, no harm), and its bad records are reported again. An upsert writes only
   the last record per key of a stretch of upserts and deletes, so a refused record
   that a later one of its key (or its delete) supersedes within the same write is
   never tried, and not reported.
3. With `errors.tolerance=none` (the default) nothing of the put is written and the
   task fails with a ConnectError naming the topic, partition and offset: the bad
   record's when it is known (mapping, or a put of one record), else the span of the
   put's offsets per partition.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigValue,
    ConnectError,
    DataError,
    RetriableError,
    Schema,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Struct,
    TopicPartition,
    Type,
)
from connectors.jdbc import sink_config
from connectors.jdbc.dialects import is_transient
from connectors.jdbc.sink_config import CONFIG, SinkSettings
from connectors.jdbc.sink_fields import FieldsPlan, plan_for
from connectors.jdbc.sink_tables import TableName, TableSchemaError, table_name
from connectors.jdbc.sink_writer import TRUNCATE, JdbcWriter, Run

__all__ = ["JdbcSinkConnector", "JdbcSinkTask", "RecordWriteError"]

VERSION = "0.1.0"
#: How long a put waits for the runtime to take an errant record.
_REPORT_TIMEOUT_S = 60.0

_log = logging.getLogger(__name__)


class JdbcSinkConnector(SinkConnector):
    """Splits nothing: every task gets the same config and a share of the topics'
    partitions through the consumer group."""

    VERSION = VERSION

    def config(self) -> ConfigDef:
        return CONFIG

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        return sink_config.validate(props)

    def start(self, props: Mapping[str, str]) -> None:
        SinkSettings.parse(props)  # refuse a bad config before any task starts
        self._props = dict(props)

    def task_class(self) -> type:
        return JdbcSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        return None

    def alter_offsets(
        self, props: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        return True  # offsets live only in the consumer group


def _is_truncate(value: Any) -> bool:
    """Whether `value` is a change event whose op is `t` (see the module docstring)."""
    if isinstance(value, Struct):
        schema = value.schema
        if schema.type is not Type.STRUCT:
            return False
        if any(schema.field(n) is None for n in ("op", "before", "after")):
            return False
        return value.get("op") == "t"
    if isinstance(value, Mapping):
        return value.get("op") == "t" and ("before" in value or "after" in value)
    return False


def _where(record: SinkRecord) -> str:
    return f"{record.topic}-{record.kafka_partition}@{record.kafka_offset}"


def _span(records: Sequence[SinkRecord]) -> str:
    """The offsets of `records` per topic partition: `t-0@5..9, u-1@3`."""
    spans: dict[tuple[str, int | None], tuple[int, int]] = {}
    for r in records:
        tp = (r.topic, r.kafka_partition)
        low, high = spans.get(tp, (r.kafka_offset, r.kafka_offset))
        spans[tp] = (min(low, r.kafka_offset), max(high, r.kafka_offset))
    return ", ".join(
        f"{t}-{p}@{lo}" if lo == hi else f"{t}-{p}@{lo}..{hi}" for (t, p), (lo, hi) in spans.items()
    )


class RecordWriteError(DataError):
    """A record the sink cannot write, with `errors.tolerance=none`: the task fails.
    `topic`, `partition` and `offset` say which record; `reason` is the error."""

    def __init__(self, record: SinkRecord, reason: BaseException) -> None:
        self.topic = record.topic
        self.partition = record.kafka_partition
        self.offset = record.kafka_offset
        self.reason = reason
        super().__init__(
            f"cannot write the record at {self.topic}-{self.partition}@{self.offset}: {reason}"
        )


class _Fatal(Exception):
    """Carries an error out of the bisection that must fail (or retry) the whole put."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class JdbcSinkTask(SinkTask):
    """Writes each `put()` in one transaction (see the module docstring).

    Every hook runs on the task's thread except `stop()`. `put()` blocks while the
    database works; it raises RetriableError after a transient database error (the
    same records come again after `retry.backoff.ms`), and reports the records the
    database refuses when `errors.tolerance=all` (see the module docstring)."""

    VERSION = VERSION

    def start(self, props: Mapping[str, str]) -> None:
        self.settings = SinkSettings.parse(props)
        self.writer = JdbcWriter(self.settings)
        self._retries_left = self.settings.max_retries
        self._plans: dict[tuple[Schema | None, Schema | None, Any], FieldsPlan] = {}
        self._tables: dict[str, TableName] = {}
        self._last: tuple[Any, Any, FieldsPlan] | None = None  # the last record shape
        # errors.* are the runtime's keys, handed to every task with the connector's
        # config; the sink reads the tolerance itself so that `none` fails the task
        # even when a reporter exists only to log (errors.log.enable).
        self._tolerate = str(props.get("errors.tolerance", "none")).strip().lower() == "all"

    # ------------------------------------------------------------------- put

    def put(self, records: Sequence[SinkRecord]) -> None:
        if not records:
            return
        try:
            batches, kept = self._group(records)
            try:
                self._write(batches)
            except _Fatal:
                raise
            except Exception as exc:  # the database refused the put
                if not self._tolerate:
                    if len(kept) == 1:
                        raise RecordWriteError(kept[0], exc) from exc
                    raise ConnectError(
                        f"writing {len(records)} records failed, at one of {_span(kept)} "
                        f"(errors.tolerance=all finds and reports it): {exc}"
                    ) from exc
                self._bisect(kept, exc)
        except _Fatal as fatal:
            raise self._fail(fatal.error, records) from fatal.error
        self._retries_left = self.settings.max_retries

    def _write(self, batches: list[tuple[TableName, list[Run]]]) -> None:
        """Write in one transaction. Errors that are no record's fault (transient ones,
        table and config problems, which every record would meet) come out as _Fatal."""
        if not batches:
            return
        try:
            self.writer.write(batches)
        except Exception as exc:
            self.writer.reset()
            if (
                self._is_transient(exc)
                or isinstance(exc, TableSchemaError)
                or (isinstance(exc, ConnectError) and not isinstance(exc, DataError))
            ):
                raise _Fatal(exc) from exc
            raise

    def _fail(self, error: BaseException, records: Sequence[SinkRecord]) -> Exception:
        """What `put` raises for an error that is no single record's fault."""
        if self._is_transient(error):
            if self._retries_left > 0:
                self._retries_left -= 1
                self.context.timeout(self.settings.retry_backoff_ms)
                return RetriableError(
                    f"transient database error writing {len(records)} records "
                    f"({self._retries_left} retries left): {error}"
                )
            return ConnectError(f"writing {len(records)} records failed: {error}")
        if isinstance(error, ConnectError):
            return error
        return ConnectError(f"writing {len(records)} records failed: {error}")

    def _is_transient(self, exc: BaseException) -> bool:
        return is_transient(exc, self.writer.dialect)

    def _bisect(self, records: Sequence[SinkRecord], error: BaseException) -> None:
        """Write `records`, known to fail together with `error`, in halves (each in its
        own transaction, left before right) until the records that fail alone are
        found; report those (module docstring, step 2)."""
        if len(records) == 1:
            self._errant(records[0], error)
            return
        middle = len(records) // 2
        for half in (records[:middle], records[middle:]):
            batches, kept = self._group(half)
            try:
                self._write(batches)
            except _Fatal:
                raise
            except Exception as exc:
                self._bisect(kept, exc)

    def _errant(self, record: SinkRecord, error: BaseException) -> None:
        """A record the sink cannot write: reported and skipped, or the task fails."""
        if not self._tolerate:
            raise RecordWriteError(record, error) from error
        reporter = getattr(self.context, "errant_record_reporter", None)
        if reporter is None:
            _log.warning("skipping the record at %s: %s", _where(record), error)
            return
        reporter.report(record, error).result(_REPORT_TIMEOUT_S)

    def _group(
        self, records: Sequence[SinkRecord]
    ) -> tuple[list[tuple[TableName, list[Run]]], list[SinkRecord]]:
        """Runs per table, in record order: consecutive records of one table, shape and
        operation share a run. A record that maps to no row is errant (`_errant`); the
        records that made it into the runs come back too."""
        per_table: dict[TableName, list[Run]] = {}
        tables = self._tables
        insert_mode = self.settings.insert_mode
        last_run: dict[TableName, Run] = {}
        kept: list[SinkRecord] = []
        for record in records:
            try:
                table = tables.get(record.topic)
                if table is None:
                    table = self._table_for(record.topic)
                op, plan, row = self._row(record, insert_mode)
            except (DataError, KeyError, TypeError, ValueError, AttributeError) as exc:
                self._errant(record, exc if isinstance(exc, DataError) else DataError(str(exc)))
                continue
            kept.append(record)
            run = last_run.get(table)
            if run is not None and run.plan is plan and run.op == op:
                run.rows.append(row)
            else:
                run = Run(plan, op, [row])
                last_run[table] = run
                per_table.setdefault(table, []).append(run)
        return list(per_table.items()), kept

    def _row(self, record: SinkRecord, insert_mode: str) -> tuple[str, FieldsPlan | None, tuple]:
        """(operation, plan, row) of one record; a truncate has no plan."""
        if record.value is None:
            if not self.settings.delete_enabled:
                raise DataError(
                    "a tombstone (null value): set delete.enabled=true "
                    "(with pk.mode=record_key) to delete rows, or drop tombstones with a "
                    "transform"
                )
            plan = self._plan(record)
            return "delete", plan, plan.key_row(record)
        last = self._last
        if (
            last is not None
            and last[0] is record.key_schema
            and last[1] is record.value_schema
            and record.value_schema is not None
        ):
            plan = last[2]
            return insert_mode, plan, plan.row(record)
        if _is_truncate(record.value):
            if not self.settings.truncate_enabled:
                raise DataError(
                    "a truncate event: set truncate.enabled=true to "
                    "empty the table, or drop truncates (ExtractNewRecordState's default)"
                )
            return TRUNCATE, None, ()
        plan = self._plan(record)
        return insert_mode, plan, plan.row(record)

    def _table_for(self, topic: str) -> TableName:
        table = table_name(
            self.settings.table_name_format,
            topic,
            max_length=self.writer.max_identifier_length,
        )
        self._tables[topic] = table
        return table

    def _plan(self, record: SinkRecord) -> FieldsPlan:
        key_schema, value_schema = record.key_schema, record.value_schema
        last = self._last
        tombstone = record.value is None
        if (
            last is not None
            and not tombstone
            and value_schema is not None
            and last[0] is key_schema
            and last[1] is value_schema
        ):
            return last[2]
        shape: Any = None
        if tombstone:
            shape = "tombstone"
        elif value_schema is None and isinstance(record.value, Mapping):
            shape = tuple(record.value)
        if key_schema is None and isinstance(record.key, Mapping):
            shape = (shape, tuple(record.key))
        cache_key = (key_schema, value_schema, shape)
        plan = self._plans.get(cache_key)
        if plan is None:
            plan = plan_for(self.settings, record, dialect=self.writer.dialect_name)
            self._plans[cache_key] = plan
        if not tombstone and value_schema is not None:
            self._last = (key_schema, value_schema, plan)
        return plan

    # --------------------------------------------------------------- the rest

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Nothing to do: every put() committed its transaction before returning."""

    def stop(self) -> None:
        writer = getattr(self, "writer", None)
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
