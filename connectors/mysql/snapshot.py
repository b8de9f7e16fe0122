"""The initial snapshot: every captured table read in one consistent transaction whose
binlog position is known, so streaming starts exactly where the rows stop.

The protocol (Debezium's, `snapshot.locking.mode` deciding the lock):

1. A session with the time zone UTC (TIMESTAMP values come as UTC) and REPEATABLE READ.
2. minimal / extended: `FLUSH TABLES WITH READ LOCK` — no transaction commits while
   the position is read. none: no lock.
3. `START TRANSACTION WITH CONSISTENT SNAPSHOT`: the rows read from now on are those of
   this moment.
4. The binlog position of that moment: under the lock `SHOW MASTER STATUS` (and the
   GTID position, `@@gtid_binlog_pos` on MariaDB, `@@gtid_executed` on MySQL);
   without it MariaDB's `binlog_snapshot_file` / `binlog_snapshot_position` status,
   which the server fixes at the consistent snapshot's start (and
   `BINLOG_GTID_POS()` of it); MySQL without a lock reads `SHOW MASTER STATUS`, which
   is safe only when nothing writes meanwhile, as with Debezium.
5. The captured tables' structure from `information_schema`, in the transaction.
6. minimal: `UNLOCK TABLES` (writers go on; our transaction still sees step 3's data).
7. Each table is read with an unbuffered `SELECT` parsed a column at a time
   (`snapshot_text`; the JSON chunks of `snapshot_chunks` or PyMySQL's rows for
   tables with a column it has no way for), `snapshot.fetch.size` rows at a
   time, each chunk one `SourceBatch` of Arrow columns (`op = r`, `source.snapshot` as
   Debezium marks reads: first, first_in_data_collection, true,
   last_in_data_collection, last); every read carries the step-4 position. A chunk is
   handed over one poll late, when the next one shows whether its last row ends the
   table; its marks are values of its `source` column, so a poll is one batch (one
   append of the log) and only the snapshot's very last read is a record of its own.
8. `COMMIT` (extended: `UNLOCK TABLES` now); the last read's offset says the
   snapshot completed, and the stream starts at the step-4 position.

A snapshot cut short is done again from its start on restart (its offsets say
`snapshot: INITIAL`, not completed).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from connect.api import SourceBatch, SourceRecord, Struct, Type, arrow
from connectors.mysql.envelope import SNAPSHOT_INDEX
from connectors.mysql.snapshot_chunks import JsonChunks
from connectors.mysql.snapshot_text import TextRows
from connectors.mysql.tables import Table
from connectors.postgres.envelope import TRANSACTION_SCHEMA

__all__ = ["Position", "SnapshotPhase", "convert_columns", "open_snapshot", "read_items"]

Position = dict[str, Any]  # file, pos, gtids (None without GTIDs)


def _one(cur: Any, sql: str) -> Any:
    cur.execute(sql)
    return cur.fetchone()


def open_snapshot(conn: Any, *, locking: str, mariadb: bool) -> tuple[Position, bool]:
    """Steps 1-4 on `conn`; (position, whether the global read lock is held)."""
    cur = conn.cursor()
    # Step 1
    cur.execute("SET SESSION time_zone = '+00:00'")
    cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    locked = False
    if locking in ("minimal", "extended"):  # Step 2
        cur.execute("FLUSH TABLES WITH READ LOCK")
        locked = True
    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")  # Step 3
    # Step 4
    if not locked and mariadb:
        cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {k.lower(): v for k, v in cur.fetchall()}
        file, pos = status["binlog_snapshot_file"], int(status["binlog_snapshot_position"])
        gtids = _one(cur, f"SELECT BINLOG_GTID_POS('{file}', {pos})")[0]
    else:
        row = _one(cur, "SHOW MASTER STATUS")
        file, pos = row[0], int(row[1])
        gtids = _one(cur, "SELECT @@gtid_binlog_pos" if mariadb else "SELECT @@gtid_executed")[0]
    cur.close()
    return {"file": file, "pos": pos, "gtids": gtids or None}, locked


class SnapshotPhase:
    """Steps 5-8 over the tables handed in (see the module docstring)."""

    def __init__(
        self,
        *,
        conn: Any,
        locked: bool,
        locking: str,
        position: Position,
        tables: list[Table],
        source: Callable[..., Struct],
        partition: dict[str, Any],
        fetch_rows: int,
        batch_rows: int,
        poll_s: float = 0.5,
        ddl: list[tuple[Table, str]] = (),  # type: ignore[assignment]
        ddl_records: Callable[..., list[SourceRecord]] | None = None,
    ) -> None:
        self.conn = conn
        self._poll_s = poll_s
        self.position = position
        if locked and locking == "minimal":  # Step 6
            with conn.cursor() as cur:
                cur.execute("UNLOCK TABLES")
            locked = False
        self._locked = locked
        self.tables = list(tables)
        self._source = source
        self._partition = partition
        self._chunk = max(1, min(fetch_rows, batch_rows))
        self.ts_ms = int(time.time() * 1000)
        self.offset = {
            "file": position["file"],
            "pos": position["pos"],
            **({"gtids": position["gtids"]} if position["gtids"] else {}),
            "ts_sec": self.ts_ms // 1000,
            "snapshot": "INITIAL",
        }
        # Debezium's snapshot DDL: each table's CREATE TABLE before the reads
        self._ahead: list[SourceRecord] = []
        for table, statement in ddl if ddl_records is not None else ():
            source = self._source_of(table)
            self._ahead += ddl_records(source, table.db, statement, self.offset, ts_ms=self.ts_ms)
        self.current: Table | None = None
        self._cursor: Any = None
        self._chunks: JsonChunks | None = None
        self._text: TextRows | None = None
        #: the newest chunk's reads (a SourceBatch, or a record), held back until the
        #: next one shows whether they end their table (step 7)
        self.pending: SourceBatch | SourceRecord | None = None
        self._table_rows = 0
        self._first_marked = False

    def next_batch(self) -> list[Any] | None:
        """The next reads (the newest held back until we know whether it is the last);
        None once the snapshot is over."""
        if self._ahead:
            ahead, self._ahead = self._ahead, []
            return ahead
        while True:
            if self.current is None:
                if not self.tables:
                    return self._finish()
                self.current = self.tables.pop(0)
                if TextRows.supports(self.current):
                    self._text = TextRows(self.conn, self.current, self._chunk)
                elif JsonChunks.supports(self.current):
                    self._chunks = JsonChunks(self.conn, self.current, self._chunk)
                else:
                    self._chunks = None
                    self._cursor = self.conn.cursor(_ss_cursor())
                    names = ", ".join(f"`{c.name}`" for c in self.current.columns)
                    self._cursor.execute(
                        f"SELECT {names} FROM `{self.current.db}`.`{self.current.name}`"
                    )
            # Step 7
            if self._text is not None:
                columns = self._text.next_columns(self._poll_s)
                if columns is None:
                    return []  # the next chunk is not there yet
                if not columns:
                    self._end_table()
                    continue
                return self._emit(self.current, columns, len(columns[0]))
            if self._chunks is not None:
                rows = self._chunks.next_rows(self._poll_s)
                if rows is None:
                    return []  # the next chunk is not there yet
            else:
                rows = self._cursor.fetchmany(self._chunk)
            if not rows:
                self._end_table()
                continue
            return self._emit(self.current, self._columns(self.current, rows), len(rows))

    def _end_table(self) -> None:
        if self._text is not None:
            self._text.close()
            self._text = None
        if self._chunks is not None:
            self._chunks.close()
            self._chunks = None
        with contextlib.suppress(Exception):
            if self._cursor is not None:
                self._cursor.close()
        self._cursor = None
        self.current = None
        pending = self.pending
        if self._table_rows and pending is not None and _marker(pending) != "first":
            self.pending = _remark(pending, "last_in_data_collection")
        self._table_rows = 0

    def _source_of(self, table: Table) -> Struct:
        return self._source(
            ts_ms=self.ts_ms,
            snapshot="true",
            db=table.db,
            table=table.name,
            gtid=None,
            file=self.position["file"],
            pos=self.position["pos"],
            row=0,
        )

    def _columns(self, table: Table, rows: list[Any]) -> list[list[Any]]:
        if self._chunks is None:
            return convert_columns(table, rows)
        return convert_columns(table, rows, self._chunks.final, self._chunks.texts)

    def _emit(self, table: Table, columns: list[Any], n: int) -> list[Any]:
        """The reads held back before, and this chunk's but its last item (a whole
        batch), which is held back in turn (step 7)."""
        items = read_items(
            table,
            columns,
            source=self._source_of(table),
            partition=self._partition,
            offset=self.offset,
        )
        if not self._table_rows:  # the table's first row
            items[0] = _remark(items[0], self._first_marker(), row=0)
        self._table_rows += n
        out: list[Any] = [self.pending] if self.pending is not None else []
        out.extend(items)
        self.pending = out.pop()
        return out

    def _first_marker(self) -> str:
        first, self._first_marked = not self._first_marked, True
        return "first" if first else "first_in_data_collection"

    def _finish(self) -> list[Any] | None:
        """Step 8: the held-back reads, the last one a record carrying the offset that
        says the snapshot completed."""
        self.close()
        last, self.pending = self.pending, None
        if last is None:
            return None
        out: list[Any] = []
        if isinstance(last, SourceBatch):
            n = len(last)
            if n > 1:
                out.append(last.slice(0, n - 1))
            last = last.slice(n - 1).records()[0]
        last = _remark(last, "last")
        offset = {k: v for k, v in self.offset.items() if k != "snapshot"}
        last.source_offset = dict(offset, snapshot_completed=True)
        out.append(last)
        return out

    def close(self) -> None:
        if self._text is not None:
            self._text.close()  # cut short: closes the connection (nothing to commit)
            self._text = None
        if self._chunks is not None:
            self._chunks.close()
            self._chunks = None
        if self._cursor is not None:
            with contextlib.suppress(Exception):
                self._cursor.close()
            self._cursor = None
        with contextlib.suppress(Exception), self.conn.cursor() as cur:
            cur.execute("COMMIT")
            if self._locked:
                cur.execute("UNLOCK TABLES")
        with contextlib.suppress(Exception):
            self.conn.close()


class _Text(list):  # type: ignore[type-arg]
    """A column of numbers as their text, for Arrow to parse (`_arrow`)."""


def _arrow(column: list[Any] | pa.Array, typ: pa.DataType) -> pa.Array:
    if isinstance(column, pa.Array):  # the text protocol's columns (`TextRows`)
        return column if column.type == typ else column.cast(typ)
    if type(column) is _Text:
        return pa.array(column, pa.string()).cast(typ)
    return pa.array(column, type=typ)


def convert_columns(
    table: Table,
    rows: list[Any],
    final: frozenset[int] = frozenset(),
    texts: frozenset[int] = frozenset(),
) -> list[list[Any]]:
    """The rows' converted values, a column at a time (but for the columns in `final`,
    which come in their event form already, and the DOUBLE / DECIMAL columns in
    `texts`, their text, which the Arrow batch parses when the event is a float or a
    Decimal)."""
    out: list[list[Any]] = []
    columns = zip(table.snapshot_converters, zip(*rows, strict=True), strict=True)
    for i, (conv, column) in enumerate(columns):
        if i in texts:
            typ = arrow.arrow_type(table.column_schemas[i])
            if pa.types.is_floating(typ) or pa.types.is_decimal(typ):
                out.append(_Text(column))
                continue
        if conv.__name__ == "_same" or i in final:
            out.append(list(column))
        else:
            out.append([None if v is None else conv(v) for v in column])
    return out


def read_items(
    table: Table,
    columns: list[list[Any]],
    *,
    source: Struct,
    partition: dict[str, Any],
    offset: dict[str, Any],
) -> list[Any]:
    """Reads (`op = r`) of converted columns: one SourceBatch of Arrow columns, or
    records where a column has no Arrow path (geometry). The initial snapshot's and
    the incremental snapshot's (`connectors.mysql.incremental`) chunks both go here."""
    n = len(columns[0]) if columns else 0
    if any(f.schema.type is Type.STRUCT for f in table.value_schema.fields):
        return _records(table, columns, source, partition, offset)
    return [_batch(table, columns, n, source, partition, offset)]


