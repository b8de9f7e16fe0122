"""Starting a worker with a user's mistakes in it, as real `connect` processes: a port
that is taken fails in one line naming the address, before the worker touches its log
or its cluster; keys the worker or a connector does not know are warned about by name,
with the key a misspelling resembles, and keys that belong to converters, clients,
transforms and the like are not."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import STRING, WorkerProcess, connector_file, free_port
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another process (here: this one) listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield int(sock.getsockname()[1])


def _config(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    return {
        "log.dir": str(tmp_path / "log"),
        "listeners": f"http://127.0.0.1:{port}",
        "key.converter": STRING,
        "value.converter": STRING,
        "group.id": "startup-cluster",
        **extra,
    }


def _exited(worker: WorkerProcess) -> int:
    return int(worker.proc.wait(60))


@pytest.mark.parametrize("mode", ["standalone", "distributed"])
def test_a_port_in_use_is_named_in_one_line_before_the_worker_starts(
    tmp_path: Path, taken_port: int, mode: str
) -> None:
    worker = WorkerProcess(tmp_path, _config(tmp_path, taken_port), [], mode=mode)
    try:
        assert _exited(worker) == 1
    finally:
        if worker.proc.poll() is None:
            worker.kill()
    stderr = worker.stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: 127.0.0.1:{taken_port} is in use: another process listens there"]
    assert "Traceback" not in stderr
    # Nothing was started or joined before the port was found taken.
    assert "joined the group" not in stderr and "runs generation" not in stderr


def test_a_registry_port_in_use_is_named_too(tmp_path: Path, taken_port: int) -> None:
    config = _config(tmp_path, free_port())
    config["schema.registry.listeners"] = f"http://127.0.0.1:{taken_port}"
    worker = WorkerProcess(tmp_path, config, [], mode="registry")
    assert _exited(worker) == 1
    assert f"error: 127.0.0.1:{taken_port} is in use" in worker.stderr
    assert "Traceback" not in worker.stderr


def test_registry_help_documents_its_listener_key() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "connect.cli.main", "registry", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    assert "schema.registry.listeners" in result.stdout
    assert "http://127.0.0.1:8081" in result.stdout


def _warnings(stderr: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in stderr.splitlines() if "isn't a known" in line]


def test_unknown_keys_are_warned_about_by_name_with_their_likely_meaning(
    tmp_path: Path, start_worker
) -> None:
    source = {
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "in.txt"),
        "topic": "lines",
        "tasks.mx": "1",
        "fiel": "in.txt",
        # Keys that belong to others: never warned about.
        "transforms": "tag",
        "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.tag.static.field": "origin",
        "transforms.tag.static.value": "test",
        "predicates": "always",
        "predicates.always.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.always.pattern": ".*",
        "transforms.tag.predicate": "always",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "errors.tolerance": "all",
        "errors.log.enable": "true",
        "producer.override.linger.ms": "5",
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1",
    }
    worker = start_worker(
        [connector_file(tmp_path, "src", source)],
        {
            "offset.flush.interval": "100",
            "value.converter.schemas.enable": "false",
            "consumer.max.poll.records": "10",
            "kafka.socket.timeout.ms": "1000",
            "config.providers": "file",
            "config.providers.file.class": "FileConfigProvider",
        },
    )
    worker.wait_state("src", "RUNNING")
    # Through the REST API too (a PUT is where a user of a cluster meets them).
    code, body = worker.request(
        "PUT",
        "/connectors/snk/config",
        {
            "connector.class": "FileStreamSink",
            "file": str(tmp_path / "out.txt"),
            "topic": "lines",
            "topics": "lines",
            "consumer.override.max.poll.records": "10",
        },
    )
    assert code == 201, body
    config_path = worker.config_path
    expected = [
        f"worker config {config_path}: the configuration 'offset.flush.interval' was "
        "supplied but isn't a known config (ignored); did you mean 'offset.flush.interval.ms'?",
        "connector src (FileStreamSourceConnector): the configuration 'fiel' was supplied "
        "but isn't a known config (ignored); did you mean 'file'?",
        "connector src (FileStreamSourceConnector): the configuration 'tasks.mx' was "
        "supplied but isn't a known config (ignored); did you mean 'tasks.max'?",
        "connector snk (FileStreamSinkConnector): the configuration 'topic' was supplied "
        "but isn't a known config (ignored); did you mean 'topics'?",
    ]
    wait_until(lambda: len(_warnings(worker.stderr)) >= len(expected), 30, "the warnings")
    assert sorted(_warnings(worker.stderr)) == sorted(expected)
