"""A streaming query writing to the log whose driver is SIGKILLed and started
again from its checkpoint: the topic holds every row of the batches Spark completed,
once each, with no gap — whether the kill landed while tasks staged, during the
commit's transaction, or between the commit and Spark's note of it (then Spark
re-runs the batch and the writer's marker skips it). The driver runs in a child
process (`writer_job`) with a SparkSession of its own: ~40 s, most of it two JVM
starts (~2 min on a machine as loaded as this one was)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from log import FileLog
from tests.connectors.spark.test_writer import committed
from tests.connectors.spark.writer_job import OUT
from tests.waiting import wait_until

pytestmark = pytest.mark.spark


def _values(log_dir: Path) -> list[int]:
    with FileLog(log_dir, background=False, create=False) as log:
        if OUT not in log.list_topics():
            return []
        return [int(r.value) for r in committed(log, OUT)]


def test_sigkilled_driver_restarted_from_its_checkpoint_writes_each_row_once(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    log_dir, checkpoint = tmp_path / "log", tmp_path / "checkpoint"
    FileLog(log_dir, background=False).close()
    env = {k: v for k, v in subprocess_env.items() if not k.startswith("PYSPARK")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    seen = 0
    for round_ in range(2):
        with open(tmp_path / f"driver-{round_}.log", "w") as out:
            child = subprocess.Popen(
                [sys.executable, "-m", "tests.connectors.spark.writer_job", str(log_dir),
                 str(checkpoint)],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
        try:
            # A few batches past what the last round left, then the kill (the last
            # round is stopped the same way: the check is the same).
            wanted = seen + 200
            wait_until(lambda n=wanted: len(_values(log_dir)) >= n, 90, f"{wanted} rows")
        finally:
            os.killpg(child.pid, signal.SIGKILL)  # the driver and its JVM
            child.wait(timeout=30)
        values = _values(log_dir)
        assert len(values) == len(set(values)), "a row twice"
        assert sorted(values) == list(range(len(values))), "a gap"
        seen = len(values)
