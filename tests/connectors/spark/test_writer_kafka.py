"""The `tributary` writer on a Kafka cluster (`bootstrap.servers`, the real broker of
tests/kafka_broker.py): a batch write lands in one Kafka transaction, keys on the
partition a Connect source picks, and a micro-batch committed again (a replay after a
restart) is skipped through the marker the transaction carried."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from connectors.spark.datasource import register
from connectors.spark.datasource.writer import (
    MARKER_TOPIC,
    TributaryStreamWriter,
    _stage,
    marker_group,
)
from connectors.spark.datasource.writer_options import parse_writer_options
from log import TopicPartition, partition_for_key
from tests.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _committed(log: Any, topic: str) -> list[Any]:
    out = []
    for p in range(log.partition_count(topic)):
        position, end = log.earliest_offset(topic, p), log.last_stable_offset(topic, p)
        while position < end:
            batch = log.read(topic, p, position, isolation_level="read_committed")
            out.extend(batch)
            position = getattr(batch, "next_offset", None) or batch[-1].offset + 1
    return out


def test_batch_write_is_one_kafka_transaction(spark: Any, make_broker_log: Any,
                                              kafka_broker: Any) -> None:
    register(spark)
    log = make_broker_log()
    df = spark.range(200, numPartitions=2).selectExpr(
        "cast(id as string) key", "concat('v', id) value"
    )
    df.write.format("tributary").mode("append").option(
        "bootstrap.servers", kafka_broker.bootstrap
    ).option("topic", "kt").option("topic.partitions", "3").save()
    got = wait_until(lambda: (r := _committed(log, "kt")) and len(r) >= 200 and r, 30,
                     "200 committed records")
    assert sorted((r.key, r.value) for r in got) == sorted(
        (str(i).encode(), f"v{i}".encode()) for i in range(200)
    )
    assert all(r.partition == partition_for_key(r.key, 3) for r in got)


def test_a_replayed_micro_batch_is_written_once_on_kafka(
    make_broker_log: Any, kafka_broker: Any, tmp_path: Path
) -> None:
    log = make_broker_log()
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "metadata").write_text('{"id":"qk"}\n')
    opts = {"bootstrap.servers": kafka_broker.bootstrap, "topic": "once",
            "checkpointLocation": str(checkpoint)}
    batch = pa.RecordBatch.from_pydict({"value": [b"a", b"b"]})
    for batch_id in (0, 0, 1, 0):
        staged = _stage(parse_writer_options(opts), "w", iter([batch]))
        TributaryStreamWriter(opts).commit([staged], batch_id)
    marker = TopicPartition(MARKER_TOPIC, 0)
    assert log.committed_offsets(marker_group("qk"), [marker])[marker].offset == 2
    got = wait_until(lambda: (r := _committed(log, "once")) and len(r) >= 4 and r, 30,
                     "4 committed records")
    assert sorted(r.value for r in got) == [b"a", b"a", b"b", b"b"]
    assert not list((checkpoint / "tributary-staging").rglob("*.arrow"))
