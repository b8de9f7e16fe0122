"""PostgresCdcSource: log-based change data capture from PostgreSQL, like Debezium's
PostgreSQL connector (its configs, envelope, topics and offsets).

One task. How it runs:

1. Checks, before anything is created: the server has `wal_level = logical`, the user
   may replicate (REPLICATION or superuser) and read every captured table, and the
   slot is not held by another connection. Each failure is an error saying what to fix.
2. The publication (`publication.name`) is created when missing per
   `publication.autocreate.mode` (all_tables | filtered | disabled); filtered keeps its
   table list equal to what the include/exclude lists select.
3. Snapshot (`snapshot.mode` initial: when the offsets hold no completed snapshot;
   always: every start; initial_only: then stop; never: not at all). The slot is
   (re)created with `CREATE_REPLICATION_SLOT … LOGICAL pgoutput EXPORT_SNAPSHOT` on a
   replication connection, and a second connection reads every table in a REPEATABLE
   READ transaction that imports that snapshot (`SET TRANSACTION SNAPSHOT`): the rows
   read are exactly the data as of the slot's starting point, and the stream begins
   right after it, so no change is missed and none is emitted twice. Rows come
   through `COPY (SELECT …) TO STDOUT` in a reader thread with a bounded queue
   (`connectors.postgres.snapshot`), so memory does not grow with the table. Records
   are `op = r`, `source.snapshot` as Debezium marks reads: "first", "true",
   "last_in_data_collection" / "first_in_data_collection" at each table's ends, the
   very last one "last". A snapshot cut short is done again from the start (the slot
   is recreated: its unread changes are in the new snapshot's rows).
4. Streaming: `START_REPLICATION` with pgoutput (proto_version 1) from the offset's
   `lsn_commit`; each message is parsed (`connectors.postgres.pgoutput`) and becomes
   Debezium's change events (`connectors.postgres.changes`, in the envelope of
   `connectors.postgres.envelope`): c / u / d / t, a
   tombstone after each delete (`tombstones.on.delete`), a primary-key change as a
   delete + tombstone + create, `before` holding the old row only under REPLICA
   IDENTITY FULL (for deletes, otherwise, the key columns, other required columns
   with a zero value, as Debezium does; under FULL, an unchanged TOASTed value of
   the new row is the old row's).

Offsets: source partition `{"server": <topic.prefix>}`; offset `{"lsn", "txId",
"ts_usec", "lsn_commit", "lsn_proc"}` (snapshot records: `{"lsn", "txId", "ts_usec",
"snapshot": true, "last_snapshot_record"}`). `lsn_commit` is the end of the last
transaction every event of which has been emitted; the last event of a transaction
carries its own commit's end. On restart the stream starts at `lsn_commit`, and when
the first transaction it sends is the offset's `txId` (one not emitted whole), its
events up to `lsn` are skipped, so nothing is repeated (`changes.restart_position`
says why `lsn` beside `lsn_commit` cannot decide it).

The slot's confirmed flush position moves only in `commit()`, which the runtime calls
after the offsets are written and the records fsynced: to the `lsn_commit` of the
newest record `commit_record` saw in the log. A crash therefore never loses a change
the log has not got. Heartbeats (`heartbeat.interval.ms`) carry the server's position
while nothing is in flight, so a quiet database's slot moves too.
"""

from __future__ import annotations

import contextlib
import logging
import re
import select
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from connect.api import (
    ConfigError,
    ConnectError,
    RecordMetadata,
    SourceRecord,
    SourceTask,
)
from connectors.cdc_connector import SingleTaskCdcConnector
from connectors.postgres.changes import ChangeEvents, restart_position
from connectors.postgres.checks import (
    check_privileges,
    check_server,
    ensure_publication,
    quote,
    slot_state,
)
from connectors.postgres.config import (
    CONFIG,
    connection_params,
    describe_connection,
    parse_config,
    type_options,
)
from connectors.postgres.envelope import VERSION
from connectors.postgres.tables import ColumnFilter, Table, list_tables, read_table

if TYPE_CHECKING:
    from connectors.postgres.snapshot import SnapshotPhase

__all__ = ["PostgresCdcSourceConnector", "PostgresCdcSourceTask"]

_log = logging.getLogger(__name__)

