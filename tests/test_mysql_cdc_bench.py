"""bench/mysql_cdc_bench.py's own parts, cheaply: its arguments, the work it makes on
MariaDB, and the targets it judges (the bench itself starts MariaDB, a broker and two
workers and snapshots a million rows, so it stays out of the suite).

Why the work has a test: the streaming figures divide the changes made by the time to
drain them, and the bench waits for `RECORDS_PER_TX` records per transaction; a change
script that made other counts would time the wrong thing or wait forever."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.mysql_cdc_bench import (
    Database,
    EmbeddedTopics,
    last_after,
    make_changes,
    make_tables,
    parse_args,
    summarize,
)
from log import FileLog
from tests.mysql import MysqlServer

ROWS = 1000


def test_defaults_are_the_issues_sizes_and_the_options_scale_them_down():
    args = parse_args([])
    assert (args.rows, args.changes, args.latency_s) == (1_000_000, 200_000, 10.0)
    assert args.only is None and args.profile is None
    small = parse_args(["--rows", "20000", "--changes", "5000", "--only", "tributary"])
    assert (small.rows, small.changes, small.only) == (20_000, 5_000, "tributary")


def test_the_log_is_kafka_unless_asked_and_embedded_runs_tributary_alone(capsys):
    assert parse_args([]).log == "kafka"
    assert parse_args(["--log", "embedded", "--only", "tributary"]).log == "embedded"
    for argv in (["--log", "embedded"], ["--log", "embedded", "--only", "debezium"]):
        with pytest.raises(SystemExit) as exc:
            parse_args(argv)
        assert exc.value.code == 2
        assert "add --only tributary" in capsys.readouterr().err
    out = summarize({}, parse_args(["--log", "embedded", "--only", "tributary"]))
    assert out["log"] == "embedded"


def test_the_embedded_reader_counts_reads_the_last_value_and_the_append_time(tmp_path: Path):
    """What the bench reads of the worker's log.dir: the worker (here a second FileLog on
    the directory) makes the topic and appends while the bench's reader is open."""
    worker = FileLog(tmp_path, background=False)
    topics = EmbeddedTopics(tmp_path)
    try:
        assert topics.count("t") == 0  # not made yet: nothing arrived
        worker.create_topic("t", 1)
        before = int(time.time() * 1000)
        worker.append("t", 0, [b'{"after": {"i": 1}}', b'{"after": {"i": -2}}'])
        after = int(time.time() * 1000)
        assert topics.count("t") == 2
        assert last_after(topics, "t") == {"i": -2}
        worker.append("t", 0, [None])  # a tombstone last: no `after`
        assert (topics.count("t"), last_after(topics, "t")) == (3, None)
        stamped = topics.stamped("t")
        assert [value for _, value in stamped][:2] == [b'{"after": {"i": 1}}',
                                                       b'{"after": {"i": -2}}']
        # no timestamp given: the log stamps each record with its clock at the append
        assert all(before <= stamp <= after for stamp, _ in stamped[:2])
    finally:
        topics.close()
        worker.close()


@pytest.mark.parametrize("argv", [["--rows", "10"], ["--changes", "0"], ["--latency-s", "0"]])
def test_sizes_the_bench_cannot_run_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    assert "--rows ≥ 1000" in capsys.readouterr().err


def test_targets_are_judged_each_way_and_the_ratios_computed():
    args = parse_args(["--rows", "1000", "--changes", "1000"])
    out = summarize(
        {
            "snapshot_rows_per_s": 300_000,
            "mysql_snapshot_debezium_rows_per_s": 100_000,
            "cdc_changes_per_s": 40_000,
            "mysql_streaming_debezium_changes_per_s": 20_000,
            "cdc_latency_p50_ms": 5.0,
            "cdc_latency_p99_ms": 150.0,
        },
        args,
    )
    assert (out["mysql_snapshot_vs_debezium"], out["mysql_streaming_vs_debezium"]) == (3.0, 2.0)
    assert out["targets_met"] == {
        "snapshot_rows_per_s": True,
        "cdc_changes_per_s": False,  # below 50,000
        "cdc_latency_p50_ms": True,
        "cdc_latency_p99_ms": False,  # above 100 ms: lower is better
        "mysql_snapshot_vs_debezium": True,
        "mysql_streaming_vs_debezium": True,
    }
    # one system only: no ratio, no flag for it
    alone = summarize({"snapshot_rows_per_s": 1.0}, args)
    assert "mysql_snapshot_vs_debezium" not in alone
    assert alone["targets_met"] == {"snapshot_rows_per_s": False}


@pytest.fixture
def db(mysql_server: MysqlServer) -> Iterator[Database]:
    name = mysql_server.create_database()
    try:
        yield Database(mysql_server, name, "unused:9092")
    finally:
        mysql_server.drop_database(name)


@pytest.mark.mysql
def test_without_a_broker_the_config_names_none_and_keeps_the_rest(db: Database):
    on_kafka = db.config("tributary", "snap", "snap", "initial_only")
    embedded = dataclasses.replace(db, bootstrap=None).config(
        "tributary", "snap", "snap", "initial_only")
    assert on_kafka.pop("schema.history.internal.kafka.bootstrap.servers") == "unused:9092"
    assert embedded == on_kafka


@pytest.mark.mysql
def test_the_tables_and_the_changes_are_what_the_bench_counts(db: Database):
    make_tables(db, ROWS)
    conn = db.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*), MIN(id), MAX(id), SUM(a) FROM snap")
            assert cur.fetchone() == (ROWS, 1, ROWS, sum(n % 1000 for n in range(1, ROWS + 1)))
            cur.execute("SHOW MASTER STATUS")
            file, before = cur.fetchone()[:2]
            make_changes(db, rows=ROWS, transactions=3)
            # 600 inserts and 100 deletes of them per transaction: 500 new rows each
            cur.execute("SELECT COUNT(*), MAX(id) FROM snap")
            assert cur.fetchone() == (ROWS + 3 * 500, ROWS + 3 * 600 - 100)
            # 300 updates per transaction, of old rows only, each by one
            cur.execute("SELECT COUNT(*) FROM snap WHERE id <= %s AND a <> id %% 1000", (ROWS,))
            assert cur.fetchone() == (3 * 300,)
            cur.execute("SELECT i FROM snap WHERE id = 1")
            assert cur.fetchone() == (-2,)  # the end-of-backlog marker
            # in the binlog: three transactions and the marker's, each committed once
            cur.execute(f"SHOW BINLOG EVENTS IN '{file}' FROM {before}")
            commits = [e for e in cur.fetchall() if e[5].startswith("COMMIT")]
            assert len(commits) == 4
    finally:
        conn.close()
