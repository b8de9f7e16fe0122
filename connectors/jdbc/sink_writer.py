"""How the JDBC sink writes: tables, DDL and statements, through SQLAlchemy.

`JdbcWriter.write(batches)` writes runs of rows — each run one table, one record shape
(a `FieldsPlan`) and one operation (insert, upsert, update, delete, or `truncate`, which
has no plan and empties the table) — in ONE database transaction:

1. Make sure every table fits its plans, each DDL statement in a transaction of its
   own: CREATE TABLE when missing (`auto.create`), ALTER TABLE ADD the missing columns,
   nullable (`auto.evolve`). Table metadata is reflected once and cached; a CREATE or
   ALTER that loses a race with another task re-reads the table instead of failing.
2. Begin; write the runs of each table in record order; commit. Any error rolls the
   whole transaction back, so a crash or a failure never leaves part of it behind.

A truncate run deletes every row of its table where it stands among the table's runs,
inside the transaction: DELETE, not TRUNCATE, which commits on MySQL, is not
transactional everywhere, and does not exist in SQLite. A truncate of a table that does
not exist yet is skipped (nothing to empty, and no columns to create it from).

Upsert runs are first reduced to the last row per key (what a row-by-row upsert ends
with anyway): PostgreSQL refuses to touch one row twice in one INSERT … ON CONFLICT.

Statements, per dialect (identifiers quoted by the dialect's own preparer unless
`quote.sql.identifiers=never`; SQLAlchemy's dialect-specific constructs):
- PostgreSQL through psycopg2 or psycopg 3, the fast path: the run is COPYed (CSV) into a temporary
  staging table of the same column types, then one set-based statement moves it:
  `INSERT … SELECT … ON CONFLICT (key) DO UPDATE SET c = EXCLUDED.c` (upsert),
  `INSERT … SELECT` (insert), `UPDATE … FROM stage` (update), `DELETE … USING stage`
  (delete). Staging tables are `ON COMMIT DELETE ROWS`, one per table and column set
  per connection.
- Any other database (SQLite, MySQL, PostgreSQL through other drivers): executemany
  with bound parameters, `batch.size` rows per call: `INSERT … ON CONFLICT (key) DO
  UPDATE` (SQLite, PostgreSQL), `INSERT … ON DUPLICATE KEY UPDATE` (MySQL), `UPDATE …
  WHERE key`, `DELETE … WHERE key`.

One writer belongs to one task thread; `close()` may come from another thread.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import itertools
import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connect.api import ConnectError, DataError
from connectors.jdbc.dialects import connect, reflected_name
from connectors.jdbc.sink_config import SinkSettings
from connectors.jdbc.sink_fields import Column, FieldsPlan, column_type, value_converter

__all__ = ["TRUNCATE", "JdbcWriter", "Run", "TableName", "TableSchemaError", "table_name"]

_PART = re.compile(r"^[A-Za-z0-9_.$-]+$")
#: The operation of a run that empties its table (its plan is None).
TRUNCATE = "truncate"


class TableSchemaError(ConnectError):
    """A table that is missing or lacks columns, and the config may not change it
    (or the change is not allowed): DDL problems are never retried."""

    def __init__(self, table: str, reason: str) -> None:
        self.table = table
        self.reason = reason
        super().__init__(f"table {table}: {reason}")


class TableName(NamedTuple):
    schema: str | None
    name: str

    def __str__(self) -> str:
        return self.name if self.schema is None else f"{self.schema}.{self.name}"


def table_name(fmt: str, topic: str, *, max_length: int) -> TableName:
    """The table of `topic` per `table.name.format`. The format's own dot separates a
    schema; dots of the topic stay in the table name."""
    parts = [p.replace("${topic}", topic) for p in fmt.split(".")]
    for part in parts:
        if not part or not _PART.match(part) or len(part) > max_length:
            raise DataError(
                f"table.name.format {fmt!r} gives the name {part!r} for topic {topic!r}: "
                f"a name needs 1 to {max_length} of the characters A-Z a-z 0-9 _ . $ -"
            )
    return TableName(parts[0], parts[1]) if len(parts) == 2 else TableName(None, parts[0])


@dataclass(slots=True)
class Run:
    """Rows of one table, plan and operation, in record order. A TRUNCATE run has no
    plan, and its rows (one per truncate event) only count the events."""

    plan: FieldsPlan | None
    op: str  # insert | upsert | update | delete | truncate
    rows: list[tuple] = field(default_factory=list)


@dataclass(slots=True)
class _TableInfo:
    columns: dict[str, sa.types.TypeEngine]  # actual name -> reflected type
    nullable: dict[str, bool]
    key: tuple[str, ...]

    def find(self, name: str) -> str | None:
        """The table's column for a field: exact name, else one that differs only in
        case (unquoted names fold to one case in most databases)."""
        if name in self.columns:
            return name
        folded = [c for c in self.columns if c.casefold() == name.casefold()]
        return folded[0] if len(folded) == 1 else None


class _NullMarker(float):
    """What a NULL is in the COPY data: a 'number' (so the CSV writer leaves it
    unquoted) that prints as nothing — an unquoted empty field is NULL in PostgreSQL's
    CSV format, while an empty string is written quoted."""

    def __str__(self) -> str:
        return ""

    __repr__ = __str__


_NULL = _NullMarker()


def _all_of(conditions: list[Any]) -> Any:
    """AND of the key conditions (no key: no condition, for INSERT statements)."""
    return sa.and_(*conditions) if conditions else sa.true()


def _bytea(v: Any) -> str:
    return "\\x" + bytes(v).hex()


def _jsonish(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _interval(v: Any) -> str:
    """A timedelta in PostgreSQL's interval input (str() of a timedelta is not)."""
    if not isinstance(v, dt.timedelta):
        return str(v)
    return f"{v.days} days {v.seconds}.{v.microseconds:06d} seconds"