_CHANGES = frozenset(b"IUDT")  # pgoutput's Insert, Update, Delete and Truncate tags
_COMMIT = 0x43


class _Filter:
    """table.include.list / table.exclude.list over `schema.table`: whole-name matches,
    ignoring case, as Debezium's selectors match (an unquoted name is folded to lower
    case by PostgreSQL, and configs often spell it otherwise)."""

    def __init__(self, include: list[str], exclude: list[str]) -> None:
        self.include = [re.compile(p, re.IGNORECASE) for p in include]
        self.exclude = [re.compile(p, re.IGNORECASE) for p in exclude]

    def __call__(self, schema: str, table: str) -> bool:
        name = f"{schema}.{table}"
        if self.include:
            return any(p.fullmatch(name) for p in self.include)
        return not any(p.fullmatch(name) for p in self.exclude)


def _psycopg2() -> Any:
    """psycopg2 with its replication extras, imported when a task first connects, not
    with this module: the worker's own process imports the connector class to validate
    configs and answer REST calls, and never opens a connection (libpq and psycopg2
    are ~11 MB of a task process's memory)."""
    import psycopg2.extras

    return psycopg2


def _connect(params: Mapping[str, Any], key: str, **extra: Any) -> Any:
    psycopg2 = _psycopg2()
    try:
        return psycopg2.connect(**params, **extra)
    except psycopg2.OperationalError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise ConfigError(
            key, describe_connection(params), f"cannot connect to PostgreSQL: {reason}"
        ) from None


class PostgresCdcSourceConnector(SingleTaskCdcConnector):
    """Checks the config and hands it to its single task (connectors.cdc_connector)."""

    VERSION = VERSION
    CONFIG = CONFIG
    parse = staticmethod(parse_config)

    def task_class(self) -> type:
        return PostgresCdcSourceTask


