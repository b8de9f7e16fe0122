"""SparkParquetSink through the batch path (`put_batches`, values decoded by
JsonConverter.to_arrow): the same lake as through `put()`, under the same exactly-once
rules — replays cut, a poll from before open()'s seek dropped, tombstones skipped or
refused — and in a real sink runtime with no `value.format` setting."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from connect.api import DataError, Schema, SinkRecord, TopicPartition
from connect.api.sink_batch import SinkBatch
from connect.converters import ByteArrayConverter, JsonConverter, SimpleHeaderConverter
from connect.errors import ErrorPolicy, RetryWithTolerance
from connect.worker.sink_task import WorkerSinkTask
from connect.worker.task_base import StatusListener
from connectors.spark.sink import SparkParquetSinkTask
from log import FileLog
from tests.connectors.spark.helpers import (
    ORDER,
    ORDER_V2,
    T0,
    lake_files,
    lake_rows,
    order,
    records,
    start_task,
)

TP = TopicPartition("orders", 0)


def _converter() -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": True}, is_key=False)
    return converter


def messages(ids: Sequence[int], schema: Schema = ORDER) -> list[bytes | None]:
    values = [order(i, schema) for i in ids]
    return _converter().from_connect_batch("orders", [schema] * len(values), values)


def batches(data: Sequence[bytes | None], *, first: int = 0, partition: int = 0) -> list[SinkBatch]:
    """What the runtime makes of messages at offsets first, first + 1, … (timestamps as
    `records()` gives them), tombstones with the batch after them."""
    offsets = np.arange(first, first + len(data), dtype=np.int64)
    stamps = T0 + offsets * 1000
    runs = _converter().to_arrow("orders", data)
    assert runs is not None
    out = []
    taken = 0
    for k, (schema, values, rows) in enumerate(runs):
        end = len(data) if k == len(runs) - 1 else int(rows[-1]) + 1
        tombstones = [first + i for i in range(taken, end) if data[i] is None]
        out.append(
            SinkBatch(
                topic="orders",
                partition=partition,
                value_schema=schema,
                values=values,
                offsets=offsets[rows],
                timestamps=stamps[rows],
                tombstones=np.asarray(tombstones, np.int64),
            )
        )
        taken = end
    return out


def test_batches_make_the_lake_that_records_make(tmp_path: Path) -> None:
    data = messages(range(12)) + messages(range(12, 15), ORDER_V2) + messages(range(15, 25))
    task, _ = start_task(
        tmp_path / "batches",
        flush_size="5",
        partitioner_class="FieldPartitioner",
        partition_field_name="region",
    )
    task.open([TP])
    task.put_batches(batches(data))
    task.put([])
    typed, _ = start_task(
        tmp_path / "records",
        flush_size="5",
        partitioner_class="FieldPartitioner",
        partition_field_name="region",
    )
    typed.open([TP])
    typed.put(records(range(12)) + records(range(12, 15), schema=ORDER_V2) + records(range(15, 25)))
    names = [f.relative_to(tmp_path / "batches") for f in lake_files(tmp_path / "batches")]
    assert names == [f.relative_to(tmp_path / "records") for f in lake_files(tmp_path / "records")]
    assert lake_rows(tmp_path / "batches") == lake_rows(tmp_path / "records")
    assert [pq.read_schema(f) for f in lake_files(tmp_path / "batches")] == [
        pq.read_schema(f) for f in lake_files(tmp_path / "records")
    ]
    assert task.pre_commit({TP: 25}) == typed.pre_commit({TP: 25})


def test_tombstones_are_skipped_and_committed_past_or_refused(tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="2")
    task.put_batches(batches([*messages(range(2)), None, None]))
    assert task.pre_commit({TP: 4}) == {TP: 4}
    assert [r["id"] for r in lake_rows(tmp_path)] == [0, 1]
    failing, _ = start_task(tmp_path / "b", behavior_on_null_values="fail")
    with pytest.raises(DataError, match=r"null value at orders-0@1"):
        failing.put_batches(batches([*messages([0]), None, *messages([2])]))


def test_restart_skips_replays_and_the_poll_from_before_the_seek(tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="10")
    task.put_batches(batches(messages(range(25))))
    task.stop()  # 20..24 were buffered only: dropped, read again
    again, context = start_task(tmp_path, flush_size="10")
    again.open([TP])
    assert context.seeks == {TP: 20}
    again.put_batches(batches(messages(range(15, 30)), first=15))  # before the seek
    again.put([])
    assert len(lake_files(tmp_path)) == 2
    again.put_batches(batches(messages(range(18, 30)), first=18))  # a replayed head
    again.put([])
    assert [r["id"] for r in lake_rows(tmp_path)] == list(range(30))  # 20..29: a file
    assert again.pre_commit({TP: 30}) == {TP: 30}


class CountingSink(SparkParquetSinkTask):
    """Counts what arrives which way."""

    def __init__(self) -> None:
        super().__init__()
        self.batch_rows = self.record_count = 0

    def put_batches(self, batches: Sequence[SinkBatch]) -> None:
        self.batch_rows += sum(b.records_in for b in batches)
        super().put_batches(batches)

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.record_count += len(records)
        super().put(records)


def _worker_task(
    tmp_path: Path,
    log: FileLog,
    lake: Path,
    on_status: StatusListener | None = None,
    *,
    started: bool = True,
) -> WorkerSinkTask:
    """A runtime sink task over the lake; `started=False` leaves starting it to its
    thread (`task.start()`), which reports its states to `on_status`."""
    keys = ByteArrayConverter()
    keys.configure({}, True)
    headers = SimpleHeaderConverter()
    headers.configure({})
    task = WorkerSinkTask(
        "lake",
        0,
        CountingSink(),
        {"path": str(lake), "flush.size": "7"},
        log=log,
        topics=["orders"],
        topics_regex="",
        key_converter=keys,
        value_converter=_converter(),
        header_converter=headers,
        transform=None,
        errors=RetryWithTolerance(ErrorPolicy(), connector="lake", task=0),
        dlq=None,
        offset_flush_interval_ms=0,
        on_status=on_status or (lambda *args: None),
        max_poll_records=9,
    )
    if started:
        task.initialize_and_start()
    return task


def test_the_runtime_hands_the_sink_batches_and_a_restart_loses_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    lake = tmp_path / "lake"
    with FileLog(tmp_path / "log", background=False) as log:
        log.create_topic("orders", 2)
        log.append("orders", 0, messages(range(30)))
        log.append("orders", 1, [*messages(range(100, 110)), None, *messages(range(111, 120))])
        task = _worker_task(tmp_path, log, lake)
        assert task.batch_path
        for _ in range(3):
            task.iterate()
        task.commit_final()
        task.stop_plugin()
        task.close_resources()
        read_first = task.metrics.records_read
        assert 0 < read_first < 50
        log.append("orders", 0, messages(range(30, 33)))
        again = _worker_task(tmp_path, log, lake)
        for _ in range(20):
            again.iterate()
        again.commit_offsets()
        for writer in again.plugin.writers.values():  # type: ignore[attr-defined]
            writer.commit()
        again.stop_plugin()
        again.close_resources()
        ids = sorted(r["id"] for r in lake_rows(lake))
        assert ids == [*range(33), *range(100, 110), *range(111, 120)]
        assert again.metrics.records_sent == again.metrics.records_read
        sink = again.plugin
        assert isinstance(sink, CountingSink)
        assert sink.record_count == 0 and sink.batch_rows == again.metrics.records_read
