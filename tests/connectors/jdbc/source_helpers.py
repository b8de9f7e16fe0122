"""Driving JdbcSource through the plugin API: a connector and tasks with fake contexts,
an offset reader that "commits" what the test says, and draining polls."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from connect.api import SourceRecord
from connectors.jdbc.source import JdbcSourceConnector, JdbcSourceTask
from tests.connectors.fakes import FakeConnectorContext, FakeOffsetReader, FakeSourceContext


class RecordingConnectorContext(FakeConnectorContext):
    """Counts reconfiguration requests."""

    def __init__(self) -> None:
        super().__init__()
        self.reconfigurations = 0
        self.reconfigured = threading.Event()

    def request_task_reconfiguration(self) -> None:
        self.reconfigurations += 1
        self.reconfigured.set()


def start_connector(props: Mapping[str, str]) -> JdbcSourceConnector:
    connector = JdbcSourceConnector()
    connector.initialize(RecordingConnectorContext())
    connector.start(props)
    return connector


def start_task(props: Mapping[str, str], reader: FakeOffsetReader | None = None) -> JdbcSourceTask:
    task = JdbcSourceTask()
    task.initialize(FakeSourceContext(props, reader))
    task.start(props)
    return task


def task_props(props: Mapping[str, str], max_tasks: int = 1) -> list[dict[str, str]]:
    """The task configs the connector makes for `props`."""
    connector = start_connector(props)
    try:
        return connector.task_configs(max_tasks)
    finally:
        connector.stop()


def drain(
    task: JdbcSourceTask, *, quiet_polls: int = 1, max_polls: int = 1000
) -> list[SourceRecord]:
    """Poll until `quiet_polls` polls in a row return nothing (with poll.interval.ms=1
    each table gets one empty poll per round: pass the number of tables)."""
    out: list[SourceRecord] = []
    quiet = 0
    for _ in range(max_polls):
        records = task.poll()
        if records:
            out.extend(records)
            quiet = 0
        else:
            quiet += 1
            if quiet >= quiet_polls:
                return out
    raise AssertionError("the task never went quiet")


def commit(reader: FakeOffsetReader, records: list[SourceRecord]) -> None:
    """Store the offsets of `records` as the worker would after they are durable."""
    for record in records:
        if record.source_partition is not None and record.source_offset is not None:
            reader.put(record.source_partition, dict(record.source_offset))


def values(records: list[SourceRecord], field: str = "id") -> list[Any]:
    return [r.value.get(field) for r in records]


def run(url: str, *statements: str) -> None:
    """Run SQL statements in one transaction of the database at `url`."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)
    engine.dispose()


def source_props(url: str, prefix: str, **extra: str) -> dict[str, str]:
    """A JdbcSource config for `url` polling fast in small batches; keyword names use
    `_` for `.` (batch_max_rows="5")."""
    base = {
        "connection.url": url,
        "topic.prefix": prefix,
        "poll.interval.ms": "1",
        "batch.max.rows": "3",
    }
    return base | {k.replace("_", "."): v for k, v in extra.items()}
