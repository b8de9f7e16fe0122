"""Log-based change data capture from MySQL and MariaDB (Debezium's MySQL and MariaDB
connectors' configs and events) through the row-based binlog."""

from connectors.mysql.source import MySqlCdcSourceConnector, MySqlCdcSourceTask

__all__ = ["MySqlCdcSourceConnector", "MySqlCdcSourceTask"]
