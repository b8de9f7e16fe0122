"""Steps 1-4 of a `connection.url`'s translation (see the package docstring): a
SQLAlchemy URL taken as it is, or a JDBC URL handed to its subprotocol's parser, then
the credentials merged in.

Its own module because it is the pure half: no driver is imported, so the tests check
it against the drivers' documented URLs without a database, and it is the one place a
parser's `Refused` becomes a ConfigError naming the key with the URL masked.
"""

from __future__ import annotations

from collections.abc import Callable

from connect.api import ConfigError
from connectors.jdbc.urls.grammar import Parsed, Refused
from connectors.jdbc.urls.masking import mask_url
from connectors.jdbc.urls.mssql import parse_mssql
from connectors.jdbc.urls.mysql import parse_mysql
from connectors.jdbc.urls.oracle import parse_oracle
from connectors.jdbc.urls.postgres import parse_postgres
from connectors.jdbc.urls.result import DatabaseUrl
from connectors.jdbc.urls.sqlite import parse_sqlite

URL_CONFIG = "connection.url"

_SUBPROTOCOLS: dict[str, Callable[[str], Parsed]] = {
    "postgresql": parse_postgres,
    "mysql": lambda rest: parse_mysql(rest, "mysql"),
    "mariadb": lambda rest: parse_mysql(rest, "mariadb"),
    "sqlserver": parse_mssql,
    "oracle": parse_oracle,
    "sqlite": parse_sqlite,
}


def translate(
    raw: str,
    *,
    user: str | None = None,
    password: str | None = None,
    key: str = URL_CONFIG,
) -> DatabaseUrl:
    """What `raw` means as a DatabaseUrl, with `user`/`password` merged in (steps 1-4 of
    the package docstring; pure: no driver is imported). ConfigError naming `key`."""
    text = str(raw).strip()
    if not text:
        raise ConfigError(key, "", "a database URL is needed")
    shown = mask_url(text, password)
    # Step 1: a SQLAlchemy URL as it is
    if not text.lower().startswith("jdbc:"):
        import sqlalchemy as sa  # see grammar.new_url: loaded on the first URL only

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
    except Refused as exc:
        raise ConfigError(key, shown, str(exc)) from None
    # Step 4: connection.user / connection.password win
    return DatabaseUrl(url, args, tuple(ignored)).with_credentials(user, password)
