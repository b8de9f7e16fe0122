"""MySQL CDC survives SIGKILLs: a real `connect standalone` worker (tasks in child
processes), the test MariaDB with its binlog, and a writer committing inserts, updates,
deletes and a TRUNCATE in many transactions the whole time.

The worker runs the pipeline users build — MySqlCdcSource (by Debezium's class name) →
log → ExtractNewRecordState (truncates kept) → JdbcSink (upsert, deletes, truncates)
into a table `dst` of the same database — and its whole process group is SIGKILLed
three times at seeded random points (`SEED`): once in the middle of the initial
snapshot, twice in the middle of the stream (the TRUNCATE between them), each time
started again while the writer goes on. Afterwards, as tests/integration/
test_cdc_kill.py checks PostgreSQL's (its Writer, kill and check are reused):

1. the replayed table equals the source table row for row;
2. no committed change is missing from the topic (at least once: repeats after a kill
   are allowed, gaps are not), the snapshot cut short was done again from a new binlog
   position, and the last snapshot's rows plus the stream explain every row.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from log import FileLog
from tests.connectors.mysql.helpers import config, db, run
from tests.integration.conftest import JSON, WorkerProcess, connector_file
from tests.integration.test_cdc_kill import Writer, check_nothing_missing, kill_process_group
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.mysql, pytest.mark.slow]

SEED = 22
INITIAL_ROWS = 20_000
ROW = "id, version, name, amount, ok"


class MysqlWriter(Writer):
    """test_cdc_kill's writer on MariaDB (its SQL is portable; PyMySQL's connection)."""

    def connect(self) -> Any:
        return pymysql.connect(**_params(self.url))


def _params(url: str) -> dict[str, Any]:
    c = config(url)
    return {
        "host": c["database.hostname"],
        "port": int(c["database.port"]),
        "user": c["database.user"],
        "password": c["database.password"],
        "database": c["database.include.list"],
    }


def table_rows(url: str, table: str) -> dict[int, tuple[Any, ...]] | None:
    """id → the rest of the row (`ok` as 0/1/None whatever its column type); None while
    the table is missing."""
    with db(url) as cur:
        cur.execute("SHOW TABLES LIKE %s", (table,))
        if cur.fetchone() is None:
            return None
        cur.execute(f"SELECT {ROW} FROM {table}")
        return {
            r[0]: (*r[1:4], None if r[4] is None else int(r[4])) for r in cur.fetchall()
        }


def events(log: FileLog, topic: str) -> list[dict[str, Any]]:
    """The change events in the topic (no tombstones), each read's binlog position as
    `source.lsn`: test_cdc_kill's check tells the snapshots apart by it."""
    out = []
    if topic in log.list_topics():
        offset = 0
        while batch := log.read(topic, 0, offset, max_records=50_000):
            out += [json.loads(r.value)["payload"] for r in batch if r.value is not None]
            offset = batch[-1].offset + 1
    for event in out:
        event["source"]["lsn"] = (event["source"]["file"], event["source"]["pos"])
    return out


def topic_size(log: FileLog, topic: str) -> int:
    return log.latest_offset(topic, 0) if topic in log.list_topics() else 0


def streaming_since(log: FileLog, topic: str, size: int) -> bool:
    """Whether the topic grew past `size` and its last record is no snapshot read: the
    (new) snapshot is over and the stream reaches the topic."""
    end = topic_size(log, topic)
    if end <= size + 1:
        return False
    last = log.read(topic, 0, end - 1, max_records=1)[0]
    return last.value is None or json.loads(last.value)["payload"]["op"] != "r"


@pytest.fixture
def log(tmp_path: Path) -> Iterator[FileLog]:
    (tmp_path / "log").mkdir(exist_ok=True)
    with FileLog(tmp_path / "log", background=False) as opened:
        yield opened


