"""Database URLs: the JDBC URLs published connector configs carry, made SQLAlchemy's.

Confluent's JDBC connectors (and every tutorial written for them) take `connection.url`
as a JDBC URL — `jdbc:postgresql://host:5432/db?currentSchema=s`, `jdbc:mysql://…`,
`jdbc:sqlite:test.db` — with `connection.user` / `connection.password` beside it. Here a
database is reached through SQLAlchemy, so this module turns such a URL into the
SQLAlchemy URL and driver connect arguments that mean the same. It is the one place
that does; JdbcSource, JdbcSink and PostgresCdcSource all come through it.

`database_url(raw, user=…, password=…, key=…)` does it in steps:

1. A URL that does not start with `jdbc:` is a SQLAlchemy URL and is taken as it is.
2. A `jdbc:<subprotocol>:` URL is split by its own driver's grammar: pgJDBC's
   (`//host1:p1,host2:p2/db?k=v&…`), Connector/J's and MariaDB's (`//[user:pw@]host:p/db?…`),
   Microsoft's (`//host\\instance:p;k=v;…`), Oracle's thin (`user/pw@host:p:SID`,
   `@//host:p/service`, `@(DESCRIPTION=…)`), xerial's SQLite (`path`, `:memory:`).
3. Each parameter is looked up in that driver's table: it becomes a URL part or a
   connect argument with the same meaning, or it is a Java driver's own tuning (statement
   caches, fetch sizes, batch rewriting, logging) that changes nothing a connector reads
   or writes — accepted, and reported in `DatabaseUrl.ignored` so the caller logs it —
   or it is refused by name. A parameter is never dropped silently: one the table does
   not know may change what is read or written.
4. `connection.user` / `connection.password` win over the URL's own.
5. The driver (`resolve_driver`): a URL that names none gets the first installed driver
   of its database (`_DRIVERS`), and a named driver that is not installed is refused
   with the package to install.

Steps 1-4 are pure (`translate`), so they are tested against a table of URLs from the
drivers' documentation without a database. Every error is a `ConfigError` naming `key`,
with the URL masked by `mask_url`: a password never appears in a message.
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, unquote_plus

import sqlalchemy as sa
from sqlalchemy.engine import URL

from connect.api import ConfigError, Password

__all__ = [
    "URL_CONFIG",
    "DatabaseUrl",
    "database_url",
    "has_placeholder",
    "libpq_params",
    "mask_url",
    "resolve_driver",
    "translate",
    "validate_url",
]

URL_CONFIG = "connection.url"
#: what stands for a password in a message: the runtime's word for a hidden value
MASK = Password.HIDDEN

# ---------------------------------------------------------------------------- masking

# user:password@ in an authority (SQLAlchemy's and Connector/J's URLs)
# (an authority ends at / ? #; a password holding those is percent-encoded)
_USERINFO = re.compile(r"(//[^/@?;#]*?:)[^/?#]*(@)")
# password=… as a query or property parameter (pgJDBC, Connector/J: ?&; SQL Server: ;)
_PARAM = re.compile(r"([?&;]\s*[A-Za-z]*password\s*=\s*)(\{[^}]*\}|[^&;]*)", re.IGNORECASE)
# Oracle's thin user/password@
_ORACLE = re.compile(r"(jdbc:oracle:thin:[^/@]*/)[^@]*(@)", re.IGNORECASE)


def mask_url(raw: str, *secrets: str | None) -> str:
    """`raw` with every password in it replaced by [hidden]: the user:password@ of an
    authority, any `…password=` parameter, Oracle's user/password@, and each of
    `secrets` wherever else it occurs (a password given as connection.password that
    was also pasted into the URL)."""
    text = _ORACLE.sub(rf"\g<1>{MASK}\g<2>", raw)
    text = _USERINFO.sub(rf"\g<1>{MASK}\g<2>", text)
    text = _PARAM.sub(rf"\g<1>{MASK}", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    return text


# ----------------------------------------------------------------------- the result


@dataclass(frozen=True)
class DatabaseUrl:
    """What a `connection.url` means here: the SQLAlchemy URL (password included: never
    print it, print `str(self)`), keyword arguments for the driver's connect(), and the
    JDBC parameters accepted with no effect here (for a log line)."""

    url: URL
    connect_args: Mapping[str, Any] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = self.url.render_as_string(hide_password=True)
        return text.replace(":***@", f":{MASK}@", 1) if self.url.password else text

    @property
    def backend(self) -> str:
        return self.url.get_backend_name()

    def with_credentials(self, user: str | None, password: str | None) -> DatabaseUrl:
        """The same with `user`/`password` (when given) in place of the URL's."""
        url = self.url
        if user:
            url = url.set(username=user)
        if password:
            url = url.set(password=password)
        return DatabaseUrl(url, self.connect_args, self.ignored)


