"""A stop wakes a source task's waiting poll (`SourceTask.wakeup`), so stopping an idle
source costs no poll wait: the worker calls it from the stopping thread, and each shipped
source that waits in `poll()` ends its wait there. Was: every stop, delete or rebalance of
an idle file, JDBC, verifiable or mock source waited out up to a second of its poll."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from connect.api import ConfigDef, SourceConnector, SourceRecord, SourceTask
from connect.herder.standalone import StandaloneHerder
from connectors.file.source import FileStreamSourceTask
from connectors.mock.source import MockSourceTask
from connectors.verifiable.source import VerifiableSourceTask
from tests.connectors.fakes import FakeSourceContext
from tests.waiting import wait_until

#: How long the test source's poll waits unless woken: far past any test's patience.
LONG_WAIT_S = 60.0


class WaitingSource(SourceConnector):
    """One task whose poll waits `LONG_WAIT_S` for data that never comes."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return WaitingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class WaitingSourceTask(SourceTask):
    """Writes `marker` when its poll begins and `marker`.stopped on its stop (the task
    may run in a child process)."""

    def start(self, props: Mapping[str, str]) -> None:
        self._woken = threading.Event()
        self._marker = Path(props["marker"])

    def poll(self) -> list[SourceRecord] | None:
        self._marker.touch()
        self._woken.wait(LONG_WAIT_S)
        return None

    def wakeup(self) -> None:
        self._woken.set()

    def stop(self) -> None:
        self._woken.set()
        self._marker.with_suffix(".stopped").touch()


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_deleting_a_source_whose_poll_waits_wakes_it(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path, isolation: str
) -> None:
    herder = start_herder({"task.isolation": isolation})
    marker = tmp_path / "polling"
    config = {
        "connector.class": f"{__name__}.WaitingSource",
        "tasks.max": "1",
        "marker": str(marker),
    }
    herder.put_connector_config("idle", config, allow_replace=False)
    wait_until(marker.exists, 30, "the task's first poll")
    began = time.monotonic()
    herder.delete_connector("idle")
    wait_until(lambda: "idle" not in herder.connectors(), 30, "the connector gone")
    # A clean stop: the poll returned and stop() ran. Without the wakeup the poll waits
    # its 60 s, past the stop's timeout: the task process is killed, or the thread
    # abandoned, and stop() never runs.
    wait_until(marker.with_suffix(".stopped").exists, 10, "the task's stop()")
    assert time.monotonic() - began < 10


def _started(task: SourceTask, props: dict[str, str]) -> SourceTask:
    task.initialize(FakeSourceContext(props))
    task.start(props)
    return task


def _file_task(tmp_path: Path) -> SourceTask:
    (tmp_path / "in.txt").write_text("")
    return _started(FileStreamSourceTask(), {"file": str(tmp_path / "in.txt"), "topic": "t"})


def _verifiable_task(tmp_path: Path) -> SourceTask:
    props = {"topic": "t", "throughput": "0", "id": "0", "name": "v"}
    return _started(VerifiableSourceTask(), props)


def _mock_task(tmp_path: Path) -> SourceTask:
    return _started(MockSourceTask(), {"mock_mode": "connector-failure", "name": "m"})


@pytest.mark.parametrize(
    "make", [_file_task, _verifiable_task, _mock_task], ids=["file", "verifiable", "mock"]
)
def test_a_woken_shipped_source_polls_without_waiting(
    make: Callable[[Path], Any], tmp_path: Path
) -> None:
    task = make(tmp_path)
    try:
        task.wakeup()
        began = time.monotonic()
        assert not task.poll()  # nothing to read: the file is empty, nothing is due
        # An idle poll waits a second; a woken one returns at once.
        assert time.monotonic() - began < 0.5
    finally:
        task.stop()
