"""Exactly-once JdbcSource (incrementing mode) on a real standalone worker and a real
PostgreSQL: the worker SIGKILLed at seeded moments while rows keep being added, and
the topic read at read_committed holds every row once, in id order."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from tests.connectors.jdbc.source_helpers import run, source_props
from tests.integration.conftest import JSON, connector_file
from tests.integration.test_exactly_once_source import Committed
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

TOPIC = "eos-items"


def _insert(url: str, first: int, count: int) -> None:
    values = ",".join(f"({i}, 'item {i}')" for i in range(first, first + count))
    run(url, f"INSERT INTO items (id, name) VALUES {values}")


def test_every_row_once_across_seeded_sigkills(
    tmp_path: Path, start_worker: Any, postgres_url: str
) -> None:
    rng = random.Random(618)
    run(postgres_url, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    _insert(postgres_url, 1, 20_000)
    props = source_props(
        postgres_url,
        "eos-",
        mode="incrementing",
        incrementing_column_name="id",
        table_whitelist="items",
        batch_max_rows="300",
    )
    config = connector_file(tmp_path, "jdbc", {"connector.class": "JdbcSource", **props})
    worker_config = {
        "exactly.once.source.support": "enabled",
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
    }
    committed = Committed(tmp_path / "log", topic=TOPIC)
    total = 20_000
    for _ in range(3):
        worker = start_worker([config], worker_config)
        target = min(total, len(committed.read()) + rng.randrange(1, 4_000))
        try:
            wait_until(lambda t=target: committed.count_at_least(t), 60, f"{target} rows")
        except AssertionError as exc:
            status = worker.status("jdbc")
            raise AssertionError(f"{exc}; {status}\n{worker.stderr[-5000:]}") from None
        time.sleep(rng.uniform(0, 0.3))
        worker.kill()
        _insert(postgres_url, total + 1, 1_000)  # more rows while it is down
        total += 1_000
    start_worker([config], worker_config)
    wait_until(lambda: committed.count_at_least(total), 90, "every row committed")
    ids = [json.loads(v)["id"] for v in committed.read()]
    assert ids == list(range(1, total + 1))  # each once, in order
    committed.close()
