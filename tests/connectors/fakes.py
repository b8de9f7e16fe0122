"""Fake contexts for driving connectors and tasks directly through the plugin API."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConnectorContext,
    ErrantRecordReporter,
    OffsetStorageReader,
    SinkTaskContext,
    SourceTaskContext,
    TopicPartition,
)


def _key(partition: Mapping[str, Any]) -> tuple:
    return tuple(sorted(partition.items()))


class FakeOffsetReader(OffsetStorageReader):
    """Stored offsets by source partition."""

    def __init__(self, stored: Mapping[tuple, dict[str, Any]] | None = None) -> None:
        self.stored: dict[tuple, dict[str, Any]] = dict(stored or {})

    def put(self, partition: Mapping[str, Any], offset: dict[str, Any]) -> None:
        self.stored[_key(partition)] = offset

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.stored.get(_key(partition))


class FakeSourceContext(SourceTaskContext):
    def __init__(self, configs: Mapping[str, str], reader: FakeOffsetReader | None = None) -> None:
        self._configs = dict(configs)
        self.reader = reader or FakeOffsetReader()

    @property
    def configs(self) -> Mapping[str, str]:
        return self._configs

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        return self.reader


class FakeSinkContext(SinkTaskContext):
    def __init__(self, configs: Mapping[str, str]) -> None:
        self._configs = dict(configs)
        self.timeouts: list[int] = []

    @property
    def configs(self) -> Mapping[str, str]:
        return self._configs

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        return None

    def timeout(self, timeout_ms: int) -> None:
        self.timeouts.append(timeout_ms)

    def assignment(self) -> set[TopicPartition]:
        return set()

    def pause(self, *partitions: TopicPartition) -> None:
        return None

    def resume(self, *partitions: TopicPartition) -> None:
        return None

    def request_commit(self) -> None:
        return None

    @property
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return None


class FakeConnectorContext(ConnectorContext):
    """Records `raise_error`; `on_error` runs inside it (the worker stops the
    connector from there)."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []
        self.raised = threading.Event()
        self.on_error: Any = None

    def request_task_reconfiguration(self) -> None:
        return None

    def raise_error(self, error: BaseException) -> None:
        self.errors.append(error)
        if self.on_error is not None:
            self.on_error()
        self.raised.set()
