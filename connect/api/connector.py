"""Connectors: the plugin's entry point, which splits a job into task configs.

Lifecycle of a Connector, run by the worker (one thread per connector):

1. `__init__()` with no arguments (the class is found by `connector.class`).
2. `initialize(context)` — the runtime hands over its ConnectorContext.
3. `start(props)` — the validated config. May start background threads (e.g. to
   watch for new tables) and call `context.request_task_reconfiguration()`.
4. `task_configs(max_tasks)` — at most `max_tasks` config maps, one per task; the
   runtime starts `task_class()` once per map. Called again after a reconfiguration
   request or a config change.
5. `stop()` — called once, from the worker's thread, on delete, stop, or shutdown.

`config()` declares the keys (a ConfigDef); `validate(props)` checks a candidate
config for the REST validate endpoint (default: the ConfigDef's checks). Raising
from `start` fails the connector (shown as FAILED with the trace).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigValue
from connect.api.exactly_once import ConnectorTransactionBoundaries, ExactlyOnceSupport
from connect.api.records import TopicPartition

__all__ = ["Connector", "ConnectorContext", "SinkConnector", "SourceConnector"]


class ConnectorContext(ABC):
    """The runtime, as a connector sees it."""

    @abstractmethod
    def request_task_reconfiguration(self) -> None:
        """Ask the runtime to call `task_configs` again (e.g. a new table appeared)."""

    @abstractmethod
    def raise_error(self, error: BaseException) -> None:
        """Fail the connector from a background thread of its own."""


class Connector(ABC):
    """Base of every connector (see the module docstring for the lifecycle)."""

    context: ConnectorContext

    def version(self) -> str:
        return getattr(type(self), "VERSION", "0.1.0")

    def initialize(self, context: ConnectorContext) -> None:
        self.context = context

    @abstractmethod
    def start(self, props: Mapping[str, str]) -> None: ...

    @abstractmethod
    def task_class(self) -> type: ...

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def config(self) -> ConfigDef: ...

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        return self.config().validate(props)

    def reconfigure(self, props: Mapping[str, str]) -> None:
        """Apply a new config; the default restarts the connector."""
        self.stop()
        self.start(props)


class SourceConnector(Connector):
    """A connector whose tasks read from an external system into the log."""

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Whether the connector, with these props, can run exactly once: its source
        replays the same records from a stored offset (None: it does not know, which
        `exactly.once.support=required` refuses)."""
        return None

    def can_define_transaction_boundaries(
        self, props: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        """Whether its tasks draw their own transaction boundaries through
        `SourceTaskContext.transaction_context()` (`transaction.boundary=connector`)."""
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def alter_offsets(
        self,
        props: Mapping[str, str],
        offsets: Mapping[Mapping[str, Any], Mapping[str, Any] | None],
    ) -> bool:
        """Told of an offset change through the REST API before it is written.
        Return True when the connector acknowledges it (e.g. it keeps offsets
        elsewhere too); raise to refuse. False means "nothing to do here"."""
        return False


class SinkConnector(Connector):
    """A connector whose tasks write records from the log to an external system."""

    TOPICS_CONFIG = "topics"
    TOPICS_REGEX_CONFIG = "topics.regex"

    def alter_offsets(
        self, props: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        return False
