"""A table's snapshot rows as Arrow columns straight from MySQL's text protocol: step 7
of `connectors.mysql.snapshot` for tables whose every column has a way here.

Why: the JSON chunks (`connectors.mysql.snapshot_chunks`) cost the server ~5 CPU µs a
row of the bench's ten columns to build (JSON_ARRAYAGG, its ORDER BY, the escaping)
and us ~3 (orjson's objects, the per-column conversions); a plain `SELECT` costs the
server ~1.5 and, parsed a column at a time with numpy (`connectors.mysql.text_rows`),
us ~1.3, the GIL held for the packet walk only (200k rows of the bench's table read
by SnapshotPhase in one process, 2026-11-27).

The protocol:

1. `SET SESSION net_write_timeout` to 10 minutes: the server streams the whole table
   and waits while we are slow to read (a worker waiting on its log), where the
   default 60 s would end the snapshot.
2. One unbuffered `SELECT <exprs> FROM t` inside the snapshot's transaction, which
   reads every row exactly once as of the snapshot (no keyset, no order: Debezium
   reads a table the same way); PyMySQL sends it and reads the column definitions.
3. A reader thread takes the socket's bytes from there: the rows' packets, found by
   `text_rows.walk`, a chunk of rows at a time turned into Arrow arrays of the events'
   types, at most two chunks ahead of the task's thread.
4. The EOF packet ends the table and hands the connection back to PyMySQL; an error
   packet raises PyMySQL's error. A reader closed before the end closes the
   connection (its stream cannot be resumed): the snapshot is over then anyway.

Each column is sent as the JSON chunks send it where a conversion is needed (so both
ways give the same values): DOUBLE, FLOAT and DECIMAL as `CAST(… AS CHAR)`, parsed by
Arrow; TIMESTAMP as the event's ZonedTimestamp text; DATE as days and DATETIME as µs
since the epoch computed by the server (zero dates NULL, as their parse made them);
TIME as µs computed by the server; BIT(1) as the server's `<> 0`, wider BITs reversed
by the server (the events' bytes are little-endian); integers, YEAR, text, ENUM, SET
and binary strings as they are. Geometry, `time.precision.mode=connect`'s temporal
types and types without a mapping keep the JSON chunks (or PyMySQL's rows without a
primary key).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from connect.api import ConnectError, arrow
from connectors.mysql.columns import BINARIES, INTEGERS, TEXTS, ColumnDef
from connectors.mysql.snapshot_chunks import _NONE_YET, _ZONED, ChunkHandoff, _quote
from connectors.mysql.tables import Table
from connectors.mysql.text_rows import Rows, ServerError, chunk_bytes, columns, walk

__all__ = ["TextRows"]

#: Step 1: ten minutes of the server waiting on us (a worker whose log is down that long
#: fails the snapshot, done again on restart). Not longer: a client gone without a word
#: (a network cut) leaves the query running as long, holding its table's metadata lock,
#: on which the next snapshot's FLUSH TABLES WITH READ LOCK would wait, all writes
#: waiting behind it
_WRITE_TIMEOUT_S = 600
_READ_BYTES = 1 << 20
#: a chunk ends at this many bytes of rows, whatever `snapshot.fetch.size` says: two
#: chunks ahead of the task of 1 MB rows would otherwise hold 16 GB
_CHUNK_BYTES = 64 << 20
_EPOCH_DAYS = 719_528  # TO_DAYS('1970-01-01')

Finish = Callable[[pa.Array], pa.Array]


def _cast(typ: pa.DataType) -> Finish:
    return lambda raw: raw.cast(typ)


def _as_is(raw: pa.Array) -> pa.Array:
    return raw


def _wrapped(raw: pa.Array) -> pa.Array:
    """BIGINT UNSIGNED as a long: above 2^63-1 wraps negative, as Debezium."""
    return raw.cast(pa.uint64()).cast(pa.int64(), safe=False)


def _float32(raw: pa.Array) -> pa.Array:
    """FLOAT's text read as a double, then narrowed, as PyMySQL's float() was."""
    return raw.cast(pa.float64()).cast(pa.float32())


def _millis(raw: pa.Array) -> pa.Array:
    """DATETIME(0-3)'s µs (whole ms) as ms."""
    return pc.divide(raw.cast(pa.int64()), 1000)


def _millis32(raw: pa.Array) -> pa.Array:
    """TIME(0-3)'s µs (whole ms) as int32 ms."""
    return _millis(raw).cast(pa.int32())


def _boolean(raw: pa.Array) -> pa.Array:
    return raw.cast(pa.int8()).cast(pa.bool_())


