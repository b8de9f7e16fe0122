"""scripts/kafka and scripts/kafka-connect, as a person types them: `status` of a
running server and of none, and the one-line refusals of `start` (a port in use, a
directory whose server still runs, a malformed --config) — each exit code as the
scripts' docstrings promise (0, 1, 2, and 3 for "not running", as LSB's status)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.kafka_broker import KafkaBroker
from tests.kafka_connect import KafkaConnect

SCRIPTS = ("kafka", "kafka-connect")


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), *args],
        capture_output=True, text=True, timeout=120, check=False,
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_status_of_a_directory_without_a_server_exits_3(script: str, tmp_path: Path) -> None:
    done = run(script, "status", "--dir", str(tmp_path))
    assert done.returncode == 3
    assert done.stdout.strip().endswith(f"running in {tmp_path}")


def test_status_names_the_running_servers(
    kafka_broker: KafkaBroker, kafka_connect: KafkaConnect
) -> None:
    broker = run("kafka", "status", "--dir", str(kafka_broker.directory))
    assert broker.returncode == 0, broker.stderr
    assert f"bootstrap.servers={kafka_broker.bootstrap}" in broker.stdout
    worker = run("kafka-connect", "status", "--dir", str(kafka_connect.directory))
    assert worker.returncode == 0, worker.stderr
    assert f"rest={kafka_connect.rest}" in worker.stdout


def test_a_second_start_in_a_running_directory_is_refused_in_one_line(
    kafka_broker: KafkaBroker, kafka_connect: KafkaConnect
) -> None:
    broker = run("kafka", "start", "--dir", str(kafka_broker.directory), "--port", "1")
    assert broker.returncode == 1
    assert broker.stderr.count("\n") == 1 and "a broker already runs in" in broker.stderr
    worker = run(
        "kafka-connect", "start", "--dir", str(kafka_connect.directory),
        "--bootstrap", kafka_broker.bootstrap,
    )
    assert worker.returncode == 1
    assert worker.stderr.count("\n") == 1 and "a worker already runs in" in worker.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_port_in_use_is_refused_in_one_line(script: str, tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        extra = ["--bootstrap", "127.0.0.1:9"] if script == "kafka-connect" else []
        done = run(script, "start", "--dir", str(tmp_path / "d"), "--port", str(port), *extra)
    assert done.returncode == 1
    why = f"port {port} on 127.0.0.1 is in use; choose another with --port"
    assert done.stderr == f"{script}: {why}\n"
    assert not (tmp_path / "d").exists()


def test_kafka_connect_needs_a_broker_to_start(tmp_path: Path) -> None:
    done = run("kafka-connect", "start", "--dir", str(tmp_path))
    assert done.returncode == 2
    assert "--bootstrap" in done.stderr
