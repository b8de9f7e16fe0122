"""Exactly-once source support end to end: real `connect standalone` processes (tasks
in child processes, the default), the real embedded log, SIGKILLs.

With `exactly.once.source.support=enabled` a FileStreamSource's records and its
offsets are committed in one transaction, so a reader at read_committed sees every
line of the file exactly once, in order, whatever was killed when: the worker at
seeded random moments, the task process alone, a task fenced by a newer producer of
its transactional.id (its open transaction never shows), a transaction a killed
worker left open (aborted once its timeout passes, holding readers up no longer),
which a sink on an exactly-once worker (read_committed) never passes on.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from connect.worker.exactly_once_config import fence_producers
from log import FileLog
from tests.integration.conftest import connector_file
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

TOPIC = "lines"
EOS = {"exactly.once.source.support": "enabled"}


def _lines(n: int, start: int = 0) -> bytes:
    return "".join(f"line {i:07d}\n" for i in range(start, n)).encode()


def _source(tmp_path: Path, name: str = "eos-source", **extra: str) -> tuple[Path, Path]:
    src = tmp_path / f"{name}.txt"
    src.touch()
    config = {"connector.class": "FileStreamSource", "file": str(src), "topic": TOPIC}
    return src, connector_file(tmp_path, name, {**config, **extra})


class Committed:
    """The topic as a read_committed consumer sees it, read on from where it was."""

    def __init__(
        self, log_dir: Path, isolation_level: str = "read_committed", *, topic: str = TOPIC
    ) -> None:
        self.log = FileLog(log_dir, background=False)
        self.topic = topic
        self._isolation = isolation_level
        self.values: list[bytes] = []
        self._position = 0

    def read(self) -> list[bytes]:
        if self.topic not in self.log.list_topics():
            return self.values
        while True:
            records = self.log.read(
                self.topic,
                0,
                self._position,
                max_bytes=4 << 20,
                isolation_level=self._isolation,
            )
            self.values.extend(r.value for r in records)
            after = getattr(records, "next_offset", None)
            if after is None:
                after = records[-1].offset + 1 if records else self._position
            if after <= self._position:
                return self.values
            self._position = after

    def count_at_least(self, n: int) -> bool:
        return len(self.read()) >= n

    def ends(self) -> tuple[int, int]:
        """(last stable offset, log end offset) of the topic's partition."""
        return self.log.last_stable_offset(self.topic, 0), self.log.latest_offset(self.topic, 0)

    def close(self) -> None:
        self.log.close()


def _task(worker: Any, name: str) -> dict[str, Any] | None:
    status = worker.status(name)
    return status["tasks"][0] if status and status["tasks"] else None


def _reading(pids: list[int], path: Path) -> int | None:
    """The task process that has `path` (the source's file) open."""
    for pid in pids:
        try:
            if any(f.path == str(path) for f in psutil.Process(pid).open_files()):
                return pid
        except psutil.Error:
            continue
    return None


def test_every_line_exactly_once_across_seeded_sigkills_of_the_worker(
    tmp_path: Path, start_worker: Any
) -> None:
    rng = random.Random(618)
    part, rounds = 30_000, 5
    # Small polls: a transaction each, many commit points for a kill to cut.
    src, config = _source(tmp_path, **{"batch.size": "100"})
    committed = Committed(tmp_path / "log")
    mid_file = 0
    for i in range(rounds):
        # The file grows by a part each round, so that every kill finds work to cut,
        # however fast the machine: a seeded moment once some of it is committed.
        with open(src, "ab") as f:
            f.write(_lines((i + 1) * part, i * part))
        worker = start_worker([config], EOS)
        target = min((i + 1) * part, len(committed.read()) + rng.randrange(1, part))
        wait_until(lambda t=target: committed.count_at_least(t), 60, f"{target} lines")
        time.sleep(rng.uniform(0, 0.2))
        worker.kill()
        mid_file += len(committed.read()) < (i + 1) * part
    start_worker([config], EOS)
    n = rounds * part
    wait_until(lambda: committed.count_at_least(n), 60, "every line committed")
    assert committed.read() == _lines(n).splitlines()  # each once, in order
    assert mid_file >= 1  # some kill cut the file's reading short
    committed.close()


