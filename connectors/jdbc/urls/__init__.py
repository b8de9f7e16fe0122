"""Database URLs: the JDBC URLs published connector configs carry, made SQLAlchemy's.

Confluent's JDBC connectors (and every tutorial written for them) take `connection.url`
as a JDBC URL — `jdbc:postgresql://host:5432/db?currentSchema=s`, `jdbc:mysql://…`,
`jdbc:sqlite:test.db` — with `connection.user` / `connection.password` beside it. Here a
database is reached through SQLAlchemy, so this package turns such a URL into the
SQLAlchemy URL and driver connect arguments that mean the same. It is the one place
that does; JdbcSource, JdbcSink and PostgresCdcSource all come through it.

`database_url(raw, user=…, password=…, key=…)` does it in steps:

1. A URL that does not start with `jdbc:` is a SQLAlchemy URL and is taken as it is.
2. A `jdbc:<subprotocol>:` URL is split by its own driver's grammar, a module each:
   pgJDBC's (`postgres`: `//host1:p1,host2:p2/db?k=v&…`), Connector/J's and MariaDB's
   (`mysql`: `//[user:pw@]host:p/db?…`), Microsoft's (`mssql`: `//host\\instance:p;k=v;…`),
   Oracle's thin (`oracle`: `user/pw@host:p:SID`, `@//host:p/service`, `@(DESCRIPTION=…)`),
   xerial's SQLite (`sqlite`: `path`, `:memory:`); what they share is in `grammar`.
3. Each parameter is looked up in that driver's table: it becomes a URL part or a
   connect argument with the same meaning, or it is a Java driver's own tuning (statement
   caches, fetch sizes, batch rewriting, logging) that changes nothing a connector reads
   or writes — accepted, and reported in `DatabaseUrl.ignored` so the caller logs it —
   or it is refused by name. A parameter is never dropped silently: one the table does
   not know may change what is read or written.
4. `connection.user` / `connection.password` win over the URL's own.
5. The driver (`drivers.resolve_driver`): a URL that names none gets the first installed
   driver of its database, and a named driver that is not installed is refused with the
   package to install.

Steps 1-4 are pure (`translate`), so they are tested against a table of URLs from the
drivers' documentation without a database. Every error is a `ConfigError` naming `key`,
with the URL masked by `mask_url` (`masking`): a password never appears in a message.
"""

from connectors.jdbc.urls.drivers import database_url, has_placeholder, resolve_driver, validate_url
from connectors.jdbc.urls.masking import mask_url
from connectors.jdbc.urls.postgres import libpq_params
from connectors.jdbc.urls.result import DatabaseUrl
from connectors.jdbc.urls.translate import URL_CONFIG, translate

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