class PostgresCdcSourceTask(SourceTask):
    """Snapshot, then stream (see the module docstring)."""

    VERSION = VERSION

    # ----------------------------------------------------------------- start

    def start(self, props: Mapping[str, str]) -> None:
        self._cfg = cfg = parse_config(props)
        self._types = type_options(cfg)
        self._prefix: str = cfg["topic.prefix"]
        self._slot: str = cfg["slot.name"]
        self._publication: str = cfg["publication.name"]
        self._skipped = set(cfg["skipped.operations"]) - {"none"}
        self._tombstones: bool = cfg["tombstones.on.delete"]
        self._batch: int = cfg["max.batch.size"]
        self._poll_s: float = cfg["poll.interval.ms"] / 1000
        self._heartbeat_s: float = cfg["heartbeat.interval.ms"] / 1000
        self._filter = _Filter(cfg["table.include.list"], cfg["table.exclude.list"])
        self._columns = ColumnFilter(cfg["column.include.list"], cfg["column.exclude.list"])
        self._params = connection_params(cfg)
        self._key = "connection.url" if cfg["connection.url"] else "database.hostname"
        self._partition: dict[str, Any] = {"server": self._prefix}
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._repl: Any = None
        self._cursor: Any = None
        self._streaming = False
        self._held: Any = None  # a message read past a poll's end, first in the next
        self._snapshot: SnapshotPhase | None = None
        self._done = False
        self._durable_lsn = 0
        self._flushed_lsn = 0
        self._tables: dict[str, Table] = {}  # by schema.table

        self._conn = _connect(self._params, self._key)
        self._conn.autocommit = True
        try:
            with self._conn.cursor() as cur:
                check_server(cur, self._params)
                self._db = self._conn.get_dsn_parameters().get("dbname", "")
                selected = [(s, t) for s, t in list_tables(cur) if self._filter(s, t)]
                check_privileges(cur, self._params, selected)
                for schema, name in selected:
                    table = read_table(
                        cur, schema, name, self._prefix, types=self._types, columns=self._columns
                    )
                    if table is not None:
                        self._tables[table.qualified] = table
                ensure_publication(cur, self._cfg, selected)
                slot = slot_state(cur, self._slot, self._db)
            self._events = ChangeEvents(
                prefix=self._prefix,
                db=self._db,
                partition=self._partition,
                types=self._types,
                skipped=self._skipped,
                tombstones=self._tombstones,
                captures=self._filter,
                tables=self._tables,
                reread=self._reread,
                columns=self._columns,
            )
            offset = self.context.offset_storage_reader.offset(self._partition)
            self._start_position(offset, slot)
        except BaseException:
            self.stop()
            raise

    def _start_position(self, offset: Mapping[str, Any] | None, slot: Any) -> None:
        mode = self._cfg["snapshot.mode"]
        completed = offset is not None and (
            not offset.get("snapshot") or bool(offset.get("last_snapshot_record"))
        )
        wants = mode == "always" or (mode in ("initial", "initial_only") and not completed)
        if wants:
            # Imported here: the snapshot's columnar path loads pyarrow (~40 MB with
            # numpy), which a task that only streams (never, no_data, a done snapshot)
            # does not need.
            from connectors.postgres.snapshot import SnapshotPhase

            if slot is not None:
                # the slot's position is not our snapshot's: start both anew together
                with self._conn.cursor() as cur:
                    cur.execute("SELECT pg_drop_replication_slot(%s)", (self._slot,))
            self._open_replication()
            self._snapshot = SnapshotPhase(
                repl_cursor=self._cursor,
                lock=self._lock,
                slot=self._slot,
                connect=lambda: _connect(self._params, self._key),
                tables=list(self._tables.values()),
                envelope=self._events.envelope,
                prefix=self._prefix,
                db=self._db,
                partition=self._partition,
                fetch_rows=self._cfg["snapshot.fetch.size"],
                batch_rows=self._batch,
                poll_s=self._poll_s,
            )
            return
        if mode == "initial_only":
            self._done = True
            return
        self._open_replication()
        if slot is None:
            with self._lock:
                self._cursor.execute(
                    f"CREATE_REPLICATION_SLOT {quote(self._slot)} LOGICAL pgoutput "
                    "NOEXPORT_SNAPSHOT"
                )
                self._cursor.fetchall()
        start, self._events.resume = restart_position(offset)
        self._start_streaming(start)

    def _reread(self, schema: str, name: str) -> Table | None:
        """A captured table read from the catalog again (a relation changed)."""
        with self._conn.cursor() as cur:
            return read_table(
                cur, schema, name, self._prefix, types=self._types, columns=self._columns
            )

    def _open_replication(self) -> None:
        conn = _connect(
            self._params,
            self._key,
            connection_factory=_psycopg2().extras.LogicalReplicationConnection,
        )
        self._repl = conn
        self._cursor = conn.cursor()

    # ------------------------------------------------------------- streaming

    def _start_streaming(self, start_lsn: int) -> None:
        self._events.restart(start_lsn)
        self._last_heartbeat = time.monotonic()
        try:
            with self._lock:
                self._cursor.start_replication(
                    slot_name=self._slot,
                    decode=False,
                    start_lsn=start_lsn,
                    options={"proto_version": "1", "publication_names": self._publication},
                )
        except _psycopg2().Error as exc:
            raise ConnectError(
                f"cannot stream from slot {self._slot!r}: {str(exc).strip()}"
            ) from None
        self._streaming = True

    def poll(self) -> list[SourceRecord] | None:
        if self._snapshot is not None:
            records = self._snapshot.next_batch()
            if records is not None:
                return records
            end = self._snapshot.consistent_lsn
            self._snapshot = None
            if self._cfg["snapshot.mode"] == "initial_only":
                self._done = True
                return None
            self._start_streaming(end)
            return None
        if self._done or not self._streaming:
            self._stopping.wait(self._poll_s)
            return None
        return self._stream()

    def _stream(self) -> list[SourceRecord] | None:
        """One poll's events: up to `max.batch.size`, but never ending between two
        changes of one LSN. A COPY writes its rows as one WAL record (a multi-insert),
        so their Inserts share its LSN, and a restart skips the resumed transaction's
        changes by LSN (`changes.restart_position`): an offset inside such a run would
        drop the rows of it not yet emitted. So past the limit the next message is read
        to know: a change of the same LSN is taken (a poll may pass the limit by the
        rest of a run: one heap page's rows at most), a Commit is handled (the run's
        last record then carries it), anything else is held for the next poll. A poll
        that must stop inside a run (the task stopping) leaves the run out: it is
        streamed again; a stream that closes inside one fails the task, which restarts
        from its offsets."""
        out: list[SourceRecord] = []
        deadline = time.monotonic() + self._poll_s
        self._events.new_batch()
        run, run_from = -1, 0  # the LSN of the last message if a change, its run's start
        while not self._stopping.is_set():
            full = len(out) >= self._batch
            if full and run < 0:
                break
            msg, self._held = self._held or self._read(), None
            if msg is None:
                if run < 0:  # between runs: a poll with records ends, an empty one waits
                    if out:
                        break
                    self._maybe_heartbeat(out)
                    remaining = deadline - time.monotonic()
                    if out or remaining <= 0:
                        break
                else:  # inside a run: the rest of its transaction is on its way
                    remaining = 0.1
                if self._wait(min(remaining, 0.1)):
                    continue
                if run >= 0 and not self._stopping.is_set():
                    raise ConnectError(f"slot {self._slot!r}: the stream closed inside a change")
                break
            tag, lsn = msg.payload[0], msg.data_start
            if full and not (tag in _CHANGES and lsn == run):
                if tag == _COMMIT:
                    self._events.handle(lsn, msg.payload, out)
                else:
                    self._held = msg
                run = -1
                break
            if tag in _CHANGES and lsn != run:
                run_from = len(out)
            self._events.handle(lsn, msg.payload, out)
            run = lsn if tag in _CHANGES else -1
        if run >= 0:  # stopped inside a run
            del out[run_from:]
        if self._heartbeat_s and not out:
            self._maybe_heartbeat(out)
        return out or None

    def _read(self) -> Any:
        """The stream's next message, or None when none has arrived."""
        with self._lock:
            return self._cursor.read_message()

    def _wait(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the stream's socket; False once it is closed."""
        try:
            select.select([self._cursor], [], [], timeout_s)
        except (OSError, ValueError):
            return False
        return True

    def _maybe_heartbeat(self, out: list[SourceRecord]) -> None:
        if not self._heartbeat_s or self._events.xid is not None:
            return
        now = time.monotonic()
        if now - self._last_heartbeat < self._heartbeat_s:
            return
        self._last_heartbeat = now
        out.append(self._events.heartbeat(int(self._cursor.wal_end or 0)))

    # ---------------------------------------------------------------- commit

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        offset = record.source_offset
        if offset is not None:
            lsn = offset.get("lsn_commit")
            if lsn is not None and lsn > self._durable_lsn:
                self._durable_lsn = lsn

    def commit_records(
        self, records: Sequence[SourceRecord], metadata: Sequence[RecordMetadata | None]
    ) -> None:
        """Only the newest `lsn_commit` matters, and positions only grow in poll order:
        the last record that carries one has it (no metadata is read)."""
        for record in reversed(records):
            offset = record.source_offset
            if offset is not None and offset.get("lsn_commit") is not None:
                self.commit_record(record, None)
                return

    def commit_batch(self, batch: Any, metadata: Sequence[RecordMetadata | None]) -> None:
        """A snapshot chunk's rows share one offset, which has no `lsn_commit`:
        nothing to remember, and no record to make."""
        offset = batch.source_offset
        if offset is not None and offset.get("lsn_commit") is not None:
            self.commit_records(batch.records()[-1:], metadata[-1:])

    def commit(self) -> None:
        """The runtime wrote the offsets: let the server recycle WAL up to them."""
        lsn = self._durable_lsn
        if not self._streaming or lsn <= self._flushed_lsn:
            return
        with self._lock:
            if self._cursor is None or self._repl is None or self._repl.closed:
                return
            try:
                self._cursor.send_feedback(flush_lsn=lsn, reply=True)
            except _psycopg2().Error as exc:
                _log.warning("slot %s: could not confirm LSN %s: %s", self._slot, lsn, exc)
                return
        self._flushed_lsn = lsn

    # ------------------------------------------------------------------ stop

    def stop(self) -> None:
        if not hasattr(self, "_stopping"):
            return
        self._stopping.set()
        snapshot = getattr(self, "_snapshot", None)
        if snapshot is not None:
            snapshot.close()
        with self._lock:
            for conn in (getattr(self, "_repl", None), getattr(self, "_conn", None)):
                if conn is not None and not conn.closed:
                    with contextlib.suppress(_psycopg2().Error):
                        conn.close()
