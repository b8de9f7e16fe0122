"""One Delta table as a task writes it: rows waiting per partition, offsets in `txn`.

Exactly once through the Delta protocol's transaction identifiers (kafka-delta-ingest's
design): every commit carries, beside its files, one `txn` action per log partition
it holds rows of, appId `<app id>-<topic>-<partition>` and version the next offset to
consume. The table is then the only record of how far it got, committed atomically
with the rows:

1. `open`: read each partition's txn version from the table's latest snapshot; the
   task seeks its consumer there (rows before it are in the table; a partition the
   table has never seen starts where the consumer group is).
2. `add`: rows wait in memory as Arrow data, with the partition's next offset.
3. `commit`, when a table has `delta.flush.size` rows waiting or
   `delta.commit.interval.ms` has passed, or a poll brought nothing while a tenth of
   `delta.flush.size` waits (`_CAUGHT_UP`):
   a. refresh the snapshot; a partition whose txn version is no longer what this task
      last committed (or read in step 1) was written by someone else meanwhile — a
      task that took it over, or this task's own previous life: its rows are dropped
      and the task seeks to the table's version (kafka-delta-ingest's
      ConflictingOffsets);
   b. conform the rows to the table's schema (`rows.conform`), then one append (or
      one MERGE, merge mode) with the txn actions, delta-rs retrying a commit that
      only raced other appends; an append to a plain unpartitioned table is a
      Parquet file the sink writes itself, committed as an add action
      (`connectors.delta.files` says why and when);
   c. a commit that conflicts (CommitFailedError: another task's MERGE touched the
      same files, two tasks created the table at once) goes back to (a), up to
      `delta.commit.retries` times; then the rows are dropped and read again from
      the table's offsets, as a failed store write is in the S3 sink.
4. `committed`: what `pre_commit` hands the runtime; the consumer group's offsets only
   speed up a restart, step 1 decides.
5. After a commit: a checkpoint every `delta.checkpoint.interval` versions, a vacuum
   every `delta.vacuum.interval.ms`.

A SIGKILL anywhere loses only rows that were never committed, and their offsets with
them; a commit is in the table with its offsets or not at all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from connect.api import TopicPartition
from connectors.delta.files import TableFiles, writable
from connectors.delta.rows import OP, changes, conform, delta_types, last_per_key

if TYPE_CHECKING:
    from connectors.delta.config import DeltaSettings

__all__ = ["DeltaTableWriter", "app_id"]

_log = logging.getLogger(__name__)
#: Step 3: a task whose poll brought nothing (it has caught up with its partitions)
#: commits at once when at least this share of `delta.flush.size` waits: the end of a
#: backlog need not wait out the commit interval with nothing left to read (up to a
#: second of a 1 M-row run's ~4 in the lake bench); a trickle still commits on the
#: interval, no more versions than before.
_CAUGHT_UP = 0.1


def app_id(prefix: str, tp: TopicPartition) -> str:
    return f"{prefix}-{tp.topic}-{tp.partition}"


@dataclass
class _Waiting:
    """Rows of one partition not yet committed, and the offset after them."""

    batches: list[pa.RecordBatch | pa.Table] = field(default_factory=list)
    next_offset: int | None = None
    #: The first offset added: where a partition the table has no rows of is read
    #: again from when its rows are dropped.
    first_offset: int | None = None
    rows: int = 0

    def restart_at(self, committed: int | None) -> int | None:
        return committed if committed is not None else self.first_offset


class DeltaTableWriter:
    """See the module docstring. Used by one task thread."""

    def __init__(
        self, uri: str, settings: DeltaSettings, *,
        rewind: Callable[[dict[TopicPartition, int]], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.uri = uri
        self.settings = settings
        self._rewind = rewind
        self._clock = clock
        self._table: Any = None
        self._files: TableFiles | None = None
        #: The next offset the table holds per partition (None: none of it yet).
        self.committed: dict[TopicPartition, int | None] = {}
        self._waiting: dict[TopicPartition, _Waiting] = {}
        self._rows = 0
        self._since = clock()
        self._last_vacuum = clock()

    # ------------------------------------------------------------------ table

    def _load(self) -> Any:
        """The table at its latest version, or None while it does not exist."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        if self._table is not None:
            self._table.update_incremental()
            return self._table
        try:
            self._table = DeltaTable(self.uri, storage_options=self.settings.storage_options)
        except TableNotFoundError:
            return None
        return self._table

    def _version_of(self, table: Any, tp: TopicPartition) -> int | None:
        return None if table is None else table.transaction_version(
            app_id(self.settings.app_id, tp))

    # ---------------------------------------------------------------- protocol

    def open(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Step 1: the offsets to seek to, for partitions the table has rows of."""
        table = self._load()
        seeks = {}
        for tp in partitions:
            version = self.committed[tp] = self._version_of(table, tp)
            self._waiting.pop(tp, None)
            if version is not None:
                seeks[tp] = version
        return seeks

    def expected(self, tp: TopicPartition) -> int | None:
        """The next offset this partition's rows should start at (None: any)."""
        waiting = self._waiting.get(tp)
        if waiting is not None and waiting.next_offset is not None:
            return waiting.next_offset
        return self.committed.get(tp)

    def add(
        self, tp: TopicPartition, rows: pa.RecordBatch | None, first_offset: int,
        next_offset: int,
    ) -> None:
        """Step 2: rows (or none: records without a value) from `first_offset` up to
        `next_offset`."""
        waiting = self._waiting.setdefault(tp, _Waiting())
        if waiting.first_offset is None:
            waiting.first_offset = first_offset
        if rows is not None and rows.num_rows:
            if not self._rows:
                # The interval bounds how long rows wait: it starts with the first row
                # (a task resumed after a pause committed its first poll alone).
                self._since = self._clock()
            waiting.batches.append(rows)
            waiting.rows += rows.num_rows
            self._rows += rows.num_rows
        waiting.next_offset = next_offset

    def due(self, *, caught_up: bool = False) -> bool:
        """Whether step 3 commits now; `caught_up`: the task's last poll brought
        nothing."""
        if not self._rows:
            self._since = self._clock()
            return False
        flush_size = self.settings.flush_size
        if self._rows >= flush_size or (caught_up and self._rows >= flush_size * _CAUGHT_UP):
            return True
        interval = self.settings.commit_interval_ms
        return interval > 0 and (self._clock() - self._since) * 1000 >= interval

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            waiting = self._waiting.pop(tp, None)
            if waiting is not None:
                self._rows -= waiting.rows
            self.committed.pop(tp, None)

    def commit(self) -> int | None:
        """Step 3: the waiting rows in one table version (its number), or None when
        nothing was committed."""
        from deltalake.exceptions import CommitFailedError

        if not self._rows:
            return None
        for attempt in range(self.settings.commit_retries + 1):
            table = self._load() or self._create()
            owned = self._still_ours(table)  # Step 3a
            if not owned:
                return None
            try:
                version = self._write(table, owned)  # Step 3b
            except CommitFailedError as exc:  # Step 3c
                _log.info("%s: commit conflicted (try %d): %s", self.uri, attempt + 1, exc)
                continue
            self._committed(owned, version)
            return version
        _log.warning("%s: %d commits conflicted with other writers; the rows are read "
                     "again from the table's offsets", self.uri, self.settings.commit_retries + 1)
        seeks = {tp: v for tp, w in self._waiting.items()
                 if (v := w.restart_at(self.committed.get(tp))) is not None}
        self._drop(list(self._waiting))
        self._rewind(seeks)
        return None

    def _still_ours(self, table: Any) -> dict[TopicPartition, _Waiting]:
        """Step 3a: the waiting partitions whose txn version is what this task last
        saw; the others are dropped and rewound to the table's version."""
        owned, lost = {}, {}
        for tp, waiting in self._waiting.items():
            version = self._version_of(table, tp)
            if version == self.committed.get(tp):
                owned[tp] = waiting
                continue
            self.committed[tp] = version
            target = waiting.restart_at(version)
            if target is not None:
                lost[tp] = target
        if len(owned) < len(self._waiting):
            _log.warning("%s: another writer committed %s meanwhile; their rows are read "
                         "again from the table's offsets", self.uri,
                         sorted(str(tp) for tp in self._waiting if tp not in owned))
            self._drop([tp for tp in self._waiting if tp not in owned])
            self._rewind(lost)
        return owned

    def _drop(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            waiting = self._waiting.pop(tp, None)
            if waiting is not None:
                self._rows -= waiting.rows

    def _write(self, table: Any, owned: dict[TopicPartition, _Waiting]) -> int:
        """Step 3b: one append or MERGE carrying the partitions' txn actions."""
        from deltalake import CommitProperties, PostCommitHookProperties, Transaction

        now_ms = int(time.time() * 1000)
        txns = [Transaction(app_id(self.settings.app_id, tp), w.next_offset, now_ms)
                for tp, w in owned.items() if w.next_offset is not None]
        commit = CommitProperties(app_transactions=txns, max_commit_retries=10)
        hooks = PostCommitHookProperties(create_checkpoint=self.settings.checkpoint_interval == 0)
        data = self._data(owned)
        if data is None:  # offsets only (records without values): nothing worth a version
            return -1
        if self.settings.mode == "merge":
            return self._merge(table, data, commit, hooks)
        schema = pa.schema(table.schema().to_arrow())
        data, new_columns = conform(data, schema, evolve=self.settings.evolve, table=self.uri)
        if not new_columns and writable(table, data):
            # Our own Parquet file, committed by delta-rs (`connectors.delta.files`)
            if self._files is None:
                self._files = TableFiles(self.uri, self.settings.storage_options)
            table.create_write_transaction(
                [self._files.write(table, data)], "append", table.schema(),
                commit_properties=commit, post_commithook_properties=hooks)
            return self._load().version()
        from deltalake import write_deltalake

        write_deltalake(
            table, data, mode="append", schema_mode="merge" if new_columns else None,
            commit_properties=commit, post_commithook_properties=hooks,
        )
        return self._load().version()

    def _data(self, waiting: dict[TopicPartition, _Waiting]) -> pa.Table | None:
        """The partitions' waiting rows as one table of Delta's types (merge mode: the
        changes, last per key), or None when none waits."""
        parts = [pa.Table.from_batches([b]) if isinstance(b, pa.RecordBatch) else b
                 for w in waiting.values() for b in w.batches]
        if not parts:
            return None
        data = delta_types(pa.concat_tables(parts, promote_options="permissive"))
        if self.settings.mode == "merge":
            data = last_per_key(changes(data, cdc_field=self.settings.cdc_field),
                                self.settings.id_columns)
        return data

    def _create(self) -> Any:
        """Step 3: a missing table is created empty (from the waiting rows' schema)
        before anything is written, so every write has a snapshot whose txn versions
        were checked, and a concurrent commit of the same partitions conflicts
        (delta-rs refuses a txn app id another commit set since that snapshot)."""
        from deltalake import DeltaTable

        data = self._data(self._waiting)
        if data is None:
            return None
        try:
            DeltaTable.create(
                self.uri, data.drop_columns([c for c in (OP,) if c in data.column_names]).schema,
                mode="ignore", partition_by=list(self.settings.partition_by) or None,
                storage_options=self.settings.storage_options)
        except Exception:  # another writer created it meanwhile (or the error is real)
            if self._load() is None:
                raise
        return self._load()

    def _merge(self, table: Any, rows: pa.Table, commit: Any, hooks: Any) -> int:
        """Merge mode's step 3b: the batch's changes, last per key, in one MERGE."""
        ids = self.settings.id_columns
        schema = pa.schema(table.schema().to_arrow())
        rows, new_columns = conform(rows, schema, evolve=self.settings.evolve, table=self.uri,
                                    keep=(OP,))
        match = " AND ".join(f"t.`{c}` = s.`{c}`" for c in ids)
        (
            table.merge(rows, match, source_alias="s", target_alias="t",
                        merge_schema=new_columns, commit_properties=commit,
                        post_commithook_properties=hooks)
            .when_matched_delete(predicate=f"s.`{OP}` = 'd'")
            .when_matched_update_all(predicate=f"s.`{OP}` <> 'd'", except_cols=[OP])
            .when_not_matched_insert_all(predicate=f"s.`{OP}` <> 'd'", except_cols=[OP])
            .execute()
        )
        return self._load().version()

    def _committed(self, owned: dict[TopicPartition, _Waiting], version: int) -> None:
        """Step 4 and 5."""
        for tp, waiting in owned.items():
            if version >= 0:
                self.committed[tp] = waiting.next_offset
            self._waiting.pop(tp, None)
            self._rows -= waiting.rows
        self._since = self._clock()
        if version < 0:
            return
        every = self.settings.checkpoint_interval
        if every and version % every == 0:
            self._table.create_checkpoint()
        vacuum_ms = self.settings.vacuum_interval_ms
        if vacuum_ms and (self._clock() - self._last_vacuum) * 1000 >= vacuum_ms:
            self._last_vacuum = self._clock()
            removed = self._table.vacuum(
                retention_hours=self.settings.vacuum_retention_hours, dry_run=False,
                enforce_retention_duration=False)
            _log.info("%s: vacuum removed %d files", self.uri, len(removed))
