"""`connect log delete` of a topic a running worker uses: the worker survives. The
tasks on the topic fail with a message saying the topic was deleted (visible in their
REST status), the rest keeps running, restarted they go on into the topic created
anew without losing a line, and a clean stop stays clean (exit 0)."""

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

    # Restarted, the source writes its lines not committed yet into the topic made
    # anew, and the sink reads that from its start (no committed offset outlived the
    # old topic): every line arrives, in order of first arrival. (At least once: a
    # line the source appended after its last offset commit is written again, as
    # after any task failure.)
    for name in ("file-source", "file-sink"):
        path = f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true"
        assert worker.request("POST", path)[0] == 202
    expected = _lines(120).splitlines()
    wait_until(
        lambda: set(expected) <= set(out.read_bytes().splitlines()), what="every line"
    )
    worker.wait_state("file-sink", "RUNNING")
    produced = out.read_bytes().splitlines()
    assert set(produced) == set(expected) and list(dict.fromkeys(produced)) == expected

    assert worker.stop() == 0, worker.stderr
    assert "FileNotFoundError" not in worker.stderr
    assert "worker stopped" in worker.stderr


def test_the_internal_topics_a_running_worker_names_are_refused(tmp_path, start_worker) -> None:
    """No --worker-config needed: the running worker left its topic names beside its
    claim on the log directory (connect.worker.ownership)."""
    worker = start_worker(config={"config.storage.topic": "team-configs"})
    log_dir = str(tmp_path / "log")
    for topic, holds in (("team-configs", "connector configs"), ("connect-status", "statuses")):
        refused = _cli("log", "--log-dir", log_dir, "delete", topic, cwd=tmp_path)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        (line,) = refused.stderr.splitlines()
        assert line.startswith(f"error: {topic} is an internal topic") and holds in line
        assert "--force" in line
    assert worker.stop() == 0
    # Once no worker runs there, the name is an ordinary one again (no --worker-config).
    gone = _cli("log", "--log-dir", log_dir, "delete", "team-configs", cwd=tmp_path)
    assert gone.returncode == 0 and gone.stdout.strip() == "deleted topic team-configs"
