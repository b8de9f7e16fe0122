"""MockSourceConnector: Kafka's mock source (see `connectors.mock.connector`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from connect.api import SourceConnector, SourceRecord, SourceTask
from connectors.mock.connector import (
    CONFIG,
    DELAY_MS_CONFIG,
    MOCK_MODE_CONFIG,
    TASK_FAILURE,
    MockConnector,
    MockFailure,
)

__all__ = ["MockSourceConnector", "MockSourceTask"]


class MockSourceConnector(MockConnector, SourceConnector):
    def task_class(self) -> type:
        return MockSourceTask


class MockSourceTask(SourceTask):
    """Sends nothing; with `mock_mode=task-failure`, `poll()` raises once `delay_ms`
    have passed since `start()`. Polls wait on an event (at most a second, or until
    the failure is due) instead of returning at once."""

    VERSION = "0.1.0"

    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(props)
        self.mode: str | None = parsed[MOCK_MODE_CONFIG]
        self.delay_ms: int = parsed[DELAY_MS_CONFIG]
        self.name = f"source task of {props.get('name', 'MockSourceConnector')}"
        self._fail_at = time.monotonic() + self.delay_ms / 1000
        self._stopped = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if self.mode != TASK_FAILURE:
            self._stopped.wait(1.0)
            return None
        remaining = self._fail_at - time.monotonic()
        if remaining > 0:
            self._stopped.wait(min(remaining, 1.0))
        if time.monotonic() >= self._fail_at and not self._stopped.is_set():
            raise MockFailure(self.name, TASK_FAILURE, self.delay_ms)
        return None

    def wakeup(self) -> None:
        self._stopped.set()  # the poll's wait ends; stop() releases the rest

    def stop(self) -> None:
        self._stopped.set()
