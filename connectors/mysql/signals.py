"""Debezium's signals through the source channel: rows INSERTed into the signal table
(`signal.data.collection`, `db.table`), read from the binlog in order with every other
change. The table's first three columns are the signal's id, type and data (JSON), as
Debezium's

    CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL,
                                  data VARCHAR(2048) NULL)

The types acted on: `execute-snapshot` (data `{"data-collections": [regex, …], "type":
"incremental", "additional-conditions": [{"data-collection": regex, "filter": sql}],
"surrogate-key": column}`), `stop-snapshot` (data-collections: those, none: all),
`pause-snapshot`, `resume-snapshot`, `log` (`{"message": …}`), and the connector's own
watermarks `snapshot-window-open` / `snapshot-window-close`
(`connectors.mysql.incremental`).

Why the connector's own user writes to that table: the watermarks are rows of it, so
the user needs INSERT there (DELETE too with `insert_delete`): `check_signal_table`
says so in one line before anything is read.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from connect.api import ConnectError

__all__ = [
    "SIGNAL_DDL",
    "Signal",
    "SnapshotRequest",
    "check_signal_table",
    "parse_signal",
    "snapshot_request",
    "split_name",
]

_log = logging.getLogger(__name__)

#: the signal table's shape as Debezium documents it (in the messages that name it)
SIGNAL_DDL = "(id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL)"


@dataclass(frozen=True, slots=True)
class Signal:
    """One row of the signal table: (id, type, data as parsed JSON, {} when none)."""

    id: str
    type: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SnapshotRequest:
    """An execute-snapshot's or stop-snapshot's data: the collections (regexes over
    `db.table`; empty: all, for a stop), each one's extra WHERE condition, the
    surrogate key column to chunk by instead of the primary key."""

    collections: tuple[str, ...]
    conditions: tuple[tuple[str, str], ...]
    surrogate: str | None
    kind: str

    def condition_of(self, name: str) -> str | None:
        """The additional condition of `db.table` (the first whose regex matches)."""
        for pattern, sql in self.conditions:
            if re.fullmatch(pattern, name, re.IGNORECASE):
                return sql
        return None

    def matches(self, name: str) -> bool:
        return any(re.fullmatch(p, name, re.IGNORECASE) for p in self.collections)


def split_name(name: str) -> tuple[str, str]:
    """`db.table` → (db, table); the key's error when it is not that."""
    db, dot, table = name.partition(".")
    if not dot or not db or not table:
        raise ValueError(f"{name!r} is not db.table")
    return db, table


def parse_signal(values: list[Any]) -> Signal | None:
    """A signal table row's first three columns as a Signal; None (and a warning) for
    a row that is not one (no type, data that is not a JSON object)."""
    if len(values) < 3 or values[1] is None:
        _log.warning("signal table row %r ignored: it needs an id, a type and data", values)
        return None
    sid, kind, raw = (v.decode() if isinstance(v, bytes) else v for v in values[:3])
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        _log.warning("signal %s (%s) ignored: its data is not JSON: %r", sid, kind, raw)
        return None
    if not isinstance(data, dict):
        _log.warning("signal %s (%s) ignored: its data is not a JSON object", sid, kind)
        return None
    return Signal(str(sid), str(kind), data)


def snapshot_request(signal: Signal) -> SnapshotRequest | None:
    """The data of an execute-snapshot / stop-snapshot signal (None and a warning when
    it cannot be acted on)."""
    data = signal.data
    kind = str(data.get("type") or "incremental").lower()
    if kind != "incremental":
        _log.warning(
            "signal %s: %s of type %r ignored: only incremental snapshots are supported",
            signal.id,
            signal.type,
            kind,
        )
        return None
    collections = data.get("data-collections") or []
    if isinstance(collections, str):
        collections = [collections]
    conditions = []
    for entry in data.get("additional-conditions") or []:
        if isinstance(entry, dict) and entry.get("data-collection") and entry.get("filter"):
            conditions.append((str(entry["data-collection"]), str(entry["filter"])))
    single = data.get("additional-condition")  # Debezium 1.x: one condition for all
    if single:
        conditions.append((".*", str(single)))
    try:
        for pattern in [*collections, *(p for p, _ in conditions)]:
            re.compile(pattern)
    except re.error as exc:
        _log.warning("signal %s ignored: a data collection is not a regex: %s", signal.id, exc)
        return None
    surrogate = data.get("surrogate-key")
    return SnapshotRequest(
        tuple(str(c) for c in collections), tuple(conditions), surrogate or None, kind
    )


def check_signal_table(cur: Any, name: str, user: str, *, deletes: bool) -> list[str]:
    """The signal table exists and the connector's user may write its watermarks there
    (a statement that writes no row still needs the privilege, and puts nothing in the
    binlog). Returns the table's first three column names."""
    db, table = split_name(name)
    cur.execute(
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s "
        "AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
        (db, table),
    )
    columns = [row[0] for row in cur.fetchall()]
    if len(columns) < 3:
        raise ConnectError(
            f"the signal table {name} (signal.data.collection) does not exist or has fewer "
            f"than 3 columns: CREATE TABLE {name} {SIGNAL_DDL}"
        )
    from connectors.mysql.snapshot_chunks import _quote

    target = f"{_quote(db)}.{_quote(table)}"
    names = ", ".join(_quote(c) for c in columns[:3])
    statements = [f"INSERT INTO {target} ({names}) SELECT '', '', NULL FROM DUAL WHERE 1 = 0"]
    if deletes:
        statements.append(f"DELETE FROM {target} WHERE 1 = 0")
    import pymysql

    for sql, verb in zip(statements, ("INSERT", "DELETE"), strict=False):
        try:
            cur.execute(sql)
        except pymysql.err.MySQLError as exc:
            if exc.args and exc.args[0] in (1142, 1143, 1044):  # access denied
                raise ConnectError(
                    f"user {user!r} may not {verb} into the signal table {name}: the "
                    f"incremental snapshot writes its watermarks there; GRANT INSERT"
                    f"{', DELETE' if deletes else ''} ON {name} TO the connector's user"
                ) from None
            raise
    return columns[:3]
