"""One table's buffer and its commits.

A commit, numbered as in `TableWriter.commit`:
1. The buffered Arrow batches become one Arrow table; in upsert mode, its net
   changes per key (cdc.py).
2. The table is loaded fresh (created first when missing and auto-create is on), its
   schema evolved when the records bring new or wider columns and evolution is on
   (with `schema-force-optional`, created and added columns are optional; with
   `schema-case-insensitive`, the records' fields take the table's column names
   first, `tables.match_case`). A commit branch (`iceberg.tables.default-commit-branch`,
   `iceberg.table.<t>.commit-branch`) that does not exist yet is made at main's
   current snapshot (`_fork_branch`).
   If its snapshots hold offsets of our partitions past what this writer knows,
   another task has taken them over (this one is a zombie): StaleWriterError, and the
   task drops its buffers and rewinds to the table's offsets (kafka-delta-ingest's
   rule) instead of committing rows the other task also writes.
3. The rows are aligned with the table's own Arrow schema (tables.py) and written as
   Parquet data files, once: with the table's properties under the sink's
   `write-props` (`_writer_metadata`).
4. One catalog commit, whose snapshot summary carries the connector's offsets
   (offsets.py): a fast append of the files; or, in upsert mode, an overwrite that
   rewrites the data files holding a changed key without those rows and adds the
   new rows. Both go to the commit branch (main by default); the offsets, the zombie
   check and upsert's scan read that branch's head.
5. A commit another writer beat (CommitFailedException: several tasks write one
   table) is tried again on the refreshed table: pyiceberg retries a few times
   itself, the step 2 zombie check run before each of its retries too
   (`_commit_checked`), then we redo steps 2-4 with a growing pause, re-adding the
   files already written (written again only when the table's schema or partition
   spec moved meanwhile), so no task's files are lost and no task fails because
   others were busy. An upsert whose files another writer's commit changed meanwhile
   (pyiceberg's ValidationException) is redone the same way, its files planned
   again on the refreshed table.

Why the sink writes its files itself instead of calling `Table.append`: the append
writes them inside the commit, so each retry of step 5 wrote them again, and it
takes the Parquet settings from the table alone. Those default to a 2 MB dictionary
page, and pyarrow keeps dictionary-encoding a column until its dictionary fills (no
fall-back when plain is smaller, as Java's parquet-mr has): a unique-valued column
(an id, a timestamp, a price) of a 200,000-row file then wrote 3-4x slower and
2-3x larger than plain. The sink's default is a 64 KiB dictionary page
(`_WRITE_DEFAULTS`; a table's own property or `write-props` override it): low-cardinality
columns keep their dictionary, the others fall back after a page (the lake bench's
rows: Parquet writing 2.4x less CPU, files 2.2x smaller).

Why upsert mode rewrites files itself instead of calling pyiceberg's `upsert` or
`overwrite(filter=In(...))`: those bind a Python literal per key, ~100 µs each (a
200,000-key commit took 22 s); here the files a commit touches are found by the keys'
min/max, and the rows to drop by an Arrow anti-join on the key columns.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyarrow as pa

from connect.api import DataError, TopicPartition
from connectors.iceberg.cdc import changes
from connectors.iceberg.config import IcebergSettings
from connectors.iceberg.offsets import committed_offsets, offsets_property
from connectors.iceberg.tables import (
    align,
    create_table,
    evolve,
    load_table,
    match_case,
    table_arrow_schema,
)

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import FileScanTask, Table, Transaction
    from pyiceberg.table.metadata import TableMetadata

__all__ = ["StaleWriterError", "TableWriter"]

_log = logging.getLogger("connectors.iceberg")
_COMMIT_ATTEMPTS = 12
#: Data files an upsert commit rewrites at once (`_rewrite`).
_REWRITE_THREADS = min(4, os.cpu_count() or 1)
_INDEX = "__tributary_row"


class StaleWriterError(Exception):
    """Another writer committed offsets of this task's partitions past this task's: the
    partitions were given to another task meanwhile (this one is a zombie)."""

    def __init__(self, table: str, moved: Mapping[TopicPartition, int]) -> None:
        self.table = table
        self.moved = dict(moved)
        super().__init__(f"{table}: another writer committed {self.moved} meanwhile")


class TableWriter:
    """Buffers the rows bound for one table and commits them (module docstring)."""

    def __init__(self, name: str, catalog: Catalog, settings: IcebergSettings) -> None:
        self.name = name
        self.catalog = catalog
        self.settings = settings
        self.batches: list[pa.Table] = []
        self.rows = 0
        #: Offsets this table's snapshots say it holds (next offset per partition).
        self.committed: dict[TopicPartition, int] = {}
        #: This table's own settings (`iceberg.table.<name>.*` over the defaults).
        self.own = settings.table(name)
        #: The branch commits go to; None: main.
        self.branch = self.own.commit_branch

    @property
    def exists(self) -> bool:
        return load_table(self.catalog, self.name) is not None

    def add(self, data: pa.Table) -> None:
        if data.num_rows:
            self.batches.append(data)
            self.rows += data.num_rows

    def commit(self, offsets: Mapping[TopicPartition, int]) -> bool:
        """Commit the buffer with `offsets`; False when there was nothing to commit."""
        if not self.batches:
            return False
        # Step 1
        data = pa.concat_tables(self.batches, promote_options="permissive")
        if self.settings.case_insensitive:  # the table's names before keys are found
            existing = load_table(self.catalog, self.name)
            if existing is not None:
                data = match_case(self.name, table_arrow_schema(existing), data)
        keys = None
        if self.settings.upsert:
            net = changes(data, self._id_columns(data), self.settings.cdc_field)
            data, keys = net.rows, net.keys
        props = offsets_property(self.settings.connector, offsets)
        from pyiceberg.exceptions import CommitFailedException, ValidationException
        from pyiceberg.table.refs import MAIN_BRANCH

        pause = 0.05
        began = time.perf_counter()
        written: _Written | None = None

        def check(refreshed: Table) -> None:
            self._check_not_stale(refreshed, offsets)

        for attempt in range(_COMMIT_ATTEMPTS):
            try:
                # Step 2
                table, data = self._table(data)
                check(table)
                # Step 3
                aligned = align(self.name, table_arrow_schema(table), data)
                metadata = _writer_metadata(table, self.settings.write_props)
                # Step 4
                if keys is None:
                    if written is None or not written.fits(table):
                        written = _Written.of(table, metadata, aligned)
                    tx = table.transaction()
                    update = tx.update_snapshot(snapshot_properties=props,
                                                branch=self.branch or MAIN_BRANCH)
                    with update.fast_append() as snap:
                        for f in written.files:
                            snap.append_data_file(f)
                    with _sequence_race(table, self.catalog, self.name):
                        _commit_checked(tx, check)
                else:
                    with _sequence_race(table, self.catalog, self.name):
                        _rewrite(table, metadata, aligned, keys, props, check,
                                 branch=self.branch or MAIN_BRANCH)
                break
            except (CommitFailedException, ValidationException) as exc:
                # Step 5
                if attempt == _COMMIT_ATTEMPTS - 1:
                    raise
                _log.info("%s: commit lost to another writer (%s), trying again", self.name, exc)
                time.sleep(pause)
                pause = min(pause * 2, 2.0)
        _log.info("%s: committed %d rows in %.2f s", self.name, data.num_rows,
                  time.perf_counter() - began)
        self.batches, self.rows = [], 0
        self.committed.update(offsets)
        return True

    def _check_not_stale(self, table: Table, offsets: Mapping[TopicPartition, int]) -> None:
        held = committed_offsets(table, self.settings.connector, offsets.keys(),
                                 branch=self.branch)
        moved = {tp: o for tp, o in held.items() if o > self.committed.get(tp, -1)}
        if moved:
            raise StaleWriterError(self.name, moved)

    def drop(self) -> None:
        """Forget the buffer (a stale writer's rows: their partition is elsewhere)."""
        self.batches, self.rows = [], 0

    def _id_columns(self, data: pa.Table) -> list[str]:
        table = load_table(self.catalog, self.name)
        if table is not None and table.schema().identifier_field_names():
            return sorted(table.schema().identifier_field_names())
        if self.own.id_columns:
            return list(self.own.id_columns)
        raise DataError(f"{self.name}: upsert mode needs identifier columns: the table has "
                        f"none, and neither iceberg.table.{self.name}.id-columns nor "
                        "iceberg.tables.default-id-columns names any")

    def _table(self, data: pa.Table) -> tuple[Table, pa.Table]:
        """Step 2: the table, created or evolved for `data`, and `data` with the
        table's column names (schema-case-insensitive)."""
        schema = data.schema
        table = load_table(self.catalog, self.name)
        if self.settings.force_optional:  # identifier columns stay required (Iceberg)
            ids = set(self.own.id_columns)
            if table is not None:
                ids.update(table.schema().identifier_field_names())
            schema = pa.schema([f if f.name in ids else f.with_nullable(True) for f in schema])
        if table is None:
            if not self.settings.auto_create:
                raise DataError(f"table {self.name} does not exist and "
                                "iceberg.tables.auto-create-enabled is false")
            table = create_table(self.catalog, self.name, schema, self.settings)
        if self.settings.case_insensitive:
            data = match_case(self.name, table_arrow_schema(table), data)
            schema = pa.schema([schema.field(i).with_name(n)
                                for i, n in enumerate(data.column_names)])
        if self.settings.evolve and evolve(table, schema):
            table = self.catalog.load_table(self.name)
        return self._fork_branch(table), data

    def _fork_branch(self, table: Table) -> Table:
        """Step 2: the commit branch made at main's current snapshot when missing.
        Why: Java's snapshot producer (Apache's sink) builds a missing branch's first
        snapshot on main's current one, so the branch starts with main's rows;
        pyiceberg's would start from nothing. A table with no snapshot at all first
        gets an empty one on main (no files, no offsets): pyiceberg refuses to write
        a branch of a table without snapshots. Another task making either at the
        same moment wins harmlessly."""
        from pyiceberg.exceptions import CommitFailedException

        if self.branch is None or self.branch in table.metadata.refs:
            return table
        if table.current_snapshot() is None:
            tx = table.transaction()
            with tx.update_snapshot().fast_append():
                pass  # an empty snapshot: nothing but something to branch from
            with _sequence_race(table, self.catalog, self.name):
                tx.commit_transaction()
            table = self.catalog.load_table(self.name)
            if self.branch in table.metadata.refs:
                return table
        main = table.current_snapshot()
        assert main is not None  # made above
        try:
            table.manage_snapshots().create_branch(main.snapshot_id, self.branch).commit()
        except CommitFailedException:
            table = self.catalog.load_table(self.name)
            if self.branch not in table.metadata.refs:
                raise
            return table
        _log.info("%s: made branch %s at main's snapshot %d", self.name, self.branch,
                  main.snapshot_id)
        return self.catalog.load_table(self.name)


def _key_range(keys: pa.Table) -> object:
    """A filter that keeps the data files that may hold one of `keys`: the first key
    column between its min and max (files outside are left alone)."""
    import pyarrow.compute as pc
    from pyiceberg.expressions import AlwaysTrue, And, GreaterThanOrEqual, LessThanOrEqual

    column = keys.column(0)
    if not (pa.types.is_integer(column.type) or pa.types.is_string(column.type)):
        return AlwaysTrue()
    bounds = pc.min_max(column)
    name = keys.column_names[0]
    return And(GreaterThanOrEqual(name, bounds["min"].as_py()),
               LessThanOrEqual(name, bounds["max"].as_py()))


#: Parquet settings of the sink's files unless the table or `write-props` set them
#: (the module docstring says why).
_WRITE_DEFAULTS = {"write.parquet.dict-size-bytes": str(64 * 1024)}


def _writer_metadata(table: Table, write_props: Mapping[str, str]) -> TableMetadata:
    """The table's metadata as the sink's data files are written with: its properties
    over `_WRITE_DEFAULTS`, `iceberg.tables.write-props.*` over both (Apache's sink
    gives its writers the same precedence). Only file writing sees it; the commit
    uses the table's own."""
    metadata = table.metadata
    merged = {**_WRITE_DEFAULTS, **metadata.properties, **write_props}
    if merged == metadata.properties:
        return metadata
    return metadata.model_copy(update={"properties": merged})


class _Written:
    """Step 3: data files written for one commit, and the table schema and partition
    spec they were written against (a retry re-adds them while those hold)."""

    def __init__(self, files: list[DataFile], schema_id: int, spec_id: int) -> None:
        self.files, self.schema_id, self.spec_id = files, schema_id, spec_id

    @classmethod
    def of(cls, table: Table, metadata: TableMetadata, rows: pa.Table) -> _Written:
        from pyiceberg.io.pyarrow import _dataframe_to_data_files

        files = list(_dataframe_to_data_files(table_metadata=metadata, df=rows, io=table.io))
        return cls(files, metadata.current_schema_id, metadata.default_spec_id)

    def fits(self, table: Table) -> bool:
        return (table.metadata.current_schema_id, table.metadata.default_spec_id) == (
            self.schema_id, self.spec_id)


@contextmanager
def _sequence_race(table: Table, catalog: Catalog, name: str) -> Iterator[None]:
    """Step 5: a commit that another writer's commit to another branch beat, told as
    the lost race it is (CommitFailedException). Why: a commit's requirements guard
    only its own branch's head, so a snapshot added meanwhile elsewhere (main, written
    by another job, or `_fork_branch`'s empty snapshot of another task) passes them,
    and the catalog then refuses ours with a ValueError ("Cannot add snapshot with
    sequence number N older than last sequence number N"), the number taken. It is
    told apart from a mistake by the fact, not the message: the table's last sequence
    number moved past the one the commit was built on."""
    from pyiceberg.exceptions import CommitFailedException

    built_on = table.metadata.last_sequence_number
    try:
        yield
    except ValueError as exc:
        current = load_table(catalog, name)
        if current is None or current.metadata.last_sequence_number <= built_on:
            raise
        raise CommitFailedException(f"{name}: another writer's commit took sequence "
                                    f"number {built_on + 1} meanwhile ({exc})") from exc


def _commit_checked(tx: Transaction, check: Callable[[Table], None]) -> None:
    """Step 4's catalog commit, with step 5's zombie check before each of pyiceberg's
    own retries: a commit that lost a race is retried by pyiceberg on the refreshed
    table (`_rebuild_snapshot_updates`, pinned pyiceberg 0.12), which would otherwise
    commit our offsets over another task's newer ones. `check` raising
    StaleWriterError there ends the commit, nothing of it in the table."""
    rebuild = tx._rebuild_snapshot_updates

    def checked() -> None:
        check(tx._table)  # refreshed by pyiceberg just before
        rebuild()

    tx._rebuild_snapshot_updates = checked  # type: ignore[method-assign]
    tx.commit_transaction()


def _rewrite(table: Table, metadata: TableMetadata, rows: pa.Table, keys: pa.Table,
             props: dict[str, str], check: Callable[[Table], None], *, branch: str) -> None:
    """Step 4 of upsert mode: one overwrite snapshot on `branch` that replaces each
    data file of the branch holding a changed key by its other rows, and adds `rows`.
    `metadata`: the table's as files are written (`_writer_metadata`)."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files

    target = table_arrow_schema(table)
    keys = pa.table({name: keys.column(name).cast(target.field(name).type)
                     for name in keys.column_names})
    commit_uuid = uuid.uuid4()
    counter = itertools.count(0)

    def rewritten(task: FileScanTask) -> tuple[DataFile, list[DataFile]] | None:
        old = ArrowScan(table_metadata=metadata, io=table.io, projected_schema=metadata.schema(),
                        row_filter=AlwaysTrue()).to_table(tasks=[task])
        kept = _without_keys(old, keys)
        if kept.num_rows == old.num_rows:
            return None
        files = [] if not kept.num_rows else list(_dataframe_to_data_files(
            table_metadata=metadata, df=kept, io=table.io, write_uuid=commit_uuid,
            counter=counter))
        return task.file, files

    # Files are rewritten side by side: reading, the key test and writing run in
    # Arrow's C++ without the GIL, so a commit that touches every file of the table
    # (changes spread over its keys) uses the machine's cores. A pool of our own:
    # pyiceberg's, which the reads and writes use inside, must not wait on itself.
    scan = table.scan(row_filter=_key_range(keys))
    if table.metadata.snapshot_by_name(branch) is not None:
        scan = scan.use_ref(branch)
    tasks = list(scan.plan_files()) if scan.snapshot() is not None else []
    with ThreadPoolExecutor(max_workers=max(1, min(len(tasks), _REWRITE_THREADS))) as pool:
        replaced = [done for done in pool.map(rewritten, tasks) if done is not None]
    added = []
    if rows.num_rows:
        added = list(_dataframe_to_data_files(table_metadata=metadata, df=rows, io=table.io,
                                              write_uuid=commit_uuid, counter=counter))
    if not replaced and not added:
        return
    tx = table.transaction()
    with tx.update_snapshot(snapshot_properties=props, branch=branch).overwrite() as snapshot:
        snapshot.commit_uuid = commit_uuid
        for old_file, new_files in replaced:
            snapshot.delete_data_file(old_file)
            for f in new_files:
                snapshot.append_data_file(f)
        for f in added:
            snapshot.append_data_file(f)
    _commit_checked(tx, check)


def _without_keys(data: pa.Table, keys: pa.Table) -> pa.Table:
    """`data` less the rows whose key is in `keys`, in their order: for one key column
    a hash-set membership test (5.7x less CPU than the join on a data file of the lake
    bench); for several, an anti-join on the key columns and a row number, so other
    columns of any type go untouched."""
    import pyarrow.compute as pc

    names = keys.column_names
    if len(names) == 1:
        found = pc.is_in(data.column(names[0]), value_set=keys.column(0).combine_chunks())
        return data.filter(pc.invert(found))
    probe = pa.table({**{n: data.column(n) for n in names},
                      _INDEX: pa.array(range(data.num_rows), pa.int64())})
    left = probe.join(keys, keys=names, join_type="left anti", use_threads=False)
    index = left.column(_INDEX)
    return data.take(index.take(pc.sort_indices(index)))