class _Refused(Exception):
    """A reason to refuse the URL; `translate` makes it a ConfigError naming the key."""


# --------------------------------------------------------------------------- parsing


def _query(text: str) -> list[tuple[str, str]]:
    """`k=v&…` pairs decoded as pgJDBC and Connector/J decode them (Java's URLDecoder:
    %XX escapes, and `+` is a space); a bare `k` has the value ''."""
    pairs = []
    for part in text.split("&"):
        if not part.strip():
            continue
        name, _, value = part.partition("=")
        pairs.append((unquote_plus(name.strip()), unquote_plus(value.strip())))
    return pairs


def _hosts(authority: str, default_port: int | None) -> list[tuple[str, int | None]]:
    """`h1:p1,[::1]:p2,…` as (host, port) pairs; IPv6 addresses in brackets."""
    out: list[tuple[str, int | None]] = []
    for entry in authority.split(","):
        entry = entry.strip()
        if entry.startswith("["):
            host, _, rest = entry[1:].partition("]")
            port_text = rest[1:] if rest.startswith(":") else ""
        else:
            host, _, port_text = entry.partition(":")
        port = default_port
        if port_text:
            if not port_text.isdigit() or not 0 < int(port_text) < 65536:
                raise _Refused(f"port {port_text!r} of host {host!r} is not a port number")
            port = int(port_text)
        out.append((unquote(host), port))
    return out


def _split_userinfo(authority: str) -> tuple[str | None, str | None, str]:
    """user:password@ off an authority (Connector/J takes it; so do we for pgJDBC)."""
    if "@" not in authority:
        return None, None, authority
    userinfo, _, rest = authority.rpartition("@")
    user, sep, password = userinfo.partition(":")
    return unquote(user) or None, unquote(password) if sep else None, rest


