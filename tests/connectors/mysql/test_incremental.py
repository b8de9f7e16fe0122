"""MySqlCdcSource's incremental snapshots (signal.data.collection) against the real
MariaDB: a table read in chunks while a writer updates, deletes and inserts ends in the
topic (read back with a consumer of the worker's log) equal to the table; a restart in
the middle goes on after the stored chunk; the keys; the signal table's privileges."""

from __future__ import annotations

import json
import random
import threading
from typing import Any

import pytest
import sqlalchemy as sa

from connect.api import ConfigError, ConnectError, TopicPartition
from connectors.mysql.config import parse_config
from log import Consumer
from tests.connectors.fakes import FakeOffsetReader
from tests.connectors.mysql.helpers import Driver, config, db, run
from tests.connectors.postgres.helpers import replay
from tests.mysql import MysqlServer
from tests.waiting import wait_until

pytestmark = pytest.mark.mysql

_SIGNAL = "CREATE TABLE sig (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT)"


def _name(url: str) -> str:
    return sa.make_url(url).database or ""


def _execute_snapshot(url: str, *tables: str, sid: str = "s1", **extra: Any) -> None:
    data = json.dumps({"data-collections": list(tables), "type": "incremental", **extra})
    with db(url) as cur:
        cur.execute("INSERT INTO sig VALUES (%s, 'execute-snapshot', %s)", (sid, data))


def test_config_keys() -> None:
    base = {"database.hostname": "h", "topic.prefix": "p"}
    cfg = parse_config(base)
    assert cfg["signal.data.collection"] is None
    assert cfg["signal.enabled.channels"] == ["source"]
    assert cfg["incremental.snapshot.chunk.size"] == 1024
    assert cfg["incremental.snapshot.watermarking.strategy"] == "insert_insert"
    cfg = parse_config(
        {
            **base,
            "signal.data.collection": "inventory.debezium_signal",
            "incremental.snapshot.chunk.size": "10",
            "incremental.snapshot.watermarking.strategy": "insert_delete",
        }
    )
    assert cfg["signal.data.collection"] == "inventory.debezium_signal"
    assert cfg["incremental.snapshot.chunk.size"] == 10
    for key, value in [
        ("signal.data.collection", "no_database"),
        ("signal.enabled.channels", "source,kafka"),
        ("signal.enabled.channels", "carrier-pigeon"),
        ("incremental.snapshot.chunk.size", "0"),
        ("incremental.snapshot.watermarking.strategy", "insert_update"),
        ("read.only", "true"),
    ]:
        with pytest.raises(ConfigError) as err:
            parse_config({**base, key: value})
        assert err.value.name == key


def _consume(log: Any, topic: str, seen: dict[Any, Any], consumer: list[Consumer]) -> int:
    """The topic's newest value per key into `seen` (None: deleted), read with a
    consumer; how many reads (op r) came."""
    if topic not in log.list_topics():
        return 0
    if not consumer:
        consumer.append(Consumer(log, auto_offset_reset="earliest"))
        consumer[0].assign(TopicPartition(topic, p) for p in range(log.partition_count(topic)))
    reads = 0
    for record in consumer[0].poll(0.2):
        key = json.loads(record.key)["id"]
        seen[key] = None if record.value is None else json.loads(record.value)
        reads += seen[key] is not None and seen[key]["op"] == "r"
    return reads


