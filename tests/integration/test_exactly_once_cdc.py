"""Exactly-once PostgreSQL CDC into the lake: PostgresCdcSource → log → S3Sink on a
real `connect standalone` worker with `exactly.once.source.support=enabled` (embedded
log, tasks in child processes), a live PostgreSQL, a real S3 endpoint, and
test_cdc_kill's Writer committing inserts, updates, deletes and a truncate the whole
time.

The worker's process group is SIGKILLed three times at seeded moments — once in the
middle of the snapshot, twice in the stream — and the source's task process alone
once (the task FAILED, restarted through REST). Afterwards the topic read at
read_committed:

1. holds every change the writer committed (test_cdc_kill's check: what the last
   snapshot does not hold is streamed);
2. holds no change event twice: an event is (source LSN, row id, op), which a
   re-read of the same WAL would repeat (at least once, the same run repeats ~400);
3. holds each row's events in the order of their LSNs;

and the bucket holds the topic's events, each once and in offset order, in as many
whole objects (`flush.size`) as the topic fills: the sink, killed with the worker,
reads read_committed and names its objects by offset.

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
from tests.s3 import Bucket
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


@pytest.fixture
def start(
    tmp_path: Path,
    start_worker: Callable[..., WorkerProcess],
    postgres_url: str,
    s3_bucket: Bucket,
) -> Callable[[], WorkerProcess]:
    """The worker running the source and an S3 sink of its topic (JSON lines of the
    whole envelope, schema and payload: `schemas.enable=false` on the sink's side)."""
    source = connector_file(tmp_path, "cdc", {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "connection.url": postgres_url,
        "topic.prefix": "srv",
        "slot.name": SLOT,
        "table.include.list": "public\\.src",
        "skipped.operations": "none",  # truncates too
        "tombstones.on.delete": "false",  # every record a change event, as the lake's
        "poll.interval.ms": "50",
    })
    sink = connector_file(tmp_path, "lake", {
        "connector.class": "io.confluent.connect.s3.S3SinkConnector",
        "topics": TOPIC,
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        "flush.size": str(LAKE_FLUSH),
        **s3_bucket.props,
    })
    config = {
        "exactly.once.source.support": "enabled",
        "key.converter": JSON,
        "value.converter": JSON,
    }
    return lambda: start_worker([source, sink], config)


def test_every_change_once_in_order_across_seeded_sigkills(
    tmp_path: Path, postgres_url: str, start: Callable[[], WorkerProcess], s3_bucket: Bucket
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
        wait_until(
            lambda: events.stable() >= target, 60, f"{target} reads", interval_s=0.005
        )
        kill_process_group(worker)
        at_kill = len(events.read())
        assert at_kill < INITIAL_ROWS, f"the snapshot had finished ({at_kill} events)"
        worker = start()
        stream_reaches(writer.transactions + 50, 120)  # a new snapshot, then the stream
        writer.truncate()
        # Kills 2 and 3 (the worker) and the task process once, in the stream.
        for kill in ("worker", "task", "worker"):
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
    wait_until(lambda: len(s3_bucket.keys()) >= objects, 60, f"{objects} objects in S3")
    lake = _lake(s3_bucket)
    assert [_identity(e) for e in lake] == identities[: objects * LAKE_FLUSH]


def _lake(bucket: Bucket) -> list[dict[str, Any]]:
    """The change events in the bucket's objects, in offset order (names end
    `+<partition>+<start offset>.json`)."""
    keys = sorted(bucket.keys(), key=lambda k: int(k.rsplit("+", 1)[1].split(".")[0]))
    return [json.loads(line)["payload"] for k in keys for line in bucket.get(k).splitlines()]


def _repeats(identities: list[tuple[int, int | None, str]]) -> list[Any]:
    seen: set[Any] = set()
    return [i for i in identities if i in seen or seen.add(i)]  # type: ignore[func-returns-value]
