"""MySqlCdcSource: log-based change data capture from MySQL and MariaDB, like Debezium's
MySQL and MariaDB connectors (their configs, envelope, topics and offsets).

One task. How it runs:

1. Checks (`connectors.mysql.checks`), before anything is read: the binlog is on,
   row-based, with full row images and full row metadata; the user may read it
   (REPLICATION SLAVE, REPLICATION CLIENT); a stored position is still on the server.
   Each failure is one line saying what to fix.
2. Where to start, by `snapshot.mode` and the offsets (partition
   `{"server": <topic.prefix>}`): initial / when_needed without a completed snapshot
   in the offsets, when_needed also when the stored binlog file was purged → snapshot;
   no_data / never without offsets → stream from the current position; otherwise
   stream from the offset.
3. Snapshot (`connectors.mysql.snapshot`): one consistent transaction, its binlog
   position read under the lock `snapshot.locking.mode` asks for; the stream starts at
   that position, so no change is missed and none is emitted twice.
4. Streaming (`connectors.mysql.binlog`): the binlog from the position, each row
   decoded with the table's shape the binlog itself records at that point.
5. Signals (`signal.data.collection`, `connectors.mysql.signals`): rows of the signal
   table read from the stream; `execute-snapshot` runs an incremental snapshot
   (`connectors.mysql.incremental`) while streaming goes on, its progress in the
   offsets (`incremental_snapshot_*`), so a restart goes on with the next chunk.

Offsets (Debezium's keys): `file`, `pos` (the start of the transaction in progress, or
the position after the last one), `gtids` (the GTID position completed before it),
`event` / `row` (rows events of the transaction, and rows of the next one, already
emitted), `server_id`, `ts_sec`; a snapshot's reads `snapshot: INITIAL`, its last read
`snapshot_completed: true`.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigError,
    ConnectError,
    SourceRecord,
    SourceTask,
    Struct,
)
from connectors.cdc_connector import SingleTaskCdcConnector
from connectors.mysql.checks import binlog_files, check_privileges, check_server, server_kind
from connectors.mysql.config import (
    CONFIG,
    connection_params,
    describe_connection,
    parse_config,
    type_options,
)
from connectors.mysql.envelope import (
    VERSION,
    ddl_records,
    schema_change_value_schema,
    source_block,
    source_schema,
)
from connectors.mysql.signals import check_signal_table
from connectors.mysql.tables import Table, read_tables
from connectors.postgres.envelope import HEARTBEAT_KEY_SCHEMA, HEARTBEAT_VALUE_SCHEMA
from connectors.postgres.tables import ColumnFilter

__all__ = ["MySqlCdcSourceConnector", "MySqlCdcSourceTask"]


class _Filter:
    """database.* and table.* include/exclude lists: whole-name matches ignoring case,
    as Debezium's selectors match."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        def compile_(key: str) -> list[re.Pattern[str]]:
            return [re.compile(p, re.IGNORECASE) for p in cfg[key]]

        self.db_in, self.db_out = (
            compile_("database.include.list"),
            compile_("database.exclude.list"),
        )
        self.t_in, self.t_out = compile_("table.include.list"), compile_("table.exclude.list")

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one filter per task, few tables
    def __call__(self, db: str, table: str) -> bool:
        if db in ("mysql", "information_schema", "performance_schema", "sys"):
            return False
        if self.db_in and not any(p.fullmatch(db) for p in self.db_in):
            return False
        if any(p.fullmatch(db) for p in self.db_out):
            return False
        if not table:  # a database as a whole (DDL without a table)
            return True
        name = f"{db}.{table}"
        if self.t_in:
            return any(p.fullmatch(name) for p in self.t_in)
        return not any(p.fullmatch(name) for p in self.t_out)


def _connect(params: Mapping[str, Any], key: str) -> Any:
    import pymysql

    try:
        return pymysql.connect(**params, autocommit=True)
    except pymysql.err.OperationalError as exc:
        raise ConfigError(
            key, describe_connection(params), f"cannot connect to MySQL/MariaDB: {exc.args[-1]}"
        ) from None


class MySqlCdcSourceConnector(SingleTaskCdcConnector):
    """Checks the config and hands it to its single task (connectors.cdc_connector)."""

    VERSION = VERSION
    CONFIG = CONFIG
    parse = staticmethod(parse_config)

    def task_class(self) -> type:
        return MySqlCdcSourceTask