def test_concurrent_changes_end_equal_to_the_table(mysql_url: str, start_herder: Any) -> None:
    """Chunks of 50 rows of 2,000 while a writer updates, deletes and inserts: per key
    the topic's last event is the row as the table holds it (deleted rows deleted);
    reads are marked incremental."""
    u = sa.make_url(mysql_url)
    topic = f"srv.{u.database}.t"
    run(
        mysql_url,
        _SIGNAL,
        "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))",
        "INSERT INTO t VALUES " + ", ".join(f"({i}, 0, 'row {i}')" for i in range(1, 2001)),
    )
    props = config(
        mysql_url,
        connector_class="io.debezium.connector.mariadb.MariaDbConnector",
        snapshot_mode="no_data",
        signal_data_collection=f"{u.database}.sig",
        incremental_snapshot_chunk_size="50",
        table_include_list=f"{u.database}\\.t",
    )
    herder = start_herder(
        {"key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false"}
    )
    herder.put_connector_config("cdc", props, allow_replace=False)
    stop = threading.Event()

    def writer() -> None:
        rng = random.Random(7)
        with db(mysql_url) as cur:
            n = 0
            while not stop.is_set() and n < 20000:
                n += 1
                k = rng.randint(1, 2100)
                choice = rng.random()
                if choice < 0.6:
                    cur.execute("UPDATE t SET v = v + 1, s = %s WHERE id = %s", (f"w{n}", k))
                elif choice < 0.8:
                    cur.execute("DELETE FROM t WHERE id = %s", (k,))
                else:
                    cur.execute("INSERT IGNORE INTO t VALUES (%s, %s, 'new')", (k, n))
                stop.wait(0.003)  # paced: the changes spread over the whole snapshot

    thread = threading.Thread(target=writer)
    seen: dict[Any, Any] = {}
    consumer: list[Consumer] = []
    try:
        thread.start()
        # the stream is running once the writer's changes reach the topic
        wait_until(lambda: _consume(herder.log, topic, seen, consumer) or seen, 60, "streaming")
        _execute_snapshot(mysql_url, f"{u.database}.t")

        read = [0]

        def half_read() -> bool:
            read[0] += _consume(herder.log, topic, seen, consumer)
            return read[0] >= 1000

        wait_until(half_read, 60, "half of the table read")  # the writer busy all along
        stop.set()
        thread.join(timeout=10)
        with db(mysql_url) as cur:
            cur.execute("SELECT id, v, s FROM t")
            table = {i: {"id": i, "v": v, "s": s} for i, v, s in cur.fetchall()}

        def caught_up() -> bool:
            _consume(herder.log, topic, seen, consumer)
            got = {k: v["after"] for k, v in seen.items() if v is not None and v["after"]}
            return got == table

        wait_until(caught_up, 60, "the topic equal to the table")
    finally:
        stop.set()
        thread.join(timeout=10)
        for c in consumer:
            c.close()
    # most rows' last event is their read: the snapshot, not the writer, brought them
    assert sum(1 for v in seen.values() if v and v["op"] == "r") > len(table) // 2
    reads = [v for v in seen.values() if v and v["op"] == "r"]
    assert reads and all(v["source"]["snapshot"] == "incremental" for v in reads)
    assert all(seen.get(k) is None or seen[k]["op"] == "d" for k in set(seen) - set(table))


_UPDATES = ("UPDATE w SET v = -v WHERE id BETWEEN 10 AND 40", "DELETE FROM w WHERE id IN (41, 42)")


@pytest.mark.parametrize(
    ("strategy", "changes"),
    [("insert_insert", _UPDATES), ("insert_delete", _UPDATES)],
    ids=["insert_insert", "insert_delete"],
)
def test_rows_changed_inside_a_window_are_not_read_stale(
    mysql_url: str, strategy: str, changes: tuple[str, ...]
) -> None:
    """The first chunk's SELECT is held for a while on row 25 (a real additional
    condition: SLEEP); updates and deletes committed meanwhile are newer than
    what it reads, so those rows' reads are dropped and the stream's events stand. The
    window closes with a row of its own (insert_insert) or the open row's delete."""
    name = _name(mysql_url)
    topic = f"srv.{name}.w"
    run(
        mysql_url,
        _SIGNAL,
        "CREATE TABLE w (id INT PRIMARY KEY, v INT)",
        "INSERT INTO w VALUES " + ", ".join(f"({i}, {i})" for i in range(1, 121)),
    )
    props = config(
        mysql_url,
        snapshot_mode="no_data",
        signal_data_collection=f"{name}.sig",
        table_include_list=f"{name}\\.w",
        incremental_snapshot_chunk_size="50",
        incremental_snapshot_watermarking_strategy=strategy,
        heartbeat_interval_ms="100",  # heartbeats carry the offsets: the snapshot's end
    )
    d = Driver(props)
    try:
        slow = [{"data-collection": f"{name}.w", "filter": "IF(id = 25, SLEEP(1.5), 0) = 0"}]
        _execute_snapshot(mysql_url, f"{name}.w", **{"additional-conditions": slow})

        def window_open() -> bool:
            with db(mysql_url) as cur:
                cur.execute("SELECT COUNT(*) FROM sig WHERE type = 'snapshot-window-open'")
                return cur.fetchone()[0] > 0

        wait_until(window_open, 30, "the first window")  # the SELECT is held now
        run(mysql_url, *changes)
        with db(mysql_url) as cur:
            cur.execute("SELECT id, v FROM w")
            expected = {i: {"id": i, "v": v} for i, v in cur.fetchall()}
            cur.execute("SHOW MASTER STATUS")
            after = cur.fetchone()[:2]  # the first window closes past it
        d.poll_until(lambda recs: _snapshot_over(recs, after))
    finally:
        d.stop()
    assert replay(d.records, topic) == expected
    read = {_read_of(r) for r in d.records} - {None}
    assert read == set(expected) - set(range(10, 43))  # changed in the window: no read
    windows = 3  # chunks of 50, 50 and 20 rows
    with db(mysql_url) as cur:
        cur.execute("SELECT type, COUNT(*) FROM sig GROUP BY type")
        left = dict(cur.fetchall())
    if strategy == "insert_delete":  # every window's open row deleted again
        assert set(left) == {"execute-snapshot"}
    else:
        assert left["snapshot-window-open"] == left["snapshot-window-close"] == windows


