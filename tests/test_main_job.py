"""The README's run command (`make run`), executed on a fresh checkout path: the main
job sets everything up there and ends with its Spark SQL summary, checked against the
database it changed."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.spark]


def _checkout(target: Path) -> Path:
    """The working tree's files (tracked, and new ones not ignored) at a new path."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_make_run_on_a_fresh_checkout(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "tributary")
    assert not (checkout / "lake").exists() and not (checkout / "data").exists()
    # The installed environment is shared (a fresh `make run` spends minutes building
    # PySpark's wheel); `-o STAMP` tells make it is up to date, so the run command
    # itself is what runs, from the new path.
    (checkout / ".venv").symlink_to(ROOT / ".venv")
    digest = subprocess.run(
        "cat pyproject.toml | cksum | cut -d' ' -f1",
        shell=True,
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["PYTHONPATH"] = str(checkout)
    started = time.monotonic()
    done = subprocess.run(
        ["make", "-o", f".venv/.installed-{digest}", "run"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "result: OK" in out
    assert "database check (orders and revenue per region): equal" in out
    assert "table shop-orders:" in out and "spark.read.format('tributary')" in out
    files = list((checkout / "lake/topics/shop-orders").rglob("*.parquet"))
    assert {f.parent.name for f in files} == {
        "region=apac",
        "region=eu",
        "region=latam",
        "region=us",
    }
    assert sum(pq.read_metadata(f).num_rows for f in files) >= 100_000
    assert elapsed < 120, f"the main job took {elapsed:.0f}s"
