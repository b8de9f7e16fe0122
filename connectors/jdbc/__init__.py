"""JDBC connectors: databases through SQLAlchemy. The query-based source
(`JdbcSourceConnector`) and the helpers every JDBC connector shares: dialects
(identifier quoting, table ids, time) and SQL ⇄ Connect type mapping."""

from connectors.jdbc.dialects import Dialect, TableId, connect, dialect_for
from connectors.jdbc.source import JdbcSourceConnector, JdbcSourceTask

__all__ = ["Dialect", "JdbcSourceConnector", "JdbcSourceTask", "TableId", "connect", "dialect_for"]
