"""Incremental snapshots: captured tables read a chunk at a time while the binlog keeps
streaming, Debezium's `execute-snapshot` with `"type": "incremental"` (the watermark
algorithm of Netflix's DBLog, as Debezium runs it). Everything here runs on the binlog
reader's thread (`connectors.mysql.binlog` calls in), in binlog order, so a chunk, the
changes around it and the offsets never race.

The protocol:

1. A signal row (`connectors.mysql.signals`) read from the binlog: `execute-snapshot`
   queues the captured tables its `data-collections` regexes name (with their
   `additional-conditions` and `surrogate-key`); `stop-snapshot`, `pause-snapshot`,
   `resume-snapshot` act on the queue.
2. A table's start: its structure from `information_schema`, and its largest key
   (under the additional condition): the chunks stop there, rows inserted later are
   streamed anyway. A table without a primary key (and no surrogate key) is skipped
   with a warning, as Debezium does.
3. A chunk, the stream paused meanwhile: INSERT the open-window row `<id>-open`,
   SELECT the next `incremental.snapshot.chunk.size` rows by key after the last
   chunk's last key (up to the largest), INSERT the close-window row `<id>-close`
   (`insert_delete`: DELETE the open row instead). The rows wait in a buffer by key.
4. The stream reaches the open-window row: the window opens. Every change of the
   table streamed while it is open takes its keys (before and after images) out of
   the buffer. Why that is right: the SELECT ran after the open row was committed
   and before the close row was, so a change between the two is as new as the row
   read, or newer; it is emitted by the stream, and the read would be stale if it
   followed it. A change before the open row is older than the SELECT, a change
   after the close row newer than the read emitted at the close.
5. The stream reaches the close-window row: the buffer's rows are emitted as reads
   (op `r`, `source.snapshot` `incremental`, the binlog position of the close row);
   the chunk's last key (of the SELECT, dropped rows included) becomes the one to go
   on from; the next chunk (step 3) or table (step 2) is read at once.
6. Offsets: while a snapshot runs every record's offset carries Debezium's
   `incremental_snapshot_collections` (the tables still to read, the current one
   first, as JSON), `incremental_snapshot_primary_key` (the last key read) and
   `incremental_snapshot_maximum_key` (JSON lists; Debezium's are hex of Java
   serialization). A chunk's reads carry the state from before the chunk, but its
   last, which the reader gives the position after the close row and the state after
   the chunk: an offset committed in the middle of a chunk has the chunk read again
   after a restart, never its tail skipped. A restarted task reads the chunk after
   the stored key at start (step 3), with a new window id, so the old windows the
   stream meets again are ignored.

Reuse for the PostgreSQL CDC source: steps 1-6 need only "a row of the signal table
was streamed", "a change of table T with these images was streamed" and the offsets'
extra entries; the SQL (watermark writes, key-ordered chunk SELECT) is standard.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connect.api import ConnectError, SourceBatch, Struct
from connectors.mysql.signals import Signal, parse_signal, snapshot_request, split_name
from connectors.mysql.snapshot import convert_columns, read_items
from connectors.mysql.snapshot_chunks import _quote
from connectors.mysql.tables import Table, read_tables

__all__ = ["OFFSET_KEYS", "IncrementalSnapshot"]

_log = logging.getLogger(__name__)

_COLLECTIONS = "incremental_snapshot_collections"
_KEY = "incremental_snapshot_primary_key"
_MAX = "incremental_snapshot_maximum_key"
#: the offsets' entries of a running incremental snapshot
OFFSET_KEYS = (_COLLECTIONS, _KEY, _MAX)


@dataclass(frozen=True, slots=True)
class _Collection:
    """A table queued for the snapshot, with Debezium's offset entry names."""

    id: str
    condition: str | None = None
    surrogate: str | None = None

    def entry(self) -> dict[str, Any]:
        return {
            "incremental_snapshot_collections_id": self.id,
            "incremental_snapshot_collections_additional_condition": self.condition,
            "incremental_snapshot_collections_surrogate_key": self.surrogate,
        }


