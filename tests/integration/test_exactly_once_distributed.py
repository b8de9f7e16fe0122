"""Exactly-once sources on a distributed cluster (real `connect distributed`
processes sharing one embedded log): the leader's fencing round before each new task
generation, and tasks moved by a SIGKILL of their worker fencing their predecessors,
so the topic read at read_committed holds each task's seqnos once, in order, with no
gap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from log import FileLog
from tests.integration.test_distributed import Cluster, source
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "eos-numbers"


def _committed_seqnos(log_dir: Path) -> dict[int, list[int]]:
    """Seqnos per task in the topic at read_committed, in offset order."""
    out: dict[int, list[int]] = {}
    with FileLog(log_dir, background=False) as log:
        if TOPIC not in log.list_topics():
            return out
        for p in range(log.partition_count(TOPIC)):
            offset = 0
            while True:
                records = log.read(TOPIC, p, offset, isolation_level="read_committed")
                for r in records:
                    out.setdefault(int(r.key or b"-1"), []).append(int(r.value or b"-1"))
                after = getattr(records, "next_offset", None)
                after = (
                    after if after is not None else (records[-1].offset + 1 if records else offset)
                )
                if after <= offset:
                    break
                offset = after
    return out


def _fencing_records(log_dir: Path) -> list[dict[str, Any]]:
    with FileLog(log_dir, background=False) as log:
        return [
            json.loads(r.value)
            for r in log.read("connect-configs", 0, 0, max_bytes=16 << 20)
            if r.key and r.key.startswith(b"tasks-fencing-") and r.value
        ]


def _at_least(log_dir: Path, tasks: int, n: int) -> bool:
    seqnos = _committed_seqnos(log_dir)
    return len(seqnos) >= tasks and all(len(s) >= n for s in seqnos.values())


def test_fenced_generations_and_moved_tasks_write_each_seqno_once(tmp_path: Path) -> None:
    c = Cluster(tmp_path, **{"exactly.once.source.support": "enabled"})
    log_dir = tmp_path / "log"
    try:
        c.start_many(2)
        c.create("eos", source(TOPIC, tmp_path / "report.jsonl", tasks=2, throughput=300))
        wait_until(lambda: c.running("eos", 2), 60, "two tasks running")
        wait_until(lambda: _at_least(log_dir, 2, 200), 60, "seqnos committed")
        # The leader's round for the first generation wrote its record.
        assert {"task-count": 2} in _fencing_records(log_dir)
        # A new generation (3 tasks): the old one's ids are fenced first.
        c.create("eos", source(TOPIC, tmp_path / "report.jsonl", tasks=3, throughput=300))
        wait_until(lambda: {"task-count": 3} in _fencing_records(log_dir), 60, "the round")
        wait_until(lambda: c.running("eos", 3), 60, "three tasks running")
        # A worker SIGKILLed: its tasks move, each fencing its predecessor.
        victim = c.live()[0]
        victim.kill()
        wait_until(lambda: c.running("eos", 3), 60, "the tasks moved")
        before = {t: len(s) for t, s in _committed_seqnos(log_dir).items()}
        wait_until(
            lambda: all(
                len(s) > before.get(t, 0) + 100 for t, s in _committed_seqnos(log_dir).items()
            ),
            60,
            "progress after the move",
        )
        assert c.any().request("PUT", "/connectors/eos/stop")[0] == 204
        seqnos = _committed_seqnos(log_dir)
        assert sorted(seqnos) == [0, 1, 2]
        for task, got in seqnos.items():
            assert got == list(range(len(got))), f"task {task}: a seqno repeated or missing"
    finally:
        c.stop_all()
        for worker in c.workers.values():
            if worker.proc.poll() is None:
                worker.kill()
