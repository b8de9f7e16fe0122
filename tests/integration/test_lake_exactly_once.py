"""SparkParquetSink in real `connect standalone` workers (task processes and all):
SIGKILLed at several points while writing the lake, restarted each time, the Parquet
dataset read back with Spark equals the log exactly — every record once, whether the
values reach the sink as bytes (`value.format=json`) or as Arrow batches
(JsonConverter's `to_arrow`, `put_batches`); and a store the task cannot write shows
in the task's REST status with the path."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from connect.converters import JsonConverter
from log import FileLog
from tests.connectors.spark.helpers import ORDER, order
from tests.integration.conftest import connector_file, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.spark]

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
PER_PARTITION = 12_000
FLUSH = 300


def _fill_log(log_dir: Path) -> None:
    converter = JsonConverter()
    converter.configure({"schemas.enable": True}, is_key=False)
    with FileLog(log_dir, background=False) as log:
        log.create_topic("orders", 2)
        for p in range(2):
            for start in range(0, PER_PARTITION, 2_000):
                ids = [p * PER_PARTITION + i for i in range(start, start + 2_000)]
                values = converter.from_connect_batch(
                    "orders", [ORDER] * 2_000, [order(i) for i in ids]
                )
                log.append("orders", p, values)


def _published(lake: Path) -> int:
    return len(list((lake / "topics/orders").rglob("*.parquet")))


@pytest.mark.parametrize(
    "values",
    [
        pytest.param({"value.converter": BYTES, "value.format": "json"}, id="bytes"),
        pytest.param(
            {"value.converter": JSON, "value.converter.schemas.enable": "true"}, id="batches"
        ),
    ],
)
def test_sigkill_at_several_points_neither_loses_nor_duplicates(
    tmp_path: Path, start_worker: Any, spark: Any, values: dict[str, str]
) -> None:
    _fill_log(tmp_path / "log")
    lake = tmp_path / "lake"
    sink = connector_file(
        tmp_path,
        "lake",
        {
            "connector.class": "io.confluent.connect.hdfs3.Hdfs3SinkConnector",
            "tasks.max": "2",
            "topics": "orders",
            "store.url": lake.as_uri(),
            "flush.size": str(FLUSH),
            **values,
            "partitioner.class": "FieldPartitioner",
            "partition.field.name": "region",
        },
    )
    total_files = 2 * 3 * (PER_PARTITION // FLUSH)  # a file per region per commit
    rng = random.Random(7)
    seen_at_kill = []
    for fraction in (0.0, 0.3, 0.6):
        worker = start_worker([sink], {"offset.flush.interval.ms": str(rng.randint(50, 400))})

        def far_enough(w: Any = worker, f: float = fraction) -> bool:
            return _published(lake) >= f * total_files and len(w.task_pids()) >= 2

        wait_until(far_enough, 60, f"{fraction:.0%} of the files")
        worker.kill()
        seen_at_kill.append(_published(lake))
    assert seen_at_kill[-1] < total_files  # the last kill still interrupted the work
    worker = start_worker([sink])
    wait_until(lambda: _published(lake) >= total_files, 120, "every file")
    worker.stop()
    assert _published(lake) == total_files
    df = spark.read.parquet(str(lake / "topics/orders"))
    ids = [r.id for r in df.select("id").collect()]
    assert len(ids) == 2 * PER_PARTITION
    assert sorted(ids) == list(range(2 * PER_PARTITION))
    assert not list((lake / "topics/+tmp").rglob("*.parquet"))


def test_an_unwritable_store_shows_in_the_task_status(tmp_path: Path, start_worker: Any) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the lake should be")
    with FileLog(tmp_path / "log", background=False) as log:
        log.create_topic("orders", 1)
    sink = connector_file(
        tmp_path,
        "lake",
        {
            "connector.class": "SparkParquetSink",
            "topics": "orders",
            "path": str(blocker / "lake"),
        },
    )
    worker = start_worker([sink])

    def failed() -> Any:
        status = worker.status("lake")
        tasks = status["tasks"] if status else []
        return status if tasks and tasks[0]["state"] == "FAILED" else None

    status = wait_until(failed, 60, "task FAILED")
    trace = status["tasks"][0]["trace"]
    assert str(blocker / "lake") in trace
    assert "StorageError" in trace
