"""Retry with tolerance: how a task survives a bad record or a flaky system.

For each operation on a record, in a stage (Kafka's names: TASK_POLL, TASK_PUT,
TRANSFORMATION, KEY_CONVERTER, VALUE_CONVERTER, HEADER_CONVERTER, KAFKA_PRODUCE,
KAFKA_CONSUME):

1. Run it. In the converter and transformation stages any error may be retried and
   tolerated; in the others only RetriableError (anything else fails the task at once,
   as in Kafka).
2. Retry with exponential backoff (300 ms, doubling, capped at
   `errors.retry.delay.max.ms`) until `errors.retry.timeout` has passed.
3. Still failing: report the record (log and/or dead-letter topic), then with
   `errors.tolerance=none` raise ToleranceExceededError (the task fails), with `all`
   skip it. Reporting comes first either way, as in Kafka: the record that failed a
   task is in the dead-letter topic, with the failure in its headers, for whoever
   looks into why.

Logs and dead-letter headers name what failed as Kafka's do, so tools written against
Kafka's dead-letter topics read ours: the plugin by the class name its config gave
(`plugin_names`: `org.apache.kafka.connect.json.JsonConverter` where the config says
so), a transform by its own configured class (`transform()` runs a chain one transform
at a time), a record a sink reported through its ErrantRecordReporter by Kafka's
`org.apache.kafka.connect.sink.SinkTask` (WorkerErrantRecordReporter's), and the error
by the Kafka exception class it stands for (`kafka_exception_class`).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any, TypeVar

from connect.api import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    DataError,
    IllegalWorkerStateError,
    NotFoundError,
    RetriableError,
)
from connect.errors.config import ErrorPolicy
from connect.transforms.chain import TransformChain

__all__ = [
    "ERRANT_RECORD_CLASS",
    "ErrorContext",
    "RetryWithTolerance",
    "Stage",
    "ToleranceExceededError",
    "kafka_exception_class",
]

_log = logging.getLogger("connect.errors")
T = TypeVar("T")
_INITIAL_BACKOFF_MS = 300


class Stage(StrEnum):
    TASK_POLL = "TASK_POLL"
    TASK_PUT = "TASK_PUT"
    TRANSFORMATION = "TRANSFORMATION"
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


_TOLERABLE_ANY = {
    Stage.TRANSFORMATION,
    Stage.KEY_CONVERTER,
    Stage.VALUE_CONVERTER,
    Stage.HEADER_CONVERTER,
}


#: The class Kafka's dead-letter headers and logs name for a record a sink task
#: reported as errant (WorkerErrantRecordReporter passes `SinkTask.class`).
ERRANT_RECORD_CLASS = "org.apache.kafka.connect.sink.SinkTask"

_KAFKA_ERRORS = "org.apache.kafka.connect.errors."
#: Our error categories → the Kafka exception each stands for.
_KAFKA_EXCEPTIONS: dict[type[BaseException], str] = {
    RetriableError: _KAFKA_ERRORS + "RetriableException",
    DataError: _KAFKA_ERRORS + "DataException",
    NotFoundError: _KAFKA_ERRORS + "NotFoundException",
    AlreadyExistsError: _KAFKA_ERRORS + "AlreadyExistsException",
    IllegalWorkerStateError: _KAFKA_ERRORS + "IllegalWorkerStateException",
    ConfigError: "org.apache.kafka.common.config.ConfigException",
    ConnectError: _KAFKA_ERRORS + "ConnectException",
}


def kafka_exception_class(error: BaseException) -> str:
    """The Kafka exception class `error` stands for, by its nearest category (a
    ConversionError is a DataError: `org.apache.kafka.connect.errors.DataException`);
    any other error by its Python name (`builtins.ValueError`): no Kafka class
    corresponds."""
    for cls in type(error).__mro__:
        kafka = _KAFKA_EXCEPTIONS.get(cls)
        if kafka is not None:
            return kafka
    return f"{type(error).__module__}.{type(error).__qualname__}"


class ToleranceExceededError(ConnectError):
    """An error that `errors.tolerance` does not allow to skip: the task fails."""

    def __init__(self, stage: Stage, cause: BaseException, plugin: str | None = None) -> None:
        self.stage = stage
        self.plugin = plugin
        where = f"stage {stage}" if plugin is None else f"stage {stage}, class {plugin}"
        super().__init__(f"Tolerance exceeded in error handler ({where}): {cause}")


@dataclass(slots=True)
class ErrorContext:
    """What is known about the record that failed, for logs and DLQ headers."""

    stage: Stage
    plugin: str
    error: BaseException
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    raw_key: bytes | None = None
    raw_value: bytes | None = None
    raw_headers: tuple = ()
    record: Any = None

    @property
    def trace(self) -> str:
        return "".join(traceback.format_exception(self.error))


#: Reports a tolerated failure (log, dead-letter topic).
Reporter = Callable[[ErrorContext], None]


class RetryWithTolerance:
    """Runs operations under an ErrorPolicy (see the module docstring)."""

    def __init__(
        self,
        policy: ErrorPolicy,
        *,
        connector: str,
        task: int | None,
        reporters: list[Reporter] | None = None,
        stop: threading.Event | None = None,
        plugin_names: Mapping[Stage, str] | None = None,
    ) -> None:
        self.policy = policy
        self.connector = connector
        self.task = task
        self.reporters = list(reporters or [])
        #: Per stage, the plugin's class as the config named it (`value.converter=...`):
        #: what reports show in place of the class name a caller passes.
        self.plugin_names = dict(plugin_names or {})
        self._stop = stop or threading.Event()
        self.errors_total = 0
        self.records_skipped = 0

    def execute(
        self,
        stage: Stage,
        plugin: str,
        operation: Callable[[], T],
        context: Callable[[], dict[str, Any]] | None = None,
    ) -> tuple[bool, T | None]:
        """(True, result) on success; (False, None) when the record is skipped."""
        try:
            # Step 1
            return True, operation()
        except Exception as exc:
            return self._after_failure(stage, plugin, operation, context, exc)

    def _after_failure(
        self,
        stage: Stage,
        plugin: str,
        operation: Callable[[], T],
        context: Callable[[], dict[str, Any]] | None,
        exc: Exception,
    ) -> tuple[bool, T | None]:
        """Steps 2 and 3 for an operation whose first run raised `exc`."""
        deadline = None
        delay_ms = _INITIAL_BACKOFF_MS
        while True:
            tolerable = stage in _TOLERABLE_ANY or isinstance(exc, RetriableError)
            if not tolerable:
                raise exc
            self.errors_total += 1
            timeout = self.policy.retry_timeout_ms
            now = time.monotonic()
            if deadline is None:
                deadline = float("inf") if timeout < 0 else now + timeout / 1000
            # Step 2
            if now + delay_ms / 1000 <= deadline and not self._stop.is_set():
                self._stop.wait(delay_ms / 1000)
                delay_ms = min(delay_ms * 2, self.policy.retry_delay_max_ms)
                try:
                    # Step 1, again
                    return True, operation()
                except Exception as again:
                    exc = again
                    continue
            # Step 3
            name = self.plugin_names.get(stage, plugin)
            ctx = ErrorContext(stage, name, exc, **(context() if context else {}))
            if self.policy.log_errors:
                self._log(ctx)
            for report in self.reporters:
                report(ctx)
            if not self.policy.tolerate_all:
                raise ToleranceExceededError(stage, exc, name) from exc
            self.records_skipped += 1
            return False, None

    def transform(
        self,
        chain: Callable[[Any], Any],
        record: Any,
        context: Callable[[], dict[str, Any]] | None = None,
    ) -> tuple[bool, Any]:
        """`execute` for the TRANSFORMATION stage. A TransformChain runs one transform
        at a time, as Kafka's TransformationChain runs each under its operator: a
        failure is retried and reported as that transform's, named by its configured
        class, and only it runs again. Any other callable is one operation named by its
        class. Success costs no more than a direct call per transform (a hot path)."""
        if not isinstance(chain, TransformChain):
            return self.execute(
                Stage.TRANSFORMATION, type(chain).__name__, lambda: chain(record), context
            )
        for name, apply in chain.stages:
            try:
                # Step 1
                record = apply(record)
            except Exception as exc:
                ok, record = self._after_failure(
                    Stage.TRANSFORMATION, name, partial(apply, record), context, exc
                )
                if not ok:
                    return False, None
            if record is None:
                return True, None
        return True, record

    def _log(self, ctx: ErrorContext) -> None:
        where = f"topic '{ctx.topic}', partition {ctx.partition}, offset {ctx.offset}"
        message = (
            f"Error encountered in task {self.connector}-{self.task}. Executing stage "
            f"'{ctx.stage}' with class '{ctx.plugin}', where consumed record is {{{where}}}."
        )
        if self.policy.log_messages and ctx.record is not None:
            message += f" Record: {ctx.record!r}"
        _log.error(message, exc_info=ctx.error)
