"""JDBC connectors: databases through SQLAlchemy. The query-based source
(`JdbcSourceConnector`) and the helpers every JDBC connector shares: dialects
(identifier quoting, table ids, time) and SQL ⇄ Connect type mapping.

The names below are loaded on first use (PEP 562's module `__getattr__`), not when the
package is: PostgresCdcSource imports `connectors.jdbc.types` and `connectors.jdbc.urls`
through this package, and importing the dialects and the source here would load all of
SQLAlchemy (~26 MB) into every process that only validates a CDC config.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectors.jdbc.dialects import Dialect, TableId, connect, dialect_for
    from connectors.jdbc.source import JdbcSourceConnector, JdbcSourceTask

__all__ = ["Dialect", "JdbcSourceConnector", "JdbcSourceTask", "TableId", "connect", "dialect_for"]

_HOMES = {
    "Dialect": "connectors.jdbc.dialects",
    "TableId": "connectors.jdbc.dialects",
    "connect": "connectors.jdbc.dialects",
    "dialect_for": "connectors.jdbc.dialects",
    "JdbcSourceConnector": "connectors.jdbc.source",
    "JdbcSourceTask": "connectors.jdbc.source",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
