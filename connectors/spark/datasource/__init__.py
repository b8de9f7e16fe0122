"""Spark reads the log: the `tributary` format of PySpark's Python Data Source API.

    from connectors.spark.datasource import register
    register(spark)                                   # once per SparkSession
    spark.read.format("tributary").option("log.dir", "data/log") \\
        .option("topic", "orders").load()

Python data sources are registered per session (`spark.dataSource.register`); Spark's
Python workers import this package, so they must run an interpreter that has the
project installed (PYSPARK_PYTHON; `connectors.spark.session` sets it).
"""

from __future__ import annotations

from typing import Any

from connectors.spark.datasource.options import SourceOptions, parse_options
from connectors.spark.datasource.source import TributaryDataSource
from connectors.spark.datasource.zip_imports import cheap_zip_invalidation, in_spark_worker

if in_spark_worker():
    cheap_zip_invalidation()  # why: connectors.spark.datasource.zip_imports

__all__ = ["SourceOptions", "TributaryDataSource", "parse_options", "register"]


def register(spark: Any) -> None:
    """Make `format("tributary")` known to this SparkSession."""
    spark.dataSource.register(TributaryDataSource)