def _snapshot_over(records: list[Any], after: tuple[str, int]) -> bool:
    """A heartbeat past `after` whose offset no longer holds the snapshot's entries
    (they are there from the first window's close to the last one's)."""
    return any(
        r.topic.startswith("__debezium-heartbeat")
        and (r.source_offset["file"], r.source_offset["pos"]) >= after
        and "incremental_snapshot_collections" not in r.source_offset
        for r in records
    )


def test_stop_snapshot_ends_it(mysql_url: str) -> None:
    name = _name(mysql_url)
    run(
        mysql_url,
        _SIGNAL,
        "CREATE TABLE big (id INT PRIMARY KEY)",
        "CREATE TABLE marker (id INT PRIMARY KEY)",
        "INSERT INTO big VALUES " + ", ".join(f"({i})" for i in range(1, 2001)),
    )
    props = config(
        mysql_url,
        snapshot_mode="no_data",
        signal_data_collection=f"{name}.sig",
        incremental_snapshot_chunk_size="10",
        max_batch_size="10",
    )
    d = Driver(props)
    try:
        _execute_snapshot(mysql_url, f"{name}.big")
        d.poll_until(lambda recs: sum(_read_of(r) is not None for r in recs) >= 50)
        stop = json.dumps({"data-collections": [f"{name}.big"], "type": "incremental"})
        with db(mysql_url) as cur:
            cur.execute("INSERT INTO sig VALUES ('s2', 'stop-snapshot', %s)", (stop,))
            cur.execute("INSERT INTO marker VALUES (1)")
        d.poll_until(lambda recs: any(r.topic.endswith(".marker") for r in recs))
        run(mysql_url, "INSERT INTO marker VALUES (2)")  # after the watermarks in flight
        d.poll_until(lambda recs: sum(r.topic.endswith(".marker") for r in recs) == 2)
    finally:
        d.stop()
    reads = [_read_of(r) for r in d.records if _read_of(r) is not None]
    assert 50 <= len(reads) < 2000 and reads == sorted(reads)
    marker = next(i for i, r in enumerate(d.records) if r.topic.endswith(".marker"))
    assert not any(_read_of(r) for r in d.records[marker:])  # none after the stop
    assert not any(k.startswith("incremental_") for k in d.records[marker].source_offset)