def _plan(col: ColumnDef, typ: pa.DataType) -> tuple[str, pa.DataType, Finish] | None:
    """(SQL with {c} for the quoted column, the type the bytes come as, the way from
    those to the event's type `typ`), or None: no way here."""
    kind = col.kind
    if kind in INTEGERS or kind == "year":
        if kind == "bigint" and col.unsigned and pa.types.is_int64(typ):
            return "{c}", pa.string(), _wrapped
        return "{c}", pa.string(), _cast(typ)
    if kind in ("float", "real", "double", "decimal", "numeric"):
        if pa.types.is_string(typ):  # decimal.handling.mode=string: the text
            return "CAST({c} AS CHAR)", pa.string(), _as_is
        return "CAST({c} AS CHAR)", pa.string(), _float32 if typ == pa.float32() else _cast(typ)
    if kind in TEXTS or kind in ("enum", "set"):
        expr = "CAST({c} AS CHAR)" if kind in ("longtext", "json") else "{c}"
        return expr, pa.string(), _as_is
    if kind in BINARIES:
        return "{c}", pa.binary(), _as_is
    if kind == "timestamp":
        return _ZONED, pa.string(), _as_is
    if kind == "date" and pa.types.is_int32(typ):
        return f"TO_DAYS({{c}}) - {_EPOCH_DAYS}", pa.string(), _cast(typ)
    if kind == "datetime" and pa.types.is_int64(typ):
        micros = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01', {c})"
        return micros, pa.string(), _millis if col.scale <= 3 else _cast(typ)
    if kind == "time" and (pa.types.is_int64(typ) or pa.types.is_int32(typ)):
        micros = "CAST(TIME_TO_SEC({c}) * 1000000 AS SIGNED)"  # exact: a DECIMAL product
        return micros, pa.string(), _cast(typ) if pa.types.is_int64(typ) else _millis32
    if kind == "bit":
        if col.precision <= 1:
            return "{c} <> 0", pa.string(), _boolean
        return "REVERSE({c})", pa.binary(), _as_is  # big-endian bytes made little-endian
    return None


class TextRows(ChunkHandoff):
    """The rows of one table as of the snapshot (see the module docstring)."""

    @staticmethod
    def supports(table: Table) -> bool:
        return all(
            _plan(c, arrow.arrow_type(s)) is not None
            for c, s in zip(table.columns, table.column_schemas, strict=True)
        )

    def __init__(self, conn: Any, table: Table, chunk: int) -> None:
        plans = [
            _plan(c, arrow.arrow_type(s))
            for c, s in zip(table.columns, table.column_schemas, strict=True)
        ]
        self._types = [p[1] for p in plans]  # type: ignore[index]
        self._finish = [p[2] for p in plans]  # type: ignore[index]
        exprs = ", ".join(
            p[0].format(c=_quote(c.name))  # type: ignore[index]
            for p, c in zip(plans, table.columns, strict=True)
        )
        super().__init__(f"{_quote(table.db)}.{_quote(table.name)}")
        self._sql = f"SELECT {exprs} FROM {self._name}"
        self._conn = conn
        self._chunk = chunk
        self._ended = False  # the EOF packet read: the connection is PyMySQL's again
        with conn.cursor() as cur:  # Step 1
            cur.execute(f"SET SESSION net_write_timeout = {_WRITE_TIMEOUT_S}")
        self._thread = threading.Thread(target=self._read, name="mysql-snapshot", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        """The reader thread (steps 2-4)."""
        try:
            self._conn.query(self._sql, unbuffered=True)  # Step 2
            source = self._conn._rfile
            buf, pos = b"", 0
            while not self._stop.is_set():
                rows = Rows()
                while True:  # Step 3
                    pos = walk(buf, pos, self._chunk, rows, bytes_limit=_CHUNK_BYTES)
                    full = len(rows.starts) >= self._chunk or pos >= _CHUNK_BYTES
                    if rows.ended or full:
                        break
                    more = source.read1(_READ_BYTES)
                    if not more:
                        raise ConnectError(f"the server closed the stream of {self._name}")
                    buf += more
                arrays = self._arrays(buf, pos, rows)
                buf, pos = buf[pos:], 0
                if rows.ended:  # Step 4, before the task's thread may use the connection
                    self._release()
                self._put((arrays, rows.ended))
                if rows.ended:
                    return
        except ServerError as exc:
            self._conn._result.unbuffered_active = False
            self._put(_server_error(self._conn, exc.payload))
        except BaseException as exc:  # handed to the task's thread
            self._put(exc)

    def _arrays(self, buf: bytes, upto: int, rows: Rows) -> list[pa.Array]:
        data, starts = chunk_bytes(buf, upto, rows)
        raw = columns(data, starts, self._types)
        return [finish(a) for finish, a in zip(self._finish, raw, strict=True)]

    def _release(self) -> None:
        result = self._conn._result
        result.unbuffered_active = False
        self._conn._result = None
        self._ended = True

    def next_columns(self, timeout_s: float) -> list[pa.Array] | None:
        """The next chunk's columns in the events' types; None when none came within
        the timeout; [] once the table is read."""
        if self._done:
            return []
        item = self._take(timeout_s)
        if item is _NONE_YET:
            return None
        arrays, self._done = item
        return arrays if len(arrays[0]) else []

    def close(self) -> None:
        self._stop_reading()
        self._thread.join(timeout=1)
        if self._thread.is_alive() and not self._ended:  # waiting on the server: woken
            with contextlib.suppress(Exception):
                self._conn._sock.shutdown(socket.SHUT_RDWR)
            self._thread.join(timeout=30)
        if not self._ended:  # Step 4: a stream cut short cannot be read on
            with contextlib.suppress(Exception):
                self._conn._result.unbuffered_active = False
            with contextlib.suppress(Exception):
                self._conn.close()


def _server_error(conn: Any, payload: bytes) -> BaseException:
    """PyMySQL's exception for an error packet."""
    from pymysql.protocol import MysqlPacket

    try:
        MysqlPacket(payload, conn.encoding).raise_for_error()
    except BaseException as exc:
        return exc
    return ConnectError("an error packet without an error")
