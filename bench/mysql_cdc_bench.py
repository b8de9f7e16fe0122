"""MySQL CDC: Tributary's MySqlCdcSource beside Debezium's MariaDB connector on Kafka
Connect, the same work through both in one run; prints one JSON line.

One run starts one MariaDB server (tests/mysql.py's, binlog on), one Kafka broker
(`scripts/kafka`; none with `--log embedded`, below), a Tributary worker on KafkaLog
(`bootstrap.servers`, tasks as threads) and a Kafka Connect worker
(`scripts/kafka-connect`, standalone, Debezium's MariaDB connector on its plugin path:
the tests' server is MariaDB, whose dialect Debezium's MySQL connector refuses), then
runs each step on both systems, one system at a time, by the same REST calls with the
same connector config (Tributary takes Debezium's class name and keys):

1. the snapshot: a table `snap` of `--rows` rows of 10 columns (bench/cdc_bench.py's
   shape), `snapshot.mode=initial_only`; rows over the time from POST /connectors until
   the topic's high watermark reaches the row count;
2. the stream of a backlog: each system's connector (`snapshot.mode=no_data`) starts,
   streams warm-up updates until they all arrived, and is stopped (PUT .../stop: its
   offsets are committed); then `--changes` changes are made to `snap` once, in
   transactions of 1,000 (600 inserts of new rows, 300 updates, 100 deletes: 1,100
   records with the deletes' tombstones); each system is resumed in turn and timed
   until its topic holds the whole backlog: the binlog is MySQL's replication slot;
3. latency: a table `lat` with a TIMESTAMP(6) column defaulting to the statement's
   time, each system's connector streaming it (`no_data`), warm-up rows until they all
   arrived, then 50-row inserts every 10 ms (5,000 changes/s) for `--latency-s`;
   latency is each record's Kafka timestamp (the topic's LogAppendTime, the broker's
   clock for both) minus the row's timestamp.

`--log embedded` (with `--only tributary`) runs the same steps, configs and data on
Tributary's default log instead: the worker (standalone, tasks as threads, not the
embedded log's default of a process per task) on a fresh `log.dir`, no broker. The bench
reads that directory with FileLog: "arrived" is the topic's end offset, and the latency's
stamp the log's own at the append (MySqlCdcSource's records carry no timestamp, so the
log's clock stamps them as it appends: LogAppendTime, not the binlog event's time); a
stamp before its row's commit fails the run. No ratios, no `broker_<key>`.

    python bench/mysql_cdc_bench.py [--rows N] [--changes N] [--latency-s S]
                                    [--only tributary|debezium] [--log kafka|embedded]
                                    [--profile DIR]
                                    [--profile-idle]
                                    [--connect-heap 1g] [--dir DIR]

Fair settings: bench/peers_bench.py's (Kafka Connect standalone, -Xmx1g, G1, its
producer as shipped; topics created by the bench, one partition, LogAppendTime), and
Debezium's documented tuning keys for both: max.batch.size=8192, max.queue.size=32768
(four times the defaults), snapshot.fetch.size=10240, poll.interval.ms=100. Each
connector has a `database.server.id` of its own, as replicas must.

`--profile DIR` records py-spy (`pip install py-spy`) over Tributary's worker during each
step (DIR/<step>.txt, collapsed stacks: `py-spy record --format raw`); with
`--profile-idle` the waiting threads too, each thread's stacks apart (where the task's
wall-clock time goes: waiting for the log's acknowledgements, for the reader, ...).

Keys: snapshot_rows_per_s, cdc_changes_per_s, cdc_latency_p50_ms, cdc_latency_p99_ms
(Tributary's); mysql_snapshot_debezium_rows_per_s, mysql_streaming_debezium_changes_per_s,
debezium_latency_p50_ms, debezium_latency_p99_ms; the ratios mysql_snapshot_vs_debezium
and mysql_streaming_vs_debezium; targets_met (one flag per target of the issue); the
sizes and settings; `log` (kafka or embedded).

The machine is shared, so beside the rates each system's worker process CPU over the
timed steps is printed (`<system>_snapshot_cpu_us_per_row`,
`<system>_stream_cpu_us_per_change`: user + system time of the worker process, whatever
the load) and the 1-minute load average at the start of each step (`load_1m`); the
database server's and the broker's CPU over the same steps beside it
(`mysqld_<key>`, `broker_<key>`): which process a slow step waited on.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.peers_bench import System, create_topics, kafka_connect, ratio, tributary  # noqa: E402
from bench.peers_cdc import LAT_PER_TX, LAT_RATE, PER_TX, RECORDS_PER_TX, Topics  # noqa: E402
from tests.kafka_broker import KafkaBroker  # noqa: E402
from tests.mysql import PASSWORD, SUPERUSER, MysqlServer  # noqa: E402

DEBEZIUM = "io.debezium.connector.mariadb.MariaDbConnector"
#: Debezium's documented tuning keys (bench/peers_cdc.py's, less PostgreSQL's plugin).
TUNING = {
    "max.batch.size": "8192",
    "max.queue.size": "32768",
    "snapshot.fetch.size": "10240",
    "poll.interval.ms": "100",
}
PREFIXES = {"tributary": "trib", "debezium": "dbz"}
#: database.server.id per system and step: every binlog client needs its own.
SERVER_IDS = {"tributary": 5400, "debezium": 5500}
STEPS = {"snap": 1, "stream": 2, "lat": 3}
#: The worker on the embedded log: tasks as threads, as on Kafka (its CPU one process's).
EMBEDDED = {"task.isolation": "thread"}
TARGETS = {
    "snapshot_rows_per_s": 150_000,
    "cdc_changes_per_s": 50_000,
    "cdc_latency_p50_ms": 20,
    "cdc_latency_p99_ms": 100,
    "mysql_snapshot_vs_debezium": 1.5,
    "mysql_streaming_vs_debezium": 1.5,
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the snapshot")
    parser.add_argument(
        "--changes", type=int, default=200_000, help="streamed changes (whole thousands)"
    )
    parser.add_argument(
        "--latency-s", type=float, default=10.0, help="seconds of 5,000 changes/s per system"
    )
    parser.add_argument("--only", choices=("tributary", "debezium"), help="one system only")
    parser.add_argument("--log", choices=("kafka", "embedded"), default="kafka",
                        help="Tributary's log: the bench's broker, or a fresh log.dir (the "
                        "default deployment: no broker, no JVM; with --only tributary)")
    parser.add_argument("--profile", type=Path, help="py-spy stacks of Tributary's steps here")
    parser.add_argument("--profile-idle", action="store_true",
                        help="with --profile: waiting threads sampled too, each thread's "
                        "stacks apart (where the wall-clock time goes, not only the CPU)")
    parser.add_argument("--connect-heap", default="1g", help="Kafka Connect's -Xmx")
    parser.add_argument("--dir", type=Path, default=None, help="keep the run's files here")
    args = parser.parse_args(argv)
    if args.rows < 1000 or args.changes < 1000 or args.latency_s <= 0:
        parser.error("--rows ≥ 1000, --changes ≥ 1000, --latency-s > 0")
    if args.log == "embedded" and args.only != "tributary":
        parser.error("--log embedded runs Tributary alone (Kafka Connect needs the broker): "
                     "add --only tributary")
    return args


# ----------------------------------------------------------------------- the database


@dataclass(frozen=True)
class Database:
    """The bench's database, and the broker Debezium's history goes to (None: none)."""

    server: MysqlServer
    name: str
    bootstrap: str | None

    def connect(self) -> Any:
        import pymysql

        return pymysql.connect(host="127.0.0.1", port=self.server.port, user=SUPERUSER,
                               password=PASSWORD, database=self.name, autocommit=True)

    def topic(self, tag: str, step: str, table: str) -> str:
        return f"{PREFIXES[tag]}_{step}.{self.name}.{table}"

    def config(self, tag: str, step: str, table: str, mode: str) -> dict[str, str]:
        """The connector config both systems run (Debezium's tutorial keys and tuning)."""
        prefix = f"{PREFIXES[tag]}_{step}"
        return {
            "connector.class": DEBEZIUM,
            "tasks.max": "1",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.server.port),
            "database.user": SUPERUSER,
            "database.password": PASSWORD,
            "database.server.id": str(SERVER_IDS[tag] + STEPS[step]),
            "topic.prefix": prefix,
            "database.include.list": self.name,
            "table.include.list": f"{self.name}.{table}",
            "snapshot.mode": mode,
            "schema.history.internal.kafka.topic": f"{prefix}.history",
            **TUNING,
        } | ({"schema.history.internal.kafka.bootstrap.servers": self.bootstrap}
             if self.bootstrap else {})


