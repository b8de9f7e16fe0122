"""A table's snapshot rows a chunk at a time, each chunk one JSON document built by the
server: step 7 of `connectors.mysql.snapshot` for tables with a primary key and a
column the text protocol's path (`connectors.mysql.snapshot_text`, cheaper) has no way
for (TIME, BIT, geometry, …).

Why: PyMySQL parses a result row by row and field by field in Python (about 80% of
the snapshot's time under cProfile, ~50k rows/s of five columns here). Asked for

    SELECT JSON_ARRAYAGG(JSON_ARRAY(<col>, …) ORDER BY <key>)
    FROM (SELECT … FROM t WHERE (<key>) > (<last key>) ORDER BY <key> LIMIT n) x

the server sends one value per chunk, which orjson parses in C (~145k rows/s of the
same table, fetch and parse). Keyset pagination on the primary key inside the
snapshot's REPEATABLE READ transaction reads every row exactly once, as of the
snapshot.

Values cross as JSON, so each column is sent in a form JSON keeps exactly and turned
back into what PyMySQL would have given, for the same converters
(`Table.snapshot_converters`): integers, YEAR and text as they are; FLOAT, DOUBLE and
DECIMAL as their text (`CAST(… AS CHAR)`: JSON numbers would round), DOUBLE and
DECIMAL left as text for Arrow to parse a column at a time (`texts`); binary strings,
BIT and geometry as base64; DATE, DATETIME and TIME as their text, parsed (the
session's zone is UTC); TIMESTAMP as the event's ZonedTimestamp text itself
(`final`). A table without a primary key, or keyed by a column not sent as itself
(binary, floating point), is read the row-at-a-time way.
"""

from __future__ import annotations

import binascii
import contextlib
import datetime as dt
import queue
import threading
from collections.abc import Callable
from typing import Any

from connect.api import ConnectError, Type
from connectors.mysql.columns import BINARIES, GEOMETRIES, INTEGERS, TEXTS
from connectors.mysql.tables import Table

__all__ = ["JsonChunks"]

# Keys whose JSON form compares in SQL as the column does (not ENUM: ORDER BY sorts it
# by member index, `>` against text compares text)
_KEY_KINDS = (*INTEGERS, "char", "varchar", "decimal", "date", "datetime", "year")