def _copy_formatter(column_type_: sa.types.TypeEngine) -> Callable[[Any], Any] | bool | None:
    """How a value of a column goes into the COPY data: None (as is), a function, or
    False when this path cannot write the column (the generic path is used)."""
    if isinstance(column_type_, sa.LargeBinary):
        return _bytea
    if type(column_type_).__name__ == "INTERVAL":
        return _interval
    if isinstance(column_type_, sa.JSON):
        return _jsonish
    safe = (sa.Integer, sa.Numeric, sa.Float, sa.String, sa.Boolean, sa.Date, sa.DateTime, sa.Time)
    if isinstance(column_type_, safe) or type(column_type_).__name__ == "UUID":
        return None
    return False


@dataclass(slots=True)
class _Bound:
    """A plan bound to a table: the columns as SQLAlchemy sees them, the value
    converters, and the statements, built once."""

    table: sa.Table
    names: tuple[str, ...]  # the table's column names, in plan order
    n_key: int
    converters: list[tuple[int, Callable[[Any], Any] | None, Any]]
    copy_formatters: list[tuple[int, Callable[[Any], Any]]] | None  # None: no COPY
    statements: dict[str, Any] = field(default_factory=dict)
    stage: sa.Table | None = None


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
        self._tables: dict[TableName, _TableInfo] = {}
        self._bound: dict[tuple[TableName, FieldsPlan], _Bound] = {}
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
        steps: list[tuple[TableName, _Bound | None, Run]] = []
        for table, runs in batches:
            for run in runs:
                if run.op in ("delete", TRUNCATE) and self._table_info(conn, table) is None:
                    continue  # no table, no row to delete
                if run.plan is None:
                    if run.op != TRUNCATE:
                        raise ConnectError(f"a {run.op} run for {table} without a plan")
                    steps.append((table, None, run))
                else:
                    steps.append((table, self._bind(conn, table, run.plan), run))
        for _, b, run in steps:
            if b is not None and b.copy_formatters is not None and b.stage is None and run.rows:
                b.stage = self._create_stage(conn, b)
        dirty: set[str] = set()
        with conn.begin():
            for table, b, run in steps:
                if b is None:  # a truncate
                    conn.execute(sa.delete(self._sa_table(table, [])))
                    continue
                if not run.rows:
                    continue
                rows = self._convert(b, run)
                if b.copy_formatters is not None:
                    self._write_copy(conn, b, run.op, rows, dirty)
                else:
                    self._write_generic(conn, b, run.op, rows)

    def _convert(self, b: _Bound, run: Run) -> list[tuple]:
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

    def _table_info(self, conn: Connection, table: TableName) -> _TableInfo | None:
        info = self._tables.get(table)
        if info is not None:
            return info
        try:
            info = self._reflect(conn, table)
        finally:
            if conn.in_transaction():
                conn.rollback()  # reflection began a transaction; end it
        if info is not None:
            self._tables[table] = info
        return info

    def _reflect(self, conn: Connection, table: TableName) -> _TableInfo | None:
        inspector = sa.inspect(conn)
        name = table.name
        if not inspector.has_table(name, schema=table.schema):
            if not self.settings.quote_identifiers and inspector.has_table(
                name.lower(), schema=table.schema
            ):
                name = name.lower()
            else:
                return None
        columns = inspector.get_columns(name, schema=table.schema)
        key = inspector.get_pk_constraint(name, schema=table.schema) or {}
        for c in columns:
            c["name"] = reflected_name(c["name"], self.dialect)
        return _TableInfo(
            {c["name"]: c["type"] for c in columns},
            {c["name"]: bool(c.get("nullable", True)) for c in columns},
            tuple(key.get("constrained_columns") or ()),
        )

    def _sa_table(self, table: TableName, columns: Sequence[sa.Column]) -> sa.Table:
        return sa.Table(
            table.name,
            sa.MetaData(),
            *columns,
            schema=table.schema,
            quote=self._quote,
            quote_schema=self._quote,
        )

    def _create(self, conn: Connection, table: TableName, plan: FieldsPlan) -> None:
        if not self.settings.auto_create:
            raise TableSchemaError(str(table), "it does not exist and auto.create is disabled")
        schemaless = [c.name for c in plan.columns if c.schema is None]
        if schemaless:
            raise TableSchemaError(
                str(table),
                f"it does not exist, and the fields {schemaless} have no schema to create "
                "it from (schemaless values need an existing table)",
            )
        columns = [self._new_column(c) for c in plan.columns]
        sa_table = self._sa_table(table, columns)
        try:
            with conn.begin():
                sa_table.create(conn)
        except sa.exc.DBAPIError:
            self._tables.pop(table, None)
            if self._table_info(conn, table) is None:  # not a lost race: a real error
                raise

    def _new_column(self, c: Column, *, evolve: bool = False) -> sa.Column:
        assert c.schema is not None
        return sa.Column(
            c.name,
            column_type(c.schema, self.dialect_name, key=c.key, where=f"field {c.name!r}"),
            primary_key=c.key and not evolve,
            autoincrement=False,
            nullable=True if evolve else c.nullable,
            quote=self._quote,
        )

    def _evolve(
        self, conn: Connection, table: TableName, info: _TableInfo, missing: list[Column]
    ) -> None:
        names = [c.name for c in missing]
        for c in missing:
            if c.schema is None:
                raise TableSchemaError(
                    str(table),
                    f"it lacks the column {c.name!r}, and a schemaless value "
                    "gives no type to add it with",
                )
        if not self.settings.auto_evolve:
            raise TableSchemaError(
                str(table), f"it lacks the columns {names} and auto.evolve is disabled"
            )
        for c in missing:
            if c.key:
                raise TableSchemaError(
                    str(table),
                    f"it lacks the key column {c.name!r}; auto.evolve never "
                    "changes the primary key",
                )
            if not c.schema.optional and c.schema.default is None:
                raise TableSchemaError(
                    str(table),
                    f"cannot add the missing field {c.name!r}: it is neither "
                    "optional nor has a default value",
                )
        preparer = self.dialect.identifier_preparer
        sa_table = self._sa_table(table, [])
        for c in missing:
            column = self._new_column(c, evolve=True)
            ddl = (
                f"ALTER TABLE {preparer.format_table(sa_table)} ADD COLUMN "
                f"{preparer.format_column(column)} {column.type.compile(dialect=self.dialect)}"
            )
            try:
                with conn.begin():
                    conn.exec_driver_sql(ddl)
            except sa.exc.DBAPIError:
                self._tables.pop(table, None)
                again = self._table_info(conn, table)
                if again is None or again.find(c.name) is None:  # not a lost race
                    raise
        self._tables.pop(table, None)

    def _bind(self, conn: Connection, table: TableName, plan: FieldsPlan) -> _Bound:
        cache_key = (table, plan)
        b = self._bound.get(cache_key)
        if b is not None:
            return b
        info = self._table_info(conn, table)
        if info is None:
            self._create(conn, table, plan)
            info = self._table_info(conn, table)
            assert info is not None
        missing = [c for c in plan.columns if info.find(c.name) is None]
        if missing:
            self._evolve(conn, table, info, missing)
            info = self._table_info(conn, table)
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
                how = _copy_formatter(reflected)
                if how is False:
                    copy_formatters = None
                elif how is not None:
                    copy_formatters.append((i, how))
        b = _Bound(
            self._sa_table(table, sa_columns),
            names,
            plan.n_key,
            converters,
            copy_formatters,
        )
        self._bound[cache_key] = b
        return b

    # ------------------------------------------------- PostgreSQL: COPY + merge

    def _create_stage(self, conn: Connection, b: _Bound) -> sa.Table:
        name = f"tributary_stage_{next(self._stage_ids)}"
        preparer = self.dialect.identifier_preparer
        stage_columns = [sa.Column(n, b.table.c[n].type, quote=self._quote) for n in b.names]
        stage = sa.Table(name, sa.MetaData(), *stage_columns, quote=self._quote)
        cols = ", ".join(preparer.format_column(b.table.c[n]) for n in b.names)
        with conn.begin():
            conn.exec_driver_sql(
                f"CREATE TEMPORARY TABLE {preparer.format_table(stage)} ON COMMIT DELETE ROWS "
                f"AS SELECT {cols} FROM {preparer.format_table(b.table)} WITH NO DATA"
            )
        return stage

    def _write_copy(
        self, conn: Connection, b: _Bound, op: str, rows: list[tuple], dirty: set[str]
    ) -> None:
        stage = b.stage
        assert stage is not None and b.copy_formatters is not None
        preparer = self.dialect.identifier_preparer
        stage_sql = preparer.format_table(stage)
        if stage.name in dirty:  # used earlier in this transaction
            conn.exec_driver_sql(f"TRUNCATE {stage_sql}")
        dirty.add(stage.name)
        width = len(b.names)
        formatters = b.copy_formatters
        buf = io.StringIO()
        write_rows = csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n").writerows
        null = _NULL
        if formatters:
            prepared = []
            for row in rows:
                values = list(row)
                for i, fmt in formatters:
                    if values[i] is not None:
                        values[i] = fmt(values[i])
                prepared.append(values)
            rows = prepared  # type: ignore[assignment]
        write_rows(
            [[null if v is None else v for v in row] if None in row else row for row in rows]
        )
        buf.seek(0)
        cols = ", ".join(preparer.format_column(stage.c[n]) for n in b.names[:width])
        copy_sql = f"COPY {stage_sql} ({cols}) FROM STDIN WITH (FORMAT csv)"
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            if self.dialect.driver == "psycopg2":
                cursor.copy_expert(copy_sql, buf)
            else:  # psycopg 3: the same CSV through its copy object
                with cursor.copy(copy_sql) as copy:
                    copy.write(buf.getvalue())
        finally:
            cursor.close()
        conn.execute(self._merge_statement(b, op))

    def _merge_statement(self, b: _Bound, op: str) -> Any:
        stmt = b.statements.get(op)
        if stmt is not None:
            return stmt
        from sqlalchemy.dialects import postgresql

        t, s = b.table, b.stage
        assert s is not None
        names = b.names
        keys, values = names[: b.n_key], names[b.n_key :]
        on_key = _all_of([t.c[k] == s.c[k] for k in keys])
        if op in ("insert", "upsert"):
            insert = postgresql.insert(t).from_select(
                list(names), sa.select(*(s.c[n] for n in names))
            )
            if op == "upsert":
                insert = (
                    insert.on_conflict_do_update(
                        index_elements=[t.c[k] for k in keys],
                        set_={v: insert.excluded[v] for v in values},
                    )
                    if values
                    else insert.on_conflict_do_nothing(index_elements=[t.c[k] for k in keys])
                )
            stmt = insert
        elif op == "update":
            if not values:
                stmt = sa.select(sa.literal(1))  # nothing to set
            else:
                stmt = sa.update(t).values({v: s.c[v] for v in values}).where(on_key)
        else:
            stmt = sa.delete(t).where(on_key)
        b.statements[op] = stmt
        return stmt

    # ------------------------------------------------ every other database

    def _write_generic(self, conn: Connection, b: _Bound, op: str, rows: list[tuple]) -> None:
        stmt, params_of = self._generic_statement(b, op)
        size = self.settings.batch_size
        for start in range(0, len(rows), size):
            conn.execute(stmt, [params_of(row) for row in rows[start : start + size]])

    def _generic_statement(
        self, b: _Bound, op: str
    ) -> tuple[Any, Callable[[tuple], dict[str, Any]]]:
        cached = b.statements.get(op)
        if cached is not None:
            return cached
        t = b.table
        names = b.names
        keys, values = names[: b.n_key], names[b.n_key :]
        key_params = [f"k_{i}" for i in range(len(keys))]
        value_params = [f"v_{i}" for i in range(len(values))]
        on_key = _all_of(
            [
                t.c[k] == sa.bindparam(p, type_=t.c[k].type)
                for k, p in zip(keys, key_params, strict=True)
            ]
        )
        if op in ("insert", "upsert"):
            stmt = self._insert(t, keys, values, upsert=op == "upsert")

            def params(row: tuple) -> dict[str, Any]:
                return dict(zip(names, row, strict=True))

        elif op == "update":
            if values:
                stmt = (
                    sa.update(t)
                    .values(
                        {
                            v: sa.bindparam(p, type_=t.c[v].type)
                            for v, p in zip(values, value_params, strict=True)
                        }
                    )
                    .where(on_key)
                )
            else:
                stmt = sa.select(sa.literal(1))
            all_params = key_params + value_params

            def params(row: tuple) -> dict[str, Any]:
                return dict(zip(all_params, row, strict=True))

        else:
            stmt = sa.delete(t).where(on_key)

            def params(row: tuple) -> dict[str, Any]:
                return dict(zip(key_params, row, strict=True))

        b.statements[op] = (stmt, params)
        return stmt, params

    def _insert(
        self, t: sa.Table, keys: Sequence[str], values: Sequence[str], *, upsert: bool
    ) -> Any:
        if not upsert:
            return sa.insert(t)
        name = self.dialect_name
        if name in ("postgresql", "sqlite"):
            if name == "postgresql":
                from sqlalchemy.dialects.postgresql import insert
            else:
                from sqlalchemy.dialects.sqlite import insert
            stmt = insert(t)
            index = [t.c[k] for k in keys]
            if not values:
                return stmt.on_conflict_do_nothing(index_elements=index)
            return stmt.on_conflict_do_update(
                index_elements=index, set_={v: stmt.excluded[v] for v in values}
            )
        if name in ("mysql", "mariadb"):
            from sqlalchemy.dialects.mysql import insert as mysql_insert

            stmt = mysql_insert(t)
            updated = values or keys[:1]  # a no-op update keeps the statement valid
            return stmt.on_duplicate_key_update({v: stmt.inserted[v] for v in updated})
        raise ConnectError(
            f"insert.mode=upsert is not supported on {name} (supported: PostgreSQL, "
            "SQLite, MySQL/MariaDB)"
        )
