"""Exactly-once JdbcSource on a real standalone worker and a real PostgreSQL, in
incrementing and in timestamp+incrementing mode: the worker SIGKILLed at seeded
moments while rows keep being added (and, with timestamps, updated) between the
kills, and the topic read at read_committed holds every row version once, in the
order the mode reads them."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.connectors.jdbc.source_helpers import run, source_props
from tests.integration.conftest import JSON, connector_file
from tests.integration.test_exactly_once_source import Committed
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

TOPIC = "eos-items"
WORKER = {
    "exactly.once.source.support": "enabled",
    "value.converter": JSON,
    "value.converter.schemas.enable": "false",
}


def _insert(url: str, first: int, count: int) -> None:
    values = ",".join(f"({i}, 'item {i}')" for i in range(first, first + count))
    run(url, f"INSERT INTO items (id, name) VALUES {values}")


def _kill_rounds(
    tmp_path: Path,
    start_worker: Any,
    props: dict[str, str],
    total: int,
    change: Callable[[int], int],
) -> list[dict[str, Any]]:
    """Three seeded SIGKILLs of the worker, `change(rows so far)` run while it is
    down (it returns the row versions there are now), then a last worker until
    every version is committed; the committed values."""
    rng = random.Random(618)
    config = connector_file(tmp_path, "jdbc", {"connector.class": "JdbcSource", **props})
    committed = Committed(tmp_path / "log", topic=TOPIC)
    versions = total
    try:
        for _ in range(3):
            worker = start_worker([config], WORKER)
            target = min(versions, len(committed.read()) + rng.randrange(1, 4_000))
            try:
                wait_until(lambda t=target: committed.count_at_least(t), 60, f"{target} rows")
            except AssertionError as exc:
                status = worker.status("jdbc")
                raise AssertionError(f"{exc}; {status}\n{worker.stderr[-5000:]}") from None
            time.sleep(rng.uniform(0, 0.3))
            worker.kill()
            versions = change(versions)
        start_worker([config], WORKER)
        wait_until(lambda: committed.count_at_least(versions), 90, "every row committed")
        return [json.loads(v) for v in committed.read()]
    finally:
        committed.close()


def test_every_row_once_across_seeded_sigkills(
    tmp_path: Path, start_worker: Any, postgres_url: str
) -> None:
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

    def more_rows(total: int) -> int:
        _insert(postgres_url, total + 1, 1_000)  # more rows while it is down
        return total + 1_000

    rows = _kill_rounds(tmp_path, start_worker, props, 20_000, more_rows)
    assert [r["id"] for r in rows] == list(range(1, 23_001))  # each once, in order


def test_every_row_version_once_in_timestamp_incrementing_mode(
    tmp_path: Path, start_worker: Any, postgres_url: str
) -> None:
    """Timestamps shared by four rows (ties a batch may cut through, resumed by the
    id in the offset); in every pause 1,000 rows added and 100 rows the topic holds
    updated, all at timestamps past every earlier one: each (timestamp, id) version
    once, in that order."""
    base = "timestamptz '2024-01-01 00:00:00+00'"
    run(
        postgres_url,
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "changed timestamptz NOT NULL)",
        f"INSERT INTO items SELECT n, 'item ' || n, {base} + (n / 4) * interval '1 ms' "
        "FROM generate_series(1, 20000) n",
    )
    versions = [(n // 4, n) for n in range(1, 20_001)]  # (ms after base, id)
    rng = random.Random(875)
    committed = Committed(tmp_path / "log", topic=TOPIC)

    def insert_and_update(count: int) -> int:
        last_id, clock = max(i for _, i in versions), max(t for t, _ in versions) + 1
        ids = range(last_id + 1, last_id + 1_001)
        run(
            postgres_url,
            f"INSERT INTO items SELECT n, 'item ' || n, {base} + ({clock} + (n - {ids[0]}) / 4)"
            f" * interval '1 ms' FROM generate_series({ids[0]}, {ids[-1]}) n",
        )
        versions.extend((clock + (n - ids[0]) // 4, n) for n in ids)
        clock += 251
        # First rows the topic holds, never changed since (a second update before
        # the first is read would replace a version the source never saw).
        changed = {i for t, i in versions if t > 5_000}
        read = sorted({json.loads(v)["id"] for v in committed.read()} - changed)
        for k, id_ in enumerate(sorted(rng.sample(read, 100))):
            run(
                postgres_url,
                f"UPDATE items SET name = 'again', changed = {base} + {clock + k} * interval "
                f"'1 ms' WHERE id = {id_}",
            )
            versions.append((clock + k, id_))
        return count + 1_100

    props = source_props(
        postgres_url,
        "eos-",
        mode="timestamp+incrementing",
        incrementing_column_name="id",
        timestamp_column_name="changed",
        table_whitelist="items",
        batch_max_rows="301",
    )
    try:
        rows = _kill_rounds(tmp_path, start_worker, props, 20_000, insert_and_update)
    finally:
        committed.close()
    assert [r["id"] for r in rows] == [id_ for _, id_ in sorted(versions)]
    assert sum(r["name"] == "again" for r in rows) == 300
