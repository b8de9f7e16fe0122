"""How the snapshot hands its reads over (connectors/mysql/snapshot.py, step 7):
Debezium's `source.snapshot` marks on tables of several chunks, of one row, and of a
whole number of chunks (its end comes as an empty chunk), every poll one SourceBatch
(one append of the log) but for the snapshot's last read, a record of its own that
alone carries the completed offset."""

from __future__ import annotations

import time
from typing import Any

import pytest

from connect.api import SourceBatch, SourceRecord
from tests.connectors.mysql.helpers import Driver, config, run

pytestmark = pytest.mark.mysql


def _reads(items: list[Any]) -> list[SourceRecord]:
    out: list[SourceRecord] = []
    for item in items:
        out += item.records() if isinstance(item, SourceBatch) else [item]
    return out


def test_each_poll_is_one_batch_marked_in_its_columns(mysql_url: str) -> None:
    run(
        mysql_url,
        "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(8))",
        "INSERT INTO a VALUES (1, 'x'), (2, 'y'), (3, NULL), (4, 'z'), (5, ''), (6, 'w'), "
        "(7, 'v')",
        "CREATE TABLE b (id INT PRIMARY KEY)",
        "INSERT INTO b VALUES (1)",
        "CREATE TABLE c (id INT PRIMARY KEY)",
        "INSERT INTO c VALUES (1), (2), (3)",
    )
    d = Driver(config(mysql_url, snapshot_mode="initial_only", snapshot_fetch_size="3"))
    polls: list[list[Any]] = []
    deadline = time.monotonic() + 30
    try:
        while not polls or _reads(polls[-1])[-1].value.get("source").get("snapshot") != "last":
            assert time.monotonic() < deadline, f"no last read in 30 s: {polls}"
            items = d.task.poll()
            if items:
                polls.append(items)
    finally:
        d.stop()
    assert all(len(p) == 1 and isinstance(p[0], SourceBatch) for p in polls[:-1]), polls
    assert [type(i) for i in polls[-1]] == [SourceBatch, SourceRecord]
    reads = [r for p in polls for r in _reads(p)]
    got = [
        (r.topic.rsplit(".", 1)[1], r.key.get("id"), r.value.get("source").get("snapshot"))
        for r in reads
    ]
    assert got == [
        ("a", 1, "first"),
        *[("a", i, "true") for i in range(2, 7)],
        ("a", 7, "last_in_data_collection"),
        ("b", 1, "last_in_data_collection"),
        ("c", 1, "first_in_data_collection"),
        ("c", 2, "true"),
        ("c", 3, "last"),
    ]
    assert [r.value.get("after").get("v") for r in reads[:7]] == ["x", "y", None, "z", "", "w", "v"]
    assert all(r.source_offset["snapshot"] == "INITIAL" for r in reads[:-1])
    last = reads[-1].source_offset
    assert last["snapshot_completed"] is True and "snapshot" not in last
