"""`connect registry WORKER` as a process: Ctrl-C exits 130 as every `connect` command
does, and Kafka's stock standalone `.properties` file serves the registry over the log
that `connect standalone` keeps for the same file."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import pytest

from tests.connect.registry.test_processes import Process
from tests.integration.conftest import free_port

pytestmark = pytest.mark.integration

PUBLISHED = Path(__file__).parent.parent / "data" / "published"


def _serve(tmp_path: Path, worker_file: Path, port: int) -> Process:
    process = Process(tmp_path, ["registry", str(worker_file)], "registry")
    try:
        process.wait_http(f"http://127.0.0.1:{port}/subjects")
    except BaseException:
        process.proc.kill()
        process.proc.wait(10)
        raise
    return process


def test_ctrl_c_exits_130_after_a_clean_stop(tmp_path: Path) -> None:
    port = free_port()
    worker_file = tmp_path / "worker.json"
    worker_file.write_text(
        json.dumps(
            {
                "log.dir": str(tmp_path / "log"),
                "schema.registry.listeners": f"http://127.0.0.1:{port}",
            }
        )
    )
    process = _serve(tmp_path, worker_file, port)
    process.proc.send_signal(signal.SIGINT)
    assert process.proc.wait(30) == 130
    assert "schema registry stopped" in process.stderr
    assert "Traceback" not in process.stderr


def test_sigterm_still_exits_0(tmp_path: Path) -> None:
    port = free_port()
    worker_file = tmp_path / "worker.json"
    worker_file.write_text(
        json.dumps(
            {
                "log.dir": str(tmp_path / "log"),
                "schema.registry.listeners": f"http://127.0.0.1:{port}",
            }
        )
    )
    process = _serve(tmp_path, worker_file, port)
    assert process.stop() == 0


def test_kafka_standalone_properties_serve_the_standalone_log(tmp_path: Path) -> None:
    """The published file with its offsets file moved into the test's directory and a
    listener port for the registry: the registry's topic lands in the log
    `connect standalone` would use for the same file."""
    port = free_port()
    text = (PUBLISHED / "connect-standalone.properties").read_text()
    text = text.replace(
        "offset.storage.file.filename=/tmp/connect.offsets",
        f"offset.storage.file.filename={tmp_path / 'connect.offsets'}",
    )
    worker_file = tmp_path / "connect-standalone.properties"
    worker_file.write_text(text + f"\nschema.registry.listeners=http://127.0.0.1:{port}\n")
    process = _serve(tmp_path, worker_file, port)
    schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}]})
    r = httpx.post(f"http://127.0.0.1:{port}/subjects/r-value/versions", json={"schema": schema})
    assert r.status_code == 200, r.text
    assert process.stop() == 0
    assert (tmp_path / "connect.offsets.tributary" / "_schemas" / "0").is_dir()