def _datetime(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:  # a zero date
        return None


def _date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


def _time(text: str) -> dt.timedelta:
    negative = text.startswith("-")
    hours, minutes, seconds = text.lstrip("-").split(":")
    whole, _, fraction = seconds.partition(".")
    value = dt.timedelta(
        hours=int(hours),
        minutes=int(minutes),
        seconds=int(whole),
        microseconds=int((fraction + "000000")[:6]),
    )
    return -value if negative else value


def _base64(text: str) -> bytes:
    return binascii.a2b_base64(text)


def _final(text: str) -> str:
    """Marks a column the server sends in its event form already (never called)."""
    raise AssertionError(text)


# TIMESTAMP as Debezium's ZonedTimestamp text, built by the server: the column's
# fraction digits as CAST prints them, 'T' and 'Z' around; a zero timestamp is null, as
# its parse to a datetime made it. Parsing and formatting it back in Python cost ~15% of
# a snapshot row's CPU (py-spy over the bench's worker). No `%` in it: the next chunks'
# query goes through PyMySQL's %-formatting of the last key.
_ZONED = (
    "IF(LEFT(CAST({c} AS CHAR), 4) = '0000', NULL, "
    "CONCAT(REPLACE(CAST({c} AS CHAR), ' ', 'T'), 'Z'))"
)


def _plan(kind: str) -> tuple[str, Callable[[Any], Any] | None]:
    """(SQL expression with {c} for the quoted column, the value's way back)."""
    if kind == "year":  # YEAR 0 prints as 0000, a number JSON refuses
        return "({c} + 0)", None
    if kind in INTEGERS or kind in ("enum", "set"):
        return "{c}", None
    if kind in ("char", "varchar", "tinytext", "text", "mediumtext"):
        return "{c}", None
    if kind in TEXTS:  # longtext, json: as a string, never as nested JSON
        return "CAST({c} AS CHAR)", None
    if kind in ("float", "real", "double"):
        return "CAST({c} AS CHAR)", float
    if kind in ("decimal", "numeric"):
        return "CAST({c} AS CHAR)", None  # the Decimal converters take text
    if kind in BINARIES or kind in GEOMETRIES or kind == "bit":
        return "TO_BASE64({c})", _base64
    if kind == "timestamp":
        return _ZONED, _final
    if kind == "datetime":
        return "CAST({c} AS CHAR)", _datetime
    if kind == "date":
        return "CAST({c} AS CHAR)", _date
    if kind == "time":
        return "CAST({c} AS CHAR)", _time
    return "CAST({c} AS CHAR)", None


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class ChunkHandoff:
    """Chunks a reader thread hands to the task, two at most ahead of it (so memory
    holds two chunks whatever the table's size); a reader's failure is handed over
    in a chunk's place and raised in the task. The two readers of a snapshot
    (`JsonChunks` here, `connectors.mysql.snapshot_text.TextRows`) share it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._done = False
        self._queue: queue.Queue = queue.Queue(maxsize=2)
        self._stop = threading.Event()

    def _put(self, item: Any) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def _take(self, timeout_s: float) -> Any:
        """The next chunk, or `_NONE_YET` when none came within the timeout."""
        try:
            item = self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return _NONE_YET
        if isinstance(item, BaseException):
            self._done = True
            raise ConnectError(f"snapshot of {self._name} failed: {item}") from item
        return item

    def _stop_reading(self) -> None:
        """Tell the reader to stop, and free a reader blocked on a full queue."""
        self._stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()


_NONE_YET = object()


class JsonChunks(ChunkHandoff):
    """The rows of one table as of the snapshot (see the module docstring)."""

    @staticmethod
    def supports(table: Table) -> bool:
        kinds = {c.name: c.kind for c in table.columns}
        return bool(table.primary_key) and all(
            kinds.get(k) in _KEY_KINDS for k in table.primary_key
        )

    def __init__(self, conn: Any, table: Table, chunk: int) -> None:
        import orjson

        self._loads = orjson.loads
        self._conn = conn
        self._chunk = chunk
        plans = [_plan(c.kind) for c in table.columns]
        #: DOUBLE and DECIMAL columns handed over as their text, which Arrow parses a
        #: column at a time in C (a float() or a Decimal per value in Python otherwise);
        #: not for a table whose reads are records (geometry: no Arrow path)
        arrow = not any(f.schema.type is Type.STRUCT for f in table.value_schema.fields)
        self.texts = frozenset(
            i
            for i, c in enumerate(table.columns)
            if arrow and c.kind in ("double", "decimal", "numeric")
        )
        self._back = [
            (i, back)
            for i, (_, back) in enumerate(plans)
            if back not in (None, _final) and i not in self.texts
        ]
        #: columns whose values come as the events carry them (no converter to apply)
        self.final = frozenset(i for i, (_, back) in enumerate(plans) if back is _final)
        index = {c.name: i for i, c in enumerate(table.columns)}
        self._key_at = [index[k] for k in table.primary_key]
        names = [_quote(c.name) for c in table.columns]
        keys = ", ".join(_quote(k) for k in table.primary_key)
        values = ", ".join(expr.format(c=n) for (expr, _), n in zip(plans, names, strict=True))
        source = f"{_quote(table.db)}.{_quote(table.name)}"
        inner = f"SELECT {', '.join(names)} FROM {source}"
        tail = f"ORDER BY {keys} LIMIT {int(chunk)}"
        marks = ", ".join(["%s"] * len(self._key_at))
        super().__init__(source)
        self._first = (
            f"SELECT JSON_ARRAYAGG(JSON_ARRAY({values}) ORDER BY {keys}) FROM ({inner} {tail}) x"
        )
        self._next = (
            f"SELECT JSON_ARRAYAGG(JSON_ARRAY({values}) ORDER BY {keys}) "
            f"FROM ({inner} WHERE ({keys}) > ({marks}) {tail}) x"
        )
        self._last: list[Any] | None = None
        with conn.cursor() as cur:  # one chunk is one value: let it be as long as needed
            cur.execute("SET SESSION group_concat_max_len = 4294967295")
        self._thread = threading.Thread(target=self._fetch, name="mysql-snapshot", daemon=True)
        self._thread.start()

    def _fetch(self) -> None:
        """The reader thread: the server builds chunk k+1 while the task's thread
        converts chunk k (the socket wait and orjson's parse let the GIL go)."""
        try:
            while not self._stop.is_set():
                with self._conn.cursor() as cur:
                    if self._last is None:
                        cur.execute(self._first)
                    else:
                        cur.execute(self._next, self._last)
                    text = cur.fetchone()[0]
                rows = [] if text is None else self._loads(text)
                if rows:
                    last = rows[-1]
                    self._last = [last[i] for i in self._key_at]
                self._put(rows)
                if len(rows) < self._chunk:
                    return
        except BaseException as exc:  # handed to the task's thread
            self._put(exc)

    def next_rows(self, timeout_s: float) -> list[list[Any]] | None:
        """The next chunk's rows as PyMySQL would give them; None when none came within
        the timeout; [] once the table is read."""
        if self._done:
            return []
        rows = self._take(timeout_s)
        if rows is _NONE_YET:
            return None
        if len(rows) < self._chunk:
            self._done = True
        for i, back in self._back:
            for row in rows:
                v = row[i]
                if v is not None:
                    row[i] = back(v)
        return rows

    def close(self) -> None:
        self._stop_reading()
        self._thread.join(timeout=30)
