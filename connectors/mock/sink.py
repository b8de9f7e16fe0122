"""MockSinkConnector: Kafka's mock sink (see `connectors.mock.connector`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from connect.api import SinkConnector, SinkRecord, SinkTask
from connectors.mock.connector import (
    CONFIG,
    DELAY_MS_CONFIG,
    MOCK_MODE_CONFIG,
    TASK_FAILURE,
    MockConnector,
    MockFailure,
)

__all__ = ["MockSinkConnector", "MockSinkTask"]

#: How often the task asks to be woken at least (Kafka's mock uses the same bound).
WAKEUP_MS = 250


class MockSinkConnector(MockConnector, SinkConnector):
    def task_class(self) -> type:
        return MockSinkTask


class MockSinkTask(SinkTask):
    """Drops what it receives; with `mock_mode=task-failure`, `put()` raises once
    `delay_ms` have passed since `start()`. It asks for `context.timeout(min(delay,
    250 ms))` so that a runtime which honours it calls `put()` often enough even when
    no records come."""

    VERSION = "0.1.0"

    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(props)
        self.mode: str | None = parsed[MOCK_MODE_CONFIG]
        self.delay_ms: int = parsed[DELAY_MS_CONFIG]
        self.name = f"sink task of {props.get('name', 'MockSinkConnector')}"
        self._fail_at = time.monotonic() + self.delay_ms / 1000
        if self.mode == TASK_FAILURE:
            self._ask_for_wakeup()

    def _ask_for_wakeup(self) -> None:
        self.context.timeout(min(self.delay_ms, WAKEUP_MS))

    def put(self, records: Sequence[SinkRecord]) -> None:
        if self.mode != TASK_FAILURE:
            return
        if time.monotonic() >= self._fail_at:
            raise MockFailure(self.name, TASK_FAILURE, self.delay_ms)
        self._ask_for_wakeup()

    def stop(self) -> None:
        return None
