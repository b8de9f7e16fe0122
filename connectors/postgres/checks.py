"""The checks before a CDC task creates anything, and the publication it needs.

Each failure is an error that says what to fix: the server's `wal_level`, the user's
replication right, SELECT on the captured tables, a slot held by another connection or
made for another plugin or database, a publication that may not be created.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import ConfigError, ConnectError
from connectors.postgres.config import describe_connection

__all__ = ["check_privileges", "check_server", "ensure_publication", "quote", "slot_state"]


def quote(name: str) -> str:
    """`name` as a PostgreSQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def check_server(cur: Any, params: Mapping[str, Any]) -> None:
    """wal_level is logical and the user may replicate; otherwise say what to fix."""
    cur.execute("SHOW wal_level")
    (level,) = cur.fetchone()
    if level != "logical":
        raise ConnectError(
            f"PostgreSQL at {describe_connection(params)} has wal_level = {level}; "
            "logical decoding needs wal_level = logical: set it in postgresql.conf "
            "(ALTER SYSTEM SET wal_level = logical) and restart the server"
        )
    cur.execute("SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user")
    row = cur.fetchone()
    if not row or not row[0]:
        user = params.get("user", "")
        raise ConnectError(
            f"user {user!r} may not use replication: grant it with "
            f"ALTER ROLE {quote(user)} REPLICATION (and allow it in pg_hba.conf)"
        )


def check_privileges(cur: Any, params: Mapping[str, Any], tables: list[tuple[str, str]]) -> None:
    """The user may read every captured table (and use its schema)."""
    denied = []
    for schema, name in tables:
        cur.execute(
            "SELECT has_schema_privilege(%s, 'USAGE') AND "
            "has_table_privilege(format('%%I.%%I', %s, %s), 'SELECT')",
            (schema, schema, name),
        )
        if not cur.fetchone()[0]:
            denied.append(f"{schema}.{name}")
    if denied:
        user = params.get("user", "")
        raise ConnectError(
            f"user {user!r} may not read {', '.join(denied)}: grant SELECT on them "
            "(and USAGE on their schemas), or leave them out with table.exclude.list"
        )


def ensure_publication(cur: Any, cfg: Mapping[str, Any], tables: list[tuple[str, str]]) -> None:
    """Create or align `publication.name` per `publication.autocreate.mode`: filtered
    keeps its table list equal to what the include/exclude lists select."""
    publication = cfg["publication.name"]
    mode = cfg["publication.autocreate.mode"]
    cur.execute("SELECT puballtables FROM pg_publication WHERE pubname = %s", (publication,))
    row = cur.fetchone()
    if mode == "disabled":
        if row is None:
            raise ConfigError(
                "publication.name",
                publication,
                "no such publication, and publication.autocreate.mode is disabled: "
                f"CREATE PUBLICATION {quote(publication)} FOR TABLE … first",
            )
        return
    listed = ", ".join(f"{quote(s)}.{quote(t)}" for s, t in tables)
    if mode == "all_tables":
        sql = None if row else f"CREATE PUBLICATION {quote(publication)} FOR ALL TABLES"
    elif not tables:
        raise ConfigError(
            "table.include.list",
            ",".join(cfg["table.include.list"]) or "(empty)",
            "selects no table, so the filtered publication would be empty",
        )
    elif row is None:
        sql = f"CREATE PUBLICATION {quote(publication)} FOR TABLE {listed}"
    elif row[0]:
        sql = None  # FOR ALL TABLES already publishes them
    else:
        sql = f"ALTER PUBLICATION {quote(publication)} SET TABLE {listed}"
    if sql is None:
        return
    import psycopg2.errors  # the task's: importing this module must not load libpq

    try:
        cur.execute(sql)
    except psycopg2.errors.InsufficientPrivilege as exc:
        hint = (
            "FOR ALL TABLES needs a superuser: use publication.autocreate.mode=filtered, "
            "or have an administrator create the publication"
            if mode == "all_tables"
            else "the user must own the tables (and have CREATE on the database)"
        )
        raise ConnectError(
            f"cannot create publication {publication!r}: {str(exc).strip().splitlines()[0]}; {hint}"
        ) from None


def slot_state(cur: Any, slot: str, db: str) -> tuple[bool, str | None] | None:
    """(active, confirmed_flush_lsn) of our slot, None when it does not exist."""
    cur.execute(
        "SELECT active, active_pid, plugin, database, confirmed_flush_lsn::text "
        "FROM pg_replication_slots WHERE slot_name = %s",
        (slot,),
    )
    row = cur.fetchone()
    if row is None:
        return None
    active, pid, plugin, database, confirmed = row
    if active:
        raise ConnectError(
            f"replication slot {slot!r} is active for PID {pid}: another "
            "connector (or a stale connection) is using it; stop that one or give "
            "this connector its own slot.name"
        )
    if plugin != "pgoutput" or database != db:
        raise ConnectError(
            f"replication slot {slot!r} exists for plugin {plugin!r} on database "
            f"{database!r}; this connector needs a pgoutput slot on {db!r}: "
            "choose another slot.name or drop that slot"
        )
    return bool(active), confirmed