@dataclass(slots=True)
class _Window:
    """A chunk read and waiting for its close-window row (steps 3-5)."""

    id: str
    table: Table
    columns: list[list[Any]]  # converted, a list per column
    keys: dict[tuple[Any, ...], int]  # key (event form) -> row, the rows still to emit
    last: list[Any] | None  # the chunk key of the SELECT's last row, as the server gave it
    full: bool  # as many rows as asked for: more may follow
    opened: bool = False


class IncrementalSnapshot:
    """Steps 1-6 of the module docstring for one task. `captured(db, table)` is the
    task's table filter; `build(table)` gives a table its event schemas; `source(**)`
    makes a `source` block; `stored` is the offset the stream starts from."""

    def __init__(
        self,
        *,
        params: Mapping[str, Any],
        signal: str,
        chunk: int,
        strategy: str,
        captured: Callable[[str, str], bool],
        build: Callable[[Table], Table],
        source: Callable[..., Struct],
        partition: dict[str, Any],
        stored: Mapping[str, Any] | None = None,
    ) -> None:
        self._params = dict(params)
        self._signal = signal
        self._signal_db, self._signal_table = split_name(signal)
        self._chunk = chunk
        self._deletes = strategy == "insert_delete"
        self._captured = captured
        self._build = build
        self._source = source
        self._partition = partition
        self._queue: list[_Collection] = []
        self._last: list[Any] | None = None
        self._max: list[Any] | None = None
        self._table: Table | None = None
        self._chunk_at: list[int] = []  # the chunk key's columns
        self._dedupe_at: list[int] = []  # the event key's columns (what the stream sees)
        self._window: _Window | None = None
        self._paused = False
        self._conn: Any = None
        #: the offsets' entries now (replaced, never changed in place: records share it)
        self.offset: dict[str, Any] = {}
        if stored and stored.get(_COLLECTIONS):
            self._restore(stored)

    # ------------------------------------------------------------ reader hooks

    def is_signal(self, db: str, table: str) -> bool:
        return db == self._signal_db and table == self._signal_table

    def start(self) -> None:
        """Step 6: a restarted task goes on with the snapshot its offsets hold."""
        if self._queue and self._window is None:
            self._next_chunk()

    def signal_event(
        self, name: str, event: Any, images: list[list[Any]], where: tuple[Any, ...]
    ) -> list[Any]:
        """A rows event of the signal table: `where` is (the transaction, the event's
        index in it, the binlog file, the event's position, the offsets' entries now)."""
        tx, index, file, pos, extra = where
        server_id = event.packet.server_id
        offset = {
            "file": tx["file"],
            "pos": tx["pos"],
            **({"gtids": tx["gtids"]} if tx["gtids"] else {}),
            "event": index,
            "row": 0,
            "server_id": server_id,
            "ts_sec": event.timestamp,
            **extra,
        }
        at = {
            "ts_ms": event.timestamp * 1000,
            "gtid": tx["gtid"],
            "file": file,
            "pos": pos,
            "server_id": server_id,
        }
        op = {"WriteRowsEvent": "c", "UpdateRowsEvent": "u", "DeleteRowsEvent": "d"}[name]
        return self.signal(op, images, offset=offset, at=at)

    def signal(
        self, op: str, images: list[list[Any]], *, offset: dict[str, Any], at: dict[str, Any]
    ) -> list[Any]:
        """Rows of the signal table (steps 1, 4, 5): the reads to emit, if any.
        `offset` is the rows event's (before it), `at` its binlog position fields."""
        out: list[Any] = []
        window = self._window
        if op == "d":
            for values in images:
                if self._deletes and window is not None and values[0] == f"{window.id}-open":
                    out += self._close(offset, at)
            return out
        if op != "c":
            return out
        for values in images:
            sig = parse_signal(values)
            if sig is not None:
                out += self._act(sig, offset, at)
        return out

    def changed(self, table: Table, images: list[list[Any]]) -> None:
        """Step 4: a streamed change of `table` (its row images, event form)."""
        window = self._window
        if window is None or not window.opened or not window.keys:
            return
        if table.name != window.table.name or table.db != window.table.db:
            return
        at, keys = self._dedupe_at, window.keys
        for image in images:
            keys.pop(tuple(image[i] for i in at), None)

    def truncated(self, db: str | None, table: str) -> None:
        """A TRUNCATE streamed while a window is open: the chunk's rows are gone."""
        window = self._window
        if window is None or not window.opened:
            return  # before the open row: the SELECT came after it
        if window.table.name == table and window.table.db == db:
            window.keys.clear()

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    # ---------------------------------------------------------------- signals

    def _act(self, sig: Signal, offset: dict[str, Any], at: dict[str, Any]) -> list[Any]:
        window = self._window
        kind = sig.type.lower()
        if kind == "snapshot-window-open":
            if window is not None and sig.id == f"{window.id}-open":
                window.opened = True
        elif kind == "snapshot-window-close":
            if not self._deletes and window is not None and sig.id == f"{window.id}-close":
                return self._close(offset, at)
        elif kind == "execute-snapshot":
            self._execute(sig)
        elif kind == "stop-snapshot":
            self._stop(sig)
        elif kind == "pause-snapshot":
            _log.info("signal %s: incremental snapshot paused", sig.id)
            self._paused = True
        elif kind == "resume-snapshot":
            _log.info("signal %s: incremental snapshot resumed", sig.id)
            if self._paused:
                self._paused = False
                if self._window is None:
                    self._next_chunk()
        elif kind == "log":
            _log.info("signal %s: %s", sig.id, sig.data.get("message"))
        else:
            _log.warning("signal %s of unknown type %r ignored", sig.id, sig.type)
        return []

    def _execute(self, sig: Signal) -> None:
        """Step 1: queue the tables an execute-snapshot names."""
        request = snapshot_request(sig)
        if request is None:
            return
        names = self._matching(lambda n: request.matches(n))
        if not names:
            _log.warning(
                "signal %s: no captured table matches %s: nothing to snapshot",
                sig.id,
                list(request.collections),
            )
            return
        running = bool(self._queue)
        known = {c.id for c in self._queue}
        for name in names:
            if name not in known:
                self._queue.append(_Collection(name, request.condition_of(name), request.surrogate))
        _log.info("signal %s: incremental snapshot of %s", sig.id, names)
        self._update_offset()
        if not running:
            self._next_chunk()

    def _stop(self, sig: Signal) -> None:
        request = snapshot_request(sig)
        if request is None:
            return
        current = self._queue[0].id if self._queue else None
        if request.collections:
            self._queue = [c for c in self._queue if not request.matches(c.id)]
        else:
            self._queue = []
        _log.info("signal %s: incremental snapshot stopped for %s", sig.id, current)
        if current is not None and (not self._queue or self._queue[0].id != current):
            self._window = None  # its watermarks, still to come, are ignored
            self._end_table()
            if not self._paused:
                self._next_chunk()
        self._update_offset()

    def _matching(self, wanted: Callable[[str], bool]) -> list[str]:
        """Captured base tables (not the signal table) whose `db.table` is wanted."""
        with self._connection().cursor() as cur:
            cur.execute(
                "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                "WHERE TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_SCHEMA, TABLE_NAME"
            )
            rows = cur.fetchall()
        return [
            f"{db}.{name}"
            for db, name in rows
            if not self.is_signal(db, name) and self._captured(db, name) and wanted(f"{db}.{name}")
        ]

    # ----------------------------------------------------------------- chunks

    def _next_chunk(self) -> None:
        """Steps 2 and 3 for the first table of the queue that has rows to read."""
        while self._queue and not self._paused:
            collection = self._queue[0]
            if self._table is None and not self._begin_table(collection):
                self._queue.pop(0)
                self._end_table()
                continue
            self._read_chunk(collection)
            break
        self._update_offset()

    def _begin_table(self, collection: _Collection) -> bool:
        """Step 2: whether the table has rows to read (its structure, its chunk key
        and largest key known then)."""
        db, name = split_name(collection.id)
        with self._connection().cursor() as cur:
            found = read_tables(cur, lambda d, t: d == db and t == name)
        if not found:
            _log.warning("incremental snapshot: table %s is gone: skipped", collection.id)
            return False
        table = self._build(found[0])
        index = {c: i for i, c in enumerate(table.names)}
        key = [collection.surrogate] if collection.surrogate else list(table.primary_key)
        if not key or any(k not in index for k in key):
            _log.warning(
                "incremental snapshot: table %s skipped: it has no primary key%s",
                collection.id,
                f" nor a column {collection.surrogate!r}"
                if collection.surrogate
                else " (name a unique column as the signal's surrogate-key)",
            )
            return False
        self._table = table
        self._chunk_at = [index[k] for k in key]
        self._dedupe_at = list(table.key_indexes) or self._chunk_at
        if self._max is None:  # not a restored table: its largest key now
            self._last = None
            with self._connection().cursor() as cur:
                sql, params = self._query(collection, descending=True)
                cur.execute(sql, params)
                row = cur.fetchone()
            if row is None:
                return False  # no row to read
            self._max = [row[i] for i in self._chunk_at]
        return True

    def _query(self, collection: _Collection, *, descending: bool = False) -> tuple[str, list]:
        """The chunk's SELECT (or, descending, the largest key's) and its parameters."""
        table = self._table
        assert table is not None
        keys = [table.names[i] for i in self._chunk_at]
        order = ", ".join(f"{_quote(k)}{' DESC' if descending else ''}" for k in keys)
        where, params = [], []
        if collection.condition:  # a literal '%' must survive PyMySQL's formatting
            where.append(f"({collection.condition.replace('%', '%%')})")
        if not descending:
            tuple_ = ", ".join(_quote(k) for k in keys)
            marks = ", ".join(["%s"] * len(keys))
            if self._last is not None:
                where.append(f"({tuple_}) > ({marks})")
                params += self._last
            where.append(f"({tuple_}) <= ({marks})")
            params += self._max or []
        columns = ", ".join(_quote(c.name) for c in table.columns)
        sql = f"SELECT {columns} FROM {_quote(table.db)}.{_quote(table.name)}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return f"{sql} ORDER BY {order} LIMIT {1 if descending else self._chunk}", params

    def _read_chunk(self, collection: _Collection) -> None:
        """Step 3."""
        table = self._table
        assert table is not None
        wid = str(uuid.uuid4())
        sql, params = self._query(collection)
        with self._connection().cursor() as cur:
            self._watermark(cur, f"{wid}-open", "snapshot-window-open", "openWindowTimestamp")
            cur.execute(sql, params)
            rows = list(cur.fetchall())
            if self._deletes:
                self._write(cur, f"DELETE FROM {self._signal_sql()} WHERE id = %s", [f"{wid}-open"])
            else:
                self._watermark(
                    cur, f"{wid}-close", "snapshot-window-close", "closeWindowTimestamp"
                )
        columns = convert_columns(table, rows) if rows else [[] for _ in table.columns]
        at = self._dedupe_at
        keys = {tuple(columns[i][r] for i in at): r for r in range(len(rows))}
        last = [rows[-1][i] for i in self._chunk_at] if rows else None
        self._window = _Window(wid, table, columns, keys, last, full=len(rows) >= self._chunk)

    def _close(self, offset: dict[str, Any], at: dict[str, Any]) -> list[Any]:
        """Step 5: the chunk's reads; the next chunk read."""
        window, self._window = self._window, None
        assert window is not None
        table = window.table
        keep = sorted(window.keys.values())
        items: list[Any] = []
        if keep:
            columns = [[column[r] for r in keep] for column in window.columns]
            source = self._source(
                ts_ms=at["ts_ms"],
                snapshot="incremental",
                db=table.db,
                table=table.name,
                gtid=at["gtid"],
                file=at["file"],
                pos=at["pos"],
                row=0,
                server_id=at["server_id"],
            )
            items = read_items(
                table, columns, source=source, partition=self._partition, offset=offset
            )
            last = items[-1]
            if isinstance(last, SourceBatch) and len(last) > 1:  # the last read alone: Step 6
                n = len(last)
                items[-1:] = [last.slice(0, n - 1), last.slice(n - 1)]
        if window.full and window.last is not None and window.last != self._max:
            self._last = window.last
        else:  # the table's last chunk
            _log.info("incremental snapshot of %s.%s done", table.db, table.name)
            if self._queue:
                self._queue.pop(0)
            self._end_table()
        self._update_offset()
        self._next_chunk()
        return items

    def _end_table(self) -> None:
        self._table = None
        self._last = self._max = None

    # --------------------------------------------------------------- database

    def _connection(self) -> Any:
        """The connection for chunks and watermarks (UTC: the snapshot converters take
        TIMESTAMP values as UTC), reopened when it dropped."""
        import pymysql

        if self._conn is not None:
            try:
                self._conn.ping(reconnect=False)
                return self._conn
            except pymysql.err.MySQLError:
                self.close()
        self._conn = pymysql.connect(**self._params, autocommit=True)
        with self._conn.cursor() as cur:
            cur.execute("SET SESSION time_zone = '+00:00'")
        return self._conn

    def _signal_sql(self) -> str:
        return f"{_quote(self._signal_db)}.{_quote(self._signal_table)}"

    def _watermark(self, cur: Any, wid: str, kind: str, stamp: str) -> None:
        data = json.dumps({stamp: dt.datetime.now(dt.UTC).isoformat()})
        self._write(cur, f"INSERT INTO {self._signal_sql()} VALUES (%s, %s, %s)", [wid, kind, data])

    def _write(self, cur: Any, sql: str, params: list[Any]) -> None:
        import pymysql

        try:
            cur.execute(sql, params)
        except pymysql.err.MySQLError as exc:
            if exc.args and exc.args[0] in (1142, 1143, 1044):
                raise ConnectError(
                    f"user {self._params.get('user')!r} may not write the incremental "
                    f"snapshot's watermarks into the signal table {self._signal}: GRANT "
                    f"INSERT{', DELETE' if self._deletes else ''} ON {self._signal} TO it"
                ) from None
            raise

    # ---------------------------------------------------------------- offsets

    def _update_offset(self) -> None:
        if not self._queue:
            self.offset = {}
            return
        self.offset = {
            _COLLECTIONS: json.dumps([c.entry() for c in self._queue]),
            _KEY: _dump_key(self._last),
            _MAX: _dump_key(self._max),
        }

    def _restore(self, stored: Mapping[str, Any]) -> None:
        try:
            entries = json.loads(stored[_COLLECTIONS])
            self._queue = [
                _Collection(
                    e["incremental_snapshot_collections_id"],
                    e.get("incremental_snapshot_collections_additional_condition"),
                    e.get("incremental_snapshot_collections_surrogate_key"),
                )
                for e in entries
            ]
            self._last = _load_key(stored.get(_KEY))
            self._max = _load_key(stored.get(_MAX))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConnectError(
                f"the stored offset's incremental snapshot entries cannot be read ({exc}): "
                f"{ {k: stored.get(k) for k in OFFSET_KEYS} }"
            ) from None
        self._update_offset()


