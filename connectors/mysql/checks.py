"""The server checks MySqlCdcSource makes before it reads anything, each failure one line
saying what to fix (step 1 of `connectors.mysql.source`).

- The binlog: `log_bin` ON, `binlog_format` ROW, `binlog_row_image` FULL, and
  `binlog_row_metadata` FULL (MySQL 8.0.14+, MariaDB 10.5+). The last is ours, not
  Debezium's (its DDL parser tracks column names; we read them from each table map
  event, so rows are decoded with the table's shape at that point of the log).
- The user's grants on `*.*`: REPLICATION SLAVE (to read the binlog) and REPLICATION
  CLIENT (MariaDB 10.5+: BINLOG MONITOR) to ask for the binlog position and files, or
  ALL PRIVILEGES.
"""

from __future__ import annotations

from typing import Any

from connect.api import ConnectError

__all__ = ["binlog_files", "check_privileges", "check_server", "server_kind"]


def _variables(cur: Any, *names: str) -> dict[str, str]:
    listed = ", ".join(f"'{n}'" for n in names)
    cur.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({listed})")
    return {name.lower(): str(value) for name, value in cur.fetchall()}


def server_kind(cur: Any) -> tuple[bool, int]:
    """(whether the server is MariaDB, its server_id)."""
    found = _variables(cur, "version", "server_id")
    return "mariadb" in found.get("version", "").lower(), int(found.get("server_id", "0"))


def check_server(cur: Any) -> None:
    found = _variables(cur, "log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata")
    wanted = [
        ("log_bin", "ON", "the binlog is off: start the server with log_bin (and server_id)"),
        ("binlog_format", "ROW", "binlog_format is {}: set binlog_format=ROW"),
        ("binlog_row_image", "FULL", "binlog_row_image is {}: set binlog_row_image=FULL"),
        (
            "binlog_row_metadata",
            "FULL",
            "binlog_row_metadata is {}: set binlog_row_metadata=FULL (MySQL 8.0.14+, "
            "MariaDB 10.5+), so each row event names its table's columns",
        ),
    ]
    for name, value, message in wanted:
        have = found.get(name, "missing").upper()
        if have != value:
            raise ConnectError(message.format(have))


def check_privileges(cur: Any, params: dict[str, Any]) -> None:
    cur.execute("SHOW GRANTS")
    grants = " ".join(row[0].upper() for row in cur.fetchall() if " ON *.* " in row[0].upper())
    if "ALL PRIVILEGES" in grants:
        return
    missing = []
    if "REPLICATION SLAVE" not in grants and "REPLICATION REPLICA" not in grants:
        missing.append("REPLICATION SLAVE")
    if not any(g in grants for g in ("REPLICATION CLIENT", "BINLOG MONITOR", "SUPER")):
        missing.append("REPLICATION CLIENT")
    if missing:
        raise ConnectError(
            f"user {params.get('user')!r} lacks {' and '.join(missing)} ON *.*: "
            f"GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT "
            f"ON *.* TO the connector's user"
        )


def binlog_files(cur: Any) -> list[str]:
    """The binlog files the server still has, oldest first."""
    cur.execute("SHOW BINARY LOGS")
    return [row[0] for row in cur.fetchall()]
