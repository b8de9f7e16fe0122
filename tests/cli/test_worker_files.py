"""`connect standalone` / `connect distributed` with a config file they cannot use: one
line naming the file (and its line), exit 1, no traceback, before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration


def _connect(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "connect.cli.main", *args],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("mode", ["standalone", "distributed"])
def test_a_malformed_properties_worker_file_is_one_line(tmp_path: Path, mode: str) -> None:
    (tmp_path / "w.properties").write_text("log.dir=log\ngroup.id=g\nkey=\\u12x4\n")
    done = _connect(tmp_path, mode, "w.properties")
    assert done.returncode == 1
    assert done.stderr == (
        "error: worker config w.properties line 3: malformed \\uxxxx escape: \\u12x4\n"
    )
    assert not (tmp_path / "log").exists()


def test_a_missing_connector_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "w.properties").write_text("log.dir=log\n")
    done = _connect(tmp_path, "standalone", "w.properties", "source.properties")
    assert done.returncode == 1
    assert done.stderr == (
        "error: connector config source.properties: cannot be read: No such file or directory\n"
    )


def test_connect_log_reads_a_properties_worker_config_and_names_a_bad_one(tmp_path: Path) -> None:
    (tmp_path / "w.properties").write_text("log.dir = data/log\n")
    done = _connect(tmp_path, "log", "create", "t", "--worker-config", "w.properties")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "data/log/t").is_dir()
    (tmp_path / "bad.properties").write_text("log.dir=\\uZZZZ\n")
    done = _connect(tmp_path, "log", "topics", "--worker-config", "bad.properties")
    assert done.returncode == 1
    assert done.stderr == (
        "error: worker config bad.properties line 1: malformed \\uxxxx escape: \\uZZZZ\n"
    )
