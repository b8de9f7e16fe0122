"""The CDC half of bench/peers_bench.py: Tributary's PostgresCdcSource and Debezium's
PostgreSQL connector on the same table, the same backlog and the same broker.

Set-up, once (numbered as in `run`):
1. the table `snap` of N rows (bench/cdc_bench.py's), a publication for it, and one
   pgoutput slot per system for the stream, made before the changes so that both
   slots hold the same backlog;
2. the changes, in transactions of 1,000: 600 inserts of new rows, 300 updates of
   existing rows and 100 deletes of rows just inserted (1,100 records with the deletes'
   tombstones);
then per system, one after the other, with the very same connector config (Tributary
takes Debezium's class name and keys):
3. the snapshot: `snapshot.mode=initial_only`, its own slot; rows over the time from
   POST /connectors until the topic's high watermark reaches the table's row count;
4. the stream: `snapshot.mode=no_data` on the slot of step 1; changes over the time
   until the topic holds the backlog's 1,100 records per 1,000 changes;
5. latency: a table `lat` with a clock_timestamp() column, the system's slot made just
   before its connector, warm-up rows until they all arrived, then 50-row inserts
   every 10 ms (5,000 changes/s); latency is each record's Kafka timestamp (the
   topic's LogAppendTime: the broker's clock at the append, the same clock for both)
   minus the row's clock_timestamp().
Every slot a connector used is dropped once its connector is deleted, so no idle slot
keeps WAL for the next step.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from bench.cdc_bench import _pg, make_snap_table
from tests.waiting import wait_until

if TYPE_CHECKING:
    from bench.peers_bench import System

DEBEZIUM = "io.debezium.connector.postgresql.PostgresConnector"
#: Debezium's documented tuning keys (see bench/peers_bench.py's docstring), given to both.
TUNING = {
    "plugin.name": "pgoutput",
    "max.batch.size": "8192",
    "max.queue.size": "32768",
    "snapshot.fetch.size": "10240",
    "poll.interval.ms": "100",
}
PER_TX = 1000
RECORDS_PER_TX = 600 + 300 + 100 + 100  # inserts, updates, deletes and their tombstones
LAT_RATE, LAT_PER_TX = 5000, 50
PREFIXES = {"tributary": "trib", "debezium": "dbz"}


def connector_config(url: str, *, prefix: str, slot: str, publication: str, table: str,
                     mode: str) -> dict[str, str]:
    u = sa.make_url(url)
    return {
        "connector.class": DEBEZIUM,
        "tasks.max": "1",
        "database.hostname": str(u.host),
        "database.port": str(u.port),
        "database.user": str(u.username),
        "database.dbname": str(u.database),
        "topic.prefix": prefix,
        "slot.name": slot,
        "publication.name": publication,
        "publication.autocreate.mode": "disabled",
        "table.include.list": f"public.{table}",
        "snapshot.mode": mode,
        **TUNING,
    }


class Topics:
    """High watermarks and records of one-partition topics, read by one plain consumer
    (no group) for both systems."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "peers-bench",
                                  "enable.auto.commit": False})

    def count(self, topic: str) -> int:
        from confluent_kafka import TopicPartition

        return int(self.consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])

    def read(self, topic: str) -> list[Any]:
        from confluent_kafka import TopicPartition

        end = self.count(topic)
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        out: list[Any] = []
        deadline = time.monotonic() + 120
        while len(out) < end:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{topic}: read {len(out)} of {end} records in 120 s")
            for msg in self.consumer.consume(10_000, timeout=1.0):
                if msg.error():
                    raise RuntimeError(f"{topic}: {msg.error()}")
                out.append(msg)
        self.consumer.unassign()
        return out

    def close(self) -> None:
        self.consumer.close()


def drop_slot(url: str, slot: str) -> None:
    """Drop a slot once its walsender let it go (a deleted connector's may take a
    moment to exit)."""
    conn = _pg(url)
    with conn.cursor() as cur:
        def released() -> bool:
            cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
            row = cur.fetchone()
            return row is None or not row[0]

        wait_until(released, 60, f"slot {slot} released")
        cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                    "WHERE slot_name = %s", (slot,))
    conn.close()


def make_changes(url: str, *, rows: int, transactions: int) -> None:
    """Step 2: 1,000 changes a transaction on `snap`, new ids above `rows`."""
    conn = _pg(url)
    with conn.cursor() as cur:
        for t in range(transactions):
            base = rows + 1 + t * 600
            old = 1 + (t * 300) % (rows - 299)
            cur.execute(
                "BEGIN; INSERT INTO snap (id, a, c) SELECT n, 0, 'new ' || n "
                "FROM generate_series(%s, %s) n; "
                "UPDATE snap SET a = a + 1 WHERE id BETWEEN %s AND %s; "
                "DELETE FROM snap WHERE id BETWEEN %s AND %s; COMMIT",
                (base, base + 599, old, old + 299, base + 500, base + 599),
            )
    conn.close()


def snapshot(system: System, url: str, topics: Topics, create_topics: Callable[..., None],
             bootstrap: str, tag: str) -> float:
    """Step 3: rows per second of the snapshot."""
    prefix = f"{PREFIXES[tag]}_snap"
    topic = f"{prefix}.public.snap"
    create_topics(bootstrap, [topic])
    conn = _pg(url)
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM snap")
        rows = int(cur.fetchone()[0])
    conn.close()
    name = f"{tag}-snapshot"
    began = time.perf_counter()
    system.create(name, connector_config(url, prefix=prefix, slot=prefix,
                                         publication="peers_snap", table="snap",
                                         mode="initial_only"))
    ended = system.wait(lambda: topics.count(topic) >= rows, [name], max(300.0, rows / 500),
                        f"{rows} snapshot records in {topic}")
    system.delete(name)
    drop_slot(url, prefix)
    return rows / (ended - began)


