"""The snapshot's two ways of reading a table (keyset chunks the server builds as JSON
for tables with a primary key, rows through PyMySQL for the others) read every row
once, across many chunks; heartbeats carry the position while nothing changes."""

from __future__ import annotations

import pytest

from tests.connectors.mysql.helpers import Driver, config, run
from tests.connectors.postgres.helpers import events

pytestmark = pytest.mark.mysql


def test_composite_text_keys_and_keyless_tables_read_every_row_once(mysql_url: str) -> None:
    names = ["b", "a", "ж", "c c", "ab", "a'b"]
    rows = [(n, i, i * 2) for n in names for i in range(120)]
    run(
        mysql_url,
        "CREATE TABLE k (name VARCHAR(10), n INT, v INT, PRIMARY KEY (name, n))",
        "CREATE TABLE nokey (n INT, v VARCHAR(5))",
        "INSERT INTO k VALUES "
        + ", ".join(f"({n!r}, {i}, {v})" for n, i, v in rows),  # repr: "a'b" is a string
        "INSERT INTO nokey VALUES " + ", ".join(f"({i}, NULL)" for i in range(250)),
    )
    d = Driver(config(mysql_url, max_batch_size="100", snapshot_fetch_size="100"))
    try:
        d.poll_until(lambda r: bool(r) and r[-1].value.get("source").get("snapshot") == "last")
    finally:
        d.stop()
    got = events(d.records)
    keyed = sorted((e[2]["name"], e[2]["n"]) for e in got if e[0].endswith(".k"))
    assert len(keyed) == len(rows) and len(set(keyed)) == len(rows)
    assert sorted(set(keyed)) == sorted((n, i) for n, i, _ in rows)
    keyless = sorted(e[4]["n"] for e in got if e[0].endswith(".nokey"))
    assert keyless == list(range(250))
    assert all(e[1] == "r" for e in got) and d.batches >= 10


def test_heartbeats_carry_the_position_while_nothing_changes(mysql_url: str) -> None:
    run(mysql_url, "CREATE TABLE h (id INT PRIMARY KEY)")
    d = Driver(config(mysql_url, snapshot_mode="no_data", heartbeat_interval_ms="200"))
    try:
        run(mysql_url, "INSERT INTO h VALUES (1)")
        d.poll_until(
            lambda r: (
                any(x.topic.endswith(".h") for x in r) and r[-1].topic == "__debezium-heartbeat.srv"
            )
        )
    finally:
        d.stop()
    beat = d.records[-1]
    change = next(r for r in d.records if r.topic.endswith(".h"))
    assert beat.key.get("serverName") == "srv" and beat.value.get("ts_ms") > 0
    # after the insert's commit: where a restart would begin
    assert beat.source_offset["pos"] >= change.source_offset["pos"]
    assert beat.source_offset["gtids"] == change.source_offset["gtids"]