_TAGS: tuple[tuple[type, str, Callable[[Any], Any], Callable[[Any], Any]], ...] = (
    (decimal.Decimal, "decimal", str, decimal.Decimal),
    (dt.datetime, "datetime", dt.datetime.isoformat, dt.datetime.fromisoformat),
    (dt.date, "date", dt.date.isoformat, dt.date.fromisoformat),
    (dt.timedelta, "seconds", dt.timedelta.total_seconds, lambda s: dt.timedelta(seconds=s)),
    (bytes, "base64", lambda b: base64.b64encode(b).decode(), base64.b64decode),
)


def _dump_key(key: list[Any] | None) -> str | None:
    """A chunk key as the server gave it, as JSON (tagged where JSON has no type)."""
    if key is None:
        return None
    out = []
    for value in key:
        for kind, tag, dump, _ in _TAGS:
            if isinstance(value, kind):
                value = {tag: dump(value)}
                break
        out.append(value)
    return json.dumps(out)


def _load_key(text: str | None) -> list[Any] | None:
    if not text:
        return None
    loads = {tag: load for _, tag, _, load in _TAGS}
    out = []
    for value in json.loads(text):
        if isinstance(value, dict) and len(value) == 1:
            ((tag, raw),) = value.items()
            value = loads[tag](raw)
        out.append(value)
    return out