def make_tables(db: Database, rows: int) -> None:
    """`snap` of `rows` rows (written with the binlog off for this session: the stream
    starts after it anyway) and the empty `lat`."""
    db.server.execute(
        f"USE `{db.name}`",
        "CREATE TABLE snap (id BIGINT PRIMARY KEY, a INT NOT NULL, b INT, "
        "c VARCHAR(32), d CHAR(32), e DOUBLE, f DECIMAL(12,2), g TIMESTAMP NULL, h BOOLEAN, "
        "i BIGINT)",
        "SET SESSION sql_log_bin = 0",
        "INSERT INTO snap SELECT seq, seq % 1000, seq % 7, CONCAT('name-', seq), "
        "MD5(seq), seq / 3.0, seq / 7.0, TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq SECOND, "
        f"seq % 2 = 0, seq * 3 FROM seq_1_to_{rows}",
        "SET SESSION sql_log_bin = 1",
        "CREATE TABLE lat (id INT AUTO_INCREMENT PRIMARY KEY, "
        "at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), pad VARCHAR(16))",
    )


def make_changes(db: Database, *, rows: int, transactions: int) -> None:
    """1,000 changes a transaction on `snap`: 600 inserts of new ids above `rows` (and
    above earlier transactions'), 300 updates of existing rows, 100 deletes of rows
    just inserted; then the marker of the end (row 1's `i` set to -2)."""
    conn = db.connect()
    with conn.cursor() as cur:
        for t in range(transactions):
            base = rows + 1 + t * 600
            old = 1 + (t * 300) % (rows - 299)
            cur.execute("BEGIN")
            cur.execute("INSERT INTO snap (id, a, c) SELECT seq, 0, CONCAT('new ', seq) "
                        f"FROM seq_{base}_to_{base + 599}")
            cur.execute("UPDATE snap SET a = a + 1 WHERE id BETWEEN %s AND %s",
                        (old, old + 299))
            cur.execute("DELETE FROM snap WHERE id BETWEEN %s AND %s",
                        (base + 500, base + 599))
            cur.execute("COMMIT")
        cur.execute("UPDATE snap SET i = -2 WHERE id = 1")  # the end of the backlog
    conn.close()


