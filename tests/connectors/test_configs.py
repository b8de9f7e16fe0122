"""The configs in `configs/` run as shipped, from a checkout root (here: a tmp_path
standing in for one, since every path in them is relative)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from connect.herder.standalone import StandaloneHerder
from connect.herder.validation import validate_connector_config
from connect.plugins import Plugins
from connect.standalone import load_connector_config, load_worker_config
from log import FileLog
from tests.conftest import ROOT

CONFIGS = ROOT / "configs"
#: The worker configs among the shipped files; every other `connect-*-*.json` is a
#: connector config.
WORKER_CONFIGS = {
    "connect-standalone.json",
    "connect-distributed.json",
    "connect-distributed-kafka.json",
}
CONNECTOR_CONFIGS = sorted(
    p for p in CONFIGS.glob("connect-*-*.json") if p.name not in WORKER_CONFIGS
)


def wait_until(predicate: Callable[[], Any], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_the_worker_config_is_a_runnable_standalone_config() -> None:
    config = load_worker_config(CONFIGS / "connect-standalone.json")
    assert config["log.dir"] == "data/log" and not Path(config["log.dir"]).is_absolute()
    assert config["listeners"] == ["http://127.0.0.1:8083"]
    assert config["key.converter"] == "org.apache.kafka.connect.storage.StringConverter"
    assert config["value.converter"] == "org.apache.kafka.connect.storage.StringConverter"
    assert config["offset.flush.interval.ms"] == 10_000


@pytest.mark.parametrize("path", CONNECTOR_CONFIGS, ids=lambda p: p.name)
def test_each_connector_config_is_kafkas_shape_and_valid(path: Path) -> None:
    raw = json.loads(path.read_text())
    assert set(raw) == {"name", "config"}  # what POST /connectors takes, too
    name, config = load_connector_config(path)
    infos = validate_connector_config(Plugins(), config)
    assert infos["error_count"] == 0, [c["value"] for c in infos["configs"] if c["value"]["errors"]]
    for key in ("file", "report.file"):
        assert key not in config or not Path(config[key]).is_absolute(), (name, key)


def test_the_file_configs_are_kafkas_quickstart() -> None:
    _, source = load_connector_config(CONFIGS / "connect-file-source.json")
    _, sink = load_connector_config(CONFIGS / "connect-file-sink.json")
    assert (source["name"], source["connector.class"]) == ("local-file-source", "FileStreamSource")
    assert (sink["name"], sink["connector.class"]) == ("local-file-sink", "FileStreamSink")
    assert source["topic"] == sink["topics"] == "connect-test"
    assert (source["file"], sink["file"]) == ("data/test.txt", "data/test.sink.txt")


@pytest.fixture
def shipped_herder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable]:
    """A herder on the shipped worker config, run from tmp_path as if it were the
    checkout root (so `data/` lands there)."""
    monkeypatch.chdir(tmp_path)
    started: list[tuple[StandaloneHerder, FileLog]] = []

    def factory(*connector_files: str) -> StandaloneHerder:
        config = load_worker_config(CONFIGS / "connect-standalone.json")
        log = FileLog(config["log.dir"])
        herder = StandaloneHerder(config, log=log, worker_id="127.0.0.1:8083")
        herder.start()
        started.append((herder, log))
        for file in connector_files:
            name, connector = load_connector_config(CONFIGS / file)
            herder.put_connector_config(name, connector, allow_replace=True)
        return herder

    yield factory
    for herder, log in started:
        herder.stop()
        log.close()


@pytest.mark.slow
def test_the_file_demo_runs_as_shipped(shipped_herder: Callable, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "test.txt").write_text("foo\nbar\n")
    herder = shipped_herder("connect-file-source.json", "connect-file-sink.json")
    sink = data / "test.sink.txt"
    wait_until(lambda: sink.exists() and sink.read_text() == "foo\nbar\n")
    values = [r.value for r in herder.log.read("connect-test", 0, 0)]
    assert values == [b"foo", b"bar"]  # StringConverter: the raw strings


@pytest.mark.slow
def test_the_verifiable_demo_runs_as_shipped(shipped_herder: Callable, tmp_path: Path) -> None:
    shipped_herder("connect-verifiable-source.json", "connect-verifiable-sink.json")
    report = tmp_path / "data" / "verifiable-sink.jsonl"

    def received_from() -> set[int]:
        if not report.exists():
            return set()
        return {json.loads(line)["task"] for line in report.read_text().splitlines()}

    wait_until(lambda: received_from() == {0, 1, 2})  # every source task reaches the sink
