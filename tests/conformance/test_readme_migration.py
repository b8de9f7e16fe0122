"""The README's "Migrating from Kafka Connect" example, run as the README shows it: a real
`connect standalone` process with the repository's worker config and Confluent's JDBC
source quickstart config as published, then `connect log consume` on its topic.

`MIGRATION` below is the README's block, character for character; the test parses its
command lines and runs them (`.venv/bin/connect` is `python -m connect.cli.main`, the
same entry point). The directory it runs in holds what the README's reader has: the
repository's configs/connect-standalone.json — with one change, `listeners` on a free
port instead of 8083, so the suite can run beside a worker a developer has open — the
published file (tests/data/published/jdbc, unchanged but for its citation comments),
and the quickstart's test.db.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conformance.published import PUBLISHED
from tests.conftest import ROOT
from tests.integration.conftest import free_port
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration]

MIGRATION = """\
# Confluent's JDBC source quickstart, config/source-quickstart-sqlite.properties as
# published (connection.url=jdbc:sqlite:test.db, mode=incrementing,
# topic.prefix=test-sqlite-jdbc-), beside the quickstart's test.db (table accounts):
.venv/bin/connect standalone configs/connect-standalone.json source-quickstart-sqlite.properties &
.venv/bin/connect log --log-dir data/log consume test-sqlite-jdbc-accounts \\
    --from-beginning --max-messages 2
# Struct{id=1,name=alice}
# Struct{id=2,name=bob}
"""


def _commands() -> list[list[str]]:
    """The block's command lines as argv lists, continuation lines joined, `&` dropped
    (the test backgrounds the first itself)."""
    out = []
    for line in MIGRATION.replace("\\\n", " ").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        argv = shlex.split(line.removesuffix("&"))
        assert argv[0] == ".venv/bin/connect", line
        out.append([sys.executable, "-m", "connect.cli.main", *argv[1:]])
    return out


def test_readme_migration_runs_confluents_jdbc_quickstart_unchanged(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    worker = json.loads((ROOT / "configs" / "connect-standalone.json").read_text())
    worker["listeners"] = f"http://127.0.0.1:{free_port()}"
    (tmp_path / "configs" / "connect-standalone.json").write_text(json.dumps(worker))
    shutil.copy(PUBLISHED / "jdbc" / "source-quickstart-sqlite.properties", tmp_path)
    conn = sqlite3.connect(tmp_path / "test.db")  # the quickstart's sqlite3 session
    with conn:
        conn.execute(
            "CREATE TABLE accounts(id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, "
            "name VARCHAR(255))"
        )
        conn.execute("INSERT INTO accounts(name) VALUES('alice')")
        conn.execute("INSERT INTO accounts(name) VALUES('bob')")
    conn.close()

    standalone, consume = _commands()
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    with open(tmp_path / "worker.err", "wb") as err:
        worker_proc = subprocess.Popen(standalone, cwd=tmp_path, env=env, stderr=err)
    try:

        def consumed() -> str | None:
            # the README's consume, bounded: a reader may run it before the task polled
            assert worker_proc.poll() is None, (tmp_path / "worker.err").read_text()
            done = subprocess.run(
                [*consume, "--timeout-ms", "500"],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            return done.stdout if done.returncode == 0 and done.stdout.count("\n") == 2 else None

        out = wait_until(consumed, 60, "the two accounts in test-sqlite-jdbc-accounts")
        expected = [line[2:] for line in MIGRATION.splitlines() if line.startswith("# Struct")]
        assert out.splitlines() == expected
    finally:
        worker_proc.terminate()
        assert worker_proc.wait(60) == 0
    stderr = (tmp_path / "worker.err").read_text()
    assert "Traceback" not in stderr and "isn't a known config" not in stderr, stderr


def test_the_readme_shows_this_block() -> None:
    """The block above is the README's: a change to one must be made to the other."""
    assert MIGRATION in (ROOT / "README.md").read_text()
