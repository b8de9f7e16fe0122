"""`connect ps`, `connect lag`, `connect offsets get|set|reset` and `connect log dump`
run as real subprocesses against a real `connect standalone` worker (tasks in child
processes, basic auth on), over HTTP."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import STRING, WorkerProcess, connector_file, free_port
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

_SCRIPT = Path(sys.executable).with_name("connect")
CONNECT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "connect.cli.main"]
AUTH = ("ops", "s3cret")
HEADERS = {"Authorization": "Basic " + base64.b64encode(b"ops:s3cret").decode()}


class Setup:
    def __init__(self, directory: Path, worker: WorkerProcess, env: dict[str, str]) -> None:
        self.directory = directory
        self.worker = worker
        self.env = env
        self.src = directory / "in.txt"

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*CONNECT, *args],
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def http(self, method: str, path: str) -> httpx.Response:
        return httpx.request(method, self.worker.url + path, auth=AUTH, timeout=30)

    def lag(self) -> dict:
        return self.http("GET", "/ops/lag?connector=sink").json()["lag"][0]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    directory = tmp_path_factory.mktemp("ops-cli")
    users = directory / "users"
    users.write_text("ops: s3cret\n")
    src = directory / "in.txt"
    src.write_text("".join(f"line {i}\n" for i in range(200)))
    files = [
        connector_file(
            directory,
            "source",
            {"connector.class": "FileStreamSource", "file": str(src), "topic": "lines"},
        ),
        connector_file(
            directory,
            "sink",
            {
                "connector.class": "FileStreamSink",
                "file": str(directory / "out.txt"),
                "topics": "lines",
            },
        ),
    ]
    config = {
        "log.dir": str(directory / "log"),
        "listeners": f"http://127.0.0.1:{free_port()}",
        "key.converter": STRING,
        "value.converter": STRING,
        "offset.flush.interval.ms": "300",
        "rest.basic.auth.users.file": str(users),
    }
    worker = WorkerProcess(directory, config, files)
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "CONNECT_REST_URL": worker.url,
        "CONNECT_REST_USER": "ops",
        "CONNECT_REST_PASSWORD": "s3cret",
    }
    setup = Setup(directory, worker, env)

    def ready() -> bool:
        assert worker.proc.poll() is None, worker.stderr
        try:
            return setup.http("GET", "/").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(ready, 30, "the REST API")
        wait_until(lambda: setup.lag()["committed_offset"] == 200, 30, "sink caught up")
        yield setup
    finally:
        if worker.proc.poll() is None:
            try:
                worker.stop(30)
            except subprocess.TimeoutExpired:
                worker.kill()


def test_ps_lists_tasks_with_records_in_and_out(setup: Setup):
    def counted() -> subprocess.CompletedProcess | None:
        result = setup.run("ps")
        assert result.returncode == 0, result.stderr
        return result if result.stdout.count(" 200") >= 4 else None

    result = wait_until(counted, 30, "counters shipped by the task processes")
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["CONNECTOR", "TASK", "STATE", "WORKER", "TYPE", "IN", "OUT"]
    worker_id = lines[1].split()[3]
    assert lines[1].split() == ["sink", "0", "RUNNING", worker_id, "sink", "200", "200"]
    assert lines[2].split() == ["source", "0", "RUNNING", worker_id, "source", "200", "200"]
    data = json.loads(setup.run("ps", "--json").stdout)
    assert [(t["connector"], t["records_in"]) for t in data] == [("sink", 200), ("source", 200)]
    assert data[0]["metrics"]["offset_commit_success"] >= 1
    # credentials are needed like for every endpoint
    no_auth = {k: v for k, v in setup.env.items() if not k.startswith("CONNECT_REST_USER")}
    refused = setup.run("ps", env=no_auth)
    assert refused.returncode == 1 and "401" in refused.stderr and "--user" in refused.stderr


def test_lag_table_json_and_errors(setup: Setup):
    result = setup.run("lag")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["CONNECTOR", "TOPIC", "PARTITION", "LOG-END", "COMMITTED", "LAG"]
    assert lines[1].split()[:3] == ["sink", "lines", "0"]
    data = json.loads(setup.run("lag", "sink", "--json").stdout)
    assert (
        data[0]["topic"] == "lines"
        and data[0]["lag"] == data[0]["log_end_offset"] - data[0]["committed_offset"]
    )
    source = setup.run("lag", "source")
    assert source.returncode == 1 and "not a sink" in source.stderr
    missing = setup.run("lag", "nope")
    assert missing.returncode == 1 and "404" in missing.stderr


def test_offsets_get_set_reset_and_replay_from_a_time(setup: Setup):
    got = setup.run("offsets", "get", "sink")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[1].split() == ["lines", "0", "200"]
    source = json.loads(setup.run("offsets", "get", "source", "--json").stdout)["offsets"]
    assert source and "position" in json.dumps(source)

    # records after `cut` are the ones to replay
    time.sleep(0.02)
    cut = datetime.now(UTC)
    time.sleep(0.02)
    with open(setup.src, "a") as f:
        f.write("".join(f"late {i}\n" for i in range(30)))
    wait_until(lambda: setup.lag()["committed_offset"] == 230, 30, "the late lines")

    running = setup.run("offsets", "set", "sink", "--sink", "lines:0=5")
    assert running.returncode == 1
    assert "STOPPED" in running.stderr and "/connectors/sink/stop" in running.stderr
    assert setup.http("PUT", "/connectors/sink/stop").status_code == 204
    wait_until(
        lambda: (
            setup.http("GET", "/connectors/sink/status").json()["connector"]["state"] == "STOPPED"
        ),
        30,
        "sink stopped",
    )

    done = setup.run("offsets", "set", "sink", "--sink", "lines:0=5")
    assert done.returncode == 0, done.stderr
    assert setup.lag()["committed_offset"] == 5

    stamp = cut.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    replay = setup.run("offsets", "reset", "sink", "--to-datetime", stamp)
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout.splitlines()[-1].split() == ["lines", "0", "200"]
    assert setup.lag() == {
        "connector": "sink",
        "topic": "lines",
        "partition": 0,
        "log_end_offset": 230,
        "committed_offset": 200,
        "lag": 30,
    }
    future = setup.run(
        "offsets", "reset", "sink", "--to-datetime", "2999-01-01T00:00:00Z", "--json"
    )
    assert json.loads(future.stdout)["offsets"][0]["offset"] == {"kafka_offset": 230}

    wrong = setup.run("offsets", "reset", "source", "--to-datetime", stamp)
    assert wrong.returncode == 1 and "source connector" in wrong.stderr
    bad = setup.run("offsets", "reset", "sink", "--to-datetime", "yesterday")
    assert bad.returncode == 1 and "ISO-8601" in bad.stderr

    body = json.dumps(
        [
            {
                "partition": {"kafka_topic": "lines", "kafka_partition": 0},
                "offset": {"kafka_offset": 7},
            }
        ]
    )
    assert setup.run("offsets", "set", "sink", body).returncode == 0
    assert setup.lag()["committed_offset"] == 7

    reset = setup.run("offsets", "reset", "sink")
    assert reset.returncode == 0 and "reset successfully" in reset.stdout
    assert setup.run("offsets", "get", "sink").stdout.strip() == "no offsets"
    assert setup.lag()["committed_offset"] is None and setup.lag()["lag"] == 230


def test_log_dump_shows_progress_to_the_known_end(setup: Setup, tmp_path: Path):
    out = tmp_path / "dump.jsonl"
    log_dir = str(setup.directory / "log")
    end = setup.lag()["log_end_offset"]
    result = setup.run("log", "--log-dir", log_dir, "dump", "lines", "-o", str(out), "--progress")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["offset"] for r in records] == list(range(end))
    assert records[0]["value"] == "line 0"
    assert f"100%  {end:,}/{end:,}" in result.stderr and "ETA" in result.stderr
    quiet = setup.run("log", "--log-dir", log_dir, "dump", "lines")  # not a terminal: no bar
    assert quiet.returncode == 0 and "ETA" not in quiet.stderr
    assert len(quiet.stdout.splitlines()) == end
