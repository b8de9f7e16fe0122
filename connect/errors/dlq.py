"""The dead-letter topic of a sink connector: failed records with their original
bytes, and (with `errors.deadletterqueue.context.headers.enable`) Kafka's
`__connect.errors.*` headers saying where and why they failed: the plugin by the class
its config named, the error by the Kafka exception class it stands for (see
`connect.errors.handler`), so tools that read Kafka's dead-letter topics read ours.
The error's message and trace are masked as every log line is (`connect.herder.secrets`):
a failure that quotes a connection URL must not carry its password into a topic."""

from __future__ import annotations

import contextlib
import threading

from connect.errors.handler import ErrorContext, kafka_exception_class
from connect.herder.secrets import mask_text
from log import Log, TopicExistsError

__all__ = ["DeadLetterQueueReporter"]

_PREFIX = "__connect.errors."


class DeadLetterQueueReporter:
    def __init__(
        self,
        log: Log,
        topic: str,
        *,
        connector: str,
        task: int,
        context_headers: bool,
        partitions: int = 1,
    ) -> None:
        self._log = log
        self.topic = topic
        self.connector = connector
        self.task = task
        self.context_headers = context_headers
        self._lock = threading.Lock()
        self.reported = 0
        with contextlib.suppress(TopicExistsError):
            log.create_topic(topic, partitions)

    def __call__(self, ctx: ErrorContext) -> None:
        headers: list[tuple[str, bytes | None]] = list(ctx.raw_headers)
        if self.context_headers:
            error = ctx.error
            items = {
                "topic": ctx.topic,
                "partition": None if ctx.partition is None else str(ctx.partition),
                "offset": None if ctx.offset is None else str(ctx.offset),
                "connector.name": self.connector,
                "task.id": str(self.task),
                "stage": ctx.stage.value,
                "class.name": ctx.plugin,
                "exception.class.name": kafka_exception_class(error),
                "exception.message": mask_text(str(error)),
                "exception.stacktrace": mask_text(ctx.trace),
            }
            headers += [(_PREFIX + k, None if v is None else v.encode()) for k, v in items.items()]
        with self._lock:
            self._log.append(self.topic, 0, [ctx.raw_value], keys=[ctx.raw_key], headers=[headers])
            self.reported += 1

    def flush(self) -> None:
        """Make reported records durable (before the sink commits past them)."""
        self._log.flush(self.topic, 0)
