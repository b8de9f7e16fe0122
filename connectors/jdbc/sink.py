"""JdbcSink: writes records into database tables, as Confluent's JdbcSinkConnector.

Configs and semantics are Confluent's (see `sink_config` for every key):
`connection.url` (a SQLAlchemy URL) with `connection.user`/`connection.password`;
`insert.mode` insert | upsert | update; `pk.mode` none | kafka | record_key |
record_value with `pk.fields`; `fields.whitelist`; `table.name.format` (`${topic}`);
`auto.create`, `auto.evolve`; `delete.enabled` (a tombstone deletes its key's row);
`batch.size`; `db.timezone`; `max.retries`/`retry.backoff.ms`; `quote.sql.identifiers`.

Values are Connect structs with a schema, or — into a table that exists — schemaless
maps (dicts), whose keys name the columns. What goes into which column is
`sink_fields`; how it gets there (DDL, per-dialect statements, the PostgreSQL COPY fast
path) is `sink_writer`.

Delivery: each `put()` is written in one database transaction, committed before
`put()` returns, so the offsets the runtime commits afterwards never point past rows a
crash could lose, and a crash never leaves part of a put behind. After a crash the
records since the last offset commit come again: with `insert.mode=upsert` (and a real
key) writing them again changes nothing, which makes the pipeline exactly-once in
effect. Within a put, each table's records are written in order; consecutive records
of one shape and operation go together, so a delete between two upserts of a key is
applied between them.

Errors: a transient database error (connection lost, server shutting down, deadlock or
serialization failure: SQLAlchemy's OperationalError and InterfaceError) raises
RetriableError, so the runtime delivers the same records again after
`retry.backoff.ms`, up to `max.retries` times in a row; then, or for any other
database error, the task fails. A record the sink cannot map (no schema and no table, a
nested field, a tombstone without `delete.enabled`) is a DataError; a table the config
may not create or change is a TableSchemaError. Neither is retried.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

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
    TopicPartition,
)
from connectors.jdbc import sink_config
from connectors.jdbc.sink_config import CONFIG, SinkSettings
from connectors.jdbc.sink_fields import FieldsPlan, plan_for
from connectors.jdbc.sink_writer import JdbcWriter, Run, TableName, table_name

__all__ = ["JdbcSinkConnector", "JdbcSinkTask"]

VERSION = "0.1.0"


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


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.TimeoutError))


class JdbcSinkTask(SinkTask):
    """Writes each `put()` in one transaction (see the module docstring).

    Every hook runs on the task's thread except `stop()`. `put()` blocks while the
    database works; it raises RetriableError after a transient database error (the
    same records come again after `retry.backoff.ms`)."""

    VERSION = VERSION

    def start(self, props: Mapping[str, str]) -> None:
        self.settings = SinkSettings.parse(props)
        self.writer = JdbcWriter(self.settings)
        self._retries_left = self.settings.max_retries
        self._plans: dict[tuple[Schema | None, Schema | None, Any], FieldsPlan] = {}
        self._tables: dict[str, TableName] = {}
        self._last: tuple[Any, Any, FieldsPlan] | None = None  # the last record shape

    # ------------------------------------------------------------------- put

    def put(self, records: Sequence[SinkRecord]) -> None:
        if not records:
            return
        batches = self._group(records)
        try:
            self.writer.write(batches)
        except sa.exc.SQLAlchemyError as exc:
            self.writer.reset()
            if _is_transient(exc) and self._retries_left > 0:
                self._retries_left -= 1
                self.context.timeout(self.settings.retry_backoff_ms)
                raise RetriableError(
                    f"transient database error writing {len(records)} records "
                    f"({self._retries_left} retries left): {exc}"
                ) from exc
            raise ConnectError(f"writing {len(records)} records failed: {exc}") from exc
        self._retries_left = self.settings.max_retries

    def _group(self, records: Sequence[SinkRecord]) -> list[tuple[TableName, list[Run]]]:
        """Runs per table, in record order: consecutive records of one table, shape and
        operation share a run."""
        per_table: dict[TableName, list[Run]] = {}
        tables = self._tables
        insert_mode = self.settings.insert_mode
        last_run: dict[TableName, Run] = {}
        for record in records:
            table = tables.get(record.topic)
            if table is None:
                table = self._table_for(record.topic)
            if record.value is None:
                if not self.settings.delete_enabled:
                    raise DataError(
                        f"a tombstone (null value) at {record.topic}-{record.kafka_partition}"
                        f"@{record.kafka_offset}: set delete.enabled=true (with "
                        "pk.mode=record_key) to delete rows, or drop tombstones with a transform"
                    )
                plan = self._plan(record)
                op = "delete"
                row = plan.key_row(record)
            else:
                plan = self._plan(record)
                op = insert_mode
                row = plan.row(record)
            run = last_run.get(table)
            if run is not None and run.plan is plan and run.op == op:
                run.rows.append(row)
            else:
                run = Run(plan, op, [row])
                last_run[table] = run
                per_table.setdefault(table, []).append(run)
        return list(per_table.items())

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
            plan = plan_for(self.settings, record)
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
