"""Streaming: the binlog read by python-mysql-replication in a reader thread, each event
turned into Debezium's change events there, handed to the task's poll through a
bounded queue.

Why a thread: the library's reads block until the server sends something, and a poll
must return within `poll.interval.ms` (and a stop must end it). The server sends a
heartbeat every second while idle, so the thread sees its stop flag at least that often.

How a transaction becomes records (numbered as `_handle` does it):

1. A GTID event (MariaDB's, MySQL's) or a `BEGIN` query opens a transaction: its
   start position (file, pos) and GTID are kept; its rows events are counted.
2. A table map event gives the table's shape at this point of the log
   (`connectors.mysql.tables.from_table_map`): rows are decoded with it, never with the
   current catalog.
3. A rows event of a captured table gives c / u / d events (`skipped.operations`
   dropped), a tombstone after each delete, a primary-key change as delete +
   tombstone + create. Each record's offset is the transaction's start, the number of
   rows events before this one (`event`) and of rows of this one emitted (`row`).
4. The commit (XID, or `COMMIT` for non-transactional tables) gives the transaction's
   last record the position after it (and the GTID set with it), so an offset never
   claims a transaction done before all of it was emitted; a restart reading from an
   offset inside a transaction skips the `event` rows events and `row` rows already
   emitted, so nothing is repeated and nothing lost.
5. A DDL statement (a query that is not BEGIN / COMMIT) is its own transaction: a
   schema change event on `<topic.prefix>` (`include.schema.changes`) and, when
   `schema.history.internal.kafka.topic` is set, a record of it there; `TRUNCATE`
   gives a `t` event unless skipped.

With `signal.data.collection`: signal rows, row images, TRUNCATEs to `.incremental`.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from connect.api import ConnectError, Schema, SourceRecord, Struct
from connectors.mysql.envelope import ddl_records, schema_change_value_schema
from connectors.mysql.positions import add_gtid, format_gtids, offset_at, parse_gtids
from connectors.mysql.stream_batch import RowsBatch, batchable, keys_kept
from connectors.mysql.tables import Table, from_table_map

__all__ = ["BinlogReader"]

_log = logging.getLogger(__name__)
_TRUNCATE = re.compile(r"^\s*TRUNCATE\s+(?:TABLE\s+)?`?(?:(\w+)`?\.`?)?(\w+)`?", re.IGNORECASE)
_DONE = object()
_ROW_INDEX = 14  # of `row` in the source block


def _events() -> tuple[Any, ...]:
    from pymysqlreplication import event as ev
    from pymysqlreplication import row_event as rows

    return (
        ev.HeartbeatLogEvent,  # every second while idle: the thread sees its stop flag
        ev.RotateEvent,
        ev.MariadbGtidEvent,
        ev.GtidEvent,
        ev.QueryEvent,
        ev.XidEvent,
        rows.TableMapEvent,
        rows.WriteRowsEvent,
        rows.UpdateRowsEvent,
        rows.DeleteRowsEvent,
    )


class BinlogReader:
    """The stream from `start` ({file, pos, gtids, event, row}); `poll` hands out
    records (see the module docstring). `captured(db, table)` selects tables;
    `build(table)` gives a table its event schemas; `source(**fields)` makes a
    `source` block."""

    def __init__(
        self,
        *,
        params: dict[str, Any],
        server_id: int,
        start: dict[str, Any],
        mariadb: bool,
        prefix: str,
        partition: dict[str, Any],
        captured: Callable[[str, str], bool],
        build: Callable[[Table], Table],
        source: Callable[..., Struct],
        source_schema: Schema,
        skipped: set[str],
        tombstones: bool,
        schema_changes: bool,
        history_topic: str | None,
        incremental: Any = None,
    ) -> None:
        self._params = params
        self._server_id = server_id
        self._mariadb = mariadb
        self._prefix = prefix
        self._partition = partition
        self._captured = captured
        self._build = build
        self._source = source
        self._skipped = skipped
        self._tombstones = tombstones
        self._schema_changes = schema_changes
        self._history_topic = history_topic
        self._change_schema = schema_change_value_schema(source_schema) if schema_changes else None
        self._queue: queue.Queue = queue.Queue(maxsize=64)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._tables: dict[int, Table | None] = {}
        self._shapes: dict[tuple[Any, ...], Table] = {}
        #: connectors.mysql.incremental, the signal table's ids, the offsets' entries
        self._incremental = incremental
        self._signal_ids: dict[int, Table] = {}
        self._extra: dict[str, Any] = incremental.offset if incremental is not None else {}
        self.file: str = start["file"]
        self._gtids: dict[str, str] = parse_gtids(start.get("gtids"))
        # where the stream starts, and what of its first transaction was emitted
        self._resume: tuple[int, int] | None = (
            (int(start.get("event") or 0), int(start.get("row") or 0)) if "event" in start else None
        )
        self._start_pos = int(start["pos"])
        #: the offset after the last transaction handed over (heartbeats carry it)
        self.committed: dict[str, Any] = offset_at(self.file, self._start_pos, start.get("gtids"))
        self.committed.update(self._extra)
        self._tx: dict[str, Any] | None = None
        #: the newest record or batch, held back for its transaction's commit
        self._held: Any = None
        #: creates / updates gathered into the next batch (`connectors.mysql.stream_batch`)
        self._gathered: RowsBatch | None = None
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name="mysql-binlog", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------ reader thread

    def _run(self) -> None:
        from pymysqlreplication import BinLogStreamReader

        try:
            if self._incremental is not None:  # a snapshot the offsets hold goes on
                self._incremental.start()
                self._extra = self._incremental.offset
            # MariaDB: from the GTID position (the library positions MariaDB by GTIDs
            # only; every transaction has one); MySQL: from the file and position.
            where: dict[str, Any] = (
                {"auto_position": format_gtids(self._gtids) or ""}
                if self._mariadb
                else {"resume_stream": True, "log_file": self.file, "log_pos": self._start_pos}
            )
            self._stream = BinLogStreamReader(
                connection_settings=dict(self._params),
                server_id=self._server_id,
                **where,
                blocking=True,
                only_events=list(_events()),
                is_mariadb=self._mariadb,
                pymysql_wrapper=_pymysql_connect,
                slave_heartbeat=1,
                enable_logging=False,
            )
            for event in self._stream:
                if self._stop.is_set():
                    break
                self._handle(event)
        except BaseException as exc:  # handed to the task's thread
            if not self._stop.is_set():
                self._error = exc
        finally:
            # the library reconnects when its connection drops (as close() makes it
            # do): closing here, in this thread, is what ends the replication session
            if self._stream is not None:
                with contextlib.suppress(Exception):
                    self._stream.close()
            self._put(_DONE)

    def _put(self, item: Any) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def _emit(self, records: list[Any]) -> None:
        """Queue records (and batches), the newest held back for its transaction's
        commit; rows gathered for a batch go first."""
        if self._gathered is not None:
            gathered, self._gathered = self._gathered, None
            records.insert(0, gathered.build())
        if not records:
            return
        if self._held is not None:
            records.insert(0, self._held)
        self._held = records.pop()
        if records:
            self._put(records)

    def _handle(self, event: Any) -> None:
        name = type(event).__name__
        packet = event.packet
        if name == "HeartbeatLogEvent":
            return
        if name == "RotateEvent":
            self.file = event.next_binlog
            return
        if name in ("MariadbGtidEvent", "GtidEvent"):  # Step 1
            self._begin(packet.log_pos - packet.event_size, event.gtid)
            return
        if name == "QueryEvent":
            query = event.query if isinstance(event.query, str) else event.query.decode()
            word = query.strip().upper()
            if word == "BEGIN":
                if self._tx is None:
                    self._begin(packet.log_pos - packet.event_size, None)
            elif word == "COMMIT":
                self._commit(event, packet.log_pos)
            elif word != "ROLLBACK":
                self._ddl(event, query, packet.log_pos)  # Step 5
            return
        if name == "XidEvent":  # Step 4
            self._commit(event, packet.log_pos)
            return
        if name == "TableMapEvent":  # Step 2
            self._table_map(event)
            return
        self._rows(name, event, packet.log_pos - packet.event_size)  # Step 3

    def _begin(self, pos: int, gtid: str | None) -> None:
        open_tx = self._tx
        if open_tx is not None and gtid is not None and open_tx["gtid"] == gtid:
            # the library reconnected (a dropped connection) and the server sends the
            # open transaction again: skip its rows events already handled
            self._resume = (open_tx["events"], 0)
            open_tx["events"] = 0
            return
        self._tx = {
            "file": self.file,
            "pos": pos,
            "gtid": gtid,
            "events": 0,
            "gtids": format_gtids(self._gtids),
        }
        if pos != self._start_pos:
            self._resume = None
        self._start_pos = -1

    def _table_map(self, event: Any) -> None:
        if self._incremental is not None:
            if self._incremental.is_signal(event.schema, event.table):
                self._signal_ids[event.table_id] = self._build(from_table_map(event))
            else:
                self._signal_ids.pop(event.table_id, None)
        if not self._captured(event.schema, event.table):
            self._tables[event.table_id] = None
            return
        table = from_table_map(event, decoder=False)
        shape = (table.db, table.name, table.shape())
        known = self._shapes.get(shape)
        if known is None:  # a new shape: its decoder compiled now, once
            known = self._shapes[shape] = self._build(table.with_decoder(event.columns))
        self._tables[event.table_id] = known

    def _rows(self, name: str, event: Any, pos: int) -> None:
        tx = self._tx
        if tx is None:  # a rows event outside a transaction: its own
            self._begin(pos, None)
            tx = self._tx
            assert tx is not None
        index = tx["events"]
        tx["events"] += 1
        images = None
        if (  # the signal table's rows: signals, watermarks (but those handled before)
            self._signal_ids
            and event.table_id in self._signal_ids
            and (self._resume is None or index >= self._resume[0])
        ):
            images = _images(event, self._signal_ids[event.table_id])
            where = (tx, index, self.file, pos, self._extra)
            self._emit(self._incremental.signal_event(name, event, images, where))
            self._extra = self._incremental.offset
        table = self._tables.get(event.table_id)
        if table is None:
            return
        skip = 0
        if self._resume is not None:
            if index < self._resume[0]:
                return  # emitted before the restart
            if index == self._resume[0]:
                skip = self._resume[1]
        op = {"WriteRowsEvent": "c", "UpdateRowsEvent": "u", "DeleteRowsEvent": "d"}[name]
        if op in self._skipped:
            return
        server_id = event.packet.server_id
        base = {
            "file": tx["file"],
            "pos": tx["pos"],
            **({"gtids": tx["gtids"]} if tx["gtids"] else {}),
            "event": index,
            "row": 0,
            "server_id": server_id,
            "ts_sec": event.timestamp,
            **self._extra,
        }
        first = self._source(ts_ms=event.timestamp * 1000, snapshot="false", db=table.db,
                             table=table.name, gtid=tx["gtid"], file=self.file, pos=pos,
                             row=0, server_id=server_id)  # fmt: skip
        source_values, source_schema = list(first.values()), first.schema
        if images is None:
            images = _images(event, table)
        if self._incremental is not None:
            self._incremental.changed(table, images)
        per = 2 if op == "u" else 1
        if self._gather(table, op, images[skip * per :], source_values, skip, base):
            return
        out: list[SourceRecord] = []
        for r in range(skip, len(images) // per):
            values = source_values.copy()
            values[_ROW_INDEX] = r
            source = Struct.trusted(source_schema, values)
            offset = {**base, "row": r + 1}
            if op == "u":
                before, after = images[2 * r], images[2 * r + 1]
            elif op == "c":
                before, after = None, images[r]
            else:
                before, after = images[r], None
            self._change(table, op, before, after, source, offset, out)
        self._emit(out)

    def _gather(
        self,
        table: Table,
        op: str,
        images: list[list[Any]],
        source: list[Any],
        skip: int,
        base: dict[str, Any],
    ) -> bool:
        """Add the event's rows to the batch being gathered, when they can travel as
        one (`connectors.mysql.stream_batch`); False: they go as records."""
        if not images or (op == "d" and self._tombstones) or not batchable(table):
            return False
        if op == "u":
            befores, afters = images[0::2], images[1::2]
            if not keys_kept(table, befores, afters):
                return False
        elif op == "c":
            befores, afters = [], images
        else:
            befores, afters = images, []
        gathered = self._gathered
        if gathered is not None and not gathered.fits(table, op):
            self._emit([])  # builds and queues (or holds) what was gathered
            gathered = None
        if gathered is None:
            gathered = self._gathered = RowsBatch(table, op, self._partition)
        count = skip + (len(afters) or len(befores))
        gathered.add(source, skip, befores, afters, {**base, "row": count})
        return True

    def _change(
        self,
        table: Table,
        op: str,
        before: list[Any] | None,
        after: list[Any] | None,
        source: Struct,
        offset: dict[str, Any],
        out: list[SourceRecord],
    ) -> None:
        env = table.envelope
        now_ns = time.time_ns()
        stamps = [now_ns // 1_000_000, now_ns // 1000, now_ns]
        part = self._partition
        if op == "u" and table.key_schema is not None:
            # the key's values compared, not two key Structs: most updates keep the key
            moved = any(before[i] != after[i] for i in table.key_indexes)  # type: ignore[index]
            new_key = table.key_of(after)  # type: ignore[arg-type]
            if moved:  # a primary-key change: delete + tombstone + create
                old_key = table.key_of(before)  # type: ignore[arg-type]
                value = Struct.trusted(
                    env,
                    [table.value_of(before), None, source, None, "d", *stamps],  # type: ignore[arg-type]
                )
                out.append(
                    SourceRecord.of(
                        table.topic, table.key_schema, old_key, env, value, part, offset
                    )
                )
                if self._tombstones:
                    out.append(
                        SourceRecord.of(
                            table.topic, table.key_schema, old_key, None, None, part, offset
                        )
                    )
                value = Struct.trusted(
                    env, [None, table.value_of(after), source, None, "c", *stamps]
                )  # type: ignore[arg-type]
                out.append(
                    SourceRecord.of(
                        table.topic, table.key_schema, new_key, env, value, part, offset
                    )
                )
                return
            key = new_key
        else:
            key = table.key_of(after if after is not None else before)  # type: ignore[arg-type]
        value = Struct.trusted(
            env,
            [
                None if before is None else table.value_of(before),
                None if after is None else table.value_of(after),
                source,
                None,
                op,
                *stamps,
            ],
        )
        out.append(SourceRecord.of(table.topic, table.key_schema, key, env, value, part, offset))
        if op == "d" and self._tombstones:
            out.append(
                SourceRecord.of(table.topic, table.key_schema, key, None, None, part, offset)
            )

    def _commit(self, event: Any, end: int) -> None:
        tx = self._tx
        self._tx = None
        self._resume = None
        if tx is not None and tx["gtid"]:
            add_gtid(self._gtids, tx["gtid"], mariadb=self._mariadb)
        offset = offset_at(self.file, end, format_gtids(self._gtids))
        offset.update(self._extra)
        offset["server_id"] = event.packet.server_id
        offset["ts_sec"] = event.timestamp
        if self._gathered is not None:
            self._emit([])
        held, self._held = self._held, None
        if held is not None:
            held.source_offset = offset
            self._put([held])
        self.committed = offset
        if self._mariadb and self._stream is not None:
            # where the library reconnects to after a dropped connection (it keeps the
            # GTID state it was started with otherwise, and would send it all again)
            self._stream.auto_position = offset.get("gtids") or ""

    def _ddl(self, event: Any, query: str, end: int) -> None:
        db = event.schema.decode() if isinstance(event.schema, bytes) else event.schema
        tx = self._tx or {"gtid": None, "pos": end - event.packet.event_size}
        out: list[SourceRecord] = []
        after = dict(self._gtids)  # the position once this statement is done
        if tx["gtid"]:
            add_gtid(after, tx["gtid"], mariadb=self._mariadb)
        offset = offset_at(self.file, end, format_gtids(after))
        offset.update(self._extra)
        truncate = _TRUNCATE.match(query)
        if truncate and self._incremental is not None:  # the chunk's rows are gone
            self._incremental.truncated(truncate.group(1) or db, truncate.group(2))
        source = self._source(
            ts_ms=event.timestamp * 1000,
            snapshot="false",
            db=db or "",
            table=None,
            gtid=tx["gtid"],
            file=self.file,
            pos=tx["pos"],
            row=0,
            server_id=event.packet.server_id,
        )
        if truncate and "t" not in self._skipped:
            tdb, tname = truncate.group(1) or db, truncate.group(2)
            table = next(
                (t for t in self._shapes.values() if t.db == tdb and t.name == tname), None
            )
            if table is not None:
                now_ns = time.time_ns()
                value = Struct.trusted(
                    table.envelope,
                    [None, None, source, None, "t", now_ns // 1_000_000, now_ns // 1000, now_ns],
                )
                out.append(
                    SourceRecord.of(
                        table.topic, None, None, table.envelope, value, self._partition, offset
                    )
                )
        out += ddl_records(
            source,
            db or "",
            query,
            offset,
            prefix=self._prefix,
            partition=self._partition,
            change_schema=self._change_schema if self._captured_db(db) else None,
            history_topic=self._history_topic,
            ts_ms=event.timestamp * 1000,
        )
        if out:
            self._emit(out)
        self._commit(event, end)

    def _captured_db(self, db: str | None) -> bool:
        if not db:
            return True
        return any(t.db == db for t in self._shapes.values()) or self._captured(db, "")

    # -------------------------------------------------------------- task side

    def poll(self, limit: int, timeout_s: float) -> list[SourceRecord]:
        """Up to about `limit` records, waiting at most `timeout_s` for the first."""
        out: list[SourceRecord] = []
        deadline = time.monotonic() + timeout_s
        while len(out) < limit:
            try:
                item = self._queue.get(
                    timeout=max(0.0, deadline - time.monotonic()) if not out else 0
                )
            except queue.Empty:
                break
            if item is _DONE:
                self._queue.put(_DONE)
                if self._error is not None:
                    raise _stream_error(self._error)
                raise ConnectError("the binlog stream ended")
            out.extend(item)
        return out

    def idle(self) -> bool:
        """Nothing queued and no transaction open (a heartbeat may carry `committed`)."""
        waiting = (self._tx, self._held, self._gathered)
        return self._queue.empty() and all(w is None for w in waiting)

    def close(self) -> None:
        """Stop the thread: it sees the flag at the next event or server heartbeat (at
        most a second) and closes the stream itself. Closing the connection under it
        from here is the last resort: the library takes the dropped connection for a
        network failure and reconnects before the thread can look at the flag."""
        self._stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()
        self._thread.join(timeout=3)
        if self._thread.is_alive() and self._stream is not None:
            with contextlib.suppress(Exception):
                self._stream.close()
            self._thread.join(timeout=5)
        if self._incremental is not None:
            self._incremental.close()


def _pymysql_connect(**kwargs: Any) -> Any:
    """PyMySQL's connect() for the library, which still names the database `db`
    (deprecated: a DeprecationWarning on every connection)."""
    import pymysql

    if "db" in kwargs:
        kwargs["database"] = kwargs.pop("db")
    return pymysql.connect(**kwargs)


def _images(event: Any, table: Table) -> list[list[Any]]:
    """The event's row images (an update's before and after alternating), converted.
    Decoded from the event's bytes where the table's readers allow
    (`connectors.mysql.rows`), else by the library."""
    if table.decoder is not None:
        packet = event.packet
        images = table.decoder(packet.read(event.event_size - packet.read_bytes))
    else:
        names = table.names
        images = []
        for row in event.rows:
            for key in ("before_values", "after_values", "values"):
                if key in row:
                    images.append([row[key][n] for n in names])
    for i, convert in table.converted:
        for image in images:
            v = image[i]
            if v is not None:
                image[i] = convert(v)
    return images


def _stream_error(exc: BaseException) -> ConnectError:
    if isinstance(exc, ConnectError):  # ours, already saying what to fix
        return exc
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    if code == 1236:  # ER_MASTER_FATAL_ERROR_READING_BINLOG: purged or unknown position
        return ConnectError(f"cannot read the binlog from the stored position: {exc.args[-1]}")
    if code in (1227, 1045):
        return ConnectError(
            f"the binlog cannot be read with this user (REPLICATION SLAVE needed): {exc.args[-1]}"
        )
    return ConnectError(f"the binlog stream failed: {exc!r}")
