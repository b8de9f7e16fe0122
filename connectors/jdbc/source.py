"""JdbcSource: query-based capture from any database SQLAlchemy reaches, with the
configs, modes, source partitions and offsets of Confluent's JdbcSourceConnector.

Each table (or one custom `query`) is polled every `poll.interval.ms` with a query
chosen by `mode` (see `connectors.jdbc.source_querier` for the SQL; every key is
declared in `connectors.jdbc.source_config`):

- `bulk`: the whole table each time (no offset);
- `incrementing`: rows whose `incrementing.column.name` (default: the table's
  autoincrement column) is above the last one — new rows only;
- `timestamp`: rows whose `timestamp.column.name` (several columns: their COALESCE) is
  after the last one — new and updated rows;
- `timestamp+incrementing`: both, which makes the position exact even when many rows
  share a timestamp.

Records: topic `topic.prefix` + table name (the query: `topic.prefix` itself), value a
Struct named after the table with one field per column (see `connectors.jdbc.types` for
the mapping), no key. Source partition `{"protocol": "1", "table": "<fqn>"}` where fqn is
`<database>.<schema>.<table>` on PostgreSQL and `<table>` on SQLite (Confluent's format;
an offset stored under its older `{"table": "<name>"}` partition is read too), or
`{"query": "query"}`. Offset `{"incrementing": n, "timestamp": ms, "timestamp_nanos":
ns}` — the nanoseconds within the second keep the column's precision. A restart reads
on from the offset of the last record committed: nothing lost, and in `incrementing`
and `timestamp+incrementing` modes nothing repeated (in `timestamp` mode a group of
rows sharing a timestamp may be read again).

Tables: every table (`table.types`) in the database's user schemas, narrowed by
`table.whitelist` / `table.include.list` or `table.blacklist` / `table.exclude.list`
(entries match `table`, `schema.table` or the fqn). Tasks split the tables
round-robin. The connector lists the tables again every `table.poll.interval.ms` and
asks for new task configs when the set changed.

What query-based capture cannot see (use log-based CDC, PostgresCdcSource, for these):

- Deletes. A deleted row is simply no longer there; no mode emits anything for it
  (soft deletes — a `deleted_at` column — turn them into updates it can see).
- Intermediate states: a row updated twice between polls is read once, as it is now.
- Rows committed late. A row's timestamp (or id) is taken when its statement runs,
  but other sessions see it only at commit. A long transaction can commit a row with a
  timestamp older than rows already read, and the offset has moved past it: it is never
  read. `timestamp.delay.interval.ms` holds back rows younger than the delay (the upper
  bound is the database's clock minus the delay), so any transaction shorter than the
  delay commits before its rows are due. Sequences have the same problem in
  `incrementing` mode, and no delay helps there.
- Clocks: the bound uses the database's clock; timestamps written by clients with
  other clocks, or in another zone than `db.timezone`, shift the window.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import zoneinfo
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from connect.api import (
    ConfigDef,
    ConfigError,
    ConfigValue,
    ConnectError,
    ExactlyOnceSupport,
    RetriableError,
    SourceConnector,
    SourceRecord,
    SourceTask,
)
from connectors.jdbc import source_config
from connectors.jdbc.dialects import (
    Dialect,
    TableId,
    check_connection,
    connect,
    dialect_for,
    is_transient,
)
from connectors.jdbc.source_config import CONFIG, MODES, TABLES_CONFIG, TASK_CONFIG, parse_config
from connectors.jdbc.source_querier import Querier
from connectors.jdbc.types import from_epoch_offset

__all__ = ["JdbcSourceConnector", "JdbcSourceTask"]

_log = logging.getLogger(__name__)


def _engine(cfg: Mapping[str, Any]) -> sa.Engine:
    password = cfg["connection.password"]
    return connect(
        cfg["connection.url"],
        user=cfg["connection.user"],
        password=password.value if password is not None else None,
        pool_pre_ping=True,
    )


def _matches(entries: list[str], dialect: Dialect, table: TableId) -> bool:
    names = {table.name, dialect.fqn(table)}
    if table.schema:
        names.add(f"{table.schema}.{table.name}")
    return any(e in names for e in entries)


def list_tables(engine: sa.Engine, dialect: Dialect, cfg: Mapping[str, Any]) -> list[TableId]:
    """The tables the config selects, sorted."""
    inspector = sa.inspect(engine)
    types = {t.strip().upper() for t in cfg["table.types"]}
    schemas: list[str | None] = (
        [cfg["schema.pattern"]] if cfg["schema.pattern"] else dialect.user_schemas(inspector)
    )
    found: list[TableId] = []
    for schema in schemas:
        names: list[str] = []
        if "TABLE" in types:
            names += inspector.get_table_names(schema=schema)
        if "VIEW" in types:
            names += inspector.get_view_names(schema=schema)
        if "MATERIALIZED VIEW" in types and dialect.name == "postgresql":
            names += inspector.get_materialized_view_names(schema=schema)
        found += [dialect.table_id(schema, n) for n in names]
    include = cfg["table.whitelist"] or cfg["table.include.list"]
    exclude = cfg["table.blacklist"] or cfg["table.exclude.list"]
    if include:
        found = [t for t in found if _matches(include, dialect, t)]
    if exclude:
        found = [t for t in found if not _matches(exclude, dialect, t)]
    return sorted(set(found), key=lambda t: (t.schema or "", t.name))


def _db_reason(exc: sa.exc.DBAPIError) -> str:
    return str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)


class JdbcSourceConnector(SourceConnector):
    """Lists the tables, splits them among tasks, and watches for new ones."""

    VERSION = "0.1.0"

    def config(self) -> ConfigDef:
        return CONFIG

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        return source_config.validate(props)

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        self._cfg = cfg = parse_config(props)
        self._engine = _engine(cfg)
        self._dialect = dialect_for(self._engine)
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._monitor: threading.Thread | None = None
        self._tables: list[TableId] = []
        try:
            self._check_tables(cfg)
        except BaseException:
            # a connector whose start failed is not stopped: close its pool's connections
            self._engine.dispose()
            raise
        if cfg["query"]:
            return  # one query, no tables to watch
        self._monitor = threading.Thread(
            target=self._watch, name="jdbc-source-table-monitor", daemon=True
        )
        self._monitor.start()

    def _check_tables(self, cfg: Mapping[str, Any]) -> None:
        """Connect, list the tables and refuse a whitelist naming one that is missing
        or that may not be read."""
        check_connection(self._engine)
        if cfg["query"]:
            return
        self._tables = self._list()
        include = cfg["table.whitelist"] or cfg["table.include.list"]
        if include:
            key = "table.whitelist" if cfg["table.whitelist"] else "table.include.list"
            unmatched = [
                e for e in include if not any(_matches([e], self._dialect, t) for t in self._tables)
            ]
            if unmatched:
                raise ConfigError(
                    key,
                    ",".join(include),
                    f"no table {', '.join(unmatched)} in the database "
                    f"{self._dialect.database or ''} (or not of table.types)",
                )
            self._check_readable(key, self._tables)

    def _list(self) -> list[TableId]:
        return list_tables(self._engine, self._dialect, self._cfg)

    def _check_readable(self, key: str, tables: list[TableId]) -> None:
        """A table we may not read is refused now, not at the task's first poll."""
        with self._engine.connect() as conn:
            for table in tables:
                try:
                    conn.exec_driver_sql(
                        f"SELECT * FROM {self._dialect.table(table)} WHERE 1 = 0"
                    ).all()
                except sa.exc.DBAPIError as exc:
                    conn.rollback()
                    raise ConfigError(
                        key, str(table), f"cannot read table {table}: {_db_reason(exc)}"
                    ) from None

    def _watch(self) -> None:
        interval = self._cfg["table.poll.interval.ms"] / 1000
        while not self._stopped.wait(interval):
            try:
                tables = self._list()
            except sa.exc.SQLAlchemyError as exc:
                _log.warning("JdbcSource: listing tables failed, will retry: %s", exc)
                continue
            with self._lock:
                changed = tables != self._tables
                self._tables = tables
            if changed:
                _log.info("JdbcSource: the set of tables changed; reconfiguring tasks")
                self.context.request_task_reconfiguration()

    def task_class(self) -> type:
        return JdbcSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self._cfg["query"]:
            return [dict(self._props)]
        with self._lock:
            tables = list(self._tables)
        if not tables:
            _log.warning("JdbcSource: no tables to copy yet; no tasks")
            return []
        groups: list[list[TableId]] = [[] for _ in range(min(max_tasks, len(tables)))]
        for i, table in enumerate(tables):
            groups[i % len(groups)].append(table)
        return [
            dict(
                self._props,
                **{TABLES_CONFIG: json.dumps([[t.schema, t.name] for t in group])},
            )
            for group in groups
        ]

    def stop(self) -> None:
        self._stopped.set()
        if self._monitor is not None:
            self._monitor.join(timeout=10)
        self._engine.dispose()

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Supported where a stored offset says exactly which rows come next (the
        incrementing and timestamp modes read on from it: records and offsets written
        in one transaction leave nothing read twice by a restart, apart from the
        timestamp mode's rows sharing the last timestamp, see the module docstring);
        `bulk` reads the whole table each time, which no offset can resume."""
        mode = props.get("mode", "")
        if mode == "bulk":
            return ExactlyOnceSupport.UNSUPPORTED
        return ExactlyOnceSupport.SUPPORTED if mode in MODES else None


class JdbcSourceTask(SourceTask):
    """Polls its share of the tables (or the query), one batch per `poll()`."""

    VERSION = "0.1.0"

    def start(self, props: Mapping[str, str]) -> None:
        self._cfg = cfg = parse_config(props, TASK_CONFIG)
        self._engine = _engine(cfg)
        self._dialect = dialect_for(self._engine)
        self._batch = cfg["batch.max.rows"]
        self._interval = cfg["poll.interval.ms"] / 1000
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        check_connection(self._engine)
        self._queriers: list[Querier] = []
        reader = self.context.offset_storage_reader
        zone = zoneinfo.ZoneInfo(cfg["db.timezone"])
        initial = None
        if cfg["timestamp.initial"] is not None:
            ms = cfg["timestamp.initial"]
            initial = from_epoch_offset(int(time.time() * 1000) if ms == -1 else ms, None)
        common: dict[str, Any] = {
            "dialect": self._dialect,
            "mode": cfg["mode"],
            "suffix": cfg["query.suffix"],
            "incrementing": cfg["incrementing.column.name"] or None,
            "timestamps": cfg["timestamp.column.name"],
            "delay_ms": cfg["timestamp.delay.interval.ms"],
            "zone": zone,
            "numeric_mapping": cfg["numeric.mapping"],
            "validate_non_null": cfg["validate.non.null"],
            "initial": initial,
        }
        if cfg["query"]:
            partition = {"query": "query"}
            self._queriers.append(
                Querier(
                    topic=cfg["topic.prefix"],
                    partition=partition,
                    query=cfg["query"],
                    offset=reader.offset(partition),
                    **common,
                )
            )
            return
        for schema, name in json.loads(cfg[TABLES_CONFIG]):
            table = self._dialect.table_id(schema, name)
            partition = {"protocol": "1", "table": self._dialect.fqn(table)}
            offset = reader.offset(partition)
            if offset is None:  # stored by the older protocol, keyed by the bare name
                offset = reader.offset({"table": table.name})
            self._queriers.append(
                Querier(
                    topic=cfg["topic.prefix"] + table.name,
                    partition=partition,
                    table=table,
                    offset=offset,
                    **common,
                )
            )

    def poll(self) -> list[SourceRecord] | None:
        with self._lock:
            if self._stopped.is_set() or not self._queriers:
                self._stopped.wait(1.0)
                return None
            querier = min(self._queriers, key=lambda q: q.next_poll)
            now = time.monotonic()
            if querier.next_poll > now:
                wait = min(querier.next_poll - now, 1.0)
            else:
                wait = 0.0
                records = self._read(querier)
                if not querier.active:
                    querier.next_poll = time.monotonic() + self._interval
                if records:
                    return records
        if wait:
            self._stopped.wait(wait)
        return None

    def _read(self, querier: Querier) -> list[SourceRecord]:
        try:
            return querier.read(self._engine, self._batch)
        except sa.exc.OperationalError as exc:
            querier.close()
            querier.next_poll = time.monotonic() + min(self._interval, 5.0)
            # MySQL reports a missing privilege (and other lasting errors) as an
            # OperationalError too: its error code tells (`is_transient`).
            denied = isinstance(exc.orig, Exception) and "privilege" in str(exc.orig).lower()
            if denied or not is_transient(exc, self._engine.dialect):
                raise ConnectError(f"cannot read {querier.name}: {_db_reason(exc)}") from exc
            raise RetriableError(f"reading {querier.name} failed: {_db_reason(exc)}") from exc
        except sa.exc.DBAPIError as exc:
            querier.close()
            raise ConnectError(f"reading {querier.name} failed: {_db_reason(exc)}") from exc
        except BaseException:
            querier.close()
            raise

    def wakeup(self) -> None:
        self._stopped.set()  # the poll's wait ends; stop() releases the rest

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            for querier in getattr(self, "_queriers", []):
                querier.close()
            engine = getattr(self, "_engine", None)
            if engine is not None:
                engine.dispose()
