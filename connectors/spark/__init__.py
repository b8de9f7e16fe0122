"""Spark connectors: SparkParquetSink (Confluent's HDFS 3 sink on PySpark: a Parquet
data lake, exactly once) and the `tributary` data source through which Spark reads the
log itself (`connectors.spark.datasource`)."""

from connectors.spark.sink import SparkParquetSinkConnector, SparkParquetSinkTask

__all__ = ["SparkParquetSinkConnector", "SparkParquetSinkTask"]
