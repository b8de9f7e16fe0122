"""What a source task reaches the runtime through: its context (configs, the offset
reader, the transaction context of exactly-once), apart from the loop that runs it
(`connect.worker.source_task`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import OffsetStorageReader, SourceTaskContext, TransactionContext
from connect.storage import OffsetStore
from connect.worker.source_transactions import SourceTransactions

__all__ = ["OffsetReader", "TaskContext"]


class OffsetReader(OffsetStorageReader):
    """A task's offsets as stored: exactly-once tasks read them through their
    transactions' table (read_committed), others through the worker's store."""

    def __init__(self, store: OffsetStore | SourceTransactions, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        if isinstance(self._store, SourceTransactions):
            return self._store.offset(self._connector, partition)
        return self._store.get(self._connector, partition)


class TaskContext(SourceTaskContext):
    """The context handed to `SourceTask.initialize`."""

    def __init__(
        self,
        configs: Mapping[str, str],
        reader: OffsetStorageReader,
        transactions: SourceTransactions | None = None,
    ) -> None:
        self._configs = dict(configs)
        self._reader = reader
        self._transactions = transactions

    def transaction_context(self) -> TransactionContext | None:
        return None if self._transactions is None else self._transactions.context

    @property
    def configs(self) -> Mapping[str, str]:
        return self._configs

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader
