"""xerial's sqlite-jdbc URLs (`jdbc:sqlite:…`) as SQLAlchemy's SQLite URLs.

The smallest dialect, kept apart so the others' modules stay about one driver each:
a path (relative to the worker's working directory) or `:memory:`, and no parameters.
"""

from __future__ import annotations

from urllib.parse import unquote

from connectors.jdbc.urls.grammar import Parsed, Refused, new_url, query_pairs, unknown_parameters


def parse_sqlite(rest: str) -> Parsed:
    """xerial's sqlite-jdbc: `jdbc:sqlite:path` (relative to the worker's working
    directory, as the JVM's), `jdbc:sqlite:/absolute/path`, `jdbc:sqlite::memory:`."""
    path, _, query = rest.partition("?")
    names = [n for n, _ in query_pairs(query)]
    if names:
        raise unknown_parameters(names, "SQLite")
    if path.startswith("file:"):
        raise Refused("file: URIs are not supported: give the path, jdbc:sqlite:/path/db")
    if path in ("", ":memory:"):
        return new_url("sqlite"), {}, []
    return new_url("sqlite", database=unquote(path)), {}, []
