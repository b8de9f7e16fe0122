"""A KSQL-style pipeline on the main job's data: continuous Spark SQL over the log,
results written back to the log, exactly once per micro-batch.

    orders (topic shop-orders, JsonConverter envelopes from the JdbcSource)
      ├─ latest version of each order ──▶ topic orders_latest (compacted, key id)
      └─ revenue per region per minute ─▶ topic region_revenue (compacted,
                                           key region|minute)
    both topics ──JdbcSink (upsert)──▶ SQLite tables orders_latest, region_revenue

`start_orders_pipeline` starts two streaming queries over the stream of orders:
- `orders_latest` (`LATEST_ORDERS`): each micro-batch's newest version of every
  order it holds (`max_by` over `updated_at`), keyed by id. A compacted topic and the
  JdbcSink's upsert keep the latest across batches: the source appends its versions
  in time order and a micro-batch reads a prefix of every partition, so a later batch
  never brings an older version. The micro-batch is coalesced to one partition first:
  the aggregation then needs no shuffle (a stage less per second: a micro-batch of a
  running pipeline holds a handful of changes). It runs in `foreachBatch` with a
  batch write that carries the batch id (`txnVersion`): exactly once per
  micro-batch, as a streaming write is. Why not a streaming aggregation: Python data
  sources take append and complete output only (PySpark 4.1: "does not support Update
  mode"), and complete would rewrite every order each second.
- `region_revenue` (`REGION_REVENUE`): orders counted once
  (`dropDuplicatesWithinWatermark` on id, a watermark of `WATERMARK` on
  `created_at`: an order's later versions are not new revenue), per region and
  one-minute tumbling window of `created_at`, in complete output mode: every window's
  total each micro-batch, keyed region|minute, so compaction and the upsert keep the
  newest total (a handful of rows: regions × minutes).
Both write through `format("tributary")` (`value.format=json`, schemas in the
envelope, so the JdbcSink creates and upserts its tables), one log transaction per
micro-batch; their checkpoints under `checkpoint_dir` let a restarted job go on where
it stopped without writing a batch twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "LATEST_ORDERS",
    "ORDERS_SCHEMA",
    "REGION_REVENUE",
    "RESULT_TOPICS",
    "start_orders_pipeline",
]

#: The JdbcSource's columns of the shop's orders (connect.demo_shop), as the reader
#: decodes the JsonConverter envelopes (Decimal and Timestamp logical types).
ORDERS_SCHEMA = (
    "id long, customer string, product string, quantity long, amount decimal(10,2), "
    "status string, region string, created_at timestamp, updated_at timestamp"
)
WATERMARK = "1 minute"

#: Over one micro-batch of the orders stream (`{orders}`).
LATEST_ORDERS = """
SELECT cast(id AS string) AS key, latest.*
FROM (
  SELECT id, max_by(struct(id, customer, product, quantity, amount, status, region,
                           created_at, updated_at), updated_at) AS latest
  FROM {orders} GROUP BY id
)
"""

#: Over the stream of new orders (the view `new_orders`).
REGION_REVENUE = """
SELECT concat(region, '|', cast(window.start AS string)) AS key,
       region, window.start AS minute, count(*) AS orders, sum(amount) AS revenue
FROM new_orders
GROUP BY region, window(created_at, '1 minute')
"""

RESULT_TOPICS = ("orders_latest", "region_revenue")


def orders_stream(spark: Any, log_dir: str, topic: str) -> Any:
    """The orders topic as a stream of the table's columns, from its beginning."""
    return (
        spark.readStream.format("tributary")
        .option("log.dir", log_dir)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("value.format", "json")
        .schema(ORDERS_SCHEMA + ", _topic string, _partition int, _offset long, "
                "_timestamp timestamp")
        .load()
    )


def _latest_writer(log_dir: str, checkpoint: str) -> Callable[[Any, int], None]:
    """The foreachBatch function of `orders_latest` (see the module docstring)."""

    def write(batch: Any, batch_id: int) -> None:
        (
            batch.sparkSession.sql(LATEST_ORDERS, orders=batch.coalesce(1))
            .write.format("tributary").mode("append")
            .option("log.dir", log_dir)
            .option("topic", "orders_latest")
            .option("value.format", "json")
            .option("topic.config.cleanup.policy", "compact")
            .option("checkpointLocation", checkpoint)  # its metadata names the query
            .option("txnVersion", str(batch_id))
            .save()
        )

    return write


def start_orders_pipeline(
    spark: Any,
    log_dir: str,
    checkpoint_dir: str,
    *,
    topic: str = "shop-orders",
    trigger: str = "1 second",
) -> list[Any]:
    """Register the data source and start the two queries; the StreamingQuery
    objects (stop them to end the pipeline)."""
    from connectors.spark.datasource import register

    register(spark)
    # Spark looks a streaming sink's format up in the JVM thread's active session,
    # which is not this one when the session was started on another thread.
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
    orders = orders_stream(spark, log_dir, topic)
    latest_checkpoint = f"{checkpoint_dir}/orders_latest"
    latest = (
        orders.writeStream.foreachBatch(_latest_writer(log_dir, latest_checkpoint))
        .option("checkpointLocation", latest_checkpoint)
        .queryName("orders_latest")
        .trigger(processingTime=trigger)
        .start()
    )
    orders.withWatermark("created_at", WATERMARK).dropDuplicatesWithinWatermark(
        ["id"]
    ).createOrReplaceTempView("new_orders")
    revenue = (
        spark.sql(REGION_REVENUE)
        .writeStream.format("tributary")
        .outputMode("complete")
        .option("log.dir", log_dir)
        .option("topic", "region_revenue")
        .option("value.format", "json")
        .option("topic.config.cleanup.policy", "compact")
        .option("checkpointLocation", f"{checkpoint_dir}/region_revenue")
        .queryName("region_revenue")
        .trigger(processingTime=trigger)
        .start()
    )
    return [latest, revenue]