# -------------------------------------------------------------------------- profiling


@contextlib.contextmanager
def profiled(system: System, out: Path | None, step: str, idle: bool = False
             ) -> Iterator[None]:
    """py-spy's collapsed stacks of Tributary's worker over the block (when asked;
    `idle`: with the waiting threads' samples, per thread)."""
    if out is None or system.name != "tributary":
        yield
        return
    out.mkdir(parents=True, exist_ok=True)
    spy = subprocess.Popen(
        [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(system.peak.pid),
         "--subprocesses", "--rate", "200", "--format", "raw", "--output",
         str(out / f"{step}.txt"), *(["--idle", "--threads"] if idle else [])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        spy.wait(60)


# --------------------------------------------------------------------------- arrivals
# What the steps read of a topic (one partition), on either log: its end offset
# ("arrived"), its last record's value, each record's value beside its append time.


class KafkaTopics(Topics):
    """The bench's broker: topics made by the bench (one partition, LogAppendTime)."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self.bootstrap = bootstrap

    def create(self, names: list[str]) -> None:
        create_topics(self.bootstrap, names)

    def last_value(self, topic: str, end: int) -> bytes | None:
        from confluent_kafka import TopicPartition

        self.consumer.assign([TopicPartition(topic, 0, end - 1)])
        try:
            for msg in self.consumer.consume(1, timeout=10):
                if msg.error():
                    raise RuntimeError(f"{topic}: {msg.error()}")
                return msg.value()
            raise RuntimeError(f"{topic}: no record at offset {end - 1} in 10 s")
        finally:
            self.consumer.unassign()

    def stamped(self, topic: str) -> list[tuple[int, bytes | None]]:
        out = []
        for msg in self.read(topic):
            kind, stamp = msg.timestamp()
            if kind != 2:  # confluent_kafka.TIMESTAMP_LOG_APPEND_TIME
                raise RuntimeError(f"{topic}: a record stamped by its producer, not the broker")
            out.append((stamp, msg.value()))
        return out


class EmbeddedTopics:
    """The worker's embedded log, only read by the bench (a reader holds the write lock
    just to open a partition, once). The worker makes each topic at its first record.
    A record the task gives no timestamp, as MySqlCdcSource's, is stamped by the log's
    clock at the append: the append time, as LogAppendTime on a broker."""

    def __init__(self, directory: Path) -> None:
        from log import FileLog

        self.log = FileLog(directory, background=False, create=False)
        self._made: set[str] = set()

    def create(self, names: list[str]) -> None:  # the worker makes them
        del names

    def count(self, topic: str) -> int:
        if topic not in self._made:
            if topic not in self.log.list_topics():
                return 0
            self._made.add(topic)
        return self.log.latest_offset(topic, 0)

    def last_value(self, topic: str, end: int) -> bytes | None:
        return self.log.read(topic, 0, end - 1, max_records=1)[0].value

    def stamped(self, topic: str) -> list[tuple[int, bytes | None]]:
        out, offset, end = [], 0, self.count(topic)
        while offset < end:
            batch = self.log.read(topic, 0, offset)
            out += [(rec.timestamp, rec.value) for rec in batch]
            offset = batch[-1].offset + 1
        return out

    def close(self) -> None:
        self.log.close()


Arrivals = KafkaTopics | EmbeddedTopics


# ------------------------------------------------------------------------------ steps


def last_after(topics: Arrivals, topic: str) -> dict[str, Any] | None:
    """The `after` of the topic's last record (None for none or a tombstone)."""
    end = topics.count(topic)
    value = topics.last_value(topic, end) if end else None
    return json.loads(value)["after"] if value else None


def snapshot(system: System, tag: str, db: Database, topics: Arrivals, rows: int) -> float:
    """Step 1: rows per second of the snapshot."""
    topic = db.topic(tag, "snap", "snap")
    topics.create([topic])
    name = f"{tag}-snapshot"
    began = time.perf_counter()
    system.create(name, db.config(tag, "snap", "snap", "initial_only"))
    ended = system.wait(lambda: topics.count(topic) >= rows, [name], max(300.0, rows / 500),
                        f"{rows} snapshot records in {topic}")
    system.delete(name)
    return rows / (ended - began)


def warm_up(system: System, name: str, db: Database, topic: str, table: str,
            topics: Arrivals) -> tuple[int, int]:
    """Write to `table` until the connector streams it, then a marker, and wait for the
    marker: the topic's record count then (the writes before the connector's start
    position are not in it, so they cannot be counted on the writing side), and the
    writes made (the marker's included)."""
    conn = db.connect()
    writes = [1]  # the marker
    cur = conn.cursor()
    if table == "snap":
        write = "UPDATE snap SET i = i + 1 WHERE id = 1"
        marker = "UPDATE snap SET i = -1 WHERE id = 1"
    else:
        write, marker = ("INSERT INTO lat (pad) VALUES ('warm-up')",
                         "INSERT INTO lat (pad) VALUES ('marker')")

    def streaming() -> bool:
        cur.execute(write)
        writes[0] += 1
        return topics.count(topic) > 0

    system.wait(streaming, [name], 120, "the first warm-up record")
    cur.execute(marker)
    conn.close()

    def marked() -> bool:
        last = last_after(topics, topic) or {}
        return last.get("i") == -1 or last.get("pad") == "marker"

    system.wait(marked, [name], 60, "the warm-up's marker")
    return topics.count(topic), writes[0]


def stop(system: System, name: str) -> None:
    """PUT .../stop, and wait until the connector says STOPPED (its task gone, its
    offsets committed)."""
    answer = system.client.put(f"/connectors/{name}/stop")
    if answer.status_code not in (200, 202, 204):
        raise RuntimeError(f"{system.name}: stop {name}: {answer.status_code} {answer.text}")

    def stopped() -> bool:
        status = system.client.get(f"/connectors/{name}/status").json()
        return status["connector"]["state"] == "STOPPED" and not status.get("tasks")

    system.wait(stopped, [name], 60, f"{name} stopped")


def stream_ready(system: System, tag: str, db: Database, topics: Arrivals) -> tuple[int, int]:
    """Step 2, before the changes: the connector has streamed and stopped; its warm-up
    record count and the warm-up's writes to `snap`."""
    topic = db.topic(tag, "stream", "snap")
    topics.create([topic])
    name = f"{tag}-stream"
    system.create(name, db.config(tag, "stream", "snap", "no_data"))
    warm = warm_up(system, name, db, topic, "snap", topics)
    stop(system, name)
    return warm


def streaming(system: System, tag: str, db: Database, topics: Arrivals, warm: int,
              transactions: int) -> tuple[float, int]:
    """Step 2: changes per second of the backlog's stream, from the resume until the
    marker written after the backlog (`i = -2` on row 1) is the topic's last record;
    and the records beyond `warm` (the connector's own warm-up and the warm-up writes of
    the systems readied after it was stopped, which its resume streams too), the
    backlog and the marker (repeats: a resume should emit none)."""
    topic = db.topic(tag, "stream", "snap")
    name = f"{tag}-stream"
    expected = warm + transactions * RECORDS_PER_TX + 1
    began = time.perf_counter()
    answer = system.client.put(f"/connectors/{name}/resume")
    if answer.status_code not in (200, 202, 204):
        raise RuntimeError(f"{system.name}: resume: {answer.status_code} {answer.text}")

    def done() -> bool:
        return topics.count(topic) >= expected and (last_after(topics, topic) or {}).get(
            "i") == -2

    ended = system.wait(done, [name], max(300.0, expected / 200), f"the marker in {topic}")
    system.delete(name)
    return transactions * PER_TX / (ended - began), topics.count(topic) - expected


def latency(system: System, tag: str, db: Database, topics: Arrivals,
            seconds: float) -> tuple[float, float]:
    """Step 3: (p50, p99) in ms of commit → topic at 5,000 changes/s."""
    topic = db.topic(tag, "lat", "lat")
    topics.create([topic])
    name = f"{tag}-latency"
    system.create(name, db.config(tag, "lat", "lat", "no_data"))
    warm, _ = warm_up(system, name, db, topic, "lat", topics)
    total = int(seconds * LAT_RATE) // LAT_PER_TX * LAT_PER_TX
    conn = db.connect()
    with conn.cursor() as cur:
        next_at = time.perf_counter()
        for _ in range(total // LAT_PER_TX):
            cur.execute(f"INSERT INTO lat (pad) SELECT 'x' FROM seq_1_to_{LAT_PER_TX}")
            next_at += LAT_PER_TX / LAT_RATE
            pause = next_at - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
    conn.close()
    system.wait(lambda: topics.count(topic) >= warm + total, [name], 120,
                f"{total} latency records in {topic}")
    system.delete(name)
    latencies = []
    for stamp, value in topics.stamped(topic):
        after = json.loads(value)["after"]  # type: ignore[arg-type]
        if after["pad"] == "x":  # `at` is an io.debezium.time.ZonedTimestamp
            latencies.append(stamp - dt.datetime.fromisoformat(after["at"]).timestamp() * 1000)
    if len(latencies) != total:
        raise RuntimeError(f"{system.name}: {len(latencies)} latency records, not {total}")
    latencies.sort()
    if latencies[0] < -1:  # whole ms against µs: else a stamp before the commit
        raise RuntimeError(f"{topic}: stamped {-latencies[0]:.1f} ms before its commit")
    return statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1]


# -------------------------------------------------------------------------------- run


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far (its threads included)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def cpu_per(system: System, out: dict[str, Any], key: str, units: int,
            peers: dict[str, int] | None = None) -> Iterator[None]:
    """`out[key]`: the worker's CPU µs per unit of work over the block; and the load.
    `peers` (name -> pid: the database server, the broker) each get theirs under
    `out["<name>_<key>"]`, so a slow step shows whose CPU it waited on."""
    import os

    out.setdefault("load_1m", {})[key] = round(os.getloadavg()[0], 2)
    pids = {key: system.peak.pid} | {f"{n}_{key}": pid for n, pid in (peers or {}).items()}
    began = {k: cpu_s(pid) for k, pid in pids.items()}
    yield
    for k, pid in pids.items():
        out[k] = round((cpu_s(pid) - began[k]) / units * 1e6, 2)


def measure(systems: dict[str, System], db: Database, topics: Arrivals,
            args: argparse.Namespace, peers: dict[str, int]) -> dict[str, Any]:
    """The three steps on each system, one system at a time, arrivals read from `topics`
    (`peers`: the pids of the server and the broker, whose CPU per unit is printed
    beside the worker's)."""
    transactions = args.changes // PER_TX
    out: dict[str, Any] = {}
    keys = {"tributary": ("snapshot_rows_per_s", "cdc_changes_per_s", "cdc_latency"),
            "debezium": ("mysql_snapshot_debezium_rows_per_s",
                         "mysql_streaming_debezium_changes_per_s", "debezium_latency")}
    for tag, system in systems.items():  # Step 1
        with profiled(system, args.profile, "snapshot", args.profile_idle), cpu_per(
                system, out, f"{tag}_snapshot_cpu_us_per_row", args.rows, peers):
            out[keys[tag][0]] = round(snapshot(system, tag, db, topics, args.rows))
    ready = {tag: stream_ready(system, tag, db, topics) for tag, system in systems.items()}
    # a system stopped first streams the later systems' warm-up writes on its resume
    order = list(ready)
    warm = {tag: ready[tag][0] + sum(ready[t][1] for t in order[i + 1 :])
            for i, tag in enumerate(order)}
    out["stream_warm_up_writes"] = {tag: ready[tag][1] for tag in order}
    make_changes(db, rows=args.rows, transactions=transactions)
    for tag, system in systems.items():  # Step 2
        with profiled(system, args.profile, "streaming", args.profile_idle), cpu_per(
                system, out, f"{tag}_stream_cpu_us_per_change", args.changes, peers):
            rate, repeats = streaming(system, tag, db, topics, warm[tag], transactions)
        out[keys[tag][1]] = round(rate)
        out[f"{tag}_stream_repeats"] = repeats
    for tag, system in systems.items():  # Step 3
        with profiled(system, args.profile, "latency", args.profile_idle):
            p50, p99 = latency(system, tag, db, topics, args.latency_s)
        out[f"{keys[tag][2]}_p50_ms"], out[f"{keys[tag][2]}_p99_ms"] = (
            round(p50, 1), round(p99, 1))
    return out


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    with ExitStack() as stack:
        server = MysqlServer()
        stack.callback(server.stop)
        server.start()
        peers = {"mysqld": int((server.root / "mysqld.pid").read_text())}
        broker = None
        if args.log == "kafka":
            broker = KafkaBroker(base / "broker")
            broker.start()
            stack.callback(broker.stop)
            peers["broker"] = int((broker.directory / "kafka.pid").read_text())
        db = Database(server, server.create_database(), broker and broker.bootstrap)
        make_tables(db, args.rows)
        systems: dict[str, System] = {}
        if args.only != "debezium":  # embedded: the worker's log.dir, made fresh
            systems["tributary"] = stack.enter_context(tributary(base, "tributary", (
                {"bootstrap.servers": broker.bootstrap} if broker else EMBEDDED)))
        if args.only != "tributary":
            assert broker is not None  # parse_args refuses Debezium on the embedded log
            systems["debezium"] = stack.enter_context(
                kafka_connect(base, broker, args.connect_heap))
        topics: Arrivals = (KafkaTopics(broker.bootstrap) if broker
                            else EmbeddedTopics(base / "tributary" / "log"))
        stack.callback(topics.close)
        out = measure(systems, db, topics, args, peers)
        for system in systems.values():
            system.check()
        if "tributary" in systems:
            out["worker_rss_mb"] = round(systems["tributary"].peak.total / 2**20, 1)
        if "debezium" in systems:
            out["kafka_connect_rss_mb"] = round(systems["debezium"].peak.total / 2**20, 1)
    return out


def summarize(out: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The ratios and target flags of the issue over the raw figures."""
    if "snapshot_rows_per_s" in out and "mysql_snapshot_debezium_rows_per_s" in out:
        out["mysql_snapshot_vs_debezium"] = ratio(
            out["snapshot_rows_per_s"], out["mysql_snapshot_debezium_rows_per_s"])
        out["mysql_streaming_vs_debezium"] = ratio(
            out["cdc_changes_per_s"], out["mysql_streaming_debezium_changes_per_s"])
    out["targets_met"] = {
        key: (out[key] <= target if key.endswith("_ms") else out[key] >= target)
        for key, target in TARGETS.items() if key in out
    }
    out.update(log=args.log, rows=args.rows, changes=args.changes, latency_s=args.latency_s,
               cdc_latency_changes_per_s=LAT_RATE, kafka_connect_heap=args.connect_heap,
               debezium_connector=DEBEZIUM)
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # A bench stopped by `timeout` or a person still stops its servers and workers:
    # SIGTERM unwinds the context managers as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = args.dir or Path(tempfile.mkdtemp(prefix="tributary-mysql-cdc-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        out = summarize(run(args, base), args)
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
