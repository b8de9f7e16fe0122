"""CDC survives a SIGKILL: real `connect standalone` processes (tasks in child
processes), a live PostgreSQL, and a writer committing a mixed stream of inserts,
updates, deletes and a truncate in many transactions the whole time.

The worker runs the pipeline users build — PostgresCdcSource → log →
ExtractNewRecordState (truncates kept) → JdbcSink (upsert, deletes, truncates) into a
fresh table — and its whole process group is SIGKILLed once, either in the middle of
the snapshot or in the middle of the stream, then started again. Afterwards:

1. the replayed table equals the source table row for row;
2. no change is missing from the topic: every row carries a version counter, and
   every (id, version) the writer committed is in the topic, every deleted id has its
   delete event, the truncate its truncate event. At least once: repeats after the
   kill are allowed, gaps are not.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import psutil
import psycopg2
import pytest

from log import FileLog
from tests.connectors.postgres.helpers import db, dsn, run, table_rows
from tests.integration.conftest import JSON, WorkerProcess, connector_file
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.slow]

TOPIC = "srv.public.src"
SLOT = "kill_slot"


class Writer(threading.Thread):
    """Commits transactions of 3 inserts, 2 updates and 1 delete (each bumping the
    row's version) until stopped, and one TRUNCATE when asked (`truncate()`); paced at
    about `per_s` transactions a second so the stream stays busy across the kill and
    the restart without burying the sink. `committed` holds each change of each
    committed transaction: ("c"|"u", id, version), ("d", id, None), ("t", None, None);
    `truncated` the ids the truncate removed."""

    def __init__(self, url: str, live: dict[int, int], *, per_s: float) -> None:
        super().__init__(name="cdc-writer", daemon=True)
        self.url = url
        self.live = dict(live)  # id -> version, as committed
        self.interval_s = 1 / per_s
        self.truncated: set[int] | None = None
        self._truncate = threading.Event()
        self.committed: list[tuple[str, int | None, int | None]] = []
        self.transactions = 0
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self._rng = random.Random(5)
        self._next_id = max(live, default=0) + 1

    def truncate(self, timeout_s: float = 30.0) -> None:
        """Make the next transaction a TRUNCATE, and wait until it is committed."""
        self._truncate.set()
        wait_until(lambda: self.truncated is not None or self.error, timeout_s, "the truncate")

    def stop(self) -> None:
        self._halt.set()
        self.join(30)
        assert not self.is_alive(), "the writer did not stop"
        if self.error is not None:
            raise AssertionError(f"the writer failed: {self.error!r}") from self.error

    def connect(self) -> Any:
        """A DB-API connection to the source database, not in autocommit (the MySQL
        replay test's Writer connects with PyMySQL instead)."""
        return psycopg2.connect(**dsn(self.url))

    def run(self) -> None:
        try:
            conn = self.connect()
            try:
                next_at = time.monotonic()
                while not self._halt.is_set():
                    self._transaction(conn)
                    next_at += self.interval_s
                    self._halt.wait(max(0.0, next_at - time.monotonic()))
            finally:
                conn.close()
        except BaseException as exc:
            self.error = exc

    def _pick(self, n: int, taken: set[int]) -> list[int]:
        """Up to n live ids not in `taken` (random probes: `live` may be large)."""
        out: list[int] = []
        for _ in range(20 * n):
            if len(out) == n or not self.live:
                break
            candidate = self._rng.randrange(1, self._next_id)
            if candidate in self.live and candidate not in taken:
                taken.add(candidate)
                out.append(candidate)
        return out

    def _transaction(self, conn: Any) -> None:
        changes: list[tuple[str, int | None, int | None]] = []
        with conn.cursor() as cur:
            if self._truncate.is_set() and self.truncated is None:
                cur.execute("TRUNCATE src")
                changes.append(("t", None, None))
            else:
                taken: set[int] = set()
                for id_ in self._pick(2, taken):
                    version = self.live[id_] + 1
                    cur.execute(
                        "UPDATE src SET version = %s, name = %s, amount = amount + 1.25, "
                        "ok = NOT coalesce(ok, false) WHERE id = %s",
                        (version, f"u{id_}.{version}", id_),
                    )
                    changes.append(("u", id_, version))
                for id_ in self._pick(1, taken):
                    cur.execute("DELETE FROM src WHERE id = %s", (id_,))
                    changes.append(("d", id_, None))
                for _ in range(3):
                    id_ = self._next_id
                    self._next_id += 1
                    cur.execute(
                        "INSERT INTO src VALUES (%s, 1, %s, %s, %s)",
                        (id_, f"n{id_}", id_ % 1000 / 4, None if id_ % 7 == 0 else id_ % 2 == 0),
                    )
                    changes.append(("c", id_, 1))
        conn.commit()
        self.transactions += 1
        for op, id_, version in changes:
            if op == "t":
                self.truncated = set(self.live)
                self.live.clear()
            elif op == "d":
                del self.live[id_]  # type: ignore[arg-type]
            else:
                self.live[id_] = version  # type: ignore[index]
        self.committed += changes


# ------------------------------------------------------------------ the log


def events(log: FileLog) -> list[dict[str, Any]]:
    """The change events in the topic (payloads of the JSON envelopes; no tombstones).
    orjson, not json: every envelope carries its schema, and the snapshot case reads
    ~90k of them on a machine the worker is still loading."""
    if TOPIC not in log.list_topics():
        return []
    out = []
    loads = orjson.loads
    for partition in range(log.partition_count(TOPIC)):
        offset = 0
        while batch := log.read(TOPIC, partition, offset, max_records=50_000):
            out += [loads(r.value)["payload"] for r in batch if r.value is not None]
            offset = batch[-1].offset + 1
    return out


def topic_size(log: FileLog) -> int:
    if TOPIC not in log.list_topics():
        return 0
    return sum(log.latest_offset(TOPIC, p) for p in range(log.partition_count(TOPIC)))


# -------------------------------------------------------------- the pipeline


@pytest.fixture
def worker_files(tmp_path: Path, postgres_url: str) -> list[Path]:
    source = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "connection.url": postgres_url,
        "topic.prefix": "srv",
        "slot.name": SLOT,
        "table.include.list": "public\\.src",
        "skipped.operations": "none",  # truncates too
        "poll.interval.ms": "50",
    }
    sink = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "connection.url": postgres_url,
        "topics": TOPIC,
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
    return [connector_file(tmp_path, "cdc", source), connector_file(tmp_path, "sink", sink)]


@pytest.fixture
def start(
    start_worker: Callable[..., WorkerProcess], worker_files: list[Path]
) -> Callable[[], WorkerProcess]:
    def factory() -> WorkerProcess:
        return start_worker(
            worker_files,
            config={
                "key.converter": JSON,
                "value.converter": JSON,
                "offset.flush.interval.ms": "300",
            },
        )

    return factory


@pytest.fixture
def log(tmp_path: Path) -> Iterator[FileLog]:
    (tmp_path / "log").mkdir(exist_ok=True)
    with FileLog(tmp_path / "log", background=False) as opened:
        yield opened


def kill_process_group(worker: WorkerProcess) -> None:
    """SIGKILL the worker's process group — the worker and its task processes at
    once, as the kernel's OOM killer or `kill -9 -PGID` would — and wait for all."""
    victims = [psutil.Process(worker.proc.pid), *map(psutil.Process, worker.task_pids())]
    os.killpg(worker.proc.pid, signal.SIGKILL)
    assert worker.proc.wait(30) == -signal.SIGKILL
    _, alive = psutil.wait_procs(victims, timeout=30)
    assert not alive, f"still running after SIGKILL: {alive}"


def slot_exists(url: str) -> bool:
    with db(url) as cur:
        cur.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (SLOT,))
        return cur.fetchone() is not None


