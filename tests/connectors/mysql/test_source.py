"""MySqlCdcSource against the real MariaDB: snapshot then stream, the hand-over under
concurrent writes, restarts through the commit hooks (also inside a multi-row event:
nothing lost, nothing repeated), DDL in the middle of the stream decoded right after a
restart, and the refusals."""

from __future__ import annotations

import threading

import pytest

from connect.api import ConfigError, ConnectError
from tests.connectors.fakes import FakeOffsetReader
from tests.connectors.mysql.helpers import Driver, config, db, run
from tests.connectors.postgres.helpers import events, replay
from tests.mysql import MysqlServer

pytestmark = pytest.mark.mysql


def _db(url: str) -> str:
    return url.rsplit("/", 1)[1].split("?")[0]


def test_snapshot_then_stream_then_resume(mysql_url: str) -> None:
    name = _db(mysql_url)
    topic = f"srv.{name}.a"
    run(
        mysql_url,
        "CREATE TABLE a (id INT PRIMARY KEY, name VARCHAR(20), d DECIMAL(8,2))",
        "INSERT INTO a VALUES (1, 'x', 1.5), (2, 'y', NULL)",
    )
    d = Driver(config(mysql_url))
    try:
        d.poll_count(2)
        assert events(d.records) == [
            (topic, "r", {"id": 1}, None, {"id": 1, "name": "x", "d": pytest.approx(1.5)}),
            (topic, "r", {"id": 2}, None, {"id": 2, "name": "y", "d": None}),
        ]
        marks = [r.value.get("source").get("snapshot") for r in d.records]
        assert marks == ["first", "last"]
        assert d.records[-1].source_offset["snapshot_completed"] is True
        run(
            mysql_url,
            "INSERT INTO a VALUES (3, 'z', 3)",
            "UPDATE a SET name = 'q' WHERE id = 1",
            "DELETE FROM a WHERE id = 2",
            "UPDATE a SET id = 10 WHERE id = 3",  # a key change: d + tombstone + c
        )
        d.poll_count(2 + 7)
        ops = [e[1] for e in events(d.records[2:])]
        assert ops == ["c", "u", "d", None, "d", None, "c"]
        source = d.records[-1].value.get("source")
        assert source.get("connector") == "mariadb" and source.get("table") == "a"
        assert source.get("gtid").startswith("0-1-") and source.get("file")
        d.commit_offsets()
    finally:
        d.stop()
    run(mysql_url, "INSERT INTO a VALUES (4, 'w', 4)")
    again = Driver(config(mysql_url), d.reader)
    try:
        again.poll_count(1)
        assert events(again.records) == [
            (topic, "c", {"id": 4}, None, {"id": 4, "name": "w", "d": pytest.approx(4)})
        ]
    finally:
        again.stop()
    assert sorted(replay(d.records + again.records, topic)) == [1, 4, 10]


def test_restart_inside_a_multi_row_event_skips_what_was_emitted(mysql_url: str) -> None:
    """Deletes with tombstones go as records, each with its row's offset; the creates
    before them as one batch (its records share the offset of its last row)."""
    run(mysql_url, "CREATE TABLE m (id INT PRIMARY KEY, v INT)")
    d = Driver(config(mysql_url, snapshot_mode="no_data"))
    try:
        run(mysql_url, "INSERT INTO m VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)")
        d.poll_count(5)
        assert d.batches == 1 and len({str(r.source_offset) for r in d.records}) == 1
        run(mysql_url, "DELETE FROM m WHERE id <= 5")
        d.poll_count(15)
    finally:
        d.stop()
    second = d.records[8]  # the runtime stored this one's offset, then the task died
    assert second.value is None and second.key.get("id") == 2
    assert second.source_offset["row"] == 2 and second.source_offset["event"] == 0
    reader = FakeOffsetReader()
    reader.put(second.source_partition, second.source_offset)
    run(mysql_url, "INSERT INTO m VALUES (6, 6)")
    again = Driver(config(mysql_url, snapshot_mode="no_data"), reader)
    try:
        again.poll_count(7)
        assert [(e[1], e[2]["id"]) for e in events(again.records)] == [
            ("d", 3), (None, 3), ("d", 4), (None, 4), ("d", 5), (None, 5), ("c", 6)
        ]
    finally:
        again.stop()


