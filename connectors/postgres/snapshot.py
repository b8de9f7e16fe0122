"""Reading one table of the snapshot: `COPY (SELECT …) TO STDOUT` in a reader thread.

Columnar chunks. Where `copy_arrow` can parse a table's COPY text straight into Arrow
columns (its types, no escapes in the chunk), a chunk becomes one `SourceBatch` of
envelopes (`before` null, `after` the row columns, `source` and `op` constant), so the
runtime unwraps, converts and partitions it a column at a time; a chunk it cannot
parse becomes records as below. Both give the same events.

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
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg2
import pyarrow as pa

from connect.api import ConnectError, Schema, SourceBatch, SourceRecord, Struct, arrow
from connectors.postgres import pgoutput as pgo
from connectors.postgres.columns import FLOAT4, FLOAT8, INT2, INT4, INT8, OID
from connectors.postgres.copy_arrow import CopyArrowParser
from connectors.postgres.envelope import (
    SNAPSHOT_INDEX,
    SOURCE_SCHEMA,
    TRANSACTION_SCHEMA,
    source_block,
)
from connectors.postgres.tables import Table

__all__ = ["SnapshotPhase", "TableSnapshot", "copy_unescape", "parse_copy_text"]

_NO_ESCAPES = {
    INT2,
    INT4,
    INT8,
    OID,
    FLOAT4,
    FLOAT8,
    16,
    1700,
    1082,
    1083,
    1114,
    1184,
    1186,
    1266,
    2950,
}
_DONE = object()


_COPY_ESCAPES = {
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)")


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group(1)
    if code in _COPY_ESCAPES:
        return _COPY_ESCAPES[code]
    if code[0] == "x" and len(code) > 1:
        return chr(int(code[1:], 16))
    if code[0].isdigit():
        return chr(int(code, 8))
    return code


def copy_unescape(text: str) -> str:
    """A field of COPY's text format without its backslash escapes."""
    return _ESCAPE.sub(_unescape_one, text) if "\\" in text else text


