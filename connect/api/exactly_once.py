"""What a source connector says about exactly-once delivery, and the handle a task
uses to draw its own transaction boundaries (Kafka Connect's KIP-618 API).

With exactly-once source support on, the worker writes a task's records and its
source offsets in one log transaction, so a crash replays nothing the log already
holds. That is only sound for a source that can resume exactly from a stored offset:
the same offset must yield the same records. The connector says whether it can
(`SourceConnector.exactly_once_support`), and whether its tasks can decide where a
transaction ends (`SourceConnector.can_define_transaction_boundaries`); the worker
refuses a configuration that asks for more than the connector promises.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connect.api.records import SourceRecord

__all__ = ["ConnectorTransactionBoundaries", "ExactlyOnceSupport", "TransactionContext"]


class ExactlyOnceSupport(Enum):
    """A source connector's answer to "can you run exactly once with this config?".

    SUPPORTED: reading again from a committed source offset yields the same records,
    so records and offsets written in one transaction are never lost nor doubled.
    UNSUPPORTED: the source cannot replay (a database's current state, stdin).
    A connector that does not know answers None (`exactly.once.support=required` then
    refuses it, as Kafka Connect does)."""

    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"


class ConnectorTransactionBoundaries(Enum):
    """Whether the connector's tasks can define their own transaction boundaries
    (`transaction.boundary=connector`), through `SourceTaskContext.transaction_context`."""

    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"


class TransactionContext(ABC):
    """A task's say over its transactions, given only with
    `transaction.boundary=connector` (else `transaction_context()` is None).

    A request takes effect once the worker has dispatched the records polled so far:
    commit or abort at a record means "after that record has been written", so a task
    may ask while it builds a batch. An abort drops the transaction's records but still
    commits their source offsets, as Kafka Connect does: the task chose to drop them,
    and they are not read again. A task that wants them read again raises instead."""

    @abstractmethod
    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commit after the records polled so far (or after `record`)."""

    @abstractmethod
    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Abort after the records polled so far (or after `record`, which is dropped
        with the rest of its transaction); their offsets are committed all the same."""
