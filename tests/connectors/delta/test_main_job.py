"""`python -m connect.demo --table-format delta`: DeltaSink into ./lake/delta, the
summary read with delta-rs (every version of each order landed, the latest per region
equals the database, a time-travel read), and no SparkSession started for it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_delta_main_job_reads_its_table_without_a_jvm(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "connect.demo", "--table-format", "delta", "--rows", "3000",
         "--seconds", "3", "--inserts-per-s", "500", "--updates-per-s", "300"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "→ DeltaSink → ./lake" in out
    assert "time travel: as of version" in out
    assert "database check (orders and revenue per region): equal" in out
    assert "result: OK" in out
    assert list((tmp_path / "lake/delta/shop-orders/_delta_log").glob("*.json"))
    assert "SparkContext" not in (tmp_path / "data/main-job/job.log").read_text()
