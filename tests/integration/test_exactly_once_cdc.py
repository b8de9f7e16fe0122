"""Exactly-once PostgreSQL CDC into the lake: PostgresCdcSource → log → S3Sink (a
real S3 endpoint) or SparkParquetSink (a Parquet dataset on local files, Confluent's
HDFS 3 sink's class name) on a real `connect standalone` worker with
`exactly.once.source.support=enabled` (embedded log, tasks in child processes), a
live PostgreSQL, and test_cdc_kill's Writer committing inserts, updates, deletes and
a truncate the whole time.

With S3, the worker's process group is SIGKILLed three times at seeded moments —
once in the middle of the snapshot, twice in the stream — and the source's task
process alone once (the task FAILED, restarted through REST); with Parquet, twice
(mid-snapshot and in the stream: the same paths, kept short). Afterwards the topic
read at read_committed:

1. holds every change the writer committed (test_cdc_kill's check: what the last
   snapshot does not hold is streamed);
2. holds no change event twice: an event is (source LSN, row id, op), which a
   re-read of the same WAL would repeat (at least once, the same run repeats ~400);
3. holds each row's events in the order of their LSNs;

and the lake holds the topic's events, each once and in offset order, in as many
whole objects or files (`flush.size`) as the topic fills: the sink, killed with the
worker, reads read_committed and names its objects by offset.

A snapshot cut short is done again from a new slot, as Debezium does: its reads
committed before the kill stay in the topic (at the old slot's LSN), then the new
snapshot's reads (at the new one's) and the stream — distinct events, not repeats.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psutil
import pytest

from tests.integration.conftest import JSON, WorkerProcess, connector_file
from tests.integration.test_cdc_kill import (
    SLOT,
    TOPIC,
    Writer,
    check_nothing_missing,
    create_source,
    kill_process_group,
    slot_exists,
)
from tests.integration.test_exactly_once_source import Committed
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.slow]

INITIAL_ROWS = 60_000  # a snapshot of ~1 s, a transaction a poll
LAKE_FLUSH = 5_000  # records an S3 object


class Events:
    """The topic's change events at read_committed (tombstones left out), parsed as
    they arrive."""

    def __init__(self, log_dir: Path) -> None:
        self.committed = Committed(log_dir, topic=TOPIC)
        self.payloads: list[dict[str, Any]] = []
        self._parsed = 0

    def read(self) -> list[dict[str, Any]]:
        values = self.committed.read()
        for value in values[self._parsed :]:
            if value is not None:
                self.payloads.append(json.loads(value)["payload"])
        self._parsed = len(values)
        return self.payloads

    def stable(self) -> int:
        """The topic's last stable offset (0 before it exists): cheap to poll."""
        log = self.committed.log
        return log.last_stable_offset(TOPIC, 0) if TOPIC in log.list_topics() else 0

    def has_insert(self, id_: int) -> bool:
        return any(e["op"] == "c" and e["after"]["id"] == id_ for e in reversed(self.read()))

    def close(self) -> None:
        self.committed.close()


def _identity(event: dict[str, Any]) -> tuple[int, int | None, str]:
    row = event["after"] or event["before"]
    return event["source"]["lsn"], None if row is None else row["id"], event["op"]


def _task_process(worker: WorkerProcess, pg_port: int) -> int | None:
    """The task process: the worker's child connected to PostgreSQL."""
    for pid in worker.task_pids():
        try:
            connections = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.Error:
            continue
        if any(c.raddr and c.raddr.port == pg_port for c in connections):
            return pid
    return None


def _task_state(worker: WorkerProcess) -> str | None:
    status = worker.status("cdc")
    return status["tasks"][0]["state"] if status and status["tasks"] else None


class Lake:
    """The sink's side: its connector config, the objects it published, and the
    change events in them in offset order."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.kind = request.param
        common = {"topics": TOPIC, "flush.size": str(LAKE_FLUSH)}
        if self.kind == "s3":  # JSON lines of the whole envelope (schemas.enable=false)
            self.bucket = request.getfixturevalue("s3_bucket")
            self.props = {
                "connector.class": "io.confluent.connect.s3.S3SinkConnector",
                "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
                "value.converter": JSON,
                "value.converter.schemas.enable": "false",
                **common,
                **self.bucket.props,
            }
        else:  # columns from the envelope's schema (the worker's JsonConverter)
            self.root = tmp_path / "lake"
            self.props = {
                "connector.class": "io.confluent.connect.hdfs3.Hdfs3SinkConnector",
                "store.url": self.root.as_uri(),
                **common,
            }

    def _names(self) -> list[str]:
        if self.kind == "s3":
            return list(self.bucket.keys())
        return [str(p) for p in (self.root / "topics" / TOPIC).rglob("*.parquet")]

    def objects(self) -> int:
        return len(self._names())

    def events(self) -> list[dict[str, Any]]:
        """In offset order (names end `+<partition>+<start offset>.json`, or
        `+<start>+<end>.parquet`)."""
        if self.kind == "s3":
            keys = sorted(self._names(), key=lambda k: int(k.rsplit("+", 1)[1].split(".")[0]))
            lines = (line for k in keys for line in self.bucket.get(k).splitlines())
            return [json.loads(line)["payload"] for line in lines]
        import pyarrow.parquet as pq

        files = sorted(self._names(), key=lambda f: int(f.rsplit("+", 2)[1]))
        return [row for f in files for row in pq.read_table(f).to_pylist()]


@pytest.fixture(params=["s3", "parquet"])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Lake:
    return Lake(request, tmp_path)


@pytest.fixture
def start(
    tmp_path: Path,
    start_worker: Callable[..., WorkerProcess],
    postgres_url: str,
    lake: Lake,
) -> Callable[[], WorkerProcess]:
    """The worker running the source and the lake's sink of its topic."""
    source = connector_file(
        tmp_path,
        "cdc",
        {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "connection.url": postgres_url,
            "topic.prefix": "srv",
            "slot.name": SLOT,
            "table.include.list": "public\\.src",
            "skipped.operations": "none",  # truncates too
            "tombstones.on.delete": "false",  # every record a change event, as the lake's
            "poll.interval.ms": "50",
        },
    )
    sink = connector_file(tmp_path, "lake", lake.props)
    config = {
        "exactly.once.source.support": "enabled",
        "key.converter": JSON,
        "value.converter": JSON,
    }
    return lambda: start_worker([source, sink], config)