def streaming(system: System, url: str, topics: Topics, create_topics: Callable[..., None],
              bootstrap: str, tag: str, transactions: int) -> float:
    """Step 4: changes per second of the backlog's stream."""
    prefix = f"{PREFIXES[tag]}_stream"
    topic = f"{prefix}.public.snap"
    create_topics(bootstrap, [topic])
    expected = transactions * RECORDS_PER_TX
    name = f"{tag}-stream"
    began = time.perf_counter()
    system.create(name, connector_config(url, prefix=prefix, slot=prefix,
                                         publication="peers_snap", table="snap",
                                         mode="no_data"))
    ended = system.wait(lambda: topics.count(topic) >= expected, [name],
                        max(300.0, expected / 200), f"{expected} change records in {topic}")
    system.delete(name)
    drop_slot(url, prefix)
    if topics.count(topic) != expected:
        raise RuntimeError(f"{system.name}: {topics.count(topic)} records, not {expected}")
    return transactions * PER_TX / (ended - began)


def latency(system: System, url: str, topics: Topics, create_topics: Callable[..., None],
            bootstrap: str, tag: str, seconds: float) -> tuple[float, float]:
    """Step 5: (p50, p99) in ms of commit → topic at 5,000 changes/s."""
    prefix = f"{PREFIXES[tag]}_lat"
    topic = f"{prefix}.public.lat"
    create_topics(bootstrap, [topic])
    conn = _pg(url)
    cur = conn.cursor()
    cur.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (prefix,))
    name = f"{tag}-latency"
    system.create(name, connector_config(url, prefix=prefix, slot=prefix,
                                         publication="peers_lat", table="lat", mode="no_data"))
    warm = [0]

    def stream_up() -> bool:
        cur.execute("INSERT INTO lat (pad) VALUES ('warm-up')")
        warm[0] += 1
        return topics.count(topic) > 0

    system.wait(stream_up, [name], 120, "the first warm-up record")
    system.wait(lambda: topics.count(topic) >= warm[0], [name], 60, "every warm-up record")
    total = int(seconds * LAT_RATE) // LAT_PER_TX * LAT_PER_TX
    next_at = time.perf_counter()
    for _ in range(total // LAT_PER_TX):
        cur.execute("INSERT INTO lat (pad) SELECT 'x' FROM generate_series(1, %s)",
                    (LAT_PER_TX,))
        next_at += LAT_PER_TX / LAT_RATE
        pause = next_at - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    system.wait(lambda: topics.count(topic) >= warm[0] + total, [name], 120,
                f"{total} latency records in {topic}")
    system.delete(name)
    conn.close()
    drop_slot(url, prefix)
    latencies = []
    for msg in topics.read(topic):
        kind, stamp = msg.timestamp()
        if kind != 2:  # confluent_kafka.TIMESTAMP_LOG_APPEND_TIME
            raise RuntimeError(f"{topic}: a record stamped by its producer, not the broker")
        after = json.loads(msg.value())["after"]
        if after["pad"] == "x":  # `at` is an io.debezium.time.ZonedTimestamp
            latencies.append(stamp - dt.datetime.fromisoformat(after["at"]).timestamp() * 1000)
    if len(latencies) != total:
        raise RuntimeError(f"{system.name}: {len(latencies)} latency records, not {total}")
    latencies.sort()
    return statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1]


def run(url: str, bootstrap: str, *, tributary: System, debezium: System, rows: int, changes: int,
        latency_s: float, create_topics: Callable[..., None]) -> dict[str, Any]:
    transactions = changes // PER_TX
    # Step 1
    make_snap_table(url, rows)
    conn = _pg(url)
    with conn.cursor() as cur:
        cur.execute("CREATE PUBLICATION peers_snap FOR TABLE snap")
        cur.execute("CREATE TABLE lat (id serial PRIMARY KEY, at timestamptz NOT NULL "
                    "DEFAULT clock_timestamp(), pad text)")
        cur.execute("CREATE PUBLICATION peers_lat FOR TABLE lat")
        for tag in PREFIXES.values():
            cur.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')",
                        (f"{tag}_stream",))
    conn.close()
    # Step 2
    make_changes(url, rows=rows, transactions=transactions)
    systems = {"tributary": tributary, "debezium": debezium}
    topics = Topics(bootstrap)
    out: dict[str, Any] = {}
    try:
        for tag, system in systems.items():  # Step 3
            out[f"cdc_snapshot_{tag}_rows_per_s"] = round(
                snapshot(system, url, topics, create_topics, bootstrap, tag))
        for tag, system in systems.items():  # Step 4
            out[f"cdc_streaming_{tag}_changes_per_s"] = round(
                streaming(system, url, topics, create_topics, bootstrap, tag, transactions))
        for tag, system in systems.items():  # Step 5
            p50, p99 = latency(system, url, topics, create_topics, bootstrap, tag, latency_s)
            key = "cdc" if tag == "tributary" else "debezium"
            out[f"{key}_p50_ms"], out[f"{key}_p99_ms"] = round(p50, 1), round(p99, 1)
    finally:
        topics.close()
    out["cdc_latency_changes_per_s"] = LAT_RATE
    return out