def test_surrogate_key_and_a_table_without_key(
    mysql_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A table without a primary key is read in chunks by the signal's surrogate-key;
    without one it is skipped with a warning, as Debezium does."""
    name = _name(mysql_url)
    run(
        mysql_url,
        _SIGNAL,
        "CREATE TABLE nopk (u INT NOT NULL UNIQUE, v INT)",
        "CREATE TABLE nokey (v INT)",
        "CREATE TABLE marker (id INT PRIMARY KEY)",
        "INSERT INTO nopk VALUES " + ", ".join(f"({i}, {i})" for i in range(1, 31)),
        "INSERT INTO nokey VALUES (1), (2)",
    )
    props = config(
        mysql_url,
        snapshot_mode="no_data",
        signal_data_collection=f"{name}.sig",
        incremental_snapshot_chunk_size="10",
    )
    d = Driver(props)
    try:
        run(mysql_url, "UPDATE nopk SET v = -1 WHERE u = 30")  # streamed, then read
        _execute_snapshot(mysql_url, f"{name}.nokey", sid="s1")
        _execute_snapshot(mysql_url, f"{name}.nopk", sid="s2", **{"surrogate-key": "u"})
        d.poll_until(lambda recs: any(_read_of(r, "u") == 30 for r in recs))
        run(mysql_url, "INSERT INTO marker VALUES (1)")
        d.poll_until(lambda recs: any(r.topic.endswith(".marker") for r in recs))
    finally:
        d.stop()
    reads = [r for r in d.records if _read_of(r, "u") is not None]
    assert [_read_of(r, "u") for r in reads] == list(range(1, 31))
    assert reads[-1].value.get("after").get("v") == -1
    assert all(r.key is None for r in reads)  # no primary key: no message key
    assert not any(r.topic.endswith(".nokey") for r in d.records)
    assert any("nokey skipped: it has no primary key" in m for m in caplog.messages)


def test_restart_in_the_middle_goes_on_after_the_stored_chunk(mysql_url: str) -> None:
    name = _name(mysql_url)
    run(
        mysql_url,
        _SIGNAL,
        "CREATE TABLE r (id INT PRIMARY KEY, v INT)",
        "INSERT INTO r VALUES " + ", ".join(f"({i}, {i})" for i in range(1, 201)),
    )
    props = config(
        mysql_url,
        snapshot_mode="no_data",
        signal_data_collection=f"{name}.sig",  # read, though not captured
        table_include_list=f"{name}\\.r",
        incremental_snapshot_chunk_size="20",
        max_batch_size="20",
    )
    d = Driver(props)
    try:
        _execute_snapshot(mysql_url, f"{name}\\.r")
        d.poll_until(lambda recs: sum(r.value.get("op") == "r" for r in recs) >= 60)
        d.commit_offsets()
    finally:
        d.stop()
    stored = d.reader.offset(d.records[-1].source_partition)
    assert stored is not None
    assert (
        json.loads(stored["incremental_snapshot_collections"])[0][
            "incremental_snapshot_collections_id"
        ]
        == f"{name}.r"
    )
    assert json.loads(stored["incremental_snapshot_maximum_key"]) == [200]
    done = json.loads(stored["incremental_snapshot_primary_key"])[0]
    first_ids = {r.value.get("after").get("id") for r in d.records}
    assert set(range(1, done + 1)) <= first_ids
    run(mysql_url, "UPDATE r SET v = -1 WHERE id = 200")
    again = Driver(props, d.reader)
    try:
        again.poll_until(lambda recs: any(_read_of(r) == 200 for r in recs))
    finally:
        again.stop()
    reads = [r.value.get("after").to_dict() for r in again.records if r.value.get("op") == "r"]
    assert min(r["id"] for r in reads) == done + 1  # not from the start: after the stored key
    assert sorted(r["id"] for r in reads) == list(range(done + 1, 201))
    assert reads[-1] == {"id": 200, "v": -1}
    assert "incremental_snapshot_collections" not in again.records[-1].source_offset


def _read_of(record: Any, key: str = "id") -> Any:
    """The key of a read (op r); None for any other record."""
    value = record.value
    if value is None or record.topic.startswith("__debezium-heartbeat"):
        return None
    return value.get("after").get(key) if value.get("op") == "r" else None


def test_a_user_without_insert_on_the_signal_table_is_refused(
    mysql_url: str, mysql_server: MysqlServer
) -> None:
    name = _name(mysql_url)
    run(mysql_url, _SIGNAL)
    user = f"ro_{name}"[-30:]
    mysql_server.execute(
        f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'pw'",
        f"GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO "
        f"'{user}'@'127.0.0.1'",
    )
    try:
        props = config(mysql_url, signal_data_collection=f"{name}.sig")
        props.update({"database.user": user, "database.password": "pw"})
        with pytest.raises(ConnectError, match=r"may not INSERT into the signal table") as err:
            Driver(props, FakeOffsetReader())
        assert "\n" not in str(err.value) and f"GRANT INSERT ON {name}.sig" in str(err.value)
        props["signal.data.collection"] = f"{name}.missing"
        with pytest.raises(ConnectError, match="does not exist"):
            Driver(props, FakeOffsetReader())
    finally:
        mysql_server.execute(f"DROP USER '{user}'@'127.0.0.1'")
