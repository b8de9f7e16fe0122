"""The stream's pgoutput messages as Debezium's change events: step 4 of
`connectors.postgres.source` (the task's module docstring has the whole protocol).

`ChangeEvents.handle(lsn, payload, out)` takes one message of the replication stream:

1. Begin: the transaction's id and commit time; a transaction the restart resumes in
   (the offset's `txId`, see `restart_position`) skips its events up to the offset's
   `lsn`, emitted before.
2. Relation: the table a relation oid names, re-read from the catalog when it is new
   or its shape changed (or built from the message when the catalog has moved on).
3. Insert, Update, Delete, Truncate: c / u / d / t events (`skipped.operations`
   dropped), a tombstone after each delete (`tombstones.on.delete`), a primary-key
   change as a delete + tombstone + create, `before` holding the old row only under
   REPLICA IDENTITY FULL (for deletes, otherwise, the key columns and other required
   columns with a zero value, as Debezium does).
4. Commit: the transaction's last event gets the commit's end as its `lsn_commit`,
   so an offset never claims a transaction done before all of it was emitted.

Its own module because it is pure translation: no connection but the catalog
re-read it is given, so the task keeps the connections, the polling and the commits.
The snapshot phase builds its envelopes through `envelope` too, so a snapshot row and
a streamed row of one table share one schema.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from connect.api import Schema, SourceRecord, Struct, Type
from connectors.postgres import pgoutput as pgo
from connectors.postgres.columns import TypeOptions
from connectors.postgres.envelope import (
    HEARTBEAT_KEY_SCHEMA,
    HEARTBEAT_VALUE_SCHEMA,
    PLACEHOLDER,
    change_event,
    envelope_schema,
    source_block,
    zero_value,
)
from connectors.postgres.tables import ColumnFilter, Table

__all__ = ["ChangeEvents", "restart_position"]


def restart_position(offset: Mapping[str, Any] | None) -> tuple[int, dict[str, Any] | None]:
    """Where a stream restarts after the stored `offset`: the LSN to stream from (its
    `lsn_commit`, the end of the last transaction emitted whole) and the transaction
    to resume in, `{"txId", "lsn"}` (its events up to `lsn` are in the log), or None.

    Every streamed event's offset names its transaction, whatever its `lsn` is beside
    its `lsn_commit`: the two cannot tell a transaction in progress from one emitted
    whole. A transaction's first change can start right where the previous commit
    ended (one session's back-to-back transactions: `lsn` == `lsn_commit`), and one
    that began writing before another committed has changes below that other's end
    (`lsn` < `lsn_commit`), as has one begun before a heartbeat's position; taken
    for finished, such a transaction was emitted again whole after a restart.
    Naming it is always safe: from `lsn_commit` the server sends transactions in
    commit order, so that transaction comes first again exactly when it was not
    emitted whole, and never when it was (its commit lies before `lsn_commit`); the
    skip (`ChangeEvents.handle`, step 1) applies to the first transaction only.

    Two offsets resume in nothing. A snapshot's: its `txId` is the snapshot's xmin,
    which can be the id of the first transaction streamed after it, one still open at
    the slot's consistent point whose changes the snapshot did not see. And one that
    Debezium wrote right after a BEGIN (`messageType` BEGIN: its transaction-metadata
    event, a heartbeat): nothing of that transaction was emitted, and pgoutput's BEGIN
    has the LSN of the transaction's first change, which a skip would drop."""
    if offset is None or offset.get("lsn_commit") is None:
        return 0, None
    start = int(offset["lsn_commit"])
    if (
        offset.get("snapshot")
        or offset.get("messageType") == "BEGIN"
        or offset.get("txId") is None
        or offset.get("lsn") is None
    ):
        return start, None
    return start, {"txId": int(offset["txId"]), "lsn": int(offset["lsn"])}


class ChangeEvents:
    """The events of one task's stream (see the module docstring). `tables` (by
    `schema.table`) is the task's captured tables, updated as relations change;
    `reread(schema, name)` reads a table from the catalog (with the task's column
    filter, `columns`, which a table made of a Relation message gets too).
    `last_commit` is the end of the last transaction every event of which has been
    emitted. Called from the task's thread only."""

    def __init__(
        self,
        *,
        prefix: str,
        db: str,
        partition: Mapping[str, Any],
        types: TypeOptions,
        skipped: set[str],
        tombstones: bool,
        captures: Callable[[str, str], bool],
        tables: dict[str, Table],
        reread: Callable[[str, str], Table | None],
        columns: ColumnFilter | None = None,
    ) -> None:
        self._prefix = prefix
        self._columns = columns  # for a table built from a Relation message
        self._db = db
        self._partition = partition
        self._types = types
        self._skipped = skipped
        self._tombstones = tombstones
        self._captures = captures
        self._tables = tables
        self._reread = reread
        self._relations: dict[int, Table | None] = {}  # relation oid -> captured table
        self._envelopes: dict[str, Schema] = {}
        #: (txId, lsn) of the transaction a restart resumes in, skipped up to lsn
        self.resume: dict[str, Any] | None = None
        self.restart(0)

    def restart(self, start_lsn: int) -> None:
        """The stream (re)starts at `start_lsn`, outside any transaction."""
        self.last_commit = start_lsn
        self.xid: int | None = None
        self._commit_us = 0
        self._skip_upto = 0
        self._tx_first = 0

    def new_batch(self) -> None:
        """A poll's batch begins: a transaction still open continues in it."""
        self._tx_first = 0

    def handle(self, lsn: int, payload: bytes, out: list[SourceRecord]) -> None:
        """One pgoutput message at `lsn`; its events appended to `out`."""
        tag = payload[0]
        if tag == 0x42:  # Step 1: Begin
            begin = pgo.parse(payload)
            self.xid = begin.xid
            self._commit_us = begin.commit_time_us
            self._skip_upto = 0
            if self.resume is not None and self.resume["txId"] == begin.xid:
                self._skip_upto = self.resume["lsn"]
            self.resume = None
            self._tx_first = len(out)
            return
        if tag == 0x43:  # Step 4: Commit
            self._commit(pgo.parse(payload), out)
            return
        if tag == 0x52:  # Step 2: Relation
            self._relation(pgo.parse(payload))
            return
        if tag in (0x49, 0x55, 0x44, 0x54):  # Step 3: Insert, Update, Delete, Truncate
            if lsn <= self._skip_upto:
                return  # emitted before the restart
            self._change(lsn, pgo.parse(payload), out)
        # Origin, Type and Message carry nothing we emit

    def _commit(self, commit: Any, out: list[SourceRecord]) -> None:
        self.last_commit = commit.end_lsn
        if len(out) > self._tx_first and out[-1].source_offset is not None:
            # the transaction is complete with its last record: say so in its offset
            last = out[-1].source_offset
            done = dict(last, lsn_commit=commit.end_lsn)
            for rec in reversed(out[self._tx_first :]):
                if rec.source_offset is not last:
                    break
                rec.source_offset = done  # a delete and its tombstone share one
        self.xid = None

    def _relation(self, rel: pgo.Relation) -> None:
        if not self._captures(rel.schema, rel.name):
            self._relations[rel.oid] = None
            return
        qualified = f"{rel.schema}.{rel.name}"
        table = self._tables.get(qualified)
        names = [c.name for c in rel.columns]
        oids = [c.type_oid for c in rel.columns]
        if table is None or not table.same_shape(names, oids) or table.oid != rel.oid:
            table = self._reread(rel.schema, rel.name)
            if table is None or not table.same_shape(names, oids):
                table = Table(  # gone or changed again since: the message's own shape
                    oid=rel.oid,
                    schema=rel.schema,
                    name=rel.name,
                    columns=names,
                    type_oids=oids,
                    typmods=[c.type_modifier for c in rel.columns],
                    not_null=[False] * len(names),
                    primary_key=[c.name for c in rel.columns if c.key],
                    replica_identity=rel.replica_identity,
                    column_filter=self._columns,
                ).build(self._prefix, self._types)
            self._tables[qualified] = table
            self._envelopes.pop(qualified, None)
        self._relations[rel.oid] = table

    def envelope(self, table: Table) -> Schema:
        """The envelope schema of `table`'s events (cached until its shape changes)."""
        schema = self._envelopes.get(table.qualified)
        if schema is None:
            schema = envelope_schema(table.topic, table.value_schema)
            self._envelopes[table.qualified] = schema
        return schema

    def _source(self, table: Table, lsn: int) -> Struct:
        return source_block(
            prefix=self._prefix,
            ts_us=self._commit_us,
            snapshot="false",
            db=self._db,
            sequence=f'["{self.last_commit}","{lsn}"]',
            schema=table.schema,
            table=table.name,
            tx_id=self.xid,
            lsn=lsn,
        )

    def _row(
        self, table: Table, texts: list[Any] | None, key_only: bool = False
    ) -> list[Any] | None:
        """A tuple's values, every column (`Table.value_of` / `key_of` cut them)."""
        if texts is None:
            return None
        values = table.convert(texts)
        fields = table.row_schema.fields
        for i, v in enumerate(values):
            if v is pgo.UNCHANGED_TOAST:
                s = fields[i].schema
                values[i] = (
                    PLACEHOLDER
                    if s.type is Type.STRING
                    else PLACEHOLDER.encode()
                    if s.type is Type.BYTES
                    else zero_value(s)
                )
            elif v is None and key_only and not fields[i].schema.optional:
                values[i] = zero_value(fields[i].schema)
        return values

    @staticmethod
    def _value(table: Table, row: list[Any] | None) -> Struct | None:
        return None if row is None else table.value_of(row)

    @staticmethod
    def _key_of(table: Table, row: list[Any] | None) -> Struct | None:
        return None if row is None else table.key_of(row)

    def _change(self, lsn: int, msg: Any, out: list[SourceRecord]) -> None:
        if isinstance(msg, pgo.Truncate):
            if "t" in self._skipped:
                return
            for oid in msg.relation_oids:
                table = self._relations.get(oid)
                if table is not None:
                    self._emit(table, lsn, "t", None, None, None, out)
            return
        table = self._relations.get(msg.relation_oid)
        if table is None:
            return
        if isinstance(msg, pgo.Insert):
            if "c" not in self._skipped:
                row = self._row(table, msg.new)
                key = self._key_of(table, row)
                self._emit(table, lsn, "c", None, self._value(table, row), key, out)
        elif isinstance(msg, pgo.Update):
            if "u" not in self._skipped:
                self._update(table, lsn, msg, out)
        elif isinstance(msg, pgo.Delete):
            if "d" in self._skipped:
                return
            row = self._row(table, msg.old, key_only=msg.old_kind == "K")
            key = self._key_of(table, row)
            self._emit(table, lsn, "d", self._value(table, row), None, key, out)

    def _update(self, table: Table, lsn: int, msg: pgo.Update, out: list[SourceRecord]) -> None:
        """An update, or a delete and a create when it changed the primary key.

        Under REPLICA IDENTITY FULL the old row is whole, so a TOASTed value the new
        row leaves out (unchanged) is taken from it, as Debezium does: the placeholder
        only where the server sent the value nowhere."""
        new = msg.new
        if (
            msg.old_kind == "O"
            and msg.old is not None
            and any(v is pgo.UNCHANGED_TOAST for v in new)
        ):
            new = [o if v is pgo.UNCHANGED_TOAST else v for v, o in zip(new, msg.old, strict=True)]
        new_row = self._row(table, new)
        after = self._value(table, new_row)
        before = (
            self._value(table, self._row(table, msg.old, key_only=msg.old_kind == "K"))
            if msg.old_kind == "O"
            else None
        )
        key = self._key_of(table, new_row)
        old_key = None
        if msg.old is not None and table.key_schema is not None:
            old_key = self._key_of(table, self._row(table, msg.old, key_only=True))
        if old_key is not None and old_key != key:  # the primary key changed
            if before is None:
                before = self._value(table, self._row(table, msg.old, True))
            self._emit(table, lsn, "d", before, None, old_key, out)
            self._emit(table, lsn, "c", None, after, key, out)
        else:
            self._emit(table, lsn, "u", before, after, key, out)

    def _emit(
        self,
        table: Table,
        lsn: int,
        op: str,
        before: Any,
        after: Any,
        key: Any,
        out: list[SourceRecord],
    ) -> None:
        value = change_event(self.envelope(table), before, after, self._source(table, lsn), op)
        offset = {
            "lsn": lsn,
            "txId": self.xid,
            "ts_usec": self._commit_us,
            "lsn_commit": self.last_commit,
            "lsn_proc": lsn,
        }
        key_schema = table.key_schema if op != "t" else None
        if op == "t":
            key = None
        env = self.envelope(table)
        out.append(
            SourceRecord.of(table.topic, key_schema, key, env, value, self._partition, offset)
        )
        if op == "d" and self._tombstones:
            out.append(
                SourceRecord.of(table.topic, key_schema, key, None, None, self._partition, offset)
            )

    def heartbeat(self, wal_end: int) -> SourceRecord:
        """A heartbeat at the server's position `wal_end` (between transactions only):
        it carries the position as `lsn_commit`, so a quiet database's slot moves."""
        position = max(self.last_commit, wal_end)
        self.last_commit = position
        offset = {
            "lsn": position,
            "txId": None,
            "ts_usec": int(time.time() * 1_000_000),
            "lsn_commit": position,
            "lsn_proc": position,
        }
        return SourceRecord.of(
            f"__debezium-heartbeat.{self._prefix}",
            HEARTBEAT_KEY_SCHEMA,
            Struct.trusted(HEARTBEAT_KEY_SCHEMA, [self._prefix]),
            HEARTBEAT_VALUE_SCHEMA,
            Struct.trusted(HEARTBEAT_VALUE_SCHEMA, [int(time.time() * 1000)]),
            self._partition,
            offset,
        )
