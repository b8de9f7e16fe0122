"""Reading one table of the snapshot: `COPY (SELECT …) TO STDOUT` in a reader thread.

The reader thread runs the COPY on the snapshot connection (inside the transaction
that imported the slot's exported snapshot) and hands the rows' text over in chunks
through a bounded queue, so memory holds at most `queue depth × chunk` rows whatever
the table's size. The task's thread (`next_rows`) decodes a chunk, splits it into
rows and fields, and converts each field with the column's converter — the same ones
the stream uses, after undoing COPY's backslash escapes — so a snapshot row equals the
streamed row of the same data.

COPY's text format: one line per row, fields split by tabs, `\\N` for NULL, and
backslash escapes (`\\t`, `\\n`, `\\\\`, …) inside text values only.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

import psycopg2

from connect.api import ConnectError
from connectors.postgres.columns import (
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    OID,
    Table,
    copy_unescape,
)

__all__ = ["TableSnapshot"]

_NO_ESCAPES = {INT2, INT4, INT8, OID, FLOAT4, FLOAT8, 16, 1700, 1082, 1083, 1114, 1184}
_DONE = object()
_QUEUE_DEPTH = 4


def _unescaped(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    if convert is str:
        return copy_unescape
    return lambda text: convert(copy_unescape(text))


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class _Sink:
    """The file psycopg2's copy_expert writes to: one call per row; rows are grouped
    into chunks of `rows` and queued (blocking when the queue is full)."""

    def __init__(self, out: queue.Queue, rows: int, stop: threading.Event) -> None:
        self.out = out
        self.rows = rows
        self.stop = stop
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        parts = self.parts
        parts.append(data)
        if len(parts) >= self.rows:
            self.flush()
        return len(data)

    def flush(self) -> None:
        if not self.parts:
            return
        chunk, self.parts = b"".join(self.parts), []
        while True:
            if self.stop.is_set():
                raise InterruptedError("snapshot stopped")
            try:
                self.out.put(chunk, timeout=0.1)
                return
            except queue.Full:
                continue


class TableSnapshot:
    """The rows of one table as of the snapshot, a chunk at a time."""

    def __init__(self, conn: Any, table: Table, *, fetch_rows: int = 10240) -> None:
        self.table = table
        self._queue: queue.Queue = queue.Queue(maxsize=_QUEUE_DEPTH)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        columns = ", ".join(_quote(c) for c in table.columns)
        self._sql = (
            f"COPY (SELECT {columns} FROM {_quote(table.schema)}.{_quote(table.name)}) TO STDOUT"
        )
        self._converters = [
            conv if oid in _NO_ESCAPES else _unescaped(conv)
            for conv, oid in zip(table.converters, table.type_oids, strict=True)
        ]
        self._thread = threading.Thread(
            target=self._read,
            args=(conn, fetch_rows),
            name=f"snapshot-{table.qualified}",
            daemon=True,
        )
        self._thread.start()

    def _read(self, conn: Any, rows: int) -> None:
        sink = _Sink(self._queue, rows, self._stop)
        try:
            with conn.cursor() as cur:
                cur.copy_expert(self._sql, sink, size=1 << 16)
            sink.flush()
        except InterruptedError:
            return
        except BaseException as exc:  # handed to the task's thread
            self._error = exc
        with contextlib.suppress(queue.Full):
            while not self._stop.is_set():
                try:
                    self._queue.put(_DONE, timeout=0.1)
                    break
                except queue.Full:
                    continue

    def next_rows(self, *, timeout_s: float) -> list[list[Any]] | None:
        """Converted rows of the next chunk; [] when none came within the timeout;
        None once the table has been read."""
        try:
            chunk = self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return []
        if chunk is _DONE:
            self._thread.join()
            if self._error is not None:
                error = self._error
                if isinstance(error, psycopg2.Error):
                    raise ConnectError(
                        f"snapshot of {self.table.qualified} failed: {str(error).strip()}"
                    ) from error
                raise error
            return None
        convs = self._converters
        out = []
        append = out.append
        for line in chunk.decode().split("\n"):
            if not line:
                continue
            append(
                [
                    None if text == "\\N" else conv(text)
                    for conv, text in zip(convs, line.split("\t"), strict=True)
                ]
            )
        return out

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()
        self._thread.join(timeout=5)