def test_a_killed_task_process_fails_and_its_restart_repeats_nothing(
    tmp_path: Path, start_worker: Any
) -> None:
    src, config = _source(tmp_path, **{"batch.size": "500"})
    expected = _lines(120_000)
    src.write_bytes(expected)
    committed = Committed(tmp_path / "log")
    worker = start_worker([config], EOS)
    wait_until(lambda: committed.count_at_least(20_000), 60, "some lines committed")
    pid = wait_until(lambda: _reading(worker.task_pids(), src), 30, "the task process")
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: (_task(worker, "eos-source") or {}).get("state") == "FAILED", 30, "FAILED")
    code, _ = worker.request("POST", "/connectors/eos-source/tasks/0/restart")
    assert code in (200, 202, 204)
    wait_until(lambda: committed.count_at_least(len(expected.splitlines())), 60, "all lines")
    assert committed.read() == expected.splitlines()
    committed.close()


def test_a_fenced_task_fails_saying_so_and_its_open_transaction_never_shows(
    tmp_path: Path, start_worker: Any
) -> None:
    # interval boundary, long interval: the task's first transaction stays open.
    src, config = _source(
        tmp_path,
        **{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "600000"},
    )
    src.write_bytes(_lines(1_000))
    worker = start_worker([config], EOS)
    everything = Committed(tmp_path / "log", "read_uncommitted")
    wait_until(lambda: everything.count_at_least(1_000), 30, "the open transaction's lines")
    # A newer producer of the task's transactional.id: the worker's id is its URL's
    # host:port in standalone mode (connect.worker.source_transactions).
    zombie_id = f"127.0.0.1:{worker.port}-eos-source-0"
    fence_producers(everything.log, [zombie_id], transaction_timeout_ms=60_000)
    with open(src, "ab") as f:
        f.write(_lines(1_100, 1_000))  # its next append meets the fence
    task = wait_until(
        lambda: (t := _task(worker, "eos-source")) and t["state"] == "FAILED" and t, 30, "FAILED"
    )
    assert "was fenced" in task["trace"]
    assert zombie_id in task["trace"]
    # Kafka's fencing endpoint: the current generation's round is done already.
    assert worker.request("PUT", "/connectors/eos-source/fence")[0] == 204
    assert worker.request("PUT", "/connectors/nothing/fence")[0] == 404
    committed = Committed(tmp_path / "log")
    lso, end = committed.ends()
    assert lso == end  # nothing left open: the fence aborted it
    assert committed.read() == []  # and none of it ever shows
    everything.close()
    committed.close()


def test_a_transaction_a_killed_worker_left_open_is_aborted_after_its_timeout(
    tmp_path: Path, start_worker: Any
) -> None:
    # Why 5 s: the transaction must still be open when the test first looks (at
    # load 17 on two cores, 2 s passed between its first and last append and it
    # was aborted before the look).
    timeout_ms = 5_000
    open_forever = {
        "transaction.boundary": "interval",
        "transaction.boundary.interval.ms": "600000",
        "producer.override.transaction.timeout.ms": str(timeout_ms),
    }
    src, config = _source(tmp_path, **open_forever)
    expected = _lines(3_000)
    src.write_bytes(expected)
    worker = start_worker([config], EOS)
    committed = Committed(tmp_path / "log")
    wait_until(lambda: committed.ends()[1] >= 3_000, 30, "the open transaction's lines")
    assert committed.ends()[0] == 0  # open: read_committed readers held at its start
    worker.kill()
    killed = time.monotonic()

    # A reader alone (no worker, no maintenance thread) sees it aborted in time.
    def aborted() -> bool:
        committed.read()  # a read_committed read is what meets the open transaction
        lso, end = committed.ends()
        return lso == end

    wait_until(aborted, 30, "the abort")
    assert time.monotonic() - killed < timeout_ms / 1000 + 5
    assert committed.read() == []
    # A restart (commits every poll now) writes every line once; a sink, reading
    # read_committed on an exactly-once worker, never passes on the aborted copy.
    _, poll_config = _source(tmp_path, "eos-source", **{"transaction.boundary": "poll"})
    out = tmp_path / "out.txt"
    sink = connector_file(
        tmp_path, "sink", {"connector.class": "FileStreamSink", "file": str(out), "topics": TOPIC}
    )
    start_worker([poll_config, sink], EOS)
    wait_until(lambda: committed.count_at_least(3_000), 60, "every line committed")
    assert committed.read() == expected.splitlines()
    wait_until(lambda: out.exists() and out.stat().st_size >= len(expected), 60, "the sink")
    assert out.read_bytes() == expected
    committed.close()
