"""JdbcSource in a real StandaloneHerder over a real FileLog: rows reach the topic,
a restart of the worker resumes from the committed offsets with nothing lost or
repeated, and the shipped SQLite config runs as shipped."""

from __future__ import annotations

import functools
import json
import runpy
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from connect.herder.standalone import StandaloneHerder
from connect.standalone import load_connector_config, load_worker_config
from log import FileLog
from tests.conftest import ROOT
from tests.waiting import wait_until

pytestmark = pytest.mark.slow


def topic_values(log: FileLog, topic: str) -> list[Any]:
    if topic not in log.list_topics():
        return []
    out = []
    for partition in range(log.partition_count(topic)):
        offset = 0
        while batch := log.read(topic, partition, offset):
            out += [json.loads(r.value) for r in batch]
            offset = batch[-1].offset + 1
    return out


@pytest.fixture
def start_herder(start_herder: Callable[..., StandaloneHerder]) -> Callable[[], StandaloneHerder]:
    """The shared factory, with tasks in the worker and schemaless JSON values."""
    return functools.partial(
        start_herder,
        {"task.isolation": "thread", "value.converter.schemas.enable": "false"},
    )


def insert(path: Path, first: int, last: int) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(
            "INSERT INTO orders (id, name, at) VALUES (?, ?, '2024-01-01 00:00:00')",
            [(i, f"n{i}") for i in range(first, last + 1)],
        )
    conn.close()


def test_a_worker_restart_resumes_with_nothing_lost_or_repeated(start_herder, tmp_path):
    path = tmp_path / "shop.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT, at TIMESTAMP NOT NULL)")
    conn.close()
    insert(path, 1, 50)
    config = {
        "connector.class": "JdbcSource",
        "connection.url": f"sqlite:///{path}",
        "mode": "timestamp+incrementing",
        "timestamp.column.name": "at",
        "topic.prefix": "shop-",
        "poll.interval.ms": "20",
        "batch.max.rows": "7",
    }
    herder = start_herder()
    herder.put_connector_config("jdbc", config, allow_replace=False)
    wait_until(lambda: len(topic_values(herder.log, "shop-orders")) >= 50)
    insert(path, 51, 60)  # while it runs
    wait_until(lambda: len(topic_values(herder.log, "shop-orders")) >= 60)
    herder.stop()  # clean: the task's offsets are committed
    herder.log.close()

    insert(path, 61, 100)  # while it is down
    herder = start_herder()
    wait_until(lambda: len(topic_values(herder.log, "shop-orders")) >= 100)
    time.sleep(0.3)  # a few more polls: nothing may come twice
    records = topic_values(herder.log, "shop-orders")
    assert [r["id"] for r in records] == list(range(1, 101))
    assert records[0] == {"id": 1, "name": "n1", "at": 1704067200000}
    status = herder.connector_status("jdbc")
    assert status.state == "RUNNING" and [t.state for t in status.tasks] == ["RUNNING"]


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable]:
    """The shipped worker config, run from tmp_path as if it were the checkout root."""
    monkeypatch.chdir(tmp_path)
    started: list[tuple[StandaloneHerder, FileLog]] = []

    def factory(connector_file: str) -> StandaloneHerder:
        config = load_worker_config(ROOT / "configs" / "connect-standalone.json")
        log = FileLog(config["log.dir"])
        herder = StandaloneHerder(config, log=log, worker_id="127.0.0.1:8083")
        herder.start()
        started.append((herder, log))
        name, connector = load_connector_config(ROOT / "configs" / connector_file)
        herder.put_connector_config(name, connector, allow_replace=True)
        return herder

    yield factory
    for herder, log in started:
        herder.stop()
        log.close()


def test_the_sqlite_source_config_runs_as_shipped(shipped, tmp_path):
    script = runpy.run_path(str(ROOT / "scripts" / "sqlite-demo-db"))
    script["main"](3)
    assert (tmp_path / "data" / "shop.db").exists()
    herder = shipped("connect-jdbc-sqlite-source.json")
    wait_until(lambda: len(topic_values(herder.log, "shop-orders")) >= 3)
    script["main"](2)  # two new rows, and an update of row 1
    wait_until(lambda: len(topic_values(herder.log, "shop-orders")) >= 6)
    records = topic_values(herder.log, "shop-orders")
    assert [r["id"] for r in records[:3]] == [1, 2, 3]
    assert sorted(r["id"] for r in records[3:]) == [1, 4, 5]  # same ms: in id order
    assert records[0]["customer"] == "customer 1"
    (update,) = [r for r in records[3:] if r["id"] == 1]
    assert update["amount"] != records[0]["amount"]
