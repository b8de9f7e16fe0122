"""The JDBC sink's generic way of writing, for any database (SQLite, MySQL/MariaDB,
PostgreSQL through drivers other than psycopg): executemany with bound parameters,
`batch.size` rows per call.

`INSERT … ON CONFLICT (key) DO UPDATE` (SQLite, PostgreSQL), `INSERT … ON DUPLICATE KEY
UPDATE` (MySQL), `UPDATE … WHERE key`, `DELETE … WHERE key`, each built once per bound
plan and operation with SQLAlchemy's dialect-specific constructs. Its own module
because it is the one place a new database's upsert is taught; PostgreSQL's COPY path
(`connectors.jdbc.sink_copy`) shares only `all_of`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connect.api import ConnectError
from connectors.jdbc.sink_tables import Bound

__all__ = ["all_of", "write_generic"]


def all_of(conditions: list[Any]) -> Any:
    """AND of the key conditions (no key: no condition, for INSERT statements)."""
    return sa.and_(*conditions) if conditions else sa.true()


def write_generic(
    conn: Connection, b: Bound, op: str, rows: list[tuple], *, dialect_name: str, batch_size: int
) -> None:
    """`rows` written with `op`'s statement, `batch_size` rows per executemany."""
    stmt, params_of = _generic_statement(b, op, dialect_name)
    for start in range(0, len(rows), batch_size):
        conn.execute(stmt, [params_of(row) for row in rows[start : start + batch_size]])


def _generic_statement(
    b: Bound, op: str, dialect_name: str
) -> tuple[Any, Callable[[tuple], dict[str, Any]]]:
    """`op`'s statement for `b` and the function from a row to its parameters (cached)."""
    cached = b.statements.get(op)
    if cached is not None:
        return cached
    t = b.table
    names = b.names
    keys, values = names[: b.n_key], names[b.n_key :]
    key_params = [f"k_{i}" for i in range(len(keys))]
    value_params = [f"v_{i}" for i in range(len(values))]
    on_key = all_of(
        [
            t.c[k] == sa.bindparam(p, type_=t.c[k].type)
            for k, p in zip(keys, key_params, strict=True)
        ]
    )
    if op in ("insert", "upsert"):
        stmt = _insert(t, keys, values, upsert=op == "upsert", dialect_name=dialect_name)

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
    t: sa.Table, keys: Sequence[str], values: Sequence[str], *, upsert: bool, dialect_name: str
) -> Any:
    """INSERT, or the dialect's upsert (a no-op update when there is nothing to set)."""
    if not upsert:
        return sa.insert(t)
    name = dialect_name
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
