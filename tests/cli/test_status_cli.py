"""`connect status` run as a real subprocess against a live REST server (a real
standalone herder on a real log), and against nothing at all."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect.cli.status_cmd import summary
from connect.rest import BasicAuth
from tests.connect.rest.live import FAILING, Live, LiveServers, source_config
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

_SCRIPT = Path(sys.executable).with_name("connect")
CONNECT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "connect.cli.main"]


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[LiveServers]:
    live = LiveServers(tmp_path)
    yield live
    live.close()


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CONNECT, "status", *args], env=env, capture_output=True, text=True, timeout=60
    )


def _with_connectors(live: Live, tmp_path: Path) -> None:
    client = live.client
    client.post("/connectors", json={"name": "src", "config": source_config(tmp_path / "in")})
    client.post("/connectors", json={"name": "bad", "config": {"connector.class": FAILING}})

    def settled() -> bool:
        states = client.get("/connectors?expand=status").json()
        tasks = {n: [t["state"] for t in s["status"]["tasks"]] for n, s in states.items()}
        return tasks == {"src": ["RUNNING"], "bad": ["FAILED"]}

    wait_until(settled)


def test_table_of_connectors_and_tasks(servers: LiveServers, tmp_path: Path, subprocess_env):
    live = servers()
    _with_connectors(live, tmp_path)
    result = run(subprocess_env, "--url", live.url)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["CONNECTOR", "TYPE", "STATE", "WORKER", "TRACE"]
    assert lines[1].split() == ["bad", "source", "RUNNING", "w1"]
    assert lines[2].split()[:4] == ["task", "0", "FAILED", "w1"]
    assert lines[2].endswith("RuntimeError: boom from poll")
    assert lines[3].split() == ["src", "source", "RUNNING", "w1"]
    assert lines[4].split() == ["task", "0", "RUNNING", "w1"]
    assert len(lines) == 5
    # columns line up: every state starts where the header's STATE does
    column = lines[0].index("STATE")
    assert all(line[column:].split()[0] in {"RUNNING", "FAILED"} for line in lines[1:])


def test_json_output_is_the_api_answer(servers: LiveServers, tmp_path: Path, subprocess_env):
    live = servers()
    _with_connectors(live, tmp_path)
    result = run(subprocess_env, "--url", live.url + "/", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"src", "bad"}
    assert data["src"]["info"]["type"] == "source"
    assert "boom from poll" in data["bad"]["status"]["tasks"][0]["trace"]


def test_no_connectors(servers: LiveServers, subprocess_env):
    result = run(subprocess_env, "--url", servers().url)
    assert result.returncode == 0 and result.stdout.strip() == "no connectors"


def test_basic_auth_from_flags_or_env(servers: LiveServers, tmp_path: Path, subprocess_env):
    users = tmp_path / "users"
    users.write_text("admin: pa55\n")
    live = servers(auth=BasicAuth.from_file(users))
    refused = run(subprocess_env, "--url", live.url)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1
    assert "401" in refused.stderr and "--user" in refused.stderr
    wrong = run(subprocess_env, "--url", live.url, "--user", "admin", "--password", "nope")
    assert wrong.returncode == 1
    ok = run(subprocess_env, "--url", live.url, "--user", "admin", "--password", "pa55")
    assert ok.returncode == 0 and ok.stdout.strip() == "no connectors"
    env = {**subprocess_env, "CONNECT_REST_USER": "admin", "CONNECT_REST_PASSWORD": "pa55"}
    env["CONNECT_REST_URL"] = live.url
    assert run(env).returncode == 0


def test_unreachable_worker_is_one_line_and_exit_1(subprocess_env):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        result = run(subprocess_env, "--url", f"http://127.0.0.1:{port}", "--timeout", "5")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: cannot reach the worker at http://127.0.0.1:")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_not_an_http_url_is_one_line_and_exit_2(subprocess_env):
    result = run(subprocess_env, "--url", "ftp://localhost:8083")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "ftp://localhost:8083" in result.stderr


def test_trace_summary():
    python = 'Traceback (most recent call last):\n  File "x.py", line 1\n    f()\nValueError: bad\n'
    assert summary(python) == "ValueError: bad"
    java = "org.apache.kafka.connect.errors.ConnectException: no\n\tat Foo.bar(Foo.java:1)\n"
    assert summary(java) == "org.apache.kafka.connect.errors.ConnectException: no"
    assert summary(None) == "" and summary("") == ""