def _bool(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("", "true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    raise _Refused(f"parameter {name} takes true or false, not {value!r}")


def _int(name: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise _Refused(f"parameter {name} takes a whole number, not {value!r}") from None
    if number < 0:
        raise _Refused(f"parameter {name} may not be negative")
    return number


def _unknown(names: list[str], scheme: str) -> _Refused:
    listed = ", ".join(sorted(names))
    plural = "s" if len(names) > 1 else ""
    return _Refused(
        f"unknown {scheme} parameter{plural} {listed}: not translated to this driver "
        "(remove it, or set the equivalent the documentation of connection.url names)"
    )


# ------------------------------------------------------------------------ PostgreSQL

#: pgJDBC parameters that tune the Java driver only (statement caches, fetch sizes,
#: batch rewriting, buffers, logging, socket timeouts and host re-checks): libpq has
#: no counterpart and nothing read or written changes. `stringtype=unspecified` sends
#: strings untyped so the server casts them to the column's type — what the Python
#: drivers do already.
_PG_TUNING = frozenset(
    {
        "prepareThreshold",
        "preparedStatementCacheQueries",
        "preparedStatementCacheSizeMiB",
        "defaultRowFetchSize",
        "reWriteBatchedInserts",
        "binaryTransfer",
        "binaryTransferEnable",
        "binaryTransferDisable",
        "loggerLevel",
        "loggerFile",
        "logUnclosedConnections",
        "socketTimeout",
        "cancelSignalTimeout",
        "hostRecheckSeconds",
        "tcpNoDelay",
        "receiveBufferSize",
        "sendBufferSize",
        "assumeMinServerVersion",
        "disableColumnSanitiser",
        "adaptiveFetch",
        "adaptiveFetchMinimum",
        "adaptiveFetchMaximum",
        "maxResultBuffer",
        "sslResponseTimeout",
        "stringtype",
    }
)
#: pgJDBC parameter -> the libpq keyword of the same meaning (values as they are).
_PG_SAME = {
    "sslmode": "sslmode",
    "sslcert": "sslcert",
    "sslkey": "sslkey",
    "sslrootcert": "sslrootcert",
    "sslpassword": "sslpassword",
    "ApplicationName": "application_name",
    "gssEncMode": "gssencmode",
    "kerberosServerName": "krbsrvname",
    "channelBinding": "channel_binding",
    "sslNegotiation": "sslnegotiation",
    "service": "service",
}
_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
#: pgJDBC targetServerType -> libpq target_session_attrs (master/slave: older names).
_TARGET = {
    "any": "any",
    "primary": "primary",
    "master": "primary",
    "secondary": "standby",
    "slave": "standby",
    "preferSecondary": "prefer-standby",
    "preferSlave": "prefer-standby",
}
_NON_VALIDATING = "org.postgresql.ssl.NonValidatingFactory"


def _options_value(text: str) -> str:
    """A value inside libpq's `options` (-c name=value): spaces and backslashes escaped."""
    return text.replace("\\", "\\\\").replace(" ", "\\ ")


def _postgres(rest: str) -> tuple[URL, dict[str, Any], list[str]]:
    """pgJDBC: `jdbc:postgresql:[//hosts/]database[?params]` (host localhost, port 5432)."""
    head, _, query = rest.partition("?")
    user = password = None
    if head.startswith("//"):
        authority, _, database = head[2:].partition("/")
        user, password, authority = _split_userinfo(authority)
        hosts = _hosts(authority, 5432) if authority else [("localhost", 5432)]
    else:  # jdbc:postgresql:database, jdbc:postgresql:/
        database = head.lstrip("/")
        hosts = [("localhost", 5432)]
    hosts = [(h or "localhost", p) for h, p in hosts]
    args: dict[str, Any] = {}
    options: list[str] = []
    ignored: list[str] = []
    unknown: list[str] = []
    ssl: bool | None = None
    factory: str | None = None
    for name, value in _query(query):
        if name == "user":
            user = value
        elif name == "password":
            password = value
        elif name in _PG_SAME:
            args[_PG_SAME[name]] = value
        elif name == "ssl":
            ssl = _bool(name, value)
        elif name == "sslfactory":
            if value != _NON_VALIDATING:
                raise _Refused(
                    f"parameter sslfactory={value} names a Java class; use sslmode and "
                    "sslrootcert instead"
                )
            factory = value
        elif name == "currentSchema":
            options.append(f"-c search_path={_options_value(value)}")
        elif name == "options":
            options.insert(0, value)
        elif name == "readOnly":
            if _bool(name, value):
                options.append("-c default_transaction_read_only=on")
        elif name in ("connectTimeout", "loginTimeout"):
            args.setdefault("connect_timeout", _int(name, value))
        elif name == "tcpKeepAlive":
            args["keepalives"] = 1 if _bool(name, value) else 0
        elif name == "targetServerType":
            if value not in _TARGET:
                raise _Refused(
                    f"parameter targetServerType={value} has no libpq equivalent (use one "
                    f"of {', '.join(_TARGET)})"
                )
            args["target_session_attrs"] = _TARGET[value]
        elif name == "loadBalanceHosts":
            args["load_balance_hosts"] = "random" if _bool(name, value) else "disable"
        elif name in _PG_TUNING:
            ignored.append(name)
        else:
            unknown.append(name)
    if unknown:
        raise _unknown(unknown, "pgJDBC")
    if "sslmode" in args and args["sslmode"] not in _SSLMODES:
        raise _Refused(f"parameter sslmode={args['sslmode']} is not one of {', '.join(_SSLMODES)}")
    if "sslmode" not in args and ssl:
        # pgJDBC: ssl=true without sslmode verifies the certificate and the host name
        args["sslmode"] = "verify-full"
    if factory and args.get("sslmode") in ("verify-ca", "verify-full"):
        # the non-validating factory checks no certificate: encryption only
        args["sslmode"] = "require"
    if options:
        args["options"] = " ".join(options)
    if len(hosts) == 1:
        url = URL.create(
            "postgresql+psycopg2",
            username=user,
            password=password,
            host=hosts[0][0],
            port=hosts[0][1],
            database=unquote(database) or None,
        )
    else:  # SQLAlchemy's multi-host form: ?host=h1:p1&host=h2:p2
        url = URL.create(
            "postgresql+psycopg2",
            username=user,
            password=password,
            database=unquote(database) or None,
            query={"host": tuple(f"{h}:{p}" for h, p in hosts)},
        )
    return url, args, ignored


def libpq_params(db: DatabaseUrl) -> dict[str, Any]:
    """libpq connection keywords (for psycopg2.connect) of a PostgreSQL DatabaseUrl,
    whatever driver its URL names: host (a comma-separated list for several), port,
    dbname, user, password, the URL's query parameters and the connect arguments."""
    url = db.url
    params: dict[str, Any] = {}
    query = dict(url.query)
    hosts = query.pop("host", None)
    if hosts:
        pairs = [
            _hosts(h, url.port or 5432)[0] for h in ((hosts,) if isinstance(hosts, str) else hosts)
        ]
        params["host"] = ",".join(h for h, _ in pairs)
        params["port"] = ",".join(str(p) for _, p in pairs)
    else:
        params.update(host=url.host, port=url.port)
    params.update(user=url.username, password=url.password, dbname=url.database)
    for name, value in query.items():
        params[name] = value if isinstance(value, str) else value[-1]
    params.update(db.connect_args)
    return {k: v for k, v in params.items() if v is not None}


# -------------------------------------------------------------------- MySQL, MariaDB

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


def _mysql(rest: str, backend: str) -> tuple[URL, dict[str, Any], list[str]]:
    """Connector/J and MariaDB Connector/J: `//[user:pw@]host[:port][/db][?params]`."""
    if not rest.startswith("//"):
        kind = rest.split("//")[0].rstrip(":") or rest
        raise _Refused(
            f"jdbc:{backend}:{kind}: URLs (load-balanced, replication, failover) are not "
            f"supported: give one host as jdbc:{backend}://host:port/database"
        )
    head, _, query = rest[2:].partition("?")
    authority, _, database = head.partition("/")
    user, password, authority = _split_userinfo(authority)
    hosts = _hosts(authority, 3306) if authority else [("localhost", 3306)]
    if len(hosts) > 1:
        raise _Refused(f"{len(hosts)} hosts: the MySQL driver here connects to one; give one host")
    args: dict[str, Any] = {}
    ignored: list[str] = []
    unknown: list[str] = []
    ssl_mode: str | None = None
    legacy: dict[str, bool] = {}
    for name, value in _query(query):
        lowered = name.lower()
        if lowered in ("user", "username"):
            user = value
        elif lowered == "password":
            password = value
        elif lowered == "sslmode":
            if value.lower() not in _MYSQL_SSL:
                raise _Refused(f"parameter sslMode={value} is not a known SSL mode")
            ssl_mode = _MYSQL_SSL[value.lower()]
        elif lowered in ("usessl", "requiressl", "verifyservercertificate"):
            legacy[lowered] = _bool(name, value)
        elif lowered in ("serversslcert", "sslca"):
            args["ssl_ca"] = value
        elif lowered == "connecttimeout":
            ms = _int(name, value)
            # 0 waits for ever in Java; PyMySQL's longest wait is a year
            args["connect_timeout"] = min(math.ceil(ms / 1000), 31_536_000) if ms else 31_536_000
        elif lowered == "sockettimeout":
            ms = _int(name, value)
            seconds = math.ceil(ms / 1000) if ms else None
            args["read_timeout"] = args["write_timeout"] = seconds
        elif lowered == "characterencoding":
            if value.lower() not in _CHARSETS:
                raise _Refused(f"parameter characterEncoding={value} is not a known encoding")
            args["charset"] = _CHARSETS[value.lower()]
        elif lowered == "connectioncollation":
            args["collation"] = value
        elif lowered in ("servertimezone", "connectiontimezone"):
            if value.lower() not in _UTC:
                raise _Refused(
                    f"parameter {name}={value}: times are read in db.timezone here; "
                    f"remove {name} and set db.timezone={value}"
                )
            # UTC is db.timezone's default: the same reading, nothing to pass on
        elif lowered == "sessionvariables":
            args["init_command"] = f"SET SESSION {value}"
        elif lowered in _MYSQL_TUNING:
            ignored.append(name)
        else:
            unknown.append(name)
    if unknown:
        raise _unknown(unknown, "MySQL Connector/J" if backend == "mysql" else "MariaDB")
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
    url = URL.create(
        f"{backend}+pymysql",
        username=user,
        password=password,
        host=hosts[0][0] or "localhost",
        port=hosts[0][1],
        database=unquote(database) or None,
    )
    return url, args, ignored


# ------------------------------------------------------------------------ SQL Server

_MSSQL_TUNING = frozenset(
    n.lower()
    for n in (
        "sendStringParametersAsUnicode",
        "selectMethod",
        "responseBuffering",
        "disableStatementPooling",
        "statementPoolingCacheSize",
        "enablePrepareOnFirstPreparedStatementCall",
        "serverPreparedStatementDiscardThreshold",
        "useBulkCopyForBatchInsert",
        "cancelQueryTimeout",
        "socketTimeout",
        "packetSize",
        "lastUpdateCount",
    )
)
#: Microsoft JDBC property -> ODBC connection-string attribute of the same meaning
_MSSQL_SAME = {
    "hostnameincertificate": "HostNameInCertificate",
    "applicationname": "APP",
    "applicationintent": "ApplicationIntent",
    "authentication": "Authentication",
    "workstationid": "WSID",
}
_ODBC_DRIVER = "ODBC Driver 18 for SQL Server"
#: encrypt (mandatory/optional: the newer names of true/false) -> ODBC's Encrypt
_ENCRYPT = {"true": "yes", "mandatory": "yes", "false": "no", "optional": "no", "strict": "strict"}


def _mssql_value(text: str) -> str:
    text = text.strip()
    return text[1:-1] if text.startswith("{") and text.endswith("}") else text


def _mssql_properties(text: str) -> list[tuple[str, str]]:
    """`;k=v;k={v;with;semicolons}` — a braced value may hold semicolons."""
    pairs: list[tuple[str, str]] = []
    for match in re.finditer(r"([^;=]+)=(\{[^}]*\}|[^;]*)", text):
        pairs.append((match.group(1).strip(), _mssql_value(match.group(2))))
    leftovers = re.sub(r"([^;=]+)=(\{[^}]*\}|[^;]*)", "", text).strip(" ;")
    if leftovers:
        raise _Refused("properties after the server are ;name=value pairs")
    return pairs


def _yes(name: str, value: str) -> str:
    return "yes" if _bool(name, value) else "no"


def _mssql(rest: str) -> tuple[URL, dict[str, Any], list[str]]:
    """Microsoft: `//[server[\\instance][:port]][;property=value…]` (property names in
    any case), to pyodbc with Microsoft's ODBC Driver 18."""
    if not rest.startswith("//"):
        raise _Refused("expected jdbc:sqlserver://server[\\instance][:port][;property=value]")
    server_part, _, props = rest[2:].partition(";")
    server, _, port_text = server_part.partition(":")
    server, _, instance = server.partition("\\")
    port = _int("portNumber", port_text) if port_text else None
    user = password = database = None
    query: dict[str, str] = {"driver": _ODBC_DRIVER}
    args: dict[str, Any] = {}
    ignored: list[str] = []
    unknown: list[str] = []
    for name, value in _mssql_properties(props):
        lowered = name.lower()
        if lowered in ("user", "username"):
            user = value
        elif lowered == "password":
            password = value
        elif lowered in ("databasename", "database"):
            database = value
        elif lowered == "servername":
            server = server or value
        elif lowered == "instancename":
            instance = value
        elif lowered in ("portnumber", "port"):
            port = _int(name, value)
        elif lowered == "encrypt":
            choice = value.strip().lower()
            if choice not in _ENCRYPT:
                raise _Refused(f"parameter encrypt={value} is not true, false or strict")
            query["Encrypt"] = _ENCRYPT[choice]
        elif lowered == "trustservercertificate":
            query["TrustServerCertificate"] = _yes(name, value)
        elif lowered == "multisubnetfailover":
            query["MultiSubnetFailover"] = _yes(name, value)
        elif lowered == "integratedsecurity":
            if _bool(name, value):
                query["Trusted_Connection"] = "yes"
        elif lowered == "logintimeout":
            args["timeout"] = _int(name, value)
        elif lowered in _MSSQL_SAME:
            query[_MSSQL_SAME[lowered]] = value
        elif lowered in _MSSQL_TUNING:
            ignored.append(name)
        else:
            unknown.append(name)
    if unknown:
        raise _unknown(unknown, "Microsoft JDBC")
    host = (server or "localhost") + (f"\\{instance}" if instance else "")
    url = URL.create(
        "mssql+pyodbc",
        username=user,
        password=password,
        host=host,
        port=port if port is not None or instance else 1433,
        database=database,
        query=query,
    )
    return url, args, ignored


# ---------------------------------------------------------------------------- Oracle

_ORACLE_SID = re.compile(r"^(?P<host>[^:/]+):(?P<port>\d+):(?P<sid>[^:/?]+)$")
_ORACLE_SERVICE = re.compile(r"^(?://)?(?P<host>[^:/]+)(?::(?P<port>\d+))?/(?P<service>[^:/?]+)$")


def _oracle(rest: str) -> tuple[URL, dict[str, Any], list[str]]:
    """Oracle's thin driver: `thin:[user/password]@host:port:SID`,
    `thin:[user/password]@[//]host[:port]/service`, `thin:@(DESCRIPTION=…)` or
    `thin:@alias`, to python-oracledb (thin mode too: no Oracle client needed)."""
    if not rest.startswith("thin:"):
        raise _Refused("only Oracle's thin driver URLs are supported (jdbc:oracle:thin:@…)")
    body = rest[len("thin:") :]
    credentials, at, target = body.rpartition("@") if "@" in body else ("", "", body)
    if not at:
        raise _Refused(
            "expected jdbc:oracle:thin:[user/password]@host:port:SID or …@//host/service"
        )
    user, _, password = credentials.partition("/")
    if "?" in target:
        target, _, query = target.partition("?")
        names = [n for n, _ in _query(query)]
        if names:
            raise _unknown(names, "Oracle thin")
    args: dict[str, Any] = {}
    if match := _ORACLE_SID.match(target):
        url = URL.create(
            "oracle+oracledb",
            username=user or None,
            password=password or None,
            host=match["host"],
            port=int(match["port"]),
            database=match["sid"],
        )
    elif match := _ORACLE_SERVICE.match(target):
        url = URL.create(
            "oracle+oracledb",
            username=user or None,
            password=password or None,
            host=match["host"],
            port=int(match["port"] or 1521),
            query={"service_name": match["service"]},
        )
    elif target.startswith("(") or re.fullmatch(r"[A-Za-z0-9_.\-]+", target):
        # a TNS descriptor or a tnsnames.ora alias: the driver's dsn, as it is
        url = URL.create("oracle+oracledb", username=user or None, password=password or None)
        args["dsn"] = target
    else:
        raise _Refused("expected jdbc:oracle:thin:@host:port:SID or …@//host:port/service")
    return url, args, []


# ---------------------------------------------------------------------------- SQLite


def _sqlite(rest: str) -> tuple[URL, dict[str, Any], list[str]]:
    """xerial's sqlite-jdbc: `jdbc:sqlite:path` (relative to the worker's working
    directory, as the JVM's), `jdbc:sqlite:/absolute/path`, `jdbc:sqlite::memory:`."""
    path, _, query = rest.partition("?")
    names = [n for n, _ in _query(query)]
    if names:
        raise _unknown(names, "SQLite")
    if path.startswith("file:"):
        raise _Refused("file: URIs are not supported: give the path, jdbc:sqlite:/path/db")
    if path in ("", ":memory:"):
        return URL.create("sqlite"), {}, []
    return URL.create("sqlite", database=unquote(path)), {}, []


_SUBPROTOCOLS: dict[str, Callable[[str], tuple[URL, dict[str, Any], list[str]]]] = {
    "postgresql": _postgres,
    "mysql": lambda rest: _mysql(rest, "mysql"),
    "mariadb": lambda rest: _mysql(rest, "mariadb"),
    "sqlserver": _mssql,
    "oracle": _oracle,
    "sqlite": _sqlite,
}


# -------------------------------------------------------------------------- entries


def translate(
    raw: str,
    *,
    user: str | None = None,
    password: str | None = None,
    key: str = URL_CONFIG,
) -> DatabaseUrl:
    """What `raw` means as a DatabaseUrl, with `user`/`password` merged in (steps 1-4 of
    the module docstring; pure: no driver is imported). ConfigError naming `key`."""
    text = str(raw).strip()
    if not text:
        raise ConfigError(key, "", "a database URL is needed")
    shown = mask_url(text, password)
    # Step 1: a SQLAlchemy URL as it is
    if not text.lower().startswith("jdbc:"):
        try:
            url = sa.make_url(text)
        except sa.exc.ArgumentError:
            raise ConfigError(
                key,
                shown,
                "not a database URL (expected a JDBC URL such as jdbc:postgresql://host/db "
                "or a SQLAlchemy URL such as postgresql://host/db)",
            ) from None
        return DatabaseUrl(url).with_credentials(user, password)
    # Step 2: the subprotocol's own grammar
    subprotocol, _, rest = text[len("jdbc:") :].partition(":")
    parse = _SUBPROTOCOLS.get(subprotocol.lower())
    if parse is None:
        raise ConfigError(
            key,
            shown,
            f"JDBC subprotocol {subprotocol!r} is not supported (postgresql, mysql, mariadb, "
            "sqlserver, oracle:thin and sqlite are)",
        )
    # Step 3: every parameter mapped, ignored by name, or refused by name
    try:
        url, args, ignored = parse(rest)
    except _Refused as exc:
        raise ConfigError(key, shown, str(exc)) from None
    # Step 4: connection.user / connection.password win
    return DatabaseUrl(url, args, tuple(ignored)).with_credentials(user, password)


#: backend -> its drivers, the one a URL naming none gets first: (driver, module, pip
#: package). SQLAlchemy's default comes first, except on PostgreSQL: psycopg2 before
#: psycopg 3, the driver the connectors were built and are mostly tested on (the CDC
#: source's replication needs it in any case); postgresql+psycopg:// still chooses
#: psycopg 3, which JdbcSink's COPY path takes as well.
_DRIVERS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "postgresql": (
        ("psycopg2", "psycopg2", "psycopg2-binary"),
        ("psycopg", "psycopg", "psycopg[binary]"),
        ("pg8000", "pg8000", "pg8000"),
        ("asyncpg", "asyncpg", "asyncpg"),
    ),
    "mysql": (
        ("mysqldb", "MySQLdb", "mysqlclient"),
        ("pymysql", "pymysql", "PyMySQL"),
        ("mysqlconnector", "mysql.connector", "mysql-connector-python"),
        ("mariadbconnector", "mariadb", "mariadb"),
    ),
    "mssql": (
        ("pyodbc", "pyodbc", "pyodbc (and Microsoft's ODBC Driver 18 for SQL Server)"),
        ("pymssql", "pymssql", "pymssql"),
    ),
    "oracle": (
        ("oracledb", "oracledb", "oracledb"),
        ("cx_oracle", "cx_Oracle", "cx_Oracle"),
    ),
}
_DRIVERS["mariadb"] = _DRIVERS["mysql"]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def resolve_driver(db: DatabaseUrl, *, key: str = URL_CONFIG) -> DatabaseUrl:
    """Step 5: `db` with a driver that is installed. A URL naming no driver gets its
    database's first installed one (`mysql://` is PyMySQL here, not the mysqlclient
    SQLAlchemy defaults to); a named driver that is missing, or a database with none
    installed, is a ConfigError naming the package to install."""
    backend = db.backend
    drivers = _DRIVERS.get(backend)
    if not drivers:
        # sqlite (the standard library), or a database we know no drivers of: SQLAlchemy
        # must at least know its dialect
        try:
            db.url.get_dialect()
        except sa.exc.NoSuchModuleError:
            raise ConfigError(
                key, str(db), f"no SQLAlchemy dialect for {db.url.drivername!r}"
            ) from None
        return db
    named = db.url.get_driver_name() if "+" in db.url.drivername else None
    if named:
        for driver, module, package in drivers:
            if driver == named and not _installed(module):
                raise ConfigError(
                    key,
                    str(db),
                    f"the {backend} driver {driver} is not installed: pip install '{package}'",
                )
        return db
    for driver, module, _ in drivers:
        if _installed(module):
            url = db.url.set(drivername=f"{backend}+{driver}")
            return DatabaseUrl(url, db.connect_args, db.ignored)
    package = drivers[0][2]
    raise ConfigError(key, str(db), f"no {backend} driver is installed: pip install '{package}'")


def database_url(
    raw: str,
    *,
    user: str | None = None,
    password: str | None = None,
    key: str = URL_CONFIG,
) -> DatabaseUrl:
    """`translate` then `resolve_driver`: a DatabaseUrl ready for create_engine."""
    return resolve_driver(translate(raw, user=user, password=password, key=key), key=key)


_PLACEHOLDER = re.compile(r"\$\{[^}]+\}")


def has_placeholder(value: str) -> bool:
    """Whether `value` holds a config-provider placeholder (`${file:…}`): its text is
    not the URL until the worker resolves it, when the connector or task starts."""
    return _PLACEHOLDER.search(value) is not None


def validate_url(name: str, value: Any) -> None:
    """A ConfigDef validator for a `connection.url` key: translates it and finds its
    driver, so a bad URL is refused when the config is, naming the key. A URL holding a
    placeholder is checked when the worker has resolved it, at task start."""
    if value is None or has_placeholder(str(value)):
        return
    database_url(str(value), key=name)
