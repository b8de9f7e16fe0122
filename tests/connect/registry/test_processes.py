"""The registry as a process: `connect registry WORKER.json` alone, two of them over
one log agreeing, and `connect standalone` with `schema.registry.enable`. Real child
processes on free ports, talked to over HTTP; stopped with SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT
from tests.connect.registry.conftest import record_schema

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Process:
    """One `connect …` child process, its stderr in a file."""

    def __init__(self, directory: Path, args: list[str], name: str) -> None:
        self.stderr_path = directory / f"{name}.err"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "connect.cli.main", *args],
                cwd=directory,
                env=env,
                stderr=err,
                start_new_session=True,
            )

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_http(self, url: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"exited ({self.proc.returncode}):\n{self.stderr}")
            try:
                if httpx.get(url, timeout=1.0).status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"{url} did not answer:\n{self.stderr}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[[list[str], str], Process]]:
    started: list[Process] = []

    def factory(args: list[str], name: str) -> Process:
        process = Process(tmp_path, args, name)
        started.append(process)
        return process

    yield factory
    for process in started:
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait(10)


def write_config(path: Path, **keys: str) -> Path:
    path.write_text(json.dumps(keys))
    return path


def test_connect_registry_serves_the_log_and_two_processes_agree(tmp_path, spawn):
    ports = [free_port(), free_port()]
    log_dir = str(tmp_path / "log")
    processes = []
    for n, port in enumerate(ports):
        config = write_config(
            tmp_path / f"worker{n}.json",
            **{"log.dir": log_dir, "schema.registry.listeners": f"http://127.0.0.1:{port}"},
        )
        processes.append(spawn(["registry", str(config)], f"registry{n}"))
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    for process, url in zip(processes, urls, strict=True):
        process.wait_http(f"{url}/subjects")
    answers: dict[str, int] = {}
    failures: list[str] = []

    def register(url: str, who: int) -> None:
        with httpx.Client(base_url=url) as client:
            for i in range(20):
                for text in (record_schema(f"Shared{i}", "x"), record_schema(f"P{who}_{i}", "x")):
                    r = client.post(
                        f"/subjects/s-{i % 3}/versions?force=true", json={"schema": text}
                    )
                    if r.status_code != 200:
                        failures.append(r.text)
                    else:
                        answers[f"{text}@{i % 3}"] = r.json()["id"]

    threads = [threading.Thread(target=register, args=(urls[w % 2], w)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not failures, failures
    views = []
    for url in urls:
        with httpx.Client(base_url=url) as client:
            view = {}
            for subject in client.get("/subjects").json():
                for v in client.get(f"/subjects/{subject}/versions").json():
                    got = client.get(f"/subjects/{subject}/versions/{v}").json()
                    view[(subject, v)] = (got["id"], got["schema"])
            views.append(view)
    assert views[0] == views[1]
    ids_by_text: dict[str, set[int]] = {}
    for schema_id, text in views[0].values():
        ids_by_text.setdefault(text, set()).add(schema_id)
    assert all(len(ids) == 1 for ids in ids_by_text.values())
    for process in processes:
        assert process.stop() == 0
        assert "schema registry stopped" in process.stderr
    # a restarted registry answers as before
    again = spawn(["registry", str(tmp_path / "worker0.json")], "again")
    again.wait_http(f"{urls[0]}/subjects")
    with httpx.Client(base_url=urls[0]) as client:
        for (subject, v), (schema_id, _) in views[0].items():
            assert client.get(f"/subjects/{subject}/versions/{v}").json()["id"] == schema_id
    assert again.stop() == 0


def test_connect_registry_refuses_a_bad_config(tmp_path, spawn):
    config = write_config(
        tmp_path / "worker.json",
        **{"log.dir": str(tmp_path / "log"), "schema.registry.listeners": "https://x:1"},
    )
    process = spawn(["registry", str(config)], "bad")
    assert process.proc.wait(30) == 1
    assert "schema.registry.listeners" in process.stderr


def test_standalone_worker_runs_the_embedded_registry(tmp_path, spawn):
    rest, registry = free_port(), free_port()
    users = tmp_path / "users"
    users.write_text("sr: pw\n")
    config = write_config(
        tmp_path / "worker.json",
        **{
            "log.dir": str(tmp_path / "log"),
            "listeners": f"http://127.0.0.1:{rest}",
            "schema.registry.enable": "true",
            "schema.registry.listeners": f"http://127.0.0.1:{registry}",
            "schema.registry.basic.auth.users.file": str(users),
            "schema.registry.compatibility.level": "FULL",
        },
    )
    worker = spawn(["standalone", str(config)], "worker")
    worker.wait_http(f"http://127.0.0.1:{rest}/")
    url = f"http://127.0.0.1:{registry}"
    assert httpx.get(f"{url}/subjects").status_code == 401
    with httpx.Client(base_url=url, auth=("sr", "pw")) as client:
        assert client.get("/config").json() == {"compatibilityLevel": "FULL"}
        r = client.post("/subjects/t-value/versions", json={"schema": record_schema("T", "x")})
        assert r.json() == {"id": 1, "version": 1}
    assert worker.stop() == 0
