"""A worker's source task keeps the cyclic collector's full collections off the
process's long-lived objects (`connect.worker.gc_freeze.freeze_long_lived`): frozen
after the first task's start and after its first offset commit, so a full collection
in the middle of a stream scans what came after only. Before, it scanned everything
the worker had imported with the GIL held: the MySQL CDC latency's stalls.

In a fresh interpreter: the test session's own objects and earlier freezes would say
nothing about a worker's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import gc, json, sys, time
from pathlib import Path
from connect.herder.standalone import StandaloneHerder
from connect.worker import gc_freeze
from connect.worker.config import WORKER_CONFIG
from log import FileLog
from tests.waiting import wait_until

base = Path(sys.argv[1])
raw = {"log.dir": str(base / "log"), "offset.flush.interval.ms": "100",
       "task.isolation": "thread", **json.loads(sys.argv[2])}
log = FileLog(base / "log")
herder = StandaloneHerder({**raw, **WORKER_CONFIG.parse(raw)}, log=log, worker_id="w1")
herder.start()
before = gc.get_freeze_count()
herder.put_connector_config("src", {
    "connector.class": "tests.connect.worker.failing_plugins.CountThenFailSource",
    "topic": "counted", "count": "50", "batch": "10",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}, allow_replace=False)
wait_until(lambda: gc_freeze.FROZEN == {"start", "warm"}, 30, "both freezes")
out = {"before": before, "frozen": gc.get_freeze_count(), "unfrozen": len(gc.get_objects())}
herder.stop()
log.close()
print(json.dumps(out))
"""


@pytest.mark.parametrize(
    "worker",
    [{}, {"exactly.once.source.support": "enabled"}],
    ids=["at-least-once", "exactly-once"],
)
def test_a_source_task_freezes_the_long_lived_objects_twice_and_no_more(
    tmp_path: Path, worker: dict[str, str]
) -> None:
    """Exactly once, the first transaction's commit is the "warm" moment (it was
    never reached: no offset commit of the at-least-once kind is made)."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), json.dumps(worker)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["before"] == 0
    # the worker's start-up (herder, log, converters, the task's modules) is frozen, and
    # what a full collection still scans is a small part of it
    assert out["frozen"] > 20_000
    assert out["unfrozen"] < out["frozen"] / 4, out
