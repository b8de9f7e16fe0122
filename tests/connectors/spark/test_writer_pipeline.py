"""The README's KSQL-style pipeline as shipped: the main job with `--stream-processing`
(connect.demo_streams, connectors.spark.streams, configs/main-job-streams-sink.json),
in a directory of its own, ends with its result tables equal to what the orders
topic holds: every order in its latest status, and orders and revenue per region. The job runs in
a child process (its own SparkSession): ~60 s."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.spark]


def test_main_job_with_stream_processing_fills_the_result_tables(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "connect.demo", "--stream-processing", "--rows", "3000",
         "--seconds", "3", "--inserts-per-s", "300", "--updates-per-s", "300"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "stream processing: queries orders_latest, region_revenue" in out
    assert "each order's latest status; orders and revenue per region): equal" in out
    assert "result: OK" in out
    # What the job checked, once more from here: the tables against the topic.
    os.chdir(tmp_path)
    try:
        from connect.demo_streams import expected_from_log

        latest, totals = expected_from_log()
    finally:
        os.chdir(ROOT)
    results = sqlite3.connect(tmp_path / "data/main-job/results.db")
    got = results.execute("SELECT id, status FROM orders_latest ORDER BY id").fetchall()
    assert got == latest and len(got) >= 3000
    revenue = results.execute(
        "SELECT region, sum(orders), count(*) FROM region_revenue GROUP BY region"
    ).fetchall()
    assert {r: n for r, n, _ in revenue} == {r: n for r, (n, _) in totals.items()}
    assert all(minutes >= 1 for _, _, minutes in revenue)
