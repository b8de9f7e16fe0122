"""Real `connect standalone` and `connect distributed` processes for end-to-end tests,
and an HTTP client for their REST API (urllib: what a user's script would use, nothing
in between)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import psutil
import pytest

from tests.conftest import ROOT
from tests.waiting import wait_until

STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class WorkerProcess:
    """One `connect standalone WORKER.json [CONNECTOR.json …]` (or `connect distributed
    WORKER.json`, with `mode="distributed"`) child process."""

    #: Every worker started, so `_no_worker_outlives_its_test` can end the ones a test
    #: left running (a failing assertion before its own clean-up).
    started: ClassVar[list[WorkerProcess]] = []

    def __init__(
        self,
        directory: Path,
        config: dict[str, str],
        connectors: list[Path],
        *,
        mode: str = "standalone",
        worker_file: Path | None = None,
    ) -> None:
        """`worker_file`: a worker config file to run as it is (a `.properties` file);
        `config` then only gives its `listeners`, for the port."""
        self.directory = directory
        self.port = int(config["listeners"].rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.config_path = worker_file or directory / f"worker-{self.port}.json"
        if worker_file is None:
            self.config_path.write_text(json.dumps(config))
        self.stderr_path = directory / f"worker-{time.monotonic_ns()}.err"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        with open(self.stderr_path, "wb") as err:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "connect.cli.main", mode, str(self.config_path)]
                + [str(c) for c in connectors],
                cwd=directory,
                env=env,
                stderr=err,
                start_new_session=True,  # its own process group, as a service has
            )
        WorkerProcess.started.append(self)

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_ready(self, timeout_s: float = 30.0) -> WorkerProcess:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited ({self.proc.returncode}):\n{self.stderr}")
            try:
                return self.request("GET", "/")[0] == 200
            except OSError:
                return False

        wait_until(ready, timeout_s, "REST API ready")
        return self

    def request(
        self, method: str, path: str, body: Any = None, *, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, json.loads(raw) if raw else None
            except ValueError:
                return exc.code, raw.decode(errors="replace")

    def status(self, name: str) -> dict[str, Any] | None:
        code, body = self.request("GET", f"/connectors/{name}/status")
        return body if code == 200 else None

    def wait_state(self, name: str, state: str, *, tasks: int = 1, timeout_s: float = 30.0) -> Any:
        def reached() -> Any:
            status = self.status(name)
            if not status or status["connector"]["state"] != state:
                return None
            states = [t["state"] for t in status["tasks"]]
            if len(states) == tasks and all(s == state for s in states):
                return status
            return None

        return wait_until(reached, timeout_s, f"{name} {state}")

    def task_pids(self) -> list[int]:
        try:
            return [c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM and wait: a clean stop with final offset commits."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout_s)

    def kill(self) -> None:
        """SIGKILL the worker and every task process at once: a crash."""
        victims = [self.proc.pid, *self.task_pids()]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(30)
        psutil.wait_procs([p for p in map(_proc, victims) if p is not None], timeout=30)


def _proc(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start workers on one log dir (tmp_path/log); all are stopped at teardown.
    Keyword arguments become worker config keys (underscores as dots is not done:
    pass a dict as `config`)."""
    started: list[WorkerProcess] = []
    port = free_port()

    def factory(
        connectors: list[Path] = (),  # type: ignore[assignment]
        config: dict[str, str] | None = None,
        *,
        ready: bool = True,
    ) -> WorkerProcess:
        base = {
            "log.dir": str(tmp_path / "log"),
            "listeners": f"http://127.0.0.1:{port}",
            "key.converter": STRING,
            "value.converter": STRING,
            "offset.flush.interval.ms": "500",
            "task.shutdown.graceful.timeout.ms": "10000",
        }
        worker = WorkerProcess(tmp_path, {**base, **(config or {})}, list(connectors))
        started.append(worker)
        return worker.wait_ready() if ready else worker

    yield factory
    for worker in started:
        if worker.proc.poll() is None:
            worker.kill()


def connector_file(directory: Path, name: str, config: dict[str, str]) -> Path:
    """A connector config file in Kafka's {"name", "config"} shape."""
    path = directory / f"{name}.json"
    path.write_text(json.dumps({"name": name, "config": config}))
    return path


@pytest.fixture(autouse=True)
def _no_worker_outlives_its_test() -> Iterator[None]:
    """A worker a test left running (an assertion failed before its clean-up) is killed
    when the test ends: left alone, it would hold its port and log directory, and spend
    the machine's two cores, for the rest of the session."""
    yield
    left, WorkerProcess.started[:] = list(WorkerProcess.started), []
    for worker in left:
        if worker.proc.poll() is None:
            worker.kill()
