"""Validate at the door: a connector config with an error is refused once, where it
comes in — a 400 in Kafka's shape with the per-key message from the REST API of a real
worker, one line and exit 1 from `connect standalone` before its log exists, one line
per problem from `connect config check` — never created to fail in its task. Passwords
in those messages are masked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import JSON, WorkerProcess

pytestmark = pytest.mark.integration

PASSWORD = "Door-pw-8c2e-secret"
DLQ_MESSAGE = (
    "Invalid value {topic} for configuration errors.deadletterqueue.topic.name: the "
    "connector consumes that topic ({by}); a record dead-lettered there would be read, "
    "fail and be dead-lettered again without end"
)
#: A JDBC sink whose URL has a parameter no driver here knows (refused by name).
JDBC_SINK = {
    "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
    "topics": "orders",
    "connection.url": f"jdbc:postgresql://db:5432/shop?user=app&password={PASSWORD}&frob=1",
    "connection.password": PASSWORD,
}


def _sink(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "file": str(tmp_path / "out.txt"),
        "topics": "orders,returns",
        **extra,
    }


def _connect(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "connect.cli.main", *args],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_rest_api_refuses_a_config_error_once_and_creates_nothing(
    start_worker: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    worker = start_worker()
    dlq_in_topics = _sink(tmp_path, **{"errors.deadletterqueue.topic.name": "returns"})
    code, body = worker.request("POST", "/connectors", {"name": "s", "config": dlq_in_topics})
    assert code == 400, body
    assert body["error_code"] == 400
    assert "contains the following 1 error(s)" in body["message"]
    assert DLQ_MESSAGE.format(topic="returns", by="topics") in body["message"]

    dlq_by_regex = {
        **_sink(tmp_path, **{"errors.deadletterqueue.topic.name": "dlq-orders"}),
        "topics": "",
        "topics.regex": ".*orders",
    }
    code, body = worker.request("PUT", "/connectors/s/config", dlq_by_regex)
    assert code == 400, body
    assert DLQ_MESSAGE.format(topic="dlq-orders", by="topics.regex") in body["message"]

    code, body = worker.request(
        "PUT", "/connector-plugins/FileStreamSink/config/validate", {**dlq_in_topics, "name": "s"}
    )
    assert code == 200 and body["error_count"] == 1, body
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]}
    assert errors["errors.deadletterqueue.topic.name"] == [
        DLQ_MESSAGE.format(topic="returns", by="topics")
    ]

    code, body = worker.request("POST", "/connectors", {"name": "j", "config": JDBC_SINK})
    assert code == 400, body
    assert "connection.url" in body["message"] and "frob" in body["message"]
    assert PASSWORD not in json.dumps(body)

    # The converters a config names: the class, and its settings as the task reads them.
    for extra, message in (
        (
            {"key.converter": "NoSuchConverter"},
            "Invalid value NoSuchConverter for configuration key.converter: Class "
            "NoSuchConverter could not be found.",
        ),
        (
            {"value.converter": JSON, "value.converter.schemas.enable": "maybe"},
            "Invalid value maybe for configuration value.converter.schemas.enable: "
            "Expected value to be either true or false",
        ),
    ):
        code, body = worker.request(
            "POST", "/connectors", {"name": "c", "config": _sink(tmp_path, **extra)}
        )
        assert code == 400, body
        assert "contains the following 1 error(s)" in body["message"]
        assert message in body["message"]

    assert worker.request("GET", "/connectors")[1] == []
    # A dead-letter topic the sink does not read is fine.
    ok = _sink(tmp_path, **{"errors.deadletterqueue.topic.name": "dlq"})
    assert worker.request("POST", "/connectors", {"name": "s", "config": ok})[0] == 201
    worker.wait_state("s", "RUNNING")
    assert worker.stop() == 0
    assert PASSWORD not in worker.stderr


def test_standalone_refuses_a_bad_connector_file_in_one_line_before_its_log(
    tmp_path: Path,
) -> None:
    (tmp_path / "w.properties").write_text("log.dir=log\nlisteners=http://127.0.0.1:0\n")
    (tmp_path / "sink.properties").write_text(
        "name=s\nconnector.class=FileStreamSink\nfile=out.txt\ntopics=orders\n"
        "errors.deadletterqueue.topic.name=orders\n"
    )
    done = _connect(tmp_path, "standalone", "w.properties", "sink.properties")
    assert done.returncode == 1
    assert done.stderr == (
        "error: connector config sink.properties: "
        + DLQ_MESSAGE.format(topic="orders", by="topics")
        + "\n"
    )
    (tmp_path / "jdbc.json").write_text(json.dumps({"name": "j", "config": JDBC_SINK}))
    done = _connect(tmp_path, "standalone", "w.properties", "jdbc.json")
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: connector config jdbc.json: ")
    assert "connection.url" in lines[0] and PASSWORD not in done.stderr
    assert not (tmp_path / "log").exists()


def test_config_check_validates_files_offline_as_the_worker_does(tmp_path: Path) -> None:
    (tmp_path / "source.json").write_text(
        json.dumps(
            {
                "name": "src",
                "config": {"connector.class": "FileStreamSource", "file": "in", "topic": "t"},
            }
        )
    )
    (tmp_path / "sink.properties").write_text(
        "name=s\nconnector.class=FileStreamSink\nfile=out.txt\ntopics=orders\n"
        "errors.deadletterqueue.topic.name=orders\ntasks.max=two\n"
    )
    (tmp_path / "jdbc.json").write_text(json.dumps({"name": "j", "config": JDBC_SINK}))
    (tmp_path / "typo.json").write_text('{"name": "x", "config": {"connector.class": "Nope"}}')

    done = _connect(tmp_path, "config", "check", "source.json")
    assert (done.returncode, done.stdout) == (0, "source.json: ok (src, FileStreamSource)\n")

    done = _connect(
        tmp_path,
        "config",
        "check",
        "source.json",
        "sink.properties",
        "jdbc.json",
        "typo.json",
        "missing.json",
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == "source.json: ok (src, FileStreamSource)"
    sink = [line for line in lines if line.startswith("sink.properties: ")]
    assert sink == [
        "sink.properties: Invalid value two for configuration tasks.max: Expected a value "
        "of type INT",
        "sink.properties: " + DLQ_MESSAGE.format(topic="orders", by="topics"),
    ]
    jdbc = [line for line in lines if line.startswith("jdbc.json: ")]
    assert len(jdbc) == 1 and "connection.url" in jdbc[0] and "frob" in jdbc[0]
    assert [line for line in lines if line.startswith("typo.json: ")] == [
        f"typo.json: {_unknown_class_message(tmp_path)}"
    ]
    assert lines[-1] == "missing.json: cannot be read: No such file or directory"
    assert PASSWORD not in done.stdout


def _unknown_class_message(tmp_path: Path) -> str:
    """What the REST API answers for the same unknown class (the door's own words)."""
    from connect.herder.validation import validate_connector_config
    from connect.plugins import Plugins

    try:
        validate_connector_config(Plugins(), {"connector.class": "Nope", "name": "x"})
    except Exception as exc:
        return " ".join(str(exc).split())
    raise AssertionError("an unknown class was accepted")