def test_every_change_once_in_order_across_seeded_sigkills(
    tmp_path: Path, postgres_url: str, start: Callable[[], WorkerProcess], lake: Lake
) -> None:
    rng = random.Random(618)
    pg_port = urlparse(postgres_url).port or 5432
    live = create_source(postgres_url, INITIAL_ROWS)
    events = Events(tmp_path / "log")
    worker = start()
    # From the slot's creation on, every committed change must reach the topic.
    wait_until(lambda: slot_exists(postgres_url), 30, "the replication slot")
    writer = Writer(postgres_url, live, per_s=60)
    writer.start()

    def stream_reaches(n_transactions: int, timeout_s: float = 60) -> None:
        """The writer past `n_transactions` more, and the topic past its last insert."""
        wait_until(lambda: writer.transactions >= n_transactions, timeout_s, "transactions")
        last = next(id_ for op, id_, _ in reversed(writer.committed) if op == "c")
        try:
            wait_until(lambda: events.has_insert(last), timeout_s, f"the insert of {last}")
        except AssertionError as exc:
            status, err = worker.status("cdc"), worker.stderr[-4000:]
            raise AssertionError(f"{exc}; {status}\n{err}") from None

    try:
        # Kill 1: in the middle of the snapshot.
        target = rng.randrange(2_000, 20_000)
        wait_until(lambda: events.stable() >= target, 60, f"{target} reads", interval_s=0.005)
        kill_process_group(worker)
        at_kill = len(events.read())
        assert at_kill < INITIAL_ROWS, f"the snapshot had finished ({at_kill} events)"
        worker = start()
        stream_reaches(writer.transactions + 50, 120)  # a new snapshot, then the stream
        writer.truncate()
        # Kills 2 and 3 (the worker) and the task process once, in the stream.
        for kill in ("worker", "task", "worker") if lake.kind == "s3" else ("worker",):
            stream_reaches(writer.transactions + rng.randrange(20, 120))
            time.sleep(rng.uniform(0, 0.5))
            if kill == "worker":
                kill_process_group(worker)
                worker = start()
                continue
            pid = wait_until(lambda w=worker: _task_process(w, pg_port), 30, "the task process")
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda w=worker: _task_state(w) == "FAILED", 30, "the task FAILED")
            code, _ = worker.request("POST", "/connectors/cdc/tasks/0/restart")
            assert code in (200, 202, 204)
        stream_reaches(writer.transactions + 50)
    finally:
        writer.stop()
    stream_reaches(writer.transactions)  # everything the writer committed
    seen = events.read()
    events.close()

    check_nothing_missing(seen, writer)
    identities = [_identity(e) for e in seen]
    repeated = len(identities) - len(set(identities))
    assert not repeated, f"{repeated} change events twice, e.g. {_repeats(identities)[:5]}"
    by_row: dict[int, list[int]] = {}
    for lsn, id_, _ in identities:
        if id_ is not None:
            by_row.setdefault(id_, []).append(lsn)
    unordered = [id_ for id_, lsns in by_row.items() if lsns != sorted(lsns)]
    assert not unordered, f"{len(unordered)} rows' events out of LSN order, e.g. {unordered[:5]}"
    # The partial snapshot and the whole one: two slots' LSNs among the reads.
    assert len({e["source"]["lsn"] for e in seen if e["op"] == "r"}) == 2
    assert len(writer.committed) > 1_000

    # The lake: every whole object's worth of the topic, each event once, in order.
    objects = len(seen) // LAKE_FLUSH
    wait_until(lambda: lake.objects() >= objects, 60, f"{objects} objects in the lake")
    assert [_identity(e) for e in lake.events()] == identities[: objects * LAKE_FLUSH]


def _repeats(identities: list[tuple[int, int | None, str]]) -> list[Any]:
    seen: set[Any] = set()
    return [i for i in identities if i in seen or seen.add(i)]  # type: ignore[func-returns-value]