@pytest.fixture
def start(
    start_worker: Callable[..., WorkerProcess], tmp_path: Path, mysql_url: str
) -> Callable[[], WorkerProcess]:
    database = _params(mysql_url)["database"]
    source = config(
        mysql_url,
        **{
            "connector.class": "io.debezium.connector.mysql.MySqlConnector",
            "database.server.id": "6001",
            "table.include.list": f"{database}\\.src",
            "skipped.operations": "none",  # truncates too
            # snapshot chunks of 500 rows: the kill lands inside the snapshot
            "max.batch.size": "500",
        },
    )
    sink = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "connection.url": mysql_url,
        "topics": f"srv.{database}.src",
        "table.name.format": "dst",
        "insert.mode": "upsert",
        "pk.mode": "record_key",
        "pk.fields": "id",
        "auto.create": "true",
        "delete.enabled": "true",
        "truncate.enabled": "true",
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.delete.handling.mode": "none",
        "transforms.unwrap.drop.tombstones": "false",
        "transforms.unwrap.truncate.handling.mode": "keep",
    }
    files = [connector_file(tmp_path, "cdc", source), connector_file(tmp_path, "sink", sink)]

    def factory() -> WorkerProcess:
        return start_worker(
            files,
            config={"key.converter": JSON, "value.converter": JSON,
                    "offset.flush.interval.ms": "300"},
        )

    return factory


def test_sigkills_at_seeded_points_lose_no_change_and_the_replayed_table_matches(
    mysql_url: str, start: Callable[[], WorkerProcess], log: FileLog
) -> None:
    rng = random.Random(SEED)
    topic = f"srv.{_params(mysql_url)['database']}.src"
    run(
        mysql_url,
        "CREATE TABLE src (id INT PRIMARY KEY, version INT NOT NULL, name VARCHAR(40), "
        "amount DECIMAL(12,2) NOT NULL, ok BOOLEAN)",
        f"INSERT INTO src SELECT seq, 0, CONCAT('s', seq), (seq % 1000) / 4, "
        f"IF(seq % 3 = 0, TRUE, FALSE) FROM seq_1_to_{INITIAL_ROWS}",
    )
    writer = MysqlWriter(mysql_url, dict.fromkeys(range(1, INITIAL_ROWS + 1), 0), per_s=60)
    worker = start()
    try:
        # Kill 1: in the snapshot (a snapshot emits its reads before any change).
        cut = rng.randint(1_000, 4_000)
        wait_until(lambda: topic_size(log, topic) >= cut, 60, f"{cut} snapshot reads")
        # The kill first: the 20,000 reads take well under a second, and the writer's
        # start (a thread, a connection) before it let the snapshot finish under load.
        kill_process_group(worker)
        at_kill = topic_size(log, topic)
        assert at_kill < INITIAL_ROWS, f"the snapshot had finished ({at_kill} records)"
        writer.start()  # from now on every committed change must reach the topic
        worker = start()
        # Kills 2 and 3: in the stream, with the TRUNCATE between them.
        for kill in (2, 3):
            done = writer.transactions
            more = rng.randint(30, 120)
            wait_until(lambda d=done, m=more: writer.transactions >= d + m, 60,
                       f"{more} more transactions before kill {kill}")
            size = topic_size(log, topic)
            wait_until(lambda s=size: streaming_since(log, topic, s), 60,
                       f"the stream under way before kill {kill}")
            kill_process_group(worker)
            assert writer.is_alive()  # the stream goes on while the worker is down
            worker = start()
            if kill == 2:
                writer.truncate()
        done = writer.transactions
        wait_until(lambda: writer.transactions >= done + 60, 60, "60 transactions more")
    finally:
        writer.stop()
    expected = table_rows(mysql_url, "src")
    try:
        wait_until(lambda: table_rows(mysql_url, "dst") == expected, 60,
                   "the replayed table equal to the source")
    except AssertionError:
        got = table_rows(mysql_url, "dst") or {}
        diff = [k for k in set(expected or {}) | set(got) if expected.get(k) != got.get(k)]
        status = {n: worker.status(n) for n in ("cdc", "sink")}
        ops = Counter(e["op"] for e in events(log, topic))
        raise AssertionError(
            f"{len(diff)} rows differ, e.g. {[(expected.get(k), got.get(k)) for k in diff[:3]]};"
            f" the topic's ops {dict(ops)}; status {status}\n{worker.stderr[-3000:]}"
        ) from None
    seen = events(log, topic)
    check_nothing_missing(seen, writer)
    assert len(writer.committed) > 1_000  # ~350 transactions of 6 changes
    snapshots = {e["source"]["lsn"] for e in seen if e["op"] == "r"}
    assert len(snapshots) == 2  # the one cut short, and the one done again