def create_source(url: str, rows: int) -> dict[int, int]:
    run(
        url,
        "CREATE TABLE src (id int PRIMARY KEY, version int NOT NULL, name text, "
        "amount numeric(12,2) NOT NULL, ok boolean)",
        f"INSERT INTO src SELECT n, 0, 's' || n, n % 1000 / 4.0, n % 3 = 0 "
        f"FROM generate_series(1, {rows}) n",
    )
    return dict.fromkeys(range(1, rows + 1), 0)


# ------------------------------------------------------------------ the test


def check_nothing_missing(seen: list[dict[str, Any]], writer: Writer) -> None:
    """Every change the writer committed is in the topic, unless the (last) snapshot
    already holds its effect: a snapshot cut short by the kill is done again from a new
    slot, and what was committed before that slot (its point P) is in its rows, not
    in the stream. Per row, with its version in that snapshot:

    - in the snapshot at version s: every version above s, and its delete, streamed;
    - not in it, inserted by the writer, and its insert or its removal streamed (so
      it was inserted after P): every change of it streamed;
    - not in it otherwise: it must have been deleted or truncated before P, so its
      history ends with that removal, and none of it needed streaming.
    The truncate itself: streamed, or before P (then no row it removed is in the
    snapshot, and no change before it was streamed)."""
    reads = [e for e in seen if e["op"] == "r"]
    final_lsn = max(e["source"]["lsn"] for e in reads)
    snapshot = {
        e["after"]["id"]: e["after"]["version"] for e in reads if e["source"]["lsn"] == final_lsn
    }
    streamed = {(e["after"]["id"], e["after"]["version"]) for e in seen if e["op"] in ("c", "u")}
    deleted = {e["before"]["id"] for e in seen if e["op"] == "d"}
    history: dict[int, list[tuple[str, int | None]]] = {}
    for op, id_, version in writer.committed:
        if op == "t":
            for gone in writer.truncated or ():
                history.setdefault(gone, []).append(("t", None))
        else:
            history.setdefault(id_, []).append((op, version))  # type: ignore[arg-type]

    def needed(op: str, version: int | None, s: int | None, from_start: bool) -> bool:
        if from_start:
            return op != "t"
        assert s is not None
        return op == "d" or (op in ("c", "u") and version is not None and version > s)

    truncate_streamed = any(e["op"] == "t" for e in seen)
    missing = []
    for id_, changes in history.items():
        s = snapshot.get(id_)
        # Whatever is streamed came after P (the only snapshot in the topic that was
        # followed by a stream is the last one).
        removal_streamed = id_ in deleted or (changes[-1][0] == "t" and truncate_streamed)
        after_p = (id_, 1) in streamed or removal_streamed
        from_start = s is None and after_p
        if from_start and changes[0][0] != "c":
            missing.append((id_, changes[0], "a row of the table at P missing from the snapshot"))
            continue
        if s is None and not from_start:
            if changes[-1][0] not in ("d", "t"):
                missing.append((id_, changes[0], "neither in the snapshot nor streamed"))
            continue
        for op, version in changes:
            if not needed(op, version, s, from_start):
                continue
            found = id_ in deleted if op == "d" else (id_, version) in streamed
            if not found:
                missing.append((id_, (op, version), f"snapshot version {s}"))
    assert not missing, f"{len(missing)} committed changes missing, e.g. {missing[:5]}"
    assert writer.truncated is not None
    if not truncate_streamed:  # fine only if the truncate came before P
        at = next(i for i, c in enumerate(writer.committed) if c[0] == "t")
        earlier_streamed = [
            c
            for c in writer.committed[:at]
            if (c[1], c[2]) in streamed or (c[0] == "d" and c[1] in deleted)
        ]
        assert not earlier_streamed, f"the truncate is missing (after {earlier_streamed[-1]})"
        assert not writer.truncated & set(snapshot), "the truncate is missing"


