"""Small plugins the runtime tests name by dotted path (test doubles shipped with the
tests, the way httpx ships MockTransport)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api import (
    OPTIONAL_STRING_SCHEMA,
    ConfigDef,
    ConfigType,
    Converter,
    DataError,
    HeaderConverter,
    Headers,
    Schema,
    SchemaAndValue,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
)


class Utf8Converter(Converter, HeaderConverter):
    """Strings as UTF-8; refuses bytes that are not valid UTF-8 (a DataError)."""

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        self.configs = dict(configs)

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> bytes | None:
        return None if value is None else str(value).encode()

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(OPTIONAL_STRING_SCHEMA, None)
        try:
            return SchemaAndValue(OPTIONAL_STRING_SCHEMA, data.decode())
        except UnicodeDecodeError as exc:
            raise DataError(f"not UTF-8: {exc}") from exc

    def from_connect_header(
        self, topic: str, key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, key: str, data: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, data)


class ListSink(SinkConnector):
    """Collects what its tasks receive in a module-level list (tests read it)."""

    RECEIVED: list[SinkRecord] = []
    FAIL_ON: set[str] = set()

    def config(self) -> ConfigDef:
        return ConfigDef()

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return ListSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        return None


class ListSinkTask(SinkTask):
    def start(self, props: Mapping[str, str]) -> None:
        self.props = props

    def put(self, records: Sequence[SinkRecord]) -> None:
        for rec in records:
            if rec.value in ListSink.FAIL_ON and self.context.errant_record_reporter:
                self.context.errant_record_reporter.report(rec, ValueError("refused"))
                continue
            ListSink.RECEIVED.append(rec)

    def stop(self) -> None:
        return None


class FailingSource(SourceConnector):
    """A source whose task fails on its first poll (for FAILED states and restarts)."""

    def config(self) -> ConfigDef:
        return ConfigDef().define("topic", ConfigType.STRING, "failing")

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return FailingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class FailingSourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        self.props = props

    def poll(self) -> list[SourceRecord] | None:
        raise RuntimeError("boom from poll")

    def stop(self) -> None:
        return None


class SecretSource(SourceConnector):
    """A source with a PASSWORD key (for masking tests); its task sends nothing."""

    CONFIG = (
        ConfigDef()
        .define("topic", ConfigType.STRING, "secret-topic")
        .define("connection.password", ConfigType.PASSWORD, None)
    )

    def config(self) -> ConfigDef:
        return self.CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        self.CONFIG.parse(props)
        self.props = dict(props)

    def task_class(self) -> type:
        return SecretSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class SecretSourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        self._stopped = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        self._stopped.wait(0.1)
        return None

    def stop(self) -> None:
        self._stopped.set()


class LeakySource(SourceConnector):
    """A source whose task fails at start with an error that quotes its connection URL
    and its password, as a database driver's refusal may (for masking tests)."""

    CONFIG = (
        ConfigDef()
        .define("topic", ConfigType.STRING, "leaky")
        .define("connection.url", ConfigType.STRING, "")
        .define("connection.password", ConfigType.PASSWORD, None)
    )

    def config(self) -> ConfigDef:
        return self.CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return LeakySourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class LeakySourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        raise ConnectionError(
            f"cannot connect to {props.get('connection.url')} "
            f"as told (password {props.get('connection.password')})"
        )

    def poll(self) -> list[SourceRecord] | None:
        return None

    def stop(self) -> None:
        return None


class UnvalidatableSource(SecretSource):
    """A source whose own validate() raises (a plugin's bug) instead of answering."""

    def validate(self, props: Mapping[str, Any]) -> list[Any]:
        raise RuntimeError("validation crashed")


class CommitTrackingSource(SourceConnector):
    """Emits `count` records ("a0", "b1", "a2", … to topics `a` and `b`) once; its task
    keeps every `commit_record` call in COMMITTED (tests read it)."""

    COMMITTED: list[tuple[str, Any]] = []

    def config(self) -> ConfigDef:
        return ConfigDef().define("count", ConfigType.INT, 10)

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return CommitTrackingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class CommitTrackingSourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        self.count = int(props.get("count", "10"))
        self.sent = False

    def poll(self) -> list[SourceRecord] | None:
        if self.sent:
            threading.Event().wait(0.05)
            return None
        self.sent = True
        return [
            SourceRecord(topic="ab"[i % 2], value=f"{'ab'[i % 2]}{i}", source_offset={"i": i})
            for i in range(self.count)
        ]

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        CommitTrackingSource.COMMITTED.append((record.value, metadata))

    def stop(self) -> None:
        return None


class BatchCommitTrackingSource(CommitTrackingSource):
    """The same, its task overriding `commit_records`: one entry per call."""

    BATCHES: list[tuple[list[Any], list[Any]]] = []

    def task_class(self) -> type:
        return BatchCommitTrackingSourceTask


class BatchCommitTrackingSourceTask(CommitTrackingSourceTask):
    def commit_records(self, records: Sequence[SourceRecord], metadata: Sequence[Any]) -> None:
        BatchCommitTrackingSource.BATCHES.append(([r.value for r in records], list(metadata)))


class ExitingSource(SourceConnector):
    """A source whose task process exits (code 3) inside start(), before it reports."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return ExitingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class ExitingSourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        import os

        os._exit(3)

    def poll(self) -> list[SourceRecord] | None:
        return None

    def stop(self) -> None:
        return None
