"""The driver half of `test_writer_kill.py`, in a child process the test SIGKILLs:

    python -m tests.connectors.spark.writer_job LOG_DIR CHECKPOINT

A streaming query from Spark's `rate` source (whose rows are a function of their
offsets, so a batch Spark re-runs from its checkpoint has the same rows) to the topic
`out` of the log at LOG_DIR, a micro-batch every 100 ms; it runs until killed.
"""

from __future__ import annotations

import os
import sys

from connectors.spark.datasource import register
from connectors.spark.session import spark_session

OUT = "out"


def main(log_dir: str, checkpoint: str) -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = spark_session(
        "local[2]",
        "writer-kill",
        {"spark.sql.shuffle.partitions": "2", "spark.driver.extraJavaOptions":
         "-XX:TieredStopAtLevel=1"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    (
        spark.readStream.format("rate").option("rowsPerSecond", "400")
        .option("numPartitions", "2").load()
        .selectExpr("cast(value as string) key", "cast(value as string) value")
        .writeStream.format("tributary").option("log.dir", log_dir).option("topic", OUT)
        .option("topic.partitions", "2").option("checkpointLocation", checkpoint)
        .trigger(processingTime="100 milliseconds").start()
    )
    print("started", flush=True)
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
