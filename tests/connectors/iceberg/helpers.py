"""Driving IcebergSinkTask directly on a real SQLite catalog and file warehouse."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from connect.api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    SinkRecord,
    Struct,
    TopicPartition,
)
from connectors.iceberg.sink import IcebergSinkTask
from tests.connectors.fakes import FakeSinkContext

TP = TopicPartition("orders", 0)

def order_schema(*, extra: str | None = None, qty: Schema = INT32_SCHEMA) -> Schema:
    fields = [("id", INT64_SCHEMA), ("customer", STRING_SCHEMA), ("qty", qty)]
    if extra is not None:
        fields.append((extra, OPTIONAL_STRING_SCHEMA))
    return Schema.struct(fields, name="orders.Value")


def order(schema: Schema, i: int, **changes: Any) -> Struct:
    values = {"id": i, "customer": f"c{i % 7}", "qty": i % 5, **changes}
    value = Struct(schema)
    for name, v in values.items():
        value.put(name, v)
    return value


def records(schema: Schema, ids: Iterable[int], *, first: int = 0, tp: TopicPartition = TP,
            **changes: Any) -> list[SinkRecord]:
    return [
        SinkRecord(topic=tp.topic, kafka_partition=tp.partition, value_schema=schema,
                   value=order(schema, i, **changes), timestamp=0, kafka_offset=first + n)
        for n, i in enumerate(ids)
    ]


class Context(FakeSinkContext):
    """Remembers the rewinds a task asks for."""

    def __init__(self, configs: Mapping[str, str]) -> None:
        super().__init__(configs)
        self.rewinds: dict[TopicPartition, int] = {}
        self.commits_requested = 0

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.rewinds.update(offsets)

    def request_commit(self) -> None:
        self.commits_requested += 1


def props(warehouse: Path, **extra: str) -> dict[str, str]:
    return {
        "name": "ice",
        "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
        "topics": "orders",
        "iceberg.tables": "db.orders",
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.catalog.warehouse": warehouse.as_uri(),
        "iceberg.control.commit.interval-ms": "1000",
        **extra,
    }


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def start(config: Mapping[str, str], partitions: Sequence[TopicPartition] = (TP,)
          ) -> tuple[IcebergSinkTask, Context, Clock]:
    clock = Clock()
    task = IcebergSinkTask(clock=clock)
    context = Context(config)
    task.initialize(context)
    task.start(config)
    task.open(list(partitions))
    return task, context, clock


def commit(task: IcebergSinkTask, clock: Clock) -> None:
    """Let the commit interval pass and put nothing: the task commits its buffer."""
    clock.now += 3600
    task.put([])


def read(warehouse: Path, table: str = "db.orders") -> pa.Table:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'catalog.db'}",
                         warehouse=warehouse.as_uri())
    return catalog.load_table(table).scan().to_arrow().sort_by("id")


def load(warehouse: Path, table: str = "db.orders") -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'catalog.db'}",
                         warehouse=warehouse.as_uri())
    return catalog.load_table(table)


def run_together(work: Callable[..., None], calls: Sequence[tuple[Any, ...]]) -> None:
    """`work(*call)` for each call, each on a thread of its own, all at once (tasks
    committing to one table side by side); fails with what any of them raised."""
    errors: list[BaseException] = []

    def guarded(*args: Any) -> None:
        try:
            work(*args)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=call) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
