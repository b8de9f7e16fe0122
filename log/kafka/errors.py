"""Errors only the Kafka backend raises, under the log's root `LogError`::

    LogError
    ├── KafkaOperationError     the cluster or the client refused a request
    │   │                       (`retriable` says whether trying again may help)
    │   └── KafkaUnavailableError   … because the cluster cannot be reached for now
    │                           (also a `LogUnavailableError`: callers back off)
    └── AdminUnavailableError   the cluster answers no topic/group admin requests
                                (librdkafka's mock cluster has no controller)

Both keep their facts as attributes and build the message from them.
"""

from __future__ import annotations

from log.errors import LogError, LogUnavailableError

__all__ = ["AdminUnavailableError", "KafkaOperationError", "KafkaUnavailableError"]


class KafkaOperationError(LogError):
    """A request the cluster or client failed: `operation` names what we tried,
    `code` is librdkafka's error name (e.g. `_MSG_TIMED_OUT`, `NOT_LEADER_OR_FOLLOWER`)."""

    def __init__(self, operation: str, code: str, reason: str, *, retriable: bool) -> None:
        self.operation = operation
        self.code = code
        self.reason = reason
        self.retriable = retriable
        super().__init__(f"{operation} failed: {code}: {reason}")


class KafkaUnavailableError(KafkaOperationError, LogUnavailableError):
    """A request that failed because no broker answered in time, or leadership or the
    group coordinator is moving (`log.kafka.clients.UNAVAILABLE` lists the codes)."""


class AdminUnavailableError(LogError):
    """An operation that needs Kafka's admin API (CreateTopics, DeleteTopics,
    DeleteGroups …) on a cluster that reports no controller to send it to."""

    def __init__(self, operation: str, bootstrap: str) -> None:
        self.operation = operation
        self.bootstrap = bootstrap
        super().__init__(
            f"{operation} needs the Kafka admin API, which the cluster at {bootstrap} "
            "does not offer (it reports no controller)"
        )