def parse_copy_text(
    text: str, converters: list[Callable[[str], Any]], escaped: list[bool]
) -> list[list[Any]]:
    """The rows of whole lines of COPY's text format, converted.

    Column at a time: the text is split into fields once, each column is a slice of
    them, and a column without NULLs or escapes goes through its converter with
    `map` (a C loop for `int`, `float` and `str`), or through the converter's own
    `column` form where it has one (checks per column, then a C loop) — a Python call
    per value only where a value needs one. `escaped[i]` says whether column i's type
    can hold backslash escapes (text does; numbers, booleans and dates never do)."""
    width = len(converters)
    lines = text.count("\n")
    fields = text.replace("\n", "\t").split("\t")
    if len(fields) != lines * width + 1 or not text.endswith("\n"):
        raise ConnectError(f"COPY returned rows of other than {width} fields")
    backslashes = "\\" in text  # one scan of the chunk spares one per column
    nulls = backslashes and "\\N" in text
    columns = []
    for i, convert in enumerate(converters):
        column = fields[i::width][:lines]
        if backslashes and escaped[i] and "\\" in "".join(column):  # NULL is `\N` first
            if convert is str:
                column = [None if v == "\\N" else copy_unescape(v) for v in column]
            else:
                column = [None if v == "\\N" else convert(copy_unescape(v)) for v in column]
        elif nulls and "\\N" in column:
            column = [None if v == "\\N" else convert(v) for v in column]
        elif convert is not str:
            convert_column = getattr(convert, "column", None)
            column = (
                list(map(convert, column)) if convert_column is None else convert_column(column)
            )
        columns.append(column)
    return list(map(list, zip(*columns, strict=True)))


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

    def __init__(
        self, conn: Any, table: Table, *, fetch_rows: int = 10240, batch_rows: int = 2048
    ) -> None:
        """Chunks of `batch_rows` rows (one poll's worth: small enough that a batch's
        objects stay in the CPU's cache while the runtime makes several passes over
        them), at most about `fetch_rows` rows read ahead."""
        self.table = table
        chunk = max(1, min(batch_rows, fetch_rows))
        self._queue: queue.Queue = queue.Queue(maxsize=max(2, -(-fetch_rows // chunk)))
        self._stop = threading.Event()
        self._error: BaseException | None = None
        columns = ", ".join(_quote(c) for c in table.columns)
        self._sql = (
            f"COPY (SELECT {columns} FROM {_quote(table.schema)}.{_quote(table.name)}) TO STDOUT"
        )
        self._converters = list(table.converters)
        self._escaped = [oid not in _NO_ESCAPES for oid in table.type_oids]
        self._thread = threading.Thread(
            target=self._read,
            args=(conn, chunk),
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
        chunk = self.next_chunk(timeout_s=timeout_s)
        if not chunk:
            return chunk  # type: ignore[return-value]
        return self.rows(chunk)

    def rows(self, chunk: bytes) -> list[list[Any]]:
        """A chunk's rows, converted field by field (see the module docstring)."""
        return parse_copy_text(chunk.decode(), self._converters, self._escaped)

    def next_chunk(self, *, timeout_s: float) -> bytes | None:
        """The COPY text of the next chunk (whole lines); b"" when none came within
        the timeout; None once the table has been read."""
        try:
            chunk = self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return b""
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
        return chunk

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()
        self._thread.join(timeout=5)


class SnapshotPhase:
    """The snapshot phase of a task: the exported snapshot and the tables to read.

    Creating it creates the slot (`EXPORT_SNAPSHOT`, on the task's replication
    connection `repl_cursor`, under its `lock`) and opens a second connection
    (`connect()`) whose REPEATABLE READ transaction imports that snapshot, so every
    table is read as of the slot's starting point."""

    def __init__(
        self,
        *,
        repl_cursor: Any,
        lock: threading.Lock,
        slot: str,
        connect: Callable[[], Any],
        tables: list[Table],
        envelope: Callable[[Table], Schema],
        prefix: str,
        db: str,
        partition: dict[str, Any],
        fetch_rows: int,
        batch_rows: int,
        poll_s: float,
    ) -> None:
        with lock:
            repl_cursor.execute(
                f"CREATE_REPLICATION_SLOT {_quote(slot)} LOGICAL pgoutput EXPORT_SNAPSHOT"
            )
            _, consistent, snapshot_name, _ = repl_cursor.fetchone()
        self.consistent_lsn = pgo.lsn_int(consistent)
        self.conn = connect()
        self.conn.set_session(isolation_level="REPEATABLE READ", readonly=True)
        cur = self.conn.cursor()
        cur.execute("SET TRANSACTION SNAPSHOT %s", (snapshot_name,))
        cur.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
        self.xid = cur.fetchone()[0]
        cur.close()
        self.ts_us = int(time.time() * 1_000_000)
        self.tables = list(tables)
        self._envelope = envelope
        self._prefix = prefix
        self._db = db
        self._partition = partition
        self._fetch_rows = fetch_rows
        self._batch_rows = batch_rows
        self._poll_s = poll_s
        self.current: TableSnapshot | None = None
        self.pending: SourceRecord | None = None
        self._table_rows = 0  # rows of the current table emitted (pending included)
        self._first_marked = False
        self._parsers: dict[str, CopyArrowParser | None] = {}
        self.offset = {
            "lsn": self.consistent_lsn,
            "txId": self.xid,
            "ts_usec": self.ts_us,
            "snapshot": True,
            "last_snapshot_record": False,
        }

    def next_batch(self) -> list[Any] | None:
        """The next records (the newest is held back until we know whether it is the
        last); None once the snapshot is over.

        `source.snapshot` says where a read stands, as Debezium marks it: "first" (the
        snapshot's first record), "first_in_data_collection" / "last_in_data_collection"
        (a table's first / last), "last" (the snapshot's last), "true" otherwise; where
        two apply, the snapshot's own marks win over the table's, and "last" over all."""
        while True:
            if self.current is None:
                if not self.tables:
                    return self._finish()
                table = self.tables.pop(0)
                self.current = TableSnapshot(
                    self.conn, table, fetch_rows=self._fetch_rows, batch_rows=self._batch_rows
                )
            current = self.current
            chunk = current.next_chunk(timeout_s=self._poll_s)
            if chunk is None:  # the table is done
                self.current = None
                pending = self.pending
                if self._table_rows and pending is not None and _marker(pending) != "first":
                    _remark(pending, "last_in_data_collection")
                self._table_rows = 0
                continue
            if not chunk:
                return []
            parser = self._parser(current.table)
            columns = parser.parse(chunk) if parser is not None else None
            if columns is None:
                return self._records(current.table, current.rows(chunk))
            return self._batch(current.table, columns)

    def _parser(self, table: Table) -> CopyArrowParser | None:
        if table.qualified not in self._parsers:
            parser = CopyArrowParser(table)
            self._parsers[table.qualified] = parser if parser.supported else None
        return self._parsers[table.qualified]

    def _source(self, table: Table) -> Struct:
        return source_block(
            prefix=self._prefix,
            ts_us=self.ts_us,
            snapshot="true",
            db=self._db,
            sequence=None,
            schema=table.schema,
            table=table.name,
            tx_id=self.xid,
            lsn=self.consistent_lsn,
        )

    def _first_marker(self) -> str:
        """`source.snapshot` of a table's first record."""
        first, self._first_marked = not self._first_marked, True
        return "first" if first else "first_in_data_collection"

    def _batch(self, table: Table, rows: pa.RecordBatch) -> list[Any]:
        """A chunk's events as one SourceBatch (the newest held back as a record, see
        `next_batch`), equal to what `_records` makes of the same rows."""
        env = self._envelope(table)
        n = rows.num_rows
        now_ns = time.time_ns()
        fields = {f.name: f for f in env.fields}
        kept = range(rows.num_columns) if table.value_indexes is None else table.value_indexes
        after = (
            pa.StructArray.from_arrays(
                [rows.column(i) for i in kept], fields=[rows.schema.field(i) for i in kept]
            )
            if kept
            else pa.array([{}] * n, pa.struct([]))  # a column filter that keeps none
        )
        values = pa.RecordBatch.from_arrays(
            [
                pa.nulls(n, after.type),
                after,
                arrow.repeat(fields["source"].schema, self._source(table), n),
                arrow.repeat(TRANSACTION_SCHEMA, None, n),
                arrow.repeat(fields["op"].schema, "r", n),
                arrow.repeat(fields["ts_ms"].schema, now_ns // 1_000_000, n),
                arrow.repeat(fields["ts_us"].schema, now_ns // 1000, n),
                arrow.repeat(fields["ts_ns"].schema, now_ns, n),
            ],
            names=[f.name for f in env.fields],
        )
        keys = None
        if table.key_schema is not None:
            keys = pa.RecordBatch.from_arrays(
                [rows.column(i) for i in table.key_indexes],
                names=[f.name for f in table.key_schema.fields],
            )
        batch = SourceBatch(
            topic=table.topic,
            value_schema=env,
            values=values,
            key_schema=table.key_schema,
            keys=keys,
            source_partition=self._partition,
            source_offset=self.offset,
        )
        out: list[Any] = [self.pending] if self.pending is not None else []
        start = 0
        if not self._table_rows:  # the table's first row: a record of its own mark
            first = batch.slice(0, 1).records()[0]
            _remark(first, self._first_marker())
            out.append(first)
            start = 1
        self._table_rows += n
        if n - 1 > start:
            out.append(batch.slice(start, n - 1))
        self.pending = out.pop() if n == start else batch.slice(n - 1).records()[0]
        return out

    def _records(self, table: Table, rows: list[list[Any]]) -> list[SourceRecord]:
        env = self._envelope(table)
        value_schema = table.value_schema
        value_indexes = table.value_indexes  # None: the row is the value
        key_schema = table.key_schema
        key_indexes = table.key_indexes
        source = self._source(table)
        now_ns = time.time_ns()
        stamps = [now_ns // 1_000_000, now_ns // 1000, now_ns]
        # Each row's values were converted for its columns' schemas (read_table).
        trusted = Struct.trusted
        values: list[Struct] = []
        keys: list[Struct] | None = [] if key_schema is not None else None
        for row in rows:
            row_value = trusted(
                value_schema, row if value_indexes is None else [row[i] for i in value_indexes]
            )
            values.append(trusted(env, [None, row_value, source, None, "r", *stamps]))
            if keys is not None:
                keys.append(trusted(key_schema, [row[i] for i in key_indexes]))
        out = [self.pending] if self.pending is not None else []
        first = len(out) if rows and not self._table_rows else -1
        self._table_rows += len(rows)
        out += SourceRecord.batch(
            table.topic,
            values,
            value_schema=env,
            keys=keys,
            key_schema=key_schema,
            source_partition=self._partition,
            source_offsets=[self.offset] * len(values),
        )
        if first >= 0:
            _remark(out[first], self._first_marker())
        self.pending = out.pop() if out else None
        return out

    def _finish(self) -> list[SourceRecord] | None:
        self.close()
        last = self.pending
        self.pending = None
        if last is None:
            return None
        _remark(last, "last")
        last.source_offset = dict(
            self.offset, last_snapshot_record=True, lsn_commit=self.consistent_lsn
        )
        return [last]

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None
        if not self.conn.closed:
            try:
                self.conn.rollback()
                self.conn.close()
            except psycopg2.Error:
                pass


def _marker(record: SourceRecord) -> str:
    return record.value.get("source").get("snapshot")


def _remark(record: SourceRecord, marker: str) -> None:
    """Give a read's `source.snapshot` the value `marker`."""
    values = list(record.value.values())
    source = list(values[2].values())
    source[SNAPSHOT_INDEX] = marker
    values[2] = Struct.trusted(SOURCE_SCHEMA, source)
    record.value = Struct.trusted(record.value.schema, values)
