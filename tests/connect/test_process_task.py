"""The task-process side of task.isolation=process, driven directly over a real pipe."""

from __future__ import annotations

import multiprocessing
import signal
from pathlib import Path

from connect.worker.config import WORKER_CONFIG
from connect.worker.process_task import _child_main


def test_a_child_that_cannot_open_the_log_reports_the_reason(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "log"
    not_a_dir.write_text("a file where the log directory should be")
    raw = {"log.dir": str(not_a_dir)}
    parent, child = multiprocessing.Pipe()
    spec = {
        "connector": "c",
        "task": 0,
        "connector_props": {},
        "task_props": {},
        "paused": False,
        "log_dir": str(not_a_dir),
        "worker_id": "w",
        "worker_config": {**raw, **WORKER_CONFIG.parse(raw)},
        "log_level": "WARNING",
    }
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        _child_main(child, spec)
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
    kind, state, trace = parent.recv()
    assert (kind, state) == ("status", "FAILED")
    assert str(not_a_dir) in trace and "Error" in trace
    parent.close()
