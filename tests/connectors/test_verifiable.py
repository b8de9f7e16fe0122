"""VerifiableSource and VerifiableSink driven directly through the plugin API."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connect.api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    ConfigError,
    DataError,
    RecordMetadata,
    SinkRecord,
    Struct,
    TopicPartition,
)
from connectors.verifiable import (
    VerifiableSinkConnector,
    VerifiableSinkTask,
    VerifiableSourceConnector,
    VerifiableSourceTask,
)
from connectors.verifiable.report import ReportWriter
from connectors.verifiable.source import COMPLETE_VALUE_SCHEMA, MAX_BATCH
from tests.connectors.fakes import FakeOffsetReader, FakeSinkContext, FakeSourceContext

SENT_KEYS = {"name", "task", "topic", "time_ms", "seqno"}
PUT_KEYS = {"name", "task", "sinkTask", "topic", "partition", "offset", "time_ms", "seqno"}


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def make_source(tmp_path: Path):
    """Start VerifiableSourceTasks (stopped at teardown); report to tmp_path/source.jsonl."""
    started: list[VerifiableSourceTask] = []

    def factory(
        *,
        task_id: int = 0,
        stored: dict[str, Any] | None = None,
        clock: Callable[[], float] | None = None,
        **config: str,
    ) -> VerifiableSourceTask:
        props = {
            "name": "vsrc",
            "topic": "verifiable",
            "throughput": "-1",
            "report.file": str(tmp_path / "source.jsonl"),
            **config,
            "id": str(task_id),
        }
        reader = FakeOffsetReader()
        if stored is not None:
            reader.put({"id": task_id}, stored)
        task = VerifiableSourceTask()
        if clock is not None:
            task.clock = clock
        task.initialize(FakeSourceContext(props, reader))
        task.start(props)
        started.append(task)
        return task

    yield factory
    for task in started:
        task.stop()


def test_task_configs_give_each_task_its_id() -> None:
    connector = VerifiableSourceConnector()
    connector.start({"name": "v", "topic": "t", "throughput": "10", "tasks.max": "3"})
    configs = connector.task_configs(3)
    assert [c["id"] for c in configs] == ["0", "1", "2"]
    assert all(c["topic"] == "t" and c["throughput"] == "10" for c in configs)
    sink = VerifiableSinkConnector()
    sink.start({"name": "s", "topics": "t"})
    assert [c["id"] for c in sink.task_configs(2)] == ["0", "1"]


def test_connector_refuses_a_config_without_topic_or_throughput() -> None:
    with pytest.raises(ConfigError, match="topic"):
        VerifiableSourceConnector().start({"throughput": "1"})
    with pytest.raises(ConfigError, match="throughput"):
        VerifiableSourceConnector().start({"topic": "t"})
    errors = {v.name: v.errors for v in VerifiableSourceConnector().validate({"topic": "t"})}
    assert errors["throughput"] and not errors["topic"]


def test_records_carry_task_key_and_seqno_value_from_zero(make_source) -> None:
    task = make_source(task_id=2)
    records = task.poll()
    assert records is not None and len(records) == MAX_BATCH  # unlimited: a full batch
    first = records[0]
    assert (first.topic, first.key_schema, first.key) == ("verifiable", INT32_SCHEMA, 2)
    assert (first.value_schema, first.value) == (INT64_SCHEMA, 0)
    assert first.source_partition == {"id": 2} and first.source_offset == {"seqno": 0}
    assert [r.value for r in records] == list(range(MAX_BATCH))
    assert [r.value for r in task.poll() or []][:2] == [MAX_BATCH, MAX_BATCH + 1]


def test_resumes_at_the_stored_seqno_plus_one(make_source, tmp_path: Path) -> None:
    task = make_source(task_id=1, stored={"seqno": 41})
    records = task.poll() or []
    assert records[0].value == 42 and records[0].source_offset == {"seqno": 42}
    sent = read_lines(tmp_path / "source.jsonl")
    assert sent[0]["seqno"] == 42 and sent[0]["task"] == 1


def test_a_stored_offset_without_an_integer_seqno_is_refused(make_source) -> None:
    with pytest.raises(DataError, match="seqno"):
        make_source(stored={"position": 3})


def test_sent_and_committed_report_lines_have_kafkas_fields(make_source, tmp_path: Path) -> None:
    task = make_source(task_id=3, throughput="1000")
    records = task.poll() or []
    assert len(records) == 1
    task.commit_record(records[0], RecordMetadata("verifiable", 0, 7, 1))
    sent, committed = read_lines(tmp_path / "source.jsonl")
    assert set(sent) == SENT_KEYS
    assert sent["name"] == "vsrc" and sent["task"] == 3 and sent["topic"] == "verifiable"
    assert sent["seqno"] == 0 and abs(sent["time_ms"] - time.time() * 1000) < 60_000
    assert set(committed) == SENT_KEYS | {"committed"} and committed["committed"] is True
    assert committed["seqno"] == 0 and committed["task"] == 3


def test_complete_record_data_sends_kafkas_struct(make_source) -> None:
    task = make_source(task_id=1, **{"complete.record.data": "true"})
    record = (task.poll() or [])[0]
    assert record.value_schema == COMPLETE_VALUE_SCHEMA
    assert [(f.name, f.schema.type.value) for f in COMPLETE_VALUE_SCHEMA.fields] == [
        ("name", "string"),
        ("task", "int32"),
        ("topic", "string"),
        ("time_ms", "int64"),
        ("seqno", "int64"),
    ]
    assert isinstance(record.value, Struct)
    record.value.validate()
    value = record.value.to_dict()
    assert value["name"] == "vsrc" and value["task"] == 1 and value["topic"] == "verifiable"
    assert value["seqno"] == 0 and value["time_ms"] > 0


def test_throughput_is_kept_without_busy_waiting(make_source) -> None:
    task = make_source(throughput="200")
    polls = sent = 0
    cpu0, start = time.process_time(), time.monotonic()
    while time.monotonic() - start < 0.6:
        sent += len(task.poll() or [])
        polls += 1
    wall, cpu = time.monotonic() - start, time.process_time() - cpu0
    assert 200 * wall * 0.75 <= sent <= 200 * wall * 1.1 + 2
    assert polls <= sent * 2 + 5  # each poll sent something or waited for the next one
    assert cpu < wall * 0.5  # a spinning loop would burn the whole interval


def test_a_stalled_task_does_not_burst_to_catch_up(make_source) -> None:
    clock = ManualClock()
    task = make_source(throughput="5", clock=clock)
    assert len(task.poll() or []) == 1
    clock.now += 0.5  # half a second: 2 more are due and may go at once
    assert len(task.poll() or []) == 2
    clock.now += 60  # e.g. paused for a minute: 300 would be owed
    assert len(task.poll() or []) == 1
    clock.now += 0.2  # the pace starts again from here
    assert len(task.poll() or []) == 1


def test_throughput_zero_sends_nothing_and_stop_wakes_the_poll(make_source) -> None:
    task = make_source(throughput="0")
    result: list[Any] = []
    poller = threading.Thread(target=lambda: result.append(task.poll()))
    start = time.monotonic()
    poller.start()
    task.stop()
    poller.join(5)
    assert result == [None] and time.monotonic() - start < 0.9


def test_report_lines_from_many_writers_to_one_file_stay_whole(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "shared.jsonl"
    writers = [ReportWriter(str(path)) for _ in range(4)]

    def write(index: int) -> None:
        for batch in range(50):
            writers[index].write(
                [{"task": index, "seqno": batch * 20 + i, "pad": "x" * 300} for i in range(20)]
            )

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w in writers:
        w.close()
    w.write([{"late": True}])  # dropped after close, never sent elsewhere
    lines = read_lines(path)
    assert len(lines) == 4000
    for index in range(4):
        assert [e["seqno"] for e in lines if e["task"] == index] == list(range(1000))


def test_report_goes_to_stdout_without_a_report_file(
    make_source, capsys: pytest.CaptureFixture[str]
) -> None:
    task = make_source(throughput="1000", **{"report.file": ""})
    task.poll()
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and set(json.loads(out[0])) == SENT_KEYS


# ------------------------------------------------------------------------ sink


@pytest.fixture
def sink(tmp_path: Path):
    props = {"name": "vsink", "topics": "verifiable", "id": "1"}
    props["report.file"] = str(tmp_path / "sink.jsonl")
    task = VerifiableSinkTask()
    task.initialize(FakeSinkContext(props))
    task.start(props)
    yield task
    task.stop()


def _record(partition: int, offset: int, key: Any, value: Any) -> SinkRecord:
    return SinkRecord(
        topic="verifiable", kafka_partition=partition, kafka_offset=offset, key=key, value=value
    )


def test_sink_reports_each_put_record(sink: VerifiableSinkTask, tmp_path: Path) -> None:
    sink.put([_record(0, 10, 2, 5), _record(1, 3, 0, 7)])
    sink.put([])
    first, second = read_lines(tmp_path / "sink.jsonl")
    assert set(first) == PUT_KEYS
    assert first == {**first, "name": "vsink", "task": 2, "sinkTask": 1, "seqno": 5}
    assert (first["topic"], first["partition"], first["offset"]) == ("verifiable", 0, 10)
    assert (second["task"], second["seqno"], second["offset"]) == (0, 7, 3)


def test_sink_takes_the_seqno_out_of_a_complete_record_struct(
    sink: VerifiableSinkTask, tmp_path: Path
) -> None:
    value = Struct(
        COMPLETE_VALUE_SCHEMA,
        {"name": "vsrc", "task": 0, "topic": "verifiable", "time_ms": 1, "seqno": 9},
    )
    sink.put([_record(0, 0, 0, value), _record(0, 1, 0, {"seqno": 10, "task": 0})])
    assert [e["seqno"] for e in read_lines(tmp_path / "sink.jsonl")] == [9, 10]


def test_flush_reports_the_buffered_records_of_the_flushed_partitions(
    sink: VerifiableSinkTask, tmp_path: Path
) -> None:
    sink.put([_record(0, 0, 0, 0), _record(1, 0, 1, 0), _record(0, 1, 0, 1)])
    sink.flush({TopicPartition("verifiable", 0): 2})
    lines = read_lines(tmp_path / "sink.jsonl")[3:]
    assert [(e["partition"], e["offset"], e["seqno"]) for e in lines] == [(0, 0, 0), (0, 1, 1)]
    assert all(e["flushed"] is True and set(e) == PUT_KEYS | {"flushed"} for e in lines)
    sink.flush({TopicPartition("verifiable", 0): 2})  # nothing new: nothing reported
    assert len(read_lines(tmp_path / "sink.jsonl")) == 5
    sink.pre_commit({TopicPartition("verifiable", 1): 1})  # the runtime's path to flush
    last = read_lines(tmp_path / "sink.jsonl")[-1]
    assert (last["partition"], last["task"], last["flushed"]) == (1, 1, True)
