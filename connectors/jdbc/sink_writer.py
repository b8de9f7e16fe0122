"""How the JDBC sink writes: tables, DDL and statements, through SQLAlchemy.

`JdbcWriter.write(batches)` writes runs of rows — each run one table, one record shape
(a `FieldsPlan`) and one operation (insert, upsert, update, delete, or `truncate`, which
has no plan and empties the table) — in ONE database transaction:

1. Make sure every table fits its plans, each DDL statement in a transaction of its
   own: CREATE TABLE when missing (`auto.create`), ALTER TABLE ADD the missing columns,
   nullable (`auto.evolve`). Table metadata is reflected once and cached; a CREATE or
   ALTER that loses a race with another task re-reads the table instead of failing
   (`connectors.jdbc.sink_tables`).
2. Begin; write the runs of each table in record order; commit. Any error rolls the
   whole transaction back, so a crash or a failure never leaves part of it behind.

A truncate run deletes every row of its table where it stands among the table's runs,
inside the transaction: DELETE, not TRUNCATE, which commits on MySQL, is not
transactional everywhere, and does not exist in SQLite. A truncate of a table that does
not exist yet is skipped (nothing to empty, and no columns to create it from).

Upsert runs are first reduced to the last row per key (what a row-by-row upsert ends
with anyway): PostgreSQL refuses to touch one row twice in one INSERT … ON CONFLICT.
With `insert.mode=upsert`, a table's consecutive upsert runs of one plan and the delete
runs between them (a CDC stream's updates, inserts and deletes, which alternate) are
reduced further, to the last operation per key (`reduce_runs`): one delete run and one
upsert run, in place of a statement or three per source transaction. The table ends as
applying them in order would: an upsert sets the whole row of its plan and a delete
removes it, so only each key's last operation counts, and the keys of the two runs are
distinct. A truncate, an upsert of another plan or another operation ends the stretch.

Statements, per dialect (identifiers quoted by the dialect's own preparer unless
`quote.sql.identifiers=never`; SQLAlchemy's dialect-specific constructs):
- PostgreSQL through psycopg2 or psycopg 3, the fast path: COPY into a staging table,
  then one set-based statement (`connectors.jdbc.sink_copy`).
- Any other database (SQLite, MySQL, PostgreSQL through other drivers): executemany
  with bound parameters, `batch.size` rows per call (`connectors.jdbc.sink_statements`).

One writer belongs to one task thread; `close()` may come from another thread.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connect.api import ConnectError
from connectors.jdbc.dialects import connect
from connectors.jdbc.sink_config import SinkSettings
from connectors.jdbc.sink_copy import copy_formatter, create_stage, write_copy
from connectors.jdbc.sink_fields import FieldsPlan, column_type, value_converter
from connectors.jdbc.sink_statements import write_generic
from connectors.jdbc.sink_tables import Bound, TableName, Tables, TableSchemaError

__all__ = ["TRUNCATE", "JdbcWriter", "Run", "reduce_runs"]

#: The operation of a run that empties its table (its plan is None).
TRUNCATE = "truncate"


@dataclass(slots=True)
class Run:
    """Rows of one table, plan and operation, in record order. A TRUNCATE run has no
    plan, and its rows (one per truncate event) only count the events."""

    plan: FieldsPlan | None
    op: str  # insert | upsert | update | delete | truncate
    rows: list[tuple] = field(default_factory=list)


def _reducible(run: Run, upsert_plan: FieldsPlan | None, keys: tuple[str, ...] | None) -> bool:
    """Whether `run` may join a stretch whose upserts have `upsert_plan` and whose runs
    have the key columns `keys` (None: not known yet)."""
    plan = run.plan
    if plan is None or run.op not in ("upsert", "delete"):
        return False
    if run.op == "upsert" and upsert_plan is not None and plan is not upsert_plan:
        return False
    return keys is None or tuple(c.name for c in plan.key_columns) == keys


def reduce_runs(runs: Sequence[Run]) -> list[Run]:
    """`runs` of one table (upsert mode) with each stretch of consecutive upsert runs
    of one plan and delete runs reduced to the last operation per key: a delete run of
    the keys whose last operation deletes, then an upsert run of the others' last rows
    (see the module docstring). Other runs stay as they are, in order."""
    out: list[Run] = []
    i = 0
    while i < len(runs):
        upsert_plan: FieldsPlan | None = None
        keys: tuple[str, ...] | None = None
        j = i
        while j < len(runs) and _reducible(runs[j], upsert_plan, keys):
            plan = runs[j].plan
            assert plan is not None
            keys = tuple(c.name for c in plan.key_columns)
            if runs[j].op == "upsert":
                upsert_plan = plan
            j += 1
        if j - i < 2:  # nothing to reduce
            out.append(runs[i])
            i += 1
            continue
        last: dict[tuple, tuple[bool, tuple]] = {}  # key -> (upserted, row)
        delete_plan: FieldsPlan | None = None
        for run in runs[i:j]:
            assert run.plan is not None
            n_key = run.plan.n_key
            upserted = run.op == "upsert"
            if not upserted:
                delete_plan = run.plan
            for row in run.rows:
                last[row[:n_key]] = (upserted, row)
        deletes = [row for upserted, row in last.values() if not upserted]
        upserts = [row for upserted, row in last.values() if upserted]
        if deletes:
            out.append(Run(delete_plan, "delete", deletes))
        if upserts:
            out.append(Run(upsert_plan, "upsert", upserts))
        i = j
    return out


class JdbcWriter:
    """Writes runs of rows into one database (see the module docstring)."""

    def __init__(self, settings: SinkSettings) -> None:
        self.settings = settings
        self.engine: Engine = connect(
            settings.url, user=settings.user, password=settings.password, pool_pre_ping=True
        )
        self.dialect = self.engine.dialect
        self.dialect_name = self.dialect.name
        # COPY through either PostgreSQL driver: postgresql+psycopg:// is as fast a path
        self._copy = self.dialect_name == "postgresql" and self.dialect.driver in (
            "psycopg2",
            "psycopg",
        )
        self._conn: Connection | None = None
        self._lock = threading.Lock()
        self._tables = Tables(settings, self.dialect)
        self._bound: dict[tuple[TableName, FieldsPlan], Bound] = {}
        self._stage_ids = itertools.count()
        self._quote = settings.quote_identifiers

    # ------------------------------------------------------------- connection

    @property
    def max_identifier_length(self) -> int:
        return self.dialect.max_identifier_length or 63

    def connection(self) -> Connection:
        with self._lock:
            if self._conn is None or self._conn.closed or self._conn.invalidated:
                self._conn = self.engine.connect()
                self._forget_session_state()
            return self._conn

    def reset(self) -> None:
        """Drop the connection and what was learnt through it (after an error: the
        table may have changed, the session's staging tables are gone)."""
        with self._lock:
            conn, self._conn = self._conn, None
            self._tables.clear()
            self._forget_session_state()
        if conn is not None:
            with contextlib.suppress(Exception):  # it is being thrown away
                conn.invalidate()

    def _forget_session_state(self) -> None:
        self._bound.clear()

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # closing after a failure
                conn.close()
        self.engine.dispose()

    # ------------------------------------------------------------------ writes

    def write(self, batches: Sequence[tuple[TableName, Sequence[Run]]]) -> None:
        """Write every run in one transaction (DDL first, each on its own)."""
        conn = self.connection()
        # Step 1: every table fits its plans (DDL in transactions of their own)
        steps: list[tuple[TableName, Bound | None, Run]] = []
        upsert_mode = self.settings.insert_mode == "upsert"
        for table, runs in batches:
            for run in reduce_runs(runs) if upsert_mode else runs:
                if run.op in ("delete", TRUNCATE) and self._tables.info(conn, table) is None:
                    continue  # no table, no row to delete
                if run.plan is None:
                    if run.op != TRUNCATE:
                        raise ConnectError(f"a {run.op} run for {table} without a plan")
                    steps.append((table, None, run))
                else:
                    steps.append((table, self._bind(conn, table, run.plan), run))
        for _, b, run in steps:
            if b is not None and b.copy_formatters is not None and b.stage is None and run.rows:
                name = f"tributary_stage_{next(self._stage_ids)}"
                b.stage = create_stage(conn, self.dialect, b, name, quote=self._quote)
        # Step 2: every run in one transaction, in record order
        dirty: set[str] = set()
        with conn.begin():
            for table, b, run in steps:
                if b is None:  # a truncate
                    conn.execute(sa.delete(self._tables.sa_table(table, [])))
                    continue
                if not run.rows:
                    continue
                rows = self._convert(b, run)
                if b.copy_formatters is not None:
                    write_copy(conn, self.dialect, b, run.op, rows, dirty)
                else:
                    write_generic(
                        conn,
                        b,
                        run.op,
                        rows,
                        dialect_name=self.dialect_name,
                        batch_size=self.settings.batch_size,
                    )

    def _convert(self, b: Bound, run: Run) -> list[tuple]:
        rows = run.rows
        if run.op in ("upsert", "update", "delete"):
            n_key = b.n_key
            if run.op == "delete":
                rows = list(dict.fromkeys(rows))
            elif len(rows) > 1:  # the last row per key wins, as row by row it would
                by_key = {row[:n_key]: row for row in rows}
                if len(by_key) != len(rows):
                    rows = list(by_key.values())
        converters = b.converters
        if not converters:
            return rows
        out = []
        for row in rows:
            values = list(row)
            for i, convert, default in converters:
                v = values[i]
                if v is None:
                    if default is not None:
                        values[i] = default if convert is None else convert(default)
                elif convert is not None:
                    values[i] = convert(v)
            out.append(tuple(values))
        return out

    # ------------------------------------------------------------- the tables

    def _bind(self, conn: Connection, table: TableName, plan: FieldsPlan) -> Bound:
        """`plan` bound to `table` (cached per session), the table created or evolved
        to fit it first."""
        cache_key = (table, plan)
        b = self._bound.get(cache_key)
        if b is not None:
            return b
        tables = self._tables
        info = tables.info(conn, table)
        if info is None:
            tables.create(conn, table, plan)
            info = tables.info(conn, table)
            assert info is not None
        missing = [c for c in plan.columns if info.find(c.name) is None]
        if missing:
            tables.evolve(conn, table, info, missing)
            info = tables.info(conn, table)
            assert info is not None
            still = [c.name for c in plan.columns if info.find(c.name) is None]
            if still:
                raise TableSchemaError(str(table), f"columns {still} are still missing")
        names = tuple(info.find(c.name) or c.name for c in plan.columns)
        sa_columns = []
        converters = []
        copy_formatters: list[tuple[int, Callable[[Any], Any]]] | None = [] if self._copy else None
        for i, (c, name) in enumerate(zip(plan.columns, names, strict=True)):
            reflected = info.columns[name]
            if c.schema is not None:
                type_ = column_type(c.schema, self.dialect_name, key=c.key, where=name)
            else:
                type_ = reflected
            sa_columns.append(sa.Column(name, type_, primary_key=c.key, quote=self._quote))
            has_tz = bool(getattr(reflected, "timezone", False))
            convert = value_converter(
                c.schema, tz=self.settings.db_timezone, column_has_tz=has_tz, column=reflected
            )
            default = plan.defaults.get(i)
            if convert is not None or default is not None:
                converters.append((i, convert, default))
            if copy_formatters is not None:
                how = copy_formatter(reflected)
                if how is False:
                    copy_formatters = None
                elif how is not None:
                    copy_formatters.append((i, how))
        b = Bound(
            tables.sa_table(table, sa_columns),
            names,
            plan.n_key,
            converters,
            copy_formatters,
        )
        self._bound[cache_key] = b
        return b
