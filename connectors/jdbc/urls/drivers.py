"""Step 5 of a `connection.url`'s translation (see the package docstring): a Python
driver that is installed, and the entry points that end with it.

Its own module because it is the half that looks at the machine (which driver packages
are importable), while steps 1-4 (`translate`) are pure; `database_url` and the
ConfigDef validator `validate_url` are the two ways in that every connector uses.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any

from connect.api import ConfigError
from connectors.jdbc.urls.result import DatabaseUrl
from connectors.jdbc.urls.translate import URL_CONFIG, translate

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
        import sqlalchemy as sa  # see grammar.new_url: loaded on the first URL only

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