@pytest.mark.parametrize("locking", ["minimal", "none"])
def test_changes_during_the_snapshot_appear_exactly_once(mysql_url: str, locking: str) -> None:
    """minimal: the position is read under FLUSH TABLES WITH READ LOCK; none: MariaDB's
    binlog_snapshot_file/position of the consistent snapshot, with no lock at all."""
    run(mysql_url, "CREATE TABLE c (id INT PRIMARY KEY, v INT)")
    run(mysql_url, "INSERT INTO c VALUES " + ", ".join(f"({i}, 0)" for i in range(1, 3001)))
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        with db(mysql_url) as cur:
            n = 0
            while not stop.is_set() and n < 400:
                n += 1
                cur.execute("UPDATE c SET v = %s WHERE id = %s", (n, n))
                written.append(n)

    thread = threading.Thread(target=writer)
    props = config(mysql_url, max_batch_size="500", snapshot_fetch_size="500")
    d = Driver(dict(props, **{"snapshot.locking.mode": locking}))
    thread.start()
    try:
        d.poll_until(lambda r: any(x.value and x.value.get("op") == "u" for x in r) or False)
        thread.join(timeout=60)
        with db(mysql_url) as cur:
            cur.execute("SELECT id, v FROM c")
            expected = dict(cur.fetchall())
        topic = f"srv.{_db(mysql_url)}.c"

        def caught_up(records: list) -> bool:
            got = replay(records, topic)
            return len(got) == 3000 and all(got[k]["v"] == v for k, v in expected.items())

        d.poll_until(caught_up, timeout_s=60)
        updates = [r.value.get("after").get("id") for r in d.records if r.value.get("op") == "u"]
        assert len(updates) == len(set(updates))  # no change emitted twice
    finally:
        stop.set()
        thread.join(timeout=10)
        d.stop()


def test_ddl_mid_stream_is_decoded_right_after_a_restart(mysql_url: str) -> None:
    """Rows written before an ALTER are decoded with the table as it was then, even
    when the task reads them only after the ALTER (the binlog's table map carries the
    table's shape at that point), and schema changes are events on <topic.prefix>."""
    topic = f"srv.{_db(mysql_url)}.t"
    run(mysql_url, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10), b INT)")
    props = config(mysql_url, snapshot_mode="no_data", include_schema_changes="true")
    d = Driver(props)
    try:
        run(mysql_url, "INSERT INTO t VALUES (1, 'one', 10)")
        d.poll_count(1)
        d.commit_offsets()
    finally:
        d.stop()
    run(
        mysql_url,
        "INSERT INTO t VALUES (2, 'two', 20)",
        "ALTER TABLE t DROP COLUMN a, ADD COLUMN c DATE AFTER id",
        "INSERT INTO t VALUES (3, '2024-02-29', 30)",
        "ALTER TABLE t RENAME TO t2",
    )
    again = Driver(props, d.reader)
    try:
        again.poll_until(lambda r: sum(1 for x in r if x.topic == "srv") >= 2)
    finally:
        again.stop()
    changes = [r for r in again.records if r.topic == topic]
    rows = [(e[0], e[4]) for e in events(changes) if e[1] == "c"]
    assert rows == [
        (topic, {"id": 2, "a": "two", "b": 20}),
        (topic, {"id": 3, "c": 19782, "b": 30}),
    ]
    changes = [r for r in again.records if r.topic == "srv"]
    ddl = [r.value.get("ddl") for r in changes]
    assert "DROP COLUMN a" in ddl[0] and "RENAME TO t2" in ddl[1]
    # a restart from a schema change resumes after it (MariaDB: by its GTID position)
    assert changes[-1].source_offset["gtids"] == changes[-1].value.get("source").get("gtid")


