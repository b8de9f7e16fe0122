"""Database dialects: what differs between databases, for every JDBC connector.

A `Dialect` wraps a SQLAlchemy engine's dialect with what the connectors need beyond
SQLAlchemy's own SQL compiler:

- identifiers: `quote(name)` always quotes (whatever the name — reserved words, mixed
  case, dots, quotes inside), `table(schema, name)` quotes a qualified table name;
- table ids: `TableId` (database, schema, name) and the fully qualified name Confluent's
  JDBC connectors put in source partitions (`fqn`);
- time: `current_timestamp_sql` (the database's clock, for `timestamp.delay.interval.ms`),
  `timestamp_sql(expr)` (an expression that compares correctly with bound values) and
  `bind_timestamp` (a bound value for it), `timestamp_digits` (fraction digits the
  comparison keeps);
- integer and float widths that SQLAlchemy's generic types do not tell (SQLite's
  INTEGER is 64 bits, its REAL a double).

- errors: `is_transient(exc, dialect)` says whether a database error is worth trying
  again (connection lost, deadlock, …) or belongs to the data. MySQL drivers report
  many data errors (a failed CHECK, for one) as OperationalError, the class that means
  "transient" everywhere else, so on MySQL the error code decides.

`connect(url, user=…, password=…)` builds an engine from a JDBC or SQLAlchemy URL (see
`connectors.jdbc.urls`) and refuses a bad one with a `ConfigError` naming
`connection.url` (the password never appears in a message). `dialect_for(engine)`
picks the dialect by the engine's name. The sink uses the same helpers, so keep them generic.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine

from connect.api import ConfigError, ConnectError
from connectors.jdbc.urls import URL_CONFIG, database_url, mask_url

__all__ = [
    "Dialect",
    "MySqlDialect",
    "PostgresDialect",
    "SqliteDialect",
    "TableId",
    "connect",
    "dialect_for",
    "is_transient",
    "reflected_name",
    "safe_url",
]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, order=True)
class TableId:
    """A table: its database (catalog), schema and name; parts a database lacks are None."""

    database: str | None
    schema: str | None
    name: str

    def __str__(self) -> str:
        return ".".join(p for p in (self.database, self.schema, self.name) if p)


def safe_url(url: URL | str) -> str:
    """The URL as text with its password masked, for messages."""
    if isinstance(url, str):
        return mask_url(url)
    return url.render_as_string(hide_password=True)


def connect(
    url: str,
    *,
    user: str | None = None,
    password: str | None = None,
    key: str = URL_CONFIG,
    **engine_options: Any,
) -> Engine:
    """An engine for a `connection.url` — a JDBC or a SQLAlchemy URL, translated by
    `connectors.jdbc.urls` — with `user`/`password` merged in (they win over the URL's)
    and a driver that is installed. Raises ConfigError naming `key` for a URL that
    cannot be used; does not connect yet (see `check_connection`)."""
    db = database_url(url, user=user, password=password, key=key)
    if db.ignored:
        _log.warning(
            "%s: JDBC parameter(s) %s only tune the Java driver and have no effect here",
            key,
            ", ".join(db.ignored),
        )
    connect_args = {**db.connect_args, **engine_options.pop("connect_args", {})}
    try:
        return sa.create_engine(db.url, connect_args=connect_args, **engine_options)
    except (sa.exc.NoSuchModuleError, ImportError) as exc:
        raise ConfigError(key, str(db), f"no SQLAlchemy dialect or driver for it ({exc})") from None
    except (sa.exc.ArgumentError, TypeError, ValueError) as exc:
        raise ConfigError(key, str(db), mask_url(str(exc), db.url.password)) from None


def reflected_name(name: str, dialect: sa.Dialect) -> str:
    """A column name as SQLAlchemy's reflection gives it, made the column's real name.

    SQLAlchemy's MySQL reflection reads column names out of SHOW CREATE TABLE and
    leaves a backtick in a name escaped (doubled): `we`ird` comes back as `we``ird`,
    which then names no column. Undo that on MySQL; other dialects are exact."""
    if dialect.name in ("mysql", "mariadb"):
        return name.replace("``", "`")
    return name


#: MySQL/MariaDB error codes worth a retry: too many connections (1040), server shutdown
#: (1053), lock wait timeout (1205), deadlock (1213), query interrupted (1317),
#: connection killed (1927), cannot connect (2002, 2003), server gone or connection lost
#: (2006, 2013, 2055), disconnected for inactivity (4031).
MYSQL_TRANSIENT_CODES = frozenset(
    {1040, 1053, 1205, 1213, 1317, 1927, 2002, 2003, 2006, 2013, 2055, 4031}
)


def _mysql_code(exc: BaseException) -> int | None:
    orig = exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def is_transient(exc: BaseException, dialect: sa.Dialect) -> bool:
    """Whether `exc`, raised through `dialect` (SQLAlchemy's, or its driver's own
    exception), is transient: the same statements may well succeed when tried again.

    Connection loss (an invalidated connection, InterfaceError), pool timeouts and
    OperationalError are transient — except on MySQL, whose drivers raise
    OperationalError for data errors too (PyMySQL does for every unmapped code ≥ 1000,
    among them a failed CHECK, 4025): there an OperationalError is transient only when
    its code is in MYSQL_TRANSIENT_CODES (or it has none)."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    dbapi = getattr(dialect, "dbapi", None)
    interface = tuple(
        t
        for t in (
            sa.exc.InterfaceError,
            sa.exc.TimeoutError,
            getattr(dbapi, "InterfaceError", None),
        )
        if isinstance(t, type)
    )
    if isinstance(exc, interface):
        return True
    operational = tuple(
        t
        for t in (sa.exc.OperationalError, getattr(dbapi, "OperationalError", None))
        if isinstance(t, type)
    )
    if not isinstance(exc, operational):
        return False
    if dialect.name in ("mysql", "mariadb"):
        code = _mysql_code(exc)
        return code is None or code in MYSQL_TRANSIENT_CODES
    return True


def check_connection(engine: Engine, *, key: str = URL_CONFIG) -> None:
    """Connect once; a failure becomes a ConfigError naming `key`, the URL (password
    masked) and the database's reason."""
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1").all()
    except sa.exc.DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise ConfigError(key, safe_url(engine.url), f"cannot connect: {reason}") from None


class Dialect:
    """Generic SQL; subclasses adjust what their database does differently."""

    name = "generic"
    #: schemas that hold the database's own catalog, never user tables
    system_schemas: frozenset[str] = frozenset({"information_schema"})
    #: whether a table id carries the database name / the schema name
    uses_database = False
    uses_schema = True
    integer_bits = 32
    real_is_double = False
    timestamp_digits = 6
    current_timestamp_sql = "SELECT CURRENT_TIMESTAMP"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._preparer = engine.dialect.identifier_preparer
        self.database = engine.url.database

    # ------------------------------------------------------------ identifiers

    def quote(self, name: str) -> str:
        """`name` as a quoted identifier, always quoted."""
        return self._preparer.quote_identifier(name)

    def table(self, table: TableId) -> str:
        """The quoted, schema-qualified name of `table` for SQL text."""
        if table.schema and self.uses_schema:
            return f"{self.quote(table.schema)}.{self.quote(table.name)}"
        return self.quote(table.name)

    def table_id(self, schema: str | None, name: str) -> TableId:
        return TableId(
            self.database if self.uses_database else None,
            schema if self.uses_schema else None,
            name,
        )

    def fqn(self, table: TableId) -> str:
        """The unquoted fully qualified name (Confluent's partition `table` value)."""
        return str(table)

    def user_schemas(self, inspector: sa.Inspector) -> list[str | None]:
        """Schemas that may hold user tables (None: the default schema only)."""
        names = [
            s
            for s in inspector.get_schema_names()
            if s not in self.system_schemas and not s.startswith("pg_")
        ]
        return sorted(names) or [None]

    # ------------------------------------------------------------------ time

    def timestamp_sql(self, expr: str) -> str:
        """An expression of a timestamp column that compares with `bind_timestamp`."""
        return expr

    def bind_timestamp(self, value: dt.datetime, *, aware: bool, zone: dt.tzinfo) -> Any:
        """A bound value comparing with a timestamp column: aware for a column with a
        time zone, else the wall-clock time in `zone` (the database's time zone)."""
        if aware:
            return value
        return value.astimezone(zone).replace(tzinfo=None)

    def now(self, conn: sa.Connection, zone: dt.tzinfo) -> dt.datetime:
        """The database's current time, aware (naive answers are taken in `zone`)."""
        value = conn.exec_driver_sql(self.current_timestamp_sql).scalar()
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value)
        if not isinstance(value, dt.datetime):
            raise ConnectError(f"the database's clock answered {value!r}, not a timestamp")
        return value if value.tzinfo is not None else value.replace(tzinfo=zone)

    def truncate(self, value: dt.datetime) -> dt.datetime:
        """`value` cut to the fraction digits comparisons keep."""
        if self.timestamp_digits >= 6:
            return value
        step = 10 ** (6 - self.timestamp_digits)
        return value.replace(microsecond=value.microsecond // step * step)

    # ------------------------------------------------------------------ misc

    def is_autoincrement(self, column: dict[str, Any], pk_columns: Iterable[str]) -> bool:
        """Whether a reflected column is filled in by the database (serial, identity,
        auto_increment)."""
        return column.get("autoincrement") is True or "identity" in column


class PostgresDialect(Dialect):
    name = "postgresql"
    uses_database = True  # Confluent's partitions name <database>.<schema>.<table>

    def user_schemas(self, inspector: sa.Inspector) -> list[str | None]:
        return [s for s in super().user_schemas(inspector) if s != "pg_toast"]


class SqliteDialect(Dialect):
    """SQLite keeps timestamps as text in whatever format was written; comparisons go
    through `strftime` so every format compares the same way, at millisecond precision
    (what strftime keeps). Integers are 64 bits and REAL is a double."""

    name = "sqlite"
    uses_schema = False
    integer_bits = 64
    real_is_double = True
    timestamp_digits = 3
    current_timestamp_sql = "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')"
    _FORMAT = "%Y-%m-%d %H:%M:%f"

    def user_schemas(self, inspector: sa.Inspector) -> list[str | None]:
        return [None]

    def timestamp_sql(self, expr: str) -> str:
        return f"strftime('{self._FORMAT}', {expr})"

    def bind_timestamp(self, value: dt.datetime, *, aware: bool, zone: dt.tzinfo) -> Any:
        local = value.astimezone(dt.UTC if aware else zone)
        return local.strftime("%Y-%m-%d %H:%M:%S.") + f"{local.microsecond // 1000:03d}"

    def now(self, conn: sa.Connection, zone: dt.tzinfo) -> dt.datetime:
        text = conn.exec_driver_sql(self.current_timestamp_sql).scalar()
        return dt.datetime.fromisoformat(str(text)).replace(tzinfo=dt.UTC)

    def is_autoincrement(self, column: dict[str, Any], pk_columns: Iterable[str]) -> bool:
        # an INTEGER PRIMARY KEY of one column is the rowid: filled in on insert
        pk = list(pk_columns)
        return super().is_autoincrement(column, pk) or (
            pk == [column["name"]] and isinstance(column["type"], sa.Integer)
        )

    def rowid_alias(self, column: dict[str, Any], pk_columns: Iterable[str]) -> bool:
        """The rowid alias is never NULL, although SQLite reports it nullable."""
        return list(pk_columns) == [column["name"]] and str(column["type"]).upper() == "INTEGER"


class MySqlDialect(Dialect):
    """MySQL and MariaDB. CURRENT_TIMESTAMP without a precision is cut to whole seconds
    there, which would hold back every row changed within the current second (the
    upper bound of a timestamp query): ask for the microseconds DATETIME(6) keeps."""

    name = "mysql"
    uses_database = True
    uses_schema = False  # a MySQL schema is its database
    current_timestamp_sql = "SELECT CURRENT_TIMESTAMP(6)"

    def user_schemas(self, inspector: sa.Inspector) -> list[str | None]:
        return [None]


_DIALECTS: dict[str, type[Dialect]] = {
    "postgresql": PostgresDialect,
    "sqlite": SqliteDialect,
    "mysql": MySqlDialect,
    "mariadb": MySqlDialect,
}


def dialect_for(engine: Engine) -> Dialect:
    """The dialect for an engine (generic SQL for databases without one of their own)."""
    return _DIALECTS.get(engine.dialect.name, Dialect)(engine)
