"""Records, a sink task driven through the plugin API, and reading the lake back."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from connect.api import (
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Date,
    Decimal,
    Schema,
    SinkRecord,
    Struct,
    Timestamp,
    TopicPartition,
)
from connectors.spark.files import parse_file_name
from connectors.spark.sink import SparkParquetSinkTask
from tests.connectors.fakes import FakeSinkContext

ORDER = Schema.struct(
    [
        ("id", INT64_SCHEMA),
        ("region", STRING_SCHEMA),
        ("amount", Decimal.schema(2, precision=10)),
        ("day", Date.schema()),
        ("at", Timestamp.schema()),
    ],
    name="orders",
)
ORDER_V2 = Schema.struct(
    [*((f.name, f.schema) for f in ORDER.fields), ("note", OPTIONAL_STRING_SCHEMA)],
    name="orders",
    version=2,
)
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def order(i: int, schema: Schema = ORDER) -> Struct:
    value = Struct(schema)
    value.put("id", i)
    value.put("region", ("eu", "us", "apac")[i % 3])
    value.put("amount", decimal.Decimal(i * 125).scaleb(-2))
    value.put("day", dt.date(2024, 1, 1) + dt.timedelta(days=i % 5))
    value.put("at", dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i))
    if schema is ORDER_V2:
        value.put("note", f"n{i}")
    return value


def records(
    ids: range,
    *,
    topic: str = "orders",
    partition: int = 0,
    schema: Schema = ORDER,
    ts_step_ms: int = 1000,
) -> list[SinkRecord]:
    """One record per id at offset == id."""
    return [
        SinkRecord(
            topic=topic,
            kafka_partition=partition,
            value_schema=schema,
            value=order(i, schema),
            timestamp=T0 + i * ts_step_ms,
            kafka_offset=i,
        )
        for i in ids
    ]


class Context(FakeSinkContext):
    """Remembers the seeks a task asks for."""

    def __init__(self, configs: Mapping[str, str]) -> None:
        super().__init__(configs)
        self.seeks: dict[TopicPartition, int] = {}

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.seeks.update(offsets)


def start_task(
    lake: Path, clock: Any = None, **config: str
) -> tuple[SparkParquetSinkTask, Context]:
    props = {"path": str(lake), "flush.size": "10"}
    props.update({k.replace("_", "."): v for k, v in config.items()})
    task = SparkParquetSinkTask(clock) if clock is not None else SparkParquetSinkTask()
    context = Context(props)
    task.initialize(context)
    task.start(props)
    return task, context


def lake_files(lake: Path, topic: str = "orders") -> list[Path]:
    root = lake / "topics" / topic
    return sorted(root.rglob("*.parquet"), key=lambda p: parse_file_name(p.name) or p.name)


def lake_rows(lake: Path, topic: str = "orders") -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in lake_files(lake, topic):
        rows.extend(pq.read_table(path).to_pylist())
    return sorted(rows, key=lambda r: r["id"])
