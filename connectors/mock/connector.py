"""MockConnector: a connector that fails on purpose, to test failure and restart paths.

Kafka's `org.apache.kafka.connect.tools.MockConnector` semantics, shared by
MockSourceConnector and MockSinkConnector (one task, which gets the connector's
config):

- `mock_mode=connector-failure`: `delay_ms` after `start()`, the connector fails
  itself from a timer thread through `context.raise_error()`; the runtime shows it
  FAILED with the trace, and a restart starts the countdown again.
- `mock_mode=task-failure`: the task fails `delay_ms` after its `start()`, by raising
  from `poll()` (source) or `put()` (sink); it shows FAILED with the trace.
- no `mock_mode`: nothing fails; the task produces and consumes nothing.

`delay_ms` defaults to 15000, as in Kafka.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from connect.api import ConfigDef, ConfigType, ConnectError, Connector, Importance, at_least, one_of

__all__ = [
    "CONFIG",
    "CONNECTOR_FAILURE",
    "DEFAULT_FAILURE_DELAY_MS",
    "TASK_FAILURE",
    "MockConnector",
    "MockFailure",
]

_log = logging.getLogger(__name__)

MOCK_MODE_CONFIG = "mock_mode"
DELAY_MS_CONFIG = "delay_ms"
CONNECTOR_FAILURE = "connector-failure"
TASK_FAILURE = "task-failure"
DEFAULT_FAILURE_DELAY_MS = 15_000

CONFIG = (
    ConfigDef()
    .define(
        MOCK_MODE_CONFIG,
        ConfigType.STRING,
        None,
        one_of(CONNECTOR_FAILURE, TASK_FAILURE, case_sensitive=True),
        Importance.HIGH,
        "What fails: the connector (connector-failure) or its task (task-failure); "
        "nothing when not set",
    )
    .define(
        DELAY_MS_CONFIG,
        ConfigType.LONG,
        DEFAULT_FAILURE_DELAY_MS,
        at_least(0),
        Importance.MEDIUM,
        "How long after start the connector or task fails, in milliseconds",
    )
)


class MockFailure(ConnectError):
    """The failure a mock connector or task was configured to have."""

    def __init__(self, what: str, mode: str, delay_ms: int) -> None:
        self.what = what
        self.mode = mode
        self.delay_ms = delay_ms
        super().__init__(f"{what} failed {delay_ms} ms after start, as configured ({mode})")


class MockConnector(Connector):
    """The connector half of the mocks (see the module docstring); subclasses name
    the task class and the connector kind."""

    VERSION = "0.1.0"

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stopped = False
        self._timer: threading.Timer | None = None

    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(props)
        self._props = dict(props)
        with self._lock:
            self._stopped = False
        if parsed[MOCK_MODE_CONFIG] == CONNECTOR_FAILURE:
            delay_ms = parsed[DELAY_MS_CONFIG]
            name = props.get("name", type(self).__name__)
            _log.debug("MockConnector %s will fail in %d ms", name, delay_ms)
            self._timer = threading.Timer(delay_ms / 1000, self._fail, (name, delay_ms))
            self._timer.name = f"mock-connector-failure-{name}"
            self._timer.daemon = True
            self._timer.start()

    def _fail(self, name: str, delay_ms: int) -> None:
        with self._lock:
            if self._stopped:  # stopped (or restarted) before the delay ran out
                return
        _log.debug("Triggering connector failure of %s", name)
        self.context.raise_error(MockFailure(f"connector {name}", CONNECTOR_FAILURE, delay_ms))

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]  # one task, with the connector's config

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        timer, self._timer = self._timer, None
        if timer is None:
            return
        timer.cancel()
        if timer is not threading.current_thread():  # raise_error may stop us from it
            timer.join(5.0)
