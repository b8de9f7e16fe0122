"""IcebergSink in real `connect standalone` workers (task processes and all), SIGKILLed
at several points while committing to the table and restarted each time: the table
read back equals the log row for row (every record once), as an uninterrupted run
writes it; values reach the sink as Arrow batches (JsonConverter's `to_arrow`)."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from connect.converters import JsonConverter
from connectors.iceberg.offsets import committed_offsets
from log import FileLog
from tests.connectors.iceberg.helpers import load, order, order_schema
from tests.integration.conftest import (  # noqa: F401 (start_worker: a fixture)
    connector_file,
    start_worker,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PER_PARTITION = 2_000
CHUNK = 100


class Producer(threading.Thread):
    """Appends the orders to the log a little at a time while workers come and go, so
    the sink commits many times (a poll takes all a partition has: up to 10,000) and
    the kills land between commits however fast the machine: it stays a few chunks
    ahead of what the table holds."""

    def __init__(self, log_dir: Path, warehouse: Path) -> None:
        super().__init__(daemon=True)
        self.warehouse = warehouse
        self.log = FileLog(log_dir, background=False)
        self.log.create_topic("orders", 2)
        self.expected: list[dict[str, Any]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        schema = order_schema()
        converter = JsonConverter()
        converter.configure({"schemas.enable": True}, is_key=False)
        try:
            for start in range(0, PER_PARTITION, CHUNK):
                for p in range(2):
                    ids = range(p * PER_PARTITION + start, p * PER_PARTITION + start + CHUNK)
                    values = [order(schema, i) for i in ids]
                    self.log.append("orders", p, converter.from_connect_batch(
                        "orders", [schema] * len(values), values))
                    self.expected.extend({"id": v.get("id"), "customer": v.get("customer"),
                                          "qty": v.get("qty")} for v in values)
                # At most a few chunks ahead of the table: the log grows only while a
                # worker commits, so each kill finds work left.
                deadline = time.monotonic() + 120
                while (_committed(self.warehouse) < len(self.expected) - 4 * CHUNK
                       and time.monotonic() < deadline):
                    time.sleep(0.02)
        except BaseException as exc:  # reported by the test
            self.error = exc


def _committed(warehouse: Path) -> int:
    if not (warehouse / "catalog.db").exists():
        return 0
    try:
        table = load(warehouse)
    except Exception:  # not created yet
        return 0
    return sum(committed_offsets(table, "ice").values())


def test_sigkill_at_several_points_neither_loses_nor_duplicates(
    tmp_path: Path, start_worker: Any  # noqa: F811
) -> None:
    warehouse = tmp_path / "warehouse"
    producer = Producer(tmp_path / "log", warehouse)
    producer.start()
    sink = connector_file(tmp_path, "ice", {
        "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
        "tasks.max": "2",
        "topics": "orders",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
        "iceberg.tables": "db.orders",
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.catalog.warehouse": warehouse.as_uri(),
        "iceberg.control.commit.interval-ms": "100",
    })
    total = 2 * PER_PARTITION
    rng = random.Random(11)
    at_kill = []
    # The kills land before the first commit, then a fifth and two fifths of the way.
    for fraction in (0.0, 0.2, 0.4):
        worker = start_worker([sink], {"offset.flush.interval.ms": str(rng.randint(50, 400))})

        def far_enough(w: Any = worker, f: float = fraction) -> bool:
            return len(w.task_pids()) >= 2 and _committed(warehouse) >= f * total

        wait_until(far_enough, 60, f"{fraction:.0%} of the rows", interval_s=0.01)
        worker.kill()
        at_kill.append(_committed(warehouse))
    assert at_kill[-1] < total  # the last kill still interrupted the work
    worker = start_worker([sink])
    wait_until(lambda: _committed(warehouse) >= total, 120, "every row")
    worker.stop()
    producer.join(10)
    producer.log.close()
    assert producer.error is None
    expected = sorted(producer.expected, key=lambda r: r["id"])
    table = load(warehouse)
    assert len(table.metadata.snapshots) > 5  # many commits, the kills between them
    rows = table.scan().to_arrow().sort_by("id").to_pylist()
    assert len(rows) == total
    assert rows == expected
    assert committed_offsets(table, "ice") == {
        tp: PER_PARTITION for tp in committed_offsets(table, "ice")
    }
    assert len(committed_offsets(table, "ice")) == 2