def test_refusals_say_what_to_fix(mysql_server: MysqlServer, mysql_url: str) -> None:
    mysql_server.execute(
        "CREATE USER IF NOT EXISTS 'noslave'@'127.0.0.1' IDENTIFIED BY 'pw'",
        "GRANT SELECT, RELOAD ON *.* TO 'noslave'@'127.0.0.1'",
    )
    props = dict(config(mysql_url), **{"database.user": "noslave", "database.password": "pw"})
    with pytest.raises(ConnectError, match="lacks REPLICATION SLAVE and REPLICATION CLIENT"):
        Driver(props)
    bad = dict(config(mysql_url), **{"database.password": "wrong"})
    with pytest.raises(ConfigError, match="cannot connect"):
        Driver(bad)
    mysql_server.execute("SET GLOBAL binlog_row_image = 'MINIMAL'")
    try:
        with pytest.raises(ConnectError, match="set binlog_row_image=FULL"):
            Driver(config(mysql_url))
    finally:
        mysql_server.execute("SET GLOBAL binlog_row_image = 'FULL'")


def test_a_purged_position_is_refused_or_resnapshotted(mysql_url: str) -> None:
    run(mysql_url, "CREATE TABLE p (id INT PRIMARY KEY)", "INSERT INTO p VALUES (1)")
    reader = FakeOffsetReader()
    reader.put({"server": "srv"}, {"file": "mysql-bin.000000", "pos": 4, "gtids": "0-1-1"})
    with pytest.raises(ConnectError, match=r"no longer on the server.*when_needed"):
        Driver(config(mysql_url), reader)
    d = Driver(config(mysql_url, snapshot_mode="when_needed"), reader)
    try:
        d.poll_count(1)
        assert events(d.records)[0][1:3] == ("r", {"id": 1})
    finally:
        d.stop()


def test_a_dropped_binlog_connection_resumes_where_it_was(
    mysql_server: MysqlServer, mysql_url: str
) -> None:
    """The server ends the binlog session (KILL of its Binlog Dump thread): the library
    reconnects, from the GTID position after the last transaction handed over, not
    from where the task started: nothing is emitted twice, nothing lost."""
    run(mysql_url, "CREATE TABLE k (id INT PRIMARY KEY)")
    d = Driver(config(mysql_url, snapshot_mode="no_data"))
    try:
        run(mysql_url, "INSERT INTO k VALUES (1)", "INSERT INTO k VALUES (2)")
        d.poll_count(2)
        with db(mysql_url) as cur:
            cur.execute(
                "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'"
            )
            dumps = [row[0] for row in cur.fetchall()]
        assert dumps
        mysql_server.execute(*(f"KILL {i}" for i in dumps))
        run(mysql_url, "INSERT INTO k VALUES (3)")
        d.poll_count(3)
        run(mysql_url, "INSERT INTO k VALUES (4)")
        d.poll_count(4)
    finally:
        d.stop()
    assert [e[2]["id"] for e in events(d.records)] == [1, 2, 3, 4]


def test_never_streams_the_whole_binlog_without_a_snapshot(mysql_url: str) -> None:
    """snapshot.mode=never without offsets reads from the oldest binlog the server has
    (Debezium's never), so rows written before the task started come as creates."""
    run(mysql_url, "CREATE TABLE n (id INT PRIMARY KEY)", "INSERT INTO n VALUES (1), (2)")
    d = Driver(config(mysql_url, snapshot_mode="never"))
    try:
        run(mysql_url, "INSERT INTO n VALUES (3)")
        d.poll_count(3)
    finally:
        d.stop()
    assert [(e[1], e[2]["id"]) for e in events(d.records)] == [("c", 1), ("c", 2), ("c", 3)]
