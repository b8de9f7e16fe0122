"""How long a source task's append waits for the log: on Kafka, without a limit.

Kafka Connect's worker makes its source tasks' producers wait out any broker outage:
it sets their `delivery.timeout.ms` to Integer.MAX_VALUE and `max.block.ms` to
Long.MAX_VALUE, under the worker's `producer.`-prefixed keys and the connector's
`producer.override.` ones, which may set a limit again. Ours do the same on KafkaLog
(`KafkaLog.appender`): a task's append waits for a broker as long as it takes, where
it failed after the log's delivery timeout (120 s, or the worker's
`kafka.delivery.timeout.ms`, which still bounds the runtime's own writes: offsets,
statuses, configs), and the task with it. FileLog's appends never wait for a broker:
the task keeps its plain `append`.

Stopping (numbered as in the code):
1. The task's stop sets its stopping event, which the waiting append watches: once no
   delivery report has come for a second after it, the append gives up with
   LogUnavailableError (a broker that answers finishes the batch first).
2. `stop_ends_append` takes that error as the end of the poll's sends, not the task's
   failure: the poll's offsets were not remembered (they are only once every record
   is in the log), so a restart polls its records again (at-least-once), and the task
   goes on to its clean stop. Any other LogUnavailableError still fails the task.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from connect.api import ConfigError
from log import Log, LogUnavailableError

__all__ = ["source_append", "source_delivery_timeout_ms", "stop_ends_append"]

#: Kafka's producer key and librdkafka's alias of it.
_KEYS = ("delivery.timeout.ms", "message.timeout.ms")


def source_delivery_timeout_ms(
    worker_config: Mapping[str, Any], connector_props: Mapping[str, str]
) -> int:
    """The connector's `producer.override.delivery.timeout.ms`, else the worker's
    `producer.delivery.timeout.ms` (or either's `message.timeout.ms`), else 0: no
    limit, Kafka Connect's default for source tasks."""
    for prefix, config in (("producer.override.", connector_props), ("producer.", worker_config)):
        for key in _KEYS:
            value = config.get(prefix + key)
            if value in (None, ""):
                continue
            try:
                ms = int(str(value))
            except ValueError:
                ms = -1
            if ms < 0:
                raise ConfigError(prefix + key, value, "must be a whole number of ms, 0 or more")
            return ms
    return 0


def source_append(
    log: Log, delivery_timeout_ms: int, stop: threading.Event
) -> Callable[..., range]:
    """The append a source task writes its records with (see the module docstring)."""
    appender = getattr(log, "appender", None)  # KafkaLog's; a FileLog has none
    if appender is None:
        return log.append
    return appender(delivery_timeout_ms=delivery_timeout_ms, stop=stop)


@contextlib.contextmanager
def stop_ends_append(stop: threading.Event) -> Iterator[None]:
    """Step 2: a LogUnavailableError raised once `stop` is set ends the block
    quietly."""
    try:
        yield
    except LogUnavailableError:
        if not stop.is_set():
            raise
