"""SourceBatch: a source's Arrow columns reach the log exactly as the records they
stand for would — same partitions, same bytes, same offsets — whether every stage
takes the columns or the batch falls back to `records()` somewhere."""

from __future__ import annotations

import datetime as dt
import decimal
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pytest

from connect.api import (
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    ConfigDef,
    ConfigType,
    Decimal,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Struct,
    Timestamp,
)
from connect.api.arrow import batch_from_values
from connect.api.batches import SourceBatch
from tests.waiting import wait_until

KEY = Schema.struct([("id", INT64_SCHEMA)], name="t.Key")
VALUE = Schema.struct(
    [
        ("id", INT64_SCHEMA),
        ("name", OPTIONAL_STRING_SCHEMA),
        ("amount", Decimal.schema(2, precision=12)),
        ("at", Timestamp.schema()),
    ],
    name="t.Value",
)
ROWS = 1000
CHUNK = 300
JSON = "org.apache.kafka.connect.json.JsonConverter"


def make_batch(start: int, stop: int, topic: str = "rows") -> SourceBatch:
    ids = list(range(start, stop))
    values = batch_from_values(
        VALUE,
        [
            Struct(
                VALUE,
                {
                    "id": i,
                    "name": None if i % 7 == 0 else f'name-{i}-é"\\',
                    "amount": decimal.Decimal(i * 13 - 5000).scaleb(-2),
                    "at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i),
                },
            )
            for i in ids
        ],
    )
    keys = pa.RecordBatch.from_arrays([pa.array(ids, pa.int64())], names=["id"])
    return SourceBatch(
        topic=topic,
        value_schema=VALUE,
        values=values,
        key_schema=KEY,
        keys=keys,
        source_partition={"table": "t"},
        source_offset={"last": stop - 1},
    )


class BatchSource(SourceConnector):
    """Emits ROWS rows once, as SourceBatches of CHUNK rows (`mode=batches`) or as
    their `records()` (`mode=records`), resuming after its committed offset."""

    POLLS: list[int] = []
    COMMITTED: list[Any] = []

    def config(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("mode", ConfigType.STRING, "batches")
            .define("topic", ConfigType.STRING, "rows")
        )

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return BatchSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class BatchSourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        self.mode = props.get("mode", "batches")
        self.topic = props.get("topic", "rows")
        offset = self.context.offset_storage_reader.offset({"table": "t"})
        self.next = 0 if offset is None else offset["last"] + 1

    def poll(self) -> list[Any] | None:
        if self.next >= ROWS:
            threading.Event().wait(0.05)
            return None
        stop = min(ROWS, self.next + CHUNK)
        batch = make_batch(self.next, stop, self.topic)
        BatchSource.POLLS.append(self.next)
        self.next = stop
        if self.mode == "records":
            return batch.records()
        if self.mode == "mixed":  # a record before and after the batch
            n = len(batch)
            first, last = batch.slice(0, 1).records(), batch.slice(n - 1).records()
            return [*first, batch.slice(1, n - 1), *last]
        return [batch]

    def commit_records(self, records: Sequence[SourceRecord], metadata: Sequence[Any]) -> None:
        BatchSource.COMMITTED.append((records[-1].source_offset, len(records), len(metadata)))

    def stop(self) -> None:
        return None


def _herder(start_herder: Callable[..., Any]) -> Any:
    return start_herder({"task.isolation": "thread", "num.partitions": "3"})


def _run(
    herder: Any, mode: str, topic: str, extra: dict[str, str] | None = None
) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    """The records of `topic` per partition once a `mode` BatchSource filled it."""
    herder.put_connector_config(
        topic,
        {
            "connector.class": f"{__name__}.BatchSource",
            "mode": mode,
            "topic": topic,
            "value.converter": JSON,
            "key.converter": JSON,
            "key.converter.schemas.enable": "false",
            **(extra or {}),
        },
        allow_replace=False,
    )
    log = herder.log

    def count() -> int:
        if topic not in log.list_topics():
            return 0
        return sum(log.latest_offset(topic, p) for p in range(3))

    wait_until(lambda: count() >= ROWS)
    herder.delete_connector(topic)
    return {
        p: [(r.key, r.value) for r in log.read(topic, p, 0, max_records=ROWS)] for p in range(3)
    }


@pytest.mark.parametrize("mode", ["batches", "mixed"])
def test_batches_land_as_their_records_would(start_herder, mode, batch_fallbacks) -> None:
    herder = _herder(start_herder)
    columnar = _run(herder, mode, "columns")
    assert sum(map(len, columnar.values())) == ROWS
    assert all(columnar.values())  # keys hashed across every partition
    assert not batch_fallbacks
    assert columnar == _run(herder, "records", "records")


def test_a_transform_without_batch_support_takes_the_record_path(
    start_herder, batch_fallbacks
) -> None:
    insert = {
        "transforms": "tag",
        "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.tag.static.field": "origin",
        "transforms.tag.static.value": "batch",
    }
    herder = _herder(start_herder)
    columnar = _run(herder, "batches", "columns", insert)
    assert batch_fallbacks  # InsertField works on records
    assert columnar == _run(herder, "records", "records", insert)
    assert b'"origin":"batch"' in columnar[0][0][1]


def test_offsets_and_commit_records_follow_batches(start_herder, batch_fallbacks) -> None:
    BatchSource.POLLS.clear()
    BatchSource.COMMITTED.clear()
    herder = _herder(start_herder)
    config = {
        "connector.class": f"{__name__}.BatchSource",
        "value.converter": JSON,
        "key.converter": JSON,
    }
    herder.put_connector_config("src", config, allow_replace=False)
    wait_until(lambda: sum(n for _, n, _ in BatchSource.COMMITTED) >= ROWS)
    # One commit_records call per appended partition batch; the newest record's
    # offset is the batch's.
    assert {offset["last"] for offset, _, _ in BatchSource.COMMITTED} == {
        299,
        599,
        899,
        999,
    }
    assert all(n == m for _, n, m in BatchSource.COMMITTED)
    wait_until(lambda: herder.offsets.get("src", {"table": "t"}) == {"last": 999})
    assert batch_fallbacks == []
    # A restart resumes after the committed offset: nothing is polled again.
    herder.restart_connector("src", include_tasks=True)
    polls = len(BatchSource.POLLS)
    threading.Event().wait(0.5)
    assert len(BatchSource.POLLS) == polls == 4
