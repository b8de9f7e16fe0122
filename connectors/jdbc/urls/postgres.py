"""pgJDBC's URLs (`jdbc:postgresql:…`) as psycopg2's, and any PostgreSQL URL as libpq's
connection keywords.

PostgreSQL gets a module of its own because its driver has the most to translate:
several hosts, SSL modes old and new, `currentSchema` and `readOnly` carried in libpq's
`options`, and the CDC source, which speaks libpq directly (`libpq_params`), reads the
same URL the JDBC connectors do. `parse_postgres` goes in steps: the authority (user
info, hosts, database), each parameter through the tables below, then the SSL mode
pgJDBC would have chosen, then the URL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
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
from connectors.jdbc.urls.result import DatabaseUrl

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

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


@dataclass
class _PgCollected(Collected):
    """pgJDBC's parameters so far, with what libpq wants gathered separately: the
    `-c name=value` settings of its `options`, pgJDBC's `ssl` flag and `sslfactory`
    (both decide the SSL mode only once every parameter is read)."""

    options: list[str] = field(default_factory=list)
    ssl: bool | None = None
    factory: str | None = None


def _options_value(text: str) -> str:
    """A value inside libpq's `options` (-c name=value): spaces and backslashes escaped."""
    return text.replace("\\", "\\\\").replace(" ", "\\ ")


def parse_postgres(rest: str) -> Parsed:
    """pgJDBC: `jdbc:postgresql:[//hosts/]database[?params]` (host localhost, port 5432)."""
    head, _, query = rest.partition("?")
    user, password, hosts, database = _authority(head)
    found = _PgCollected(user, password)
    for name, value in query_pairs(query):
        _parameter(found, name, value)
    found.refuse_unknown("pgJDBC")
    _settle_ssl(found)
    if found.options:
        found.args["options"] = " ".join(found.options)
    return _url(found, hosts, database), found.args, found.ignored


def _authority(head: str) -> tuple[str | None, str | None, list[tuple[str, int | None]], str]:
    """(user, password, hosts, database) of what precedes the `?`: `//hosts/database`
    or a bare `database` (or `/`) on localhost:5432."""
    user = password = None
    if head.startswith("//"):
        authority, _, database = head[2:].partition("/")
        user, password, authority = split_userinfo(authority)
        hosts = host_list(authority, 5432) if authority else [("localhost", 5432)]
    else:  # jdbc:postgresql:database, jdbc:postgresql:/
        database = head.lstrip("/")
        hosts = [("localhost", 5432)]
    return user, password, [(h or "localhost", p) for h, p in hosts], database


def _parameter(found: _PgCollected, name: str, value: str) -> None:
    """One pgJDBC parameter into `found`: mapped, ignored by name, or unknown."""
    args = found.args
    if name == "user":
        found.user = value
    elif name == "password":
        found.password = value
    elif name in _PG_SAME:
        args[_PG_SAME[name]] = value
    elif name == "ssl":
        found.ssl = as_bool(name, value)
    elif name == "sslfactory":
        if value != _NON_VALIDATING:
            raise Refused(
                f"parameter sslfactory={value} names a Java class; use sslmode and "
                "sslrootcert instead"
            )
        found.factory = value
    elif name == "currentSchema":
        found.options.append(f"-c search_path={_options_value(value)}")
    elif name == "options":
        found.options.insert(0, value)
    elif name == "readOnly":
        if as_bool(name, value):
            found.options.append("-c default_transaction_read_only=on")
    elif name in ("connectTimeout", "loginTimeout"):
        args.setdefault("connect_timeout", as_int(name, value))
    elif name == "tcpKeepAlive":
        args["keepalives"] = 1 if as_bool(name, value) else 0
    elif name == "targetServerType":
        if value not in _TARGET:
            raise Refused(
                f"parameter targetServerType={value} has no libpq equivalent (use one "
                f"of {', '.join(_TARGET)})"
            )
        args["target_session_attrs"] = _TARGET[value]
    elif name == "loadBalanceHosts":
        args["load_balance_hosts"] = "random" if as_bool(name, value) else "disable"
    elif name in _PG_TUNING:
        found.ignored.append(name)
    else:
        found.unknown.append(name)


def _settle_ssl(found: _PgCollected) -> None:
    """libpq's sslmode for what pgJDBC was told: an explicit sslmode checked, else
    `ssl=true` as pgJDBC reads it, then the non-validating factory's weakening."""
    args = found.args
    if "sslmode" in args and args["sslmode"] not in _SSLMODES:
        raise Refused(f"parameter sslmode={args['sslmode']} is not one of {', '.join(_SSLMODES)}")
    if "sslmode" not in args and found.ssl:
        # pgJDBC: ssl=true without sslmode verifies the certificate and the host name
        args["sslmode"] = "verify-full"
    if found.factory and args.get("sslmode") in ("verify-ca", "verify-full"):
        # the non-validating factory checks no certificate: encryption only
        args["sslmode"] = "require"


def _url(found: _PgCollected, hosts: list[tuple[str, int | None]], database: str) -> URL:
    """psycopg2's URL: one host in the authority, several in SQLAlchemy's multi-host
    form (`?host=h1:p1&host=h2:p2`)."""
    if len(hosts) == 1:
        return new_url(
            "postgresql+psycopg2",
            username=found.user,
            password=found.password,
            host=hosts[0][0],
            port=hosts[0][1],
            database=unquote(database) or None,
        )
    return new_url(
        "postgresql+psycopg2",
        username=found.user,
        password=found.password,
        database=unquote(database) or None,
        query={"host": tuple(f"{h}:{p}" for h, p in hosts)},
    )


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
            host_list(h, url.port or 5432)[0]
            for h in ((hosts,) if isinstance(hosts, str) else hosts)
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
