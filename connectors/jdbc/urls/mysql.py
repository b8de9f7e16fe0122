"""Connector/J's and MariaDB Connector/J's URLs (`jdbc:mysql:…`, `jdbc:mariadb:…`) as
PyMySQL's.

One module for both drivers: MariaDB's took Connector/J's grammar and most of its
parameter names (case-insensitive in both), and the same PyMySQL connects to either
server. `parse_mysql` goes in steps: the authority (one host), each parameter through
the tables below, then the SSL mode (Connector/J 8's `sslMode`, or its reading of the
older `useSSL`/`requireSSL`/`verifyServerCertificate`) as PyMySQL's arguments, then
the URL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from urllib.parse import unquote

from connectors.jdbc.urls.grammar import (
    Collected,
    Parsed,
    Refused,
    as_bool,
    as_int,
    host_list,
    new_url,
    query_pairs,
    split_userinfo,
)

#: Connector/J and MariaDB Connector/J parameters that tune the Java driver only:
#: statement caches, batch rewriting, fetch sizes, metadata lookups, logging,
#: reconnection (the connectors retry and the pool pings instead), Unicode (PyMySQL is
#: always Unicode) and public key retrieval (PyMySQL asks for the key when it needs it).
_MYSQL_TUNING = frozenset(
    n.lower()
    for n in (
        "rewriteBatchedStatements",
        "cachePrepStmts",
        "prepStmtCacheSize",
        "prepStmtCacheSqlLimit",
        "useServerPrepStmts",
        "useLocalSessionState",
        "useLocalTransactionState",
        "elideSetAutoCommits",
        "maintainTimeStats",
        "cacheResultSetMetadata",
        "cacheServerConfiguration",
        "useCursorFetch",
        "defaultFetchSize",
        "autoReconnect",
        "tcpKeepAlive",
        "logger",
        "profileSQL",
        "useInformationSchema",
        "nullCatalogMeansCurrent",
        "nullDatabaseMeansCurrent",
        "useUnicode",
        "allowPublicKeyRetrieval",
        "useBulkStmts",
        "cachePrepStmts",
    )
)
#: sslMode values (Connector/J: DISABLED…VERIFY_IDENTITY; MariaDB: disable…verify-full)
_MYSQL_SSL = {
    "disabled": "disabled",
    "disable": "disabled",
    "preferred": "preferred",
    "required": "required",
    "trust": "required",
    "verify_ca": "verify-ca",
    "verify-ca": "verify-ca",
    "verify_identity": "verify-full",
    "verify-full": "verify-full",
}
#: Java character encodings -> MySQL character sets
_CHARSETS = {
    "utf-8": "utf8mb4",
    "utf8": "utf8mb4",
    "utf8mb4": "utf8mb4",
    "iso-8859-1": "latin1",
    "latin1": "latin1",
    "cp1252": "latin1",
    "us-ascii": "ascii",
    "ascii": "ascii",
}
_UTC = frozenset({"utc", "gmt", "z", "etc/utc", "etc/gmt", "+00:00", "gmt+0", "utc+0"})
#: PyMySQL's longest wait, a year: what Java's 0 (wait for ever) becomes
_FOREVER_S = 31_536_000


@dataclass
class _MysqlCollected(Collected):
    """Connector/J's parameters so far, with the SSL choice kept apart: `sslMode`, or
    the older flags by lowered name, settled once every parameter is read."""

    ssl_mode: str | None = None
    legacy: dict[str, bool] = field(default_factory=dict)


def parse_mysql(rest: str, backend: str) -> Parsed:
    """Connector/J and MariaDB Connector/J: `//[user:pw@]host[:port][/db][?params]`."""
    if not rest.startswith("//"):
        kind = rest.split("//")[0].rstrip(":") or rest
        raise Refused(
            f"jdbc:{backend}:{kind}: URLs (load-balanced, replication, failover) are not "
            f"supported: give one host as jdbc:{backend}://host:port/database"
        )
    head, _, query = rest[2:].partition("?")
    authority, _, database = head.partition("/")
    user, password, authority = split_userinfo(authority)
    hosts = host_list(authority, 3306) if authority else [("localhost", 3306)]
    if len(hosts) > 1:
        raise Refused(f"{len(hosts)} hosts: the MySQL driver here connects to one; give one host")
    found = _MysqlCollected(user, password)
    for name, value in query_pairs(query):
        _parameter(found, name, value)
    found.refuse_unknown("MySQL Connector/J" if backend == "mysql" else "MariaDB")
    _settle_ssl(found)
    url = new_url(
        f"{backend}+pymysql",
        username=found.user,
        password=found.password,
        host=hosts[0][0] or "localhost",
        port=hosts[0][1],
        database=unquote(database) or None,
    )
    return url, found.args, found.ignored


def _parameter(found: _MysqlCollected, name: str, value: str) -> None:
    """One Connector/J parameter (any case) into `found`: mapped, ignored by name, or
    unknown."""
    args = found.args
    lowered = name.lower()
    if lowered in ("user", "username"):
        found.user = value
    elif lowered == "password":
        found.password = value
    elif lowered == "sslmode":
        if value.lower() not in _MYSQL_SSL:
            raise Refused(f"parameter sslMode={value} is not a known SSL mode")
        found.ssl_mode = _MYSQL_SSL[value.lower()]
    elif lowered in ("usessl", "requiressl", "verifyservercertificate"):
        found.legacy[lowered] = as_bool(name, value)
    elif lowered in ("serversslcert", "sslca"):
        args["ssl_ca"] = value
    elif lowered == "connecttimeout":
        ms = as_int(name, value)
        # 0 waits for ever in Java; PyMySQL's longest wait is a year
        args["connect_timeout"] = min(math.ceil(ms / 1000), _FOREVER_S) if ms else _FOREVER_S
    elif lowered == "sockettimeout":
        ms = as_int(name, value)
        seconds = math.ceil(ms / 1000) if ms else None
        args["read_timeout"] = args["write_timeout"] = seconds
    elif lowered == "characterencoding":
        if value.lower() not in _CHARSETS:
            raise Refused(f"parameter characterEncoding={value} is not a known encoding")
        args["charset"] = _CHARSETS[value.lower()]
    elif lowered == "connectioncollation":
        args["collation"] = value
    elif lowered in ("servertimezone", "connectiontimezone"):
        if value.lower() not in _UTC:
            raise Refused(
                f"parameter {name}={value}: times are read in db.timezone here; "
                f"remove {name} and set db.timezone={value}"
            )
        # UTC is db.timezone's default: the same reading, nothing to pass on
    elif lowered == "sessionvariables":
        args["init_command"] = f"SET SESSION {value}"
    elif lowered in _MYSQL_TUNING:
        found.ignored.append(name)
    else:
        found.unknown.append(name)


def _settle_ssl(found: _MysqlCollected) -> None:
    """PyMySQL's TLS arguments for the SSL mode Connector/J would use."""
    ssl_mode, legacy, args = found.ssl_mode, found.legacy, found.args
    if ssl_mode is None and legacy:
        # Connector/J 8's reading of its older keys
        if legacy.get("usessl") is False:
            ssl_mode = "disabled"
        elif legacy.get("verifyservercertificate"):
            ssl_mode = "verify-ca"
        elif legacy.get("requiressl"):
            ssl_mode = "required"
        else:
            ssl_mode = "preferred"
    # PyMySQL's own default is Connector/J's: TLS when the server offers it (preferred)
    if ssl_mode == "disabled":
        args["ssl_disabled"] = True
    elif ssl_mode == "required":
        # TLS or no connection, the certificate not checked
        args["ssl"] = {"check_hostname": False, "verify_mode": False}
    elif ssl_mode in ("verify-ca", "verify-full"):
        args["ssl_verify_cert"] = True
        args["ssl_verify_identity"] = ssl_mode == "verify-full"
