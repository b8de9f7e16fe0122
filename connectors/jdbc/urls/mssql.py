"""Microsoft's JDBC URLs (`jdbc:sqlserver://…`) as pyodbc's, with Microsoft's ODBC
Driver 18.

Its own module because SQL Server's grammar is unlike the others': `;name=value`
properties after the server (a braced value may hold semicolons), property names in
any case, and most settings passed on as ODBC connection-string attributes rather than
connect() arguments.
"""

from __future__ import annotations

import re
from typing import Any

from connectors.jdbc.urls.grammar import (
    Parsed,
    Refused,
    as_bool,
    as_int,
    new_url,
    unknown_parameters,
)

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
        raise Refused("properties after the server are ;name=value pairs")
    return pairs


def _yes(name: str, value: str) -> str:
    return "yes" if as_bool(name, value) else "no"


def parse_mssql(rest: str) -> Parsed:
    """Microsoft: `//[server[\\instance][:port]][;property=value…]` (property names in
    any case), to pyodbc with Microsoft's ODBC Driver 18."""
    if not rest.startswith("//"):
        raise Refused("expected jdbc:sqlserver://server[\\instance][:port][;property=value]")
    server_part, _, props = rest[2:].partition(";")
    server, _, port_text = server_part.partition(":")
    server, _, instance = server.partition("\\")
    port = as_int("portNumber", port_text) if port_text else None
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
            port = as_int(name, value)
        elif lowered == "encrypt":
            choice = value.strip().lower()
            if choice not in _ENCRYPT:
                raise Refused(f"parameter encrypt={value} is not true, false or strict")
            query["Encrypt"] = _ENCRYPT[choice]
        elif lowered == "trustservercertificate":
            query["TrustServerCertificate"] = _yes(name, value)
        elif lowered == "multisubnetfailover":
            query["MultiSubnetFailover"] = _yes(name, value)
        elif lowered == "integratedsecurity":
            if as_bool(name, value):
                query["Trusted_Connection"] = "yes"
        elif lowered == "logintimeout":
            args["timeout"] = as_int(name, value)
        elif lowered in _MSSQL_SAME:
            query[_MSSQL_SAME[lowered]] = value
        elif lowered in _MSSQL_TUNING:
            ignored.append(name)
        else:
            unknown.append(name)
    if unknown:
        raise unknown_parameters(unknown, "Microsoft JDBC")
    host = (server or "localhost") + (f"\\{instance}" if instance else "")
    url = new_url(
        "mssql+pyodbc",
        username=user,
        password=password,
        host=host,
        port=port if port is not None or instance else 1433,
        database=database,
        query=query,
    )
    return url, args, ignored
