"""Snapshot-to-stream hand-over under concurrent writes, restarts through the commit
hooks (nothing lost, nothing repeated), and refusals with clear messages."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable

import psycopg2
import pytest

from connect.api import ConfigError, ConnectError, SourceRecord
from connectors.postgres.changes import restart_position
from tests.connectors.postgres.helpers import Driver, config, db, dsn, replay, run, table_rows
from tests.pg import PostgresServer

pytestmark = pytest.mark.postgres
TOPIC = "srv.public.c"


def versions(records: list, topic: str = TOPIC) -> dict[int, list[int]]:
    """id -> the `v` values its r/c/u events carried, in order."""
    seen: dict[int, list[int]] = {}
    for r in records:
        if r.topic == topic and r.value is not None and r.value.get("op") in "rcu":
            after = r.value.get("after")
            seen.setdefault(after.get("id"), []).append(after.get("v"))
    return seen


def test_changes_during_the_snapshot_appear_exactly_once(postgres_url: str) -> None:
    run(
        postgres_url,
        "CREATE TABLE c (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO c SELECT n, 0 FROM generate_series(1, 20000) n",
    )
    stop = threading.Event()

    def writer() -> None:  # each update adds one to v: gaps are losses, repeats duplicates
        conn = psycopg2.connect(**dsn(postgres_url))
        conn.autocommit = True
        with conn.cursor() as cur:
            i = 0
            while not stop.is_set():
                cur.execute("UPDATE c SET v = v + 1 WHERE id = %s", (i % 50 + 1,))
                i += 1
        conn.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        d = Driver(config(postgres_url, snapshot_fetch_size="500"))
        d.poll_count(5000)  # part of the snapshot read while the writer runs
    finally:
        stop.set()
        thread.join()
    try:
        final = table_rows(postgres_url, "c")
        d.poll_until(lambda recs: replay(recs, TOPIC) == final)
        for key, vs in versions(d.records).items():
            assert vs == list(range(vs[0], vs[0] + len(vs))), key
            assert vs[-1] == final[key]["v"]
        assert sum(1 for r in d.records if r.value.get("op") == "r") == 20000
    finally:
        d.stop()


def test_restart_resumes_with_nothing_lost_or_repeated(postgres_url: str) -> None:
    run(
        postgres_url,
        "CREATE TABLE c (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO c SELECT n, 0 FROM generate_series(1, 100) n",
    )
    props = config(postgres_url, max_batch_size="7")
    d = Driver(props)
    committed: list = []
    try:
        d.poll_count(100)
        run(postgres_url, *[f"UPDATE c SET v = v + 1 WHERE id <= {i}" for i in range(1, 31)])
        d.poll_count(100 + 100)  # part of the stream …
        d.commit_offsets()
        committed = list(d.records)
        d.poll_count(len(committed) + 20)  # … and more, never committed: a crash
    finally:
        d.stop()
    run(postgres_url, "INSERT INTO c VALUES (1000, 0)", "DELETE FROM c WHERE id = 2")
    d2 = Driver(props, d.reader)
    try:
        final = table_rows(postgres_url, "c")
        d2.poll_until(lambda recs: replay(committed + recs, TOPIC) == final)
        assert not any(r.value is not None and r.value.get("op") == "r" for r in d2.records)
        every = committed + d2.records
        for key, vs in versions(every).items():  # nothing after the commit is repeated
            assert vs == list(range(vs[0], vs[0] + len(vs))), key
    finally:
        d2.stop()


def _restart_after(
    postgres_url: str, props: dict[str, str], at: Callable[[SourceRecord], bool]
) -> tuple[SourceRecord, list[SourceRecord]]:
    """Poll one record at a time until `at(record)`, commit the offsets there and stop
    (records after it are never polled), then restart from them and poll until the
    events replay to the table. The record committed at, and every record the log has
    (those before and at it, and the restarted task's)."""
    d = Driver(props)
    try:
        d.poll_until(lambda recs: bool(recs) and at(recs[-1]))
        d.commit_offsets()
    finally:
        d.stop()
    committed = list(d.records)
    d2 = Driver(props, d.reader)
    try:
        final = table_rows(postgres_url, "c")
        d2.poll_until(lambda recs: replay(committed + recs, TOPIC) == final)
    finally:
        d2.stop()
    return committed[-1], committed + d2.records


def test_a_restart_at_a_transactions_first_change_repeats_nothing(postgres_url: str) -> None:
    """One session's back-to-back transactions: a transaction's first change starts
    where the previous commit ended, so its offset's `lsn` equals its `lsn_commit`.
    Such an offset was taken for a finished transaction's, and a restart there emitted
    the transaction again whole (how the test above once saw a version twice, when a
    poll under load happened to end at such a change)."""
    run(
        postgres_url,
        "CREATE TABLE c (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO c SELECT n, 0 FROM generate_series(1, 3) n",
    )
    props = config(postgres_url, snapshot_mode="never", max_batch_size="1")
    Driver(props).stop()  # the slot exists from here on: the updates are streamed
    run(postgres_url, *["UPDATE c SET v = v + 1"] * 20)

    def first_change_at_previous_end(rec: SourceRecord) -> bool:
        off = rec.source_offset
        return off["txId"] is not None and off["lsn"] == off["lsn_commit"]

    _, every = _restart_after(postgres_url, props, first_change_at_previous_end)
    assert versions(every) == {k: list(range(1, 21)) for k in (1, 2, 3)}


def test_a_restart_inside_a_transaction_that_began_before_another_committed(
    postgres_url: str,
) -> None:
    """Transactions interleaved in the WAL: B writes, A commits, B commits. The stream
    sends A then B, and B's changes lie below A's commit (`lsn` < `lsn_commit` in
    B's offsets). A restart inside B skips what was emitted of B, and only that."""
    run(
        postgres_url,
        "CREATE TABLE c (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO c SELECT n, 0 FROM generate_series(1, 3) n",
    )
    props = config(postgres_url, snapshot_mode="never", max_batch_size="1")
    Driver(props).stop()
    b = psycopg2.connect(**dsn(postgres_url))
    try:
        with b.cursor() as cur:
            cur.execute("UPDATE c SET v = v + 1")  # B, open
            run(postgres_url, "INSERT INTO c VALUES (100, 0)")  # A commits first
        b.commit()
    finally:
        b.close()
    run(postgres_url, "UPDATE c SET v = v + 1 WHERE id = 100")

    def inside_b(rec: SourceRecord) -> bool:
        return rec.value.get("op") == "u" and rec.value.get("after").get("id") in (1, 2, 3)

    at, every = _restart_after(postgres_url, props, inside_b)
    assert at.source_offset["lsn"] < at.source_offset["lsn_commit"]
    assert versions(every) == {1: [1], 2: [1], 3: [1], 100: [0, 1]}


def test_a_restart_after_part_of_one_copy_loses_none_of_its_rows(postgres_url: str) -> None:
    """COPY writes its rows as one WAL record (a multi-insert), so the stream's Inserts
    of them share one LSN. A poll does not end inside such a run (it may pass
    `max.batch.size` to finish it): the restart's skip, by LSN, then drops only rows
    that were emitted; a poll cut after 3 of them lost the other 7."""
    run(postgres_url, "CREATE TABLE c (id int PRIMARY KEY, v int NOT NULL)")
    props = config(postgres_url, snapshot_mode="never", max_batch_size="3")
    Driver(props).stop()
    with db(postgres_url) as cur:
        cur.copy_expert("COPY c FROM STDIN", io.StringIO("".join(f"{n}\t0\n" for n in range(10))))
        cur.execute("UPDATE c SET v = 1 WHERE id = 0")
    at, every = _restart_after(postgres_url, props, lambda rec: True)
    assert at.value.get("after").get("id") == 9  # the first poll: the whole run
    assert versions(every) == {0: [0, 1], **{n: [0] for n in range(1, 10)}}


def test_restart_position_names_the_transaction_of_every_streamed_offset() -> None:
    """What a restart makes of each kind of stored offset (the server runs are above)."""
    tx = {"txId": 7, "ts_usec": 1, "lsn_proc": 0}
    for lsn in (90, 100, 110):  # below, at and above lsn_commit: in progress or whole
        assert restart_position({**tx, "lsn": lsn, "lsn_commit": 100}) == (
            100,
            {"txId": 7, "lsn": lsn},
        )
    beat = {"lsn": 120, "txId": None, "ts_usec": 1, "lsn_commit": 120, "lsn_proc": 120}
    assert restart_position(beat) == (120, None)
    snapshot_end = {"lsn": 50, "txId": 7, "ts_usec": 1, "snapshot": True}
    assert restart_position({**snapshot_end, "lsn_commit": 50}) == (50, None)
    debezium = {**tx, "lsn": 110, "lsn_commit": 100}  # Debezium's own offsets
    assert restart_position({**debezium, "messageType": "UPDATE"})[1] == {"txId": 7, "lsn": 110}
    assert restart_position({**debezium, "messageType": "BEGIN"}) == (100, None)
    assert restart_position(None) == (0, None)


def test_an_unfinished_snapshot_is_done_again(postgres_url: str) -> None:
    run(
        postgres_url,
        "CREATE TABLE c (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO c SELECT n, 0 FROM generate_series(1, 3000) n",
    )
    props = config(postgres_url, snapshot_fetch_size="100")
    d = Driver(props)
    try:
        d.poll_count(500)
        d.commit_offsets()  # offsets say: snapshot in progress
    finally:
        d.stop()
    run(postgres_url, "UPDATE c SET v = 1 WHERE id = 1")
    d2 = Driver(props, d.reader)
    try:
        d2.poll_until(lambda recs: replay(recs, TOPIC) == table_rows(postgres_url, "c"))
        reads = [r for r in d2.records if r.value.get("op") == "r"]
        assert len(reads) == 3000 and reads[-1].value.get("source").get("snapshot") == "last"
    finally:
        d2.stop()


def test_the_slot_advances_only_with_commits_and_heartbeats(postgres_url: str) -> None:
    run(postgres_url, "CREATE TABLE c (id int PRIMARY KEY, v int NOT NULL)")
    d = Driver(config(postgres_url, snapshot_mode="never", heartbeat_interval_ms="100"))

    def confirmed() -> int:
        with db(postgres_url) as cur:
            cur.execute(
                "SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots "
                "WHERE slot_name = 'debezium'"
            )
            return int(cur.fetchone()[0])

    try:
        d.poll_once()
        run(postgres_url, "INSERT INTO c VALUES (1, 1)")
        d.poll_until(lambda rs: any(r.topic == TOPIC for r in rs))
        before = confirmed()
        change = next(r for r in d.records if r.topic == TOPIC)
        assert confirmed() < change.source_offset["lsn_commit"] or before == confirmed()
        d.poll_until(lambda rs: rs[-1].topic == "__debezium-heartbeat.srv")
        beat = d.records[-1]
        assert beat.key.get("serverName") == "srv" and beat.value.get("ts_ms") > 0
        d.commit_offsets()
        assert confirmed() >= change.source_offset["lsn_commit"]
    finally:
        d.stop()


# ------------------------------------------------------------------------ refusals


def test_missing_replication_right_and_table_privileges(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    db_name = postgres_url.rsplit("/", 1)[1]
    run(
        postgres_url,
        "CREATE TABLE secret (id int PRIMARY KEY)",
        "DO $$ BEGIN CREATE ROLE plain LOGIN PASSWORD 'pw'; "
        "EXCEPTION WHEN duplicate_object THEN NULL; END $$",
        "DO $$ BEGIN CREATE ROLE repl LOGIN REPLICATION PASSWORD 'pw'; "
        "EXCEPTION WHEN duplicate_object THEN NULL; END $$",
    )
    url = postgres_server.url(db_name, user="plain", password="pw")
    with pytest.raises(ConnectError, match=r"may not use replication.*REPLICATION"):
        Driver(config(url))
    url = postgres_server.url(db_name, user="repl", password="pw")
    with pytest.raises(ConnectError, match=r"may not read public\.secret: grant SELECT"):
        Driver(config(url))
    bad = postgres_server.url(db_name, user="repl", password="wrong")
    with pytest.raises(ConfigError, match=r"connection.url.*cannot connect"):
        Driver(config(bad))


def test_an_active_slot_and_a_missing_publication_are_refused(postgres_url: str) -> None:
    run(postgres_url, "CREATE TABLE c (id int PRIMARY KEY)")
    d = Driver(config(postgres_url, snapshot_mode="never"))
    try:
        d.poll_once()
        with pytest.raises(ConnectError, match="slot 'debezium' is active for PID"):
            Driver(config(postgres_url, snapshot_mode="never"))
    finally:
        d.stop()
    with pytest.raises(ConfigError, match=r"publication.name.*no such publication"):
        Driver(
            config(
                postgres_url,
                **{
                    "publication.name": "nope",
                    "publication.autocreate.mode": "disabled",
                    "slot.name": "other",
                },
            )
        )


def test_wal_level_not_logical_is_refused() -> None:
    class ReplicaServer(PostgresServer):
        def _prepare(self) -> None:
            super()._prepare()
            with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
                conf.write("wal_level = replica\n")

    server = ReplicaServer()
    try:
        server.start()
        with pytest.raises(ConnectError, match=r"wal_level = replica.*wal_level = logical"):
            Driver(config(server.url()))
    finally:
        server.stop()
