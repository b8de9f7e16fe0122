"""Oracle's thin-driver URLs (`jdbc:oracle:thin:…`) as python-oracledb's.

Its own module because Oracle names its target three ways (host:port:SID,
//host:port/service, a TNS descriptor or alias) and carries credentials as
`user/password@`, unlike any other driver here; python-oracledb's thin mode needs no
Oracle client, so these URLs work wherever the package is installed.
"""

from __future__ import annotations

import re
from typing import Any

from connectors.jdbc.urls.grammar import Parsed, Refused, new_url, query_pairs, unknown_parameters

_ORACLE_SID = re.compile(r"^(?P<host>[^:/]+):(?P<port>\d+):(?P<sid>[^:/?]+)$")
_ORACLE_SERVICE = re.compile(r"^(?://)?(?P<host>[^:/]+)(?::(?P<port>\d+))?/(?P<service>[^:/?]+)$")


def parse_oracle(rest: str) -> Parsed:
    """Oracle's thin driver: `thin:[user/password]@host:port:SID`,
    `thin:[user/password]@[//]host[:port]/service`, `thin:@(DESCRIPTION=…)` or
    `thin:@alias`, to python-oracledb (thin mode too: no Oracle client needed)."""
    if not rest.startswith("thin:"):
        raise Refused("only Oracle's thin driver URLs are supported (jdbc:oracle:thin:@…)")
    body = rest[len("thin:") :]
    credentials, at, target = body.rpartition("@") if "@" in body else ("", "", body)
    if not at:
        raise Refused("expected jdbc:oracle:thin:[user/password]@host:port:SID or …@//host/service")
    user, _, password = credentials.partition("/")
    if "?" in target:
        target, _, query = target.partition("?")
        names = [n for n, _ in query_pairs(query)]
        if names:
            raise unknown_parameters(names, "Oracle thin")
    args: dict[str, Any] = {}
    if match := _ORACLE_SID.match(target):
        url = new_url(
            "oracle+oracledb",
            username=user or None,
            password=password or None,
            host=match["host"],
            port=int(match["port"]),
            database=match["sid"],
        )
    elif match := _ORACLE_SERVICE.match(target):
        url = new_url(
            "oracle+oracledb",
            username=user or None,
            password=password or None,
            host=match["host"],
            port=int(match["port"] or 1521),
            query={"service_name": match["service"]},
        )
    elif target.startswith("(") or re.fullmatch(r"[A-Za-z0-9_.\-]+", target):
        # a TNS descriptor or a tnsnames.ora alias: the driver's dsn, as it is
        url = new_url("oracle+oracledb", username=user or None, password=password or None)
        args["dsn"] = target
    else:
        raise Refused("expected jdbc:oracle:thin:@host:port:SID or …@//host:port/service")
    return url, args, []