def _batch(
    table: Table,
    columns: list[list[Any]],
    n: int,
    source: Struct,
    partition: dict[str, Any],
    offset: dict[str, Any],
) -> SourceBatch:
    env = table.envelope
    fields = {f.name: f for f in env.fields}
    kept = range(len(columns)) if table.value_indexes is None else table.value_indexes
    value_fields = table.value_schema.fields
    arrays = [
        _arrow(columns[i], arrow.arrow_type(f.schema))
        for i, f in zip(kept, value_fields, strict=True)
    ]
    after = (
        pa.StructArray.from_arrays(arrays, names=[f.name for f in value_fields])
        if arrays
        else pa.array([{}] * n, pa.struct([]))
    )
    now_ns = time.time_ns()
    values = pa.RecordBatch.from_arrays(
        [
            pa.nulls(n, after.type),
            after,
            arrow.repeat(fields["source"].schema, source, n),
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
            [
                _arrow(columns[i], arrow.arrow_type(f.schema))
                for i, f in zip(table.key_indexes, table.key_schema.fields, strict=True)
            ],
            names=[f.name for f in table.key_schema.fields],
        )
    return SourceBatch(
        topic=table.topic,
        value_schema=env,
        values=values,
        key_schema=table.key_schema,
        keys=keys,
        source_partition=partition,
        source_offset=offset,
    )


def _records(
    table: Table,
    columns: list[list[Any]],
    source: Struct,
    partition: dict[str, Any],
    offset: dict[str, Any],
) -> list[Any]:
    now_ns = time.time_ns()
    stamps = [now_ns // 1_000_000, now_ns // 1000, now_ns]
    out = []
    for row in zip(*columns, strict=True):
        value = Struct.trusted(
            table.envelope, [None, table.value_of(row), source, None, "r", *stamps]
        )
        out.append(
            SourceRecord.of(
                table.topic,
                table.key_schema,
                table.key_of(row),
                table.envelope,
                value,
                partition,
                offset,
            )
        )
    return out


def _ss_cursor() -> Any:
    import pymysql.cursors

    return pymysql.cursors.SSCursor


def _marker(item: SourceBatch | SourceRecord) -> str:
    """The `source.snapshot` of a read (of a batch's last row)."""
    if isinstance(item, SourceBatch):
        column = item.values.column(2).field(SNAPSHOT_INDEX)
        return column[len(item) - 1].as_py()
    return item.value.get("source").get("snapshot")


def _remark(
    item: SourceBatch | SourceRecord, marker: str, *, row: int = -1
) -> SourceBatch | SourceRecord:
    """The read with `source.snapshot` = `marker` (for a batch, in its row `row`; -1:
    its last), the record changed in place, a batch made anew (its columns are
    immutable; the marks' column is rebuilt, the others are shared)."""
    if isinstance(item, SourceBatch):
        return _remark_batch(item, marker, row if row >= 0 else len(item) - 1)
    values = list(item.value.values())
    source = list(values[2].values())
    source[SNAPSHOT_INDEX] = marker
    values[2] = Struct.trusted(values[2].schema, source)
    item.value = Struct.trusted(item.value.schema, values)
    return item


def _remark_batch(batch: SourceBatch, marker: str, row: int) -> SourceBatch:
    import pyarrow.compute as pc

    source = batch.values.column(2)
    children = source.flatten()
    at = np.zeros(len(batch), dtype=bool)
    at[row] = True
    children[SNAPSHOT_INDEX] = pc.if_else(pa.array(at), marker, children[SNAPSHOT_INDEX])
    marked = pa.StructArray.from_arrays(children, fields=list(source.type))
    return batch.with_(values=batch.values.set_column(2, "source", marked))