class MySqlCdcSourceTask(SourceTask):
    """Snapshot, then stream (see the module docstring)."""

    VERSION = VERSION

    def start(self, props: Mapping[str, str]) -> None:
        self._cfg = cfg = parse_config(props)
        self._prefix: str = cfg["topic.prefix"]
        self._partition: dict[str, Any] = {"server": self._prefix}
        self._params = connection_params(cfg)
        self._key = "connection.url" if cfg["connection.url"] else "database.hostname"
        self._filter = _Filter(cfg)
        self._columns = ColumnFilter(cfg["column.include.list"], cfg["column.exclude.list"])
        self._types = type_options(cfg)
        self._history_topic: str | None = cfg["schema.history.internal.kafka.topic"]
        self._batch: int = cfg["max.batch.size"]
        self._poll_s: float = cfg["poll.interval.ms"] / 1000
        self._heartbeat_s: float = cfg["heartbeat.interval.ms"] / 1000
        self._stopping = threading.Event()
        self._snapshot: Any = None
        self._reader: Any = None
        self._done = False
        self._last_heartbeat = time.monotonic()
        conn = _connect(self._params, self._key)
        try:
            with conn.cursor() as cur:
                self._mariadb, self._server_id = server_kind(cur)
                check_server(cur)  # Step 1
                check_privileges(cur, self._params)
                if cfg["signal.data.collection"]:  # Step 5: the user writes watermarks
                    check_signal_table(
                        cur,
                        cfg["signal.data.collection"],
                        self._params.get("user", ""),
                        deletes=self._deletes_watermarks(),
                    )
                files = binlog_files(cur)
        finally:
            conn.close()
        connector = "mariadb" if self._mariadb else "mysql"
        self._source_schema = source_schema(connector)
        self._source = functools.partial(
            self._make_source, connector=connector, schema=self._source_schema
        )
        offset = self.context.offset_storage_reader.offset(self._partition)
        self._start_position(offset, files)  # Step 2

    def _deletes_watermarks(self) -> bool:
        return self._cfg["incremental.snapshot.watermarking.strategy"] == "insert_delete"

    def _incremental(self, start: Mapping[str, Any]) -> Any:
        """Step 5: the incremental snapshot the stream drives (None without a signal
        table), going on with the one `start` (the stored offset) holds."""
        signal = self._cfg["signal.data.collection"]
        if not signal:
            return None
        from connectors.mysql.incremental import IncrementalSnapshot

        return IncrementalSnapshot(
            params=self._params,
            signal=signal,
            chunk=self._cfg["incremental.snapshot.chunk.size"],
            strategy=self._cfg["incremental.snapshot.watermarking.strategy"],
            captured=self._filter,
            build=self._build,
            source=self._source,
            partition=self._partition,
            stored=start,
        )

    def _make_source(
        self, *, connector: str, schema: Any, server_id: int = 0, **fields: Any
    ) -> Struct:
        return source_block(
            schema,
            connector=connector,
            prefix=self._prefix,
            server_id=server_id or self._server_id,
            **fields,
        )

    def _build(self, table: Table) -> Table:
        return table.build(self._prefix, self._types, self._source_schema, self._columns)

    def _start_position(self, offset: Mapping[str, Any] | None, files: list[str]) -> None:
        mode = self._cfg["snapshot.mode"]
        completed = offset is not None and not offset.get("snapshot")
        purged = completed and offset is not None and offset.get("file") not in files
        if purged and mode != "when_needed":
            raise ConnectError(
                f"the stored binlog position {offset['file']}:{offset['pos']} is no longer "  # type: ignore[index]
                f"on the server (purged; the oldest file is {files[0] if files else 'none'}): "
                "set snapshot.mode=when_needed to snapshot again, or delete the offsets"
            )
        if (mode in ("initial", "initial_only", "when_needed") and not completed) or (
            purged and mode == "when_needed"
        ):
            self._open_snapshot()  # Step 3
            return
        if mode == "initial_only":
            self._done = True
            return
        if offset is not None and completed:
            start = dict(offset)
        elif mode == "never":  # Debezium's: the whole binlog the server still has
            start = {"file": files[0] if files else "", "pos": 4, "gtids": None}
        else:  # no_data without offsets: from now on
            conn = _connect(self._params, self._key)
            try:
                with conn.cursor() as cur:
                    cur.execute("SHOW MASTER STATUS")
                    row = cur.fetchone()
                    cur.execute(
                        "SELECT @@gtid_binlog_pos" if self._mariadb else "SELECT @@gtid_executed"
                    )
                    gtids = cur.fetchone()[0]
                    start = {"file": row[0], "pos": int(row[1]), "gtids": gtids or None}
            finally:
                conn.close()
        self._start_streaming(start)

    def _open_snapshot(self) -> None:
        from connectors.mysql.snapshot import SnapshotPhase, open_snapshot

        conn = _connect(self._params, self._key)
        try:
            locking = self._cfg["snapshot.locking.mode"]
            position, locked = open_snapshot(conn, locking=locking, mariadb=self._mariadb)
            with conn.cursor() as cur:
                tables = [self._build(t) for t in read_tables(cur, self._filter)]  # Step 5
                ddl = []
                wants_ddl = self._cfg["include.schema.changes"] or self._history_topic
                for table in tables if wants_ddl else []:
                    cur.execute(f"SHOW CREATE TABLE `{table.db}`.`{table.name}`")
                    ddl.append((table, cur.fetchone()[1]))
            self._snapshot = SnapshotPhase(
                conn=conn,
                locked=locked,
                locking=locking,
                position=position,
                tables=tables,
                source=self._source,
                partition=self._partition,
                fetch_rows=self._cfg["snapshot.fetch.size"],
                batch_rows=self._batch,
                poll_s=self._poll_s,
                ddl=ddl,
                ddl_records=functools.partial(
                    ddl_records,
                    prefix=self._prefix,
                    partition=self._partition,
                    change_schema=(
                        schema_change_value_schema(self._source_schema)
                        if self._cfg["include.schema.changes"]
                        else None
                    ),
                    history_topic=self._history_topic,
                ),
            )
        except BaseException:
            conn.close()
            raise

    def _start_streaming(self, start: Mapping[str, Any]) -> None:
        from connectors.mysql.binlog import BinlogReader

        self._reader = BinlogReader(
            params=self._params,
            server_id=self._cfg["database.server.id"],
            start=dict(start),
            mariadb=self._mariadb,
            prefix=self._prefix,
            partition=self._partition,
            captured=self._filter,
            build=self._build,
            source=self._source,
            source_schema=self._source_schema,
            skipped=set(self._cfg["skipped.operations"]) - {"none"},
            tombstones=self._cfg["tombstones.on.delete"],
            schema_changes=self._cfg["include.schema.changes"],
            history_topic=self._history_topic,
            incremental=self._incremental(start),
        )

    def poll(self) -> list[Any] | None:
        if self._snapshot is not None:
            records = self._snapshot.next_batch()
            if records is not None:
                return records
            position = self._snapshot.position
            self._snapshot = None
            if self._cfg["snapshot.mode"] == "initial_only":
                self._done = True
                return None
            self._start_streaming(position)
            return None
        if self._done or self._reader is None:
            self._stopping.wait(self._poll_s)
            return None
        committed = self._reader.committed  # read before idle(): see _heartbeat
        out = self._reader.poll(self._batch, self._poll_s)
        if not out and self._heartbeat_s:
            self._heartbeat(committed, out)
        return out or None

    def _heartbeat(self, committed: Mapping[str, Any], out: list[SourceRecord]) -> None:
        """A heartbeat carries the position after the last transaction handed over,
        read before the queue was found empty, so it is never ahead of a record still
        to come."""
        now = time.monotonic()
        if now - self._last_heartbeat < self._heartbeat_s or not self._reader.idle():
            return
        self._last_heartbeat = now
        key = Struct.trusted(HEARTBEAT_KEY_SCHEMA, [self._prefix])
        value = Struct.trusted(HEARTBEAT_VALUE_SCHEMA, [int(time.time() * 1000)])
        out.append(
            SourceRecord.of(
                f"__debezium-heartbeat.{self._prefix}",
                HEARTBEAT_KEY_SCHEMA,
                key,
                HEARTBEAT_VALUE_SCHEMA,
                value,
                self._partition,
                dict(committed),
            )
        )

    def stop(self) -> None:
        if not hasattr(self, "_stopping"):
            return
        self._stopping.set()
        for part in (getattr(self, "_snapshot", None), getattr(self, "_reader", None)):
            if part is not None:
                with contextlib.suppress(Exception):
                    part.close()
