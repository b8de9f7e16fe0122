"""`connect log delete` of a topic a running worker uses: the worker survives. The
tasks on the topic fail with a message saying the topic was deleted (visible in their
REST status), the rest keeps running, restarted they go on into the topic created
anew without losing or repeating a line, and a clean stop stays clean (exit 0)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import WorkerProcess, connector_file
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def _lines(n: int, start: int = 0) -> bytes:
    return "".join(f"line {i:05d}\n" for i in range(start, n)).encode()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "connect.cli.main", *args],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _failed_trace(worker: WorkerProcess, name: str) -> str | None:
    status = worker.status(name)
    if not status or not status["tasks"] or status["tasks"][0]["state"] != "FAILED":
        return None
    return status["tasks"][0]["trace"]


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_deleting_a_topic_in_use_fails_its_tasks_and_the_worker_survives(
    tmp_path, start_worker, isolation
) -> None:
    src, out, other = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "other.txt"
    files = [
        connector_file(
            tmp_path,
            "file-source",
            {"connector.class": "FileStreamSource", "file": str(src), "topic": "lines"},
        ),
        connector_file(
            tmp_path,
            "file-sink",
            {"connector.class": "FileStreamSink", "file": str(out), "topics": "lines"},
        ),
        connector_file(
            tmp_path,
            "other-source",
            {"connector.class": "FileStreamSource", "file": str(other), "topic": "others"},
        ),
    ]
    src.write_bytes(_lines(100))
    other.write_bytes(_lines(10))
    worker = start_worker(files, config={"task.isolation": isolation})
    wait_until(lambda: out.exists() and out.read_bytes() == _lines(100), what="the output")

    deleted = _cli("log", "--log-dir", str(tmp_path / "log"), "delete", "lines", cwd=tmp_path)
    assert deleted.returncode == 0, deleted.stderr
    with open(src, "ab") as f:
        f.write(_lines(120, 100))

    for name in ("file-source", "file-sink"):
        trace = wait_until(lambda n=name: _failed_trace(worker, n), what=f"{name} FAILED")
        print(worker.status(name))
        last = trace.strip().splitlines()[-1]
        assert "topic 'lines' was deleted" in last, trace
    # The connector on another topic is untouched.
    worker.wait_state("other-source", "RUNNING")
    assert worker.status("file-sink")["connector"]["state"] == "RUNNING"

    # Restarted, the source writes its uncommitted lines into the topic anew, and the
    # sink reads that from its start (no committed offset outlived the old topic):
    # every line once.
    for name in ("file-source", "file-sink"):
        path = f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true"
        assert worker.request("POST", path)[0] == 202
    wait_until(lambda: out.stat().st_size >= len(_lines(120)), what="the lines after 100")
    worker.wait_state("file-sink", "RUNNING")
    assert out.read_bytes() == _lines(120)

    assert worker.stop() == 0, worker.stderr
    assert "FileNotFoundError" not in worker.stderr
    assert "worker stopped" in worker.stderr
