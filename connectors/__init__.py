"""Tributary's connectors. `ALIASES` maps the names users write in `connector.class`
(short names, and the Kafka / Confluent class names of the equivalent connectors) to
"module:Class" paths; the runtime imports a connector only when a config names it."""

from __future__ import annotations

__all__ = ["ALIASES"]

_FILE_SOURCE = "connectors.file.source:FileStreamSourceConnector"
_FILE_SINK = "connectors.file.sink:FileStreamSinkConnector"
_VERIFIABLE_SOURCE = "connectors.verifiable.source:VerifiableSourceConnector"
_VERIFIABLE_SINK = "connectors.verifiable.sink:VerifiableSinkConnector"
_MOCK_SOURCE = "connectors.mock.source:MockSourceConnector"
_MOCK_SINK = "connectors.mock.sink:MockSinkConnector"
_JDBC_SOURCE = "connectors.jdbc.source:JdbcSourceConnector"
_JDBC_SINK = "connectors.jdbc.sink:JdbcSinkConnector"
_POSTGRES_CDC = "connectors.postgres.source:PostgresCdcSourceConnector"
_MYSQL_CDC = "connectors.mysql.source:MySqlCdcSourceConnector"
_SPARK_PARQUET = "connectors.spark.sink:SparkParquetSinkConnector"
_S3_SINK = "connectors.s3.sink:S3SinkConnector"
_S3_SOURCE = "connectors.s3.source:S3SourceConnector"
_ICEBERG_SINK = "connectors.iceberg.sink:IcebergSinkConnector"
_DELTA_SINK = "connectors.delta.sink:DeltaSinkConnector"

_PATHS: dict[str, str] = {
    "FileStreamSource": _FILE_SOURCE,
    "FileStreamSourceConnector": _FILE_SOURCE,
    "org.apache.kafka.connect.file.FileStreamSourceConnector": _FILE_SOURCE,
    "FileStreamSink": _FILE_SINK,
    "FileStreamSinkConnector": _FILE_SINK,
    "org.apache.kafka.connect.file.FileStreamSinkConnector": _FILE_SINK,
    # Kafka's system-test connectors (connect/test-plugins), for verifying a deployment
    "VerifiableSource": _VERIFIABLE_SOURCE,
    "VerifiableSourceConnector": _VERIFIABLE_SOURCE,
    "org.apache.kafka.connect.tools.VerifiableSourceConnector": _VERIFIABLE_SOURCE,
    "VerifiableSink": _VERIFIABLE_SINK,
    "VerifiableSinkConnector": _VERIFIABLE_SINK,
    "org.apache.kafka.connect.tools.VerifiableSinkConnector": _VERIFIABLE_SINK,
    "MockSource": _MOCK_SOURCE,
    "MockSourceConnector": _MOCK_SOURCE,
    "org.apache.kafka.connect.tools.MockSourceConnector": _MOCK_SOURCE,
    "MockSink": _MOCK_SINK,
    "MockSinkConnector": _MOCK_SINK,
    "org.apache.kafka.connect.tools.MockSinkConnector": _MOCK_SINK,
    "JdbcSource": _JDBC_SOURCE,
    "JdbcSourceConnector": _JDBC_SOURCE,
    "io.confluent.connect.jdbc.JdbcSourceConnector": _JDBC_SOURCE,
    "JdbcSink": _JDBC_SINK,
    "JdbcSinkConnector": _JDBC_SINK,
    "io.confluent.connect.jdbc.JdbcSinkConnector": _JDBC_SINK,
    "PostgresCdcSource": _POSTGRES_CDC,
    "PostgresConnector": _POSTGRES_CDC,
    "io.debezium.connector.postgresql.PostgresConnector": _POSTGRES_CDC,
    "MySqlCdcSource": _MYSQL_CDC,
    "MySqlConnector": _MYSQL_CDC,
    "MariaDbConnector": _MYSQL_CDC,
    "io.debezium.connector.mysql.MySqlConnector": _MYSQL_CDC,
    "io.debezium.connector.mariadb.MariaDbConnector": _MYSQL_CDC,
    "SparkParquetSink": _SPARK_PARQUET,
    "SparkParquetSinkConnector": _SPARK_PARQUET,
    "HdfsSinkConnector": _SPARK_PARQUET,
    "Hdfs3SinkConnector": _SPARK_PARQUET,
    "io.confluent.connect.hdfs.HdfsSinkConnector": _SPARK_PARQUET,
    "io.confluent.connect.hdfs3.Hdfs3SinkConnector": _SPARK_PARQUET,
    "S3Sink": _S3_SINK,
    "S3SinkConnector": _S3_SINK,
    "io.confluent.connect.s3.S3SinkConnector": _S3_SINK,
    "S3Source": _S3_SOURCE,
    "S3SourceConnector": _S3_SOURCE,
    "io.confluent.connect.s3.source.S3SourceConnector": _S3_SOURCE,
    "IcebergSink": _ICEBERG_SINK,
    "IcebergSinkConnector": _ICEBERG_SINK,
    "org.apache.iceberg.connect.IcebergSinkConnector": _ICEBERG_SINK,
    "io.tabular.iceberg.connect.IcebergSinkConnector": _ICEBERG_SINK,
    "DeltaSink": _DELTA_SINK,
    "DeltaSinkConnector": _DELTA_SINK,
}


ALIASES: dict[str, str] = dict(_PATHS)
