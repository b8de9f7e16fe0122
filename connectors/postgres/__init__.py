"""Log-based change data capture from PostgreSQL (Debezium's PostgreSQL connector's
configs and events) through logical decoding with the built-in pgoutput plugin."""

from connectors.postgres.source import PostgresCdcSourceConnector, PostgresCdcSourceTask

__all__ = ["PostgresCdcSourceConnector", "PostgresCdcSourceTask"]
