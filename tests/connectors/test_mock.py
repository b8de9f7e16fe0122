"""MockSourceConnector / MockSinkConnector driven directly through the plugin API."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from connect.api import ConfigError, RetriableError
from connectors.mock import (
    MockFailure,
    MockSinkConnector,
    MockSinkTask,
    MockSourceConnector,
    MockSourceTask,
)
from connectors.mock.connector import DEFAULT_FAILURE_DELAY_MS
from tests.connectors.fakes import FakeConnectorContext, FakeSinkContext, FakeSourceContext


def until_raises(call: Callable[[], Any], timeout_s: float = 5.0) -> BaseException:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            call()
        except Exception as exc:
            return exc
    raise AssertionError("no error in time")


def test_defaults_and_config_are_kafkas() -> None:
    assert DEFAULT_FAILURE_DELAY_MS == 15_000
    connector = MockSourceConnector()
    assert set(connector.config().names()) == {"mock_mode", "delay_ms"}
    with pytest.raises(ConfigError, match="mock_mode"):
        connector.start({"mock_mode": "Task-Failure"})  # Kafka compares exactly
    with pytest.raises(ConfigError, match="delay_ms"):
        connector.start({"mock_mode": "task-failure", "delay_ms": "-1"})


@pytest.mark.parametrize("cls", [MockSourceConnector, MockSinkConnector])
def test_one_task_with_the_connectors_config(cls: type) -> None:
    connector = cls()
    connector.initialize(FakeConnectorContext())
    props = {"name": "m", "mock_mode": "task-failure", "delay_ms": "10", "tasks.max": "4"}
    connector.start(props)
    assert connector.task_configs(4) == [props]
    expected = MockSourceTask if cls is MockSourceConnector else MockSinkTask
    assert connector.task_class() is expected
    connector.stop()


@pytest.mark.parametrize("cls", [MockSourceConnector, MockSinkConnector])
def test_connector_failure_raises_through_the_context_after_the_delay(cls: type) -> None:
    context = FakeConnectorContext()
    connector = cls()
    connector.initialize(context)
    context.on_error = connector.stop  # as the worker does, from the timer's thread
    start = time.monotonic()
    connector.start({"name": "m", "mock_mode": "connector-failure", "delay_ms": "100"})
    assert context.raised.wait(5)
    assert time.monotonic() - start >= 0.1
    (error,) = context.errors
    assert isinstance(error, MockFailure) and not isinstance(error, RetriableError)
    assert (error.mode, error.delay_ms) == ("connector-failure", 100) and "m" in str(error)
    connector.stop()


def test_a_connector_stopped_before_the_delay_never_fails() -> None:
    context = FakeConnectorContext()
    connector = MockSinkConnector()
    connector.initialize(context)
    connector.start({"name": "m", "mock_mode": "connector-failure", "delay_ms": "150"})
    connector.stop()
    assert not context.raised.wait(0.4)


def _source_task(props: dict[str, str]) -> MockSourceTask:
    task = MockSourceTask()
    task.initialize(FakeSourceContext(props))
    task.start(props)
    return task


def test_source_task_failure_raises_from_poll_after_the_delay() -> None:
    start = time.monotonic()
    task = _source_task({"name": "m", "mock_mode": "task-failure", "delay_ms": "150"})
    error = until_raises(task.poll)
    assert isinstance(error, MockFailure) and error.mode == "task-failure"
    assert 0.15 <= time.monotonic() - start < 2.0


def test_source_task_without_failure_sends_nothing_and_stops_promptly() -> None:
    for props in ({"name": "m"}, {"name": "m", "mock_mode": "connector-failure"}):
        task = _source_task(props)
        result: list[Any] = []
        poller = threading.Thread(target=lambda t=task, out=result: out.append(t.poll()))
        start = time.monotonic()
        poller.start()
        task.stop()
        poller.join(5)
        assert result == [None] and time.monotonic() - start < 0.9


def test_sink_task_failure_raises_from_put_and_asks_to_be_woken() -> None:
    props = {"name": "m", "mock_mode": "task-failure", "delay_ms": "150"}
    context = FakeSinkContext(props)
    task = MockSinkTask()
    task.initialize(context)
    start = time.monotonic()
    task.start(props)
    assert context.timeouts == [150]  # min(delay, 250 ms)
    task.put([])
    error = until_raises(lambda: task.put([]))
    assert isinstance(error, MockFailure) and time.monotonic() - start >= 0.15
    assert set(context.timeouts) == {150}

    slow = {"name": "m", "mock_mode": "task-failure", "delay_ms": "60000"}
    context = FakeSinkContext(slow)
    task = MockSinkTask()
    task.initialize(context)
    task.start(slow)
    task.put([])
    assert context.timeouts == [250, 250]


def test_sink_task_without_failure_accepts_everything() -> None:
    props = {"name": "m", "delay_ms": "0"}
    task = MockSinkTask()
    context = FakeSinkContext(props)
    task.initialize(context)
    task.start(props)
    task.put([])
    assert context.timeouts == []