@pytest.mark.parametrize("kill_in", ["snapshot", "streaming"])
def test_a_sigkilled_worker_loses_no_change_and_the_replayed_table_matches(
    postgres_url: str, start: Callable[[], WorkerProcess], log: FileLog, kill_in: str
) -> None:
    initial = 80_000 if kill_in == "snapshot" else 2_000  # a snapshot of ~0.5 s
    live = create_source(postgres_url, initial)
    worker = start()
    # From the slot's creation on, every committed change must reach the topic.
    wait_until(lambda: slot_exists(postgres_url), 30, "the replication slot")
    writer = Writer(postgres_url, live, per_s=150)
    writer.start()
    try:
        if kill_in == "snapshot":
            wait_until(lambda: topic_size(log) >= 2_000, 30, "the snapshot under way")
        else:
            wait_until(lambda: writer.transactions >= 100, 30, "100 transactions")
            writer.truncate()
            wait_until(lambda: writer.transactions >= 250, 30, "250 transactions")
            # The stream, truncate included, is reaching the topic.
            wait_until(lambda: topic_size(log) >= initial + 200 * 5, 30, "the stream under way")
        kill_process_group(worker)
        at_kill = topic_size(log)
        if kill_in == "snapshot":
            # A snapshot emits its reads before any streamed change.
            assert at_kill < initial, f"the snapshot had finished ({at_kill} records)"
        assert writer.is_alive()  # the stream goes on while the worker is down
        done_before = writer.transactions
        worker = start()
        if kill_in == "snapshot":
            # The snapshot again (at least `initial` rows: each transaction adds two),
            # then the stream: the truncate comes through it.
            wait_until(lambda: topic_size(log) >= at_kill + initial + 500, 45, "the new snapshot")
            writer.truncate()
        wait_until(lambda: writer.transactions >= done_before + 150, 30, "more transactions")
    finally:
        writer.stop()
    expected = table_rows(postgres_url, "src")

    def replayed() -> bool:
        try:
            # Counted first: fetching the whole table (85k rows) every 50 ms took the
            # CPU the sink's catch-up needed on a loaded machine.
            with db(postgres_url) as cur:
                cur.execute("SELECT count(*) FROM dst")
                if cur.fetchone()[0] != len(expected):
                    return False
            return table_rows(postgres_url, "dst") == expected
        except psycopg2.Error:
            return False  # the sink has not created its table yet

    try:
        wait_until(replayed, 60, "the replayed table equal to the source")
    except AssertionError:
        status = {n: worker.status(n) for n in ("cdc", "sink")}
        got = table_rows(postgres_url, "dst")
        diff = [k for k in set(expected) | set(got) if expected.get(k) != got.get(k)]
        raise AssertionError(
            f"{len(diff)} rows differ, e.g. {[(expected.get(k), got.get(k)) for k in diff[:3]]};"
            f" status {status}\n{worker.stderr[-3000:]}"
        ) from None
    seen = events(log)
    check_nothing_missing(seen, writer)
    assert len(writer.committed) > 1_000
    snapshots = {e["source"]["lsn"] for e in seen if e["op"] == "r"}
    assert len(snapshots) == (2 if kill_in == "snapshot" else 1)
