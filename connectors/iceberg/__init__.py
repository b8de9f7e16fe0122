"""IcebergSink: topics into Apache Iceberg tables with pyiceberg, exactly once (sink.py).

pyiceberg, pyarrow and the catalog's drivers load with the task (`start`), not with
this package: the worker imports the connector class to validate configs."""

from connectors.iceberg.sink import IcebergSinkConnector, IcebergSinkTask

__all__ = ["IcebergSinkConnector", "IcebergSinkTask"]
