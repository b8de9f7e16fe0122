"""The JDBC sink's fast path on PostgreSQL (psycopg2 or psycopg 3): a run is COPYed
(CSV) into a temporary staging table of the same column types, then one set-based
statement moves it into the table.

`INSERT … SELECT … ON CONFLICT (key) DO UPDATE SET c = EXCLUDED.c` (upsert),
`INSERT … SELECT` (insert), `UPDATE … FROM stage` (update), `DELETE … USING stage`
(delete). Staging tables are `ON COMMIT DELETE ROWS`, one per table and column set per
connection.

The stage of an UPDATE or a DELETE is analyzed once COPY has filled it, so the planner
knows how many keys it holds. A temporary table is never analyzed by autovacuum, and
TRUNCATE forgets statistics: without them PostgreSQL takes the stage for ten pages
(thousands of rows) and joins even a run of one key to its table by hashing the WHOLE
table, a seq scan per run that grows with the table. A CDC stream alternates upsert and
delete runs, so a restarted worker's catch-up (large puts of many runs) crawled.
Analyzed, a run of a few keys probes the table's key index, and a large one still
hashes. An INSERT's stage is not joined to the table (ON CONFLICT probes the key index
per row): it needs none.

Its own module because it is a second way of writing, for one database, with its own
encoding of values (`copy_formatter`): a column it cannot encode sends its runs the
generic way (`connectors.jdbc.sink_statements`).

An array column's value is PostgreSQL's array literal (`connectors.jdbc.pg_arrays`),
written into the CSV like any text: CSV quoting is the writer's, and a backslash means
nothing to COPY's CSV format, so the literal's own escapes arrive as they are.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect

from connectors.jdbc.pg_arrays import array_literal, element_text
from connectors.jdbc.sink_statements import all_of
from connectors.jdbc.sink_tables import Bound

__all__ = ["copy_formatter", "create_stage", "write_copy"]


class _NullMarker(float):
    """What a NULL is in the COPY data: a 'number' (so the CSV writer leaves it
    unquoted) that prints as nothing — an unquoted empty field is NULL in PostgreSQL's
    CSV format, while an empty string is written quoted."""

    def __str__(self) -> str:
        return ""

    __repr__ = __str__


_NULL = _NullMarker()


def _bytea(v: Any) -> str:
    return "\\x" + bytes(v).hex()


def _jsonish(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _interval(v: Any) -> str:
    """A timedelta in PostgreSQL's interval input (str() of a timedelta is not)."""
    if not isinstance(v, dt.timedelta):
        return str(v)
    return f"{v.days} days {v.seconds}.{v.microseconds:06d} seconds"


def copy_formatter(column_type_: sa.types.TypeEngine) -> Callable[[Any], Any] | bool | None:
    """How a value of a column goes into the COPY data: None (as is), a function, or
    False when this path cannot write the column (the generic path is used)."""
    if isinstance(column_type_, sa.ARRAY):
        element = copy_formatter(column_type_.item_type)
        if element is False or isinstance(column_type_.item_type, sa.ARRAY):
            return False
        return functools.partial(array_literal, text=element if callable(element) else element_text)
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


def create_stage(
    conn: Connection, dialect: Dialect, b: Bound, name: str, *, quote: bool | None
) -> sa.Table:
    """The staging table `name` of `b`'s columns, in a transaction of its own."""
    preparer = dialect.identifier_preparer
    stage_columns = [sa.Column(n, b.table.c[n].type, quote=quote) for n in b.names]
    stage = sa.Table(name, sa.MetaData(), *stage_columns, quote=quote)
    cols = ", ".join(preparer.format_column(b.table.c[n]) for n in b.names)
    with conn.begin():
        conn.exec_driver_sql(
            f"CREATE TEMPORARY TABLE {preparer.format_table(stage)} ON COMMIT DELETE ROWS "
            f"AS SELECT {cols} FROM {preparer.format_table(b.table)} WITH NO DATA"
        )
    return stage


def write_copy(
    conn: Connection, dialect: Dialect, b: Bound, op: str, rows: list[tuple], dirty: set[str]
) -> None:
    """COPY `rows` into `b`'s stage (emptied first when `dirty` says this transaction
    used it already), then move them with `op`'s statement."""
    stage = b.stage
    assert stage is not None and b.copy_formatters is not None
    preparer = dialect.identifier_preparer
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
    write_rows([[null if v is None else v for v in row] if None in row else row for row in rows])
    buf.seek(0)
    cols = ", ".join(preparer.format_column(stage.c[n]) for n in b.names[:width])
    copy_sql = f"COPY {stage_sql} ({cols}) FROM STDIN WITH (FORMAT csv)"
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        if dialect.driver == "psycopg2":
            cursor.copy_expert(copy_sql, buf)
        else:  # psycopg 3: the same CSV through its copy object
            with cursor.copy(copy_sql) as copy:
                copy.write(buf.getvalue())
    finally:
        cursor.close()
    if op in ("update", "delete"):  # joined to the table: see the module docstring
        conn.exec_driver_sql(f"ANALYZE {stage_sql}")
    conn.execute(_merge_statement(b, op))


def _merge_statement(b: Bound, op: str) -> Any:
    """The set-based statement that moves the stage's rows into the table (cached)."""
    stmt = b.statements.get(op)
    if stmt is not None:
        return stmt
    from sqlalchemy.dialects import postgresql

    t, s = b.table, b.stage
    assert s is not None
    names = b.names
    keys, values = names[: b.n_key], names[b.n_key :]
    on_key = all_of([t.c[k] == s.c[k] for k in keys])
    if op in ("insert", "upsert"):
        insert = postgresql.insert(t).from_select(list(names), sa.select(*(s.c[n] for n in names)))
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
