"""The test connectors in a real StandaloneHerder over a real FileLog, as a deployment
check uses them: VerifiableSource → log → VerifiableSink loses and repeats nothing
across a clean restart, and the mocks end up FAILED with a trace."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connect.api import NotFoundError
from connect.herder.standalone import StandaloneHerder
from tests.waiting import wait_until


def task_state(herder: StandaloneHerder, name: str, task: int = 0) -> str | None:
    try:
        return herder.task_status(name, task).state
    except NotFoundError:  # not reported yet
        return None


def read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def seqnos(lines: list[dict[str, Any]], flag: str | None = None) -> dict[int, list[int]]:
    """Seqnos per source task, in report order; only lines with `flag` if given."""
    out: dict[int, list[int]] = defaultdict(list)
    for line in lines:
        if flag is None and ("committed" in line or "flushed" in line):
            continue
        if flag is not None and not line.get(flag):
            continue
        out[line["task"]].append(line["seqno"])
    return dict(out)


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_verifiable_pipeline_loses_and_repeats_nothing_across_a_clean_restart(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path, isolation: str
) -> None:
    sent_file, sink_file = tmp_path / "source.jsonl", tmp_path / "sink.jsonl"
    source = {
        "connector.class": "org.apache.kafka.connect.tools.VerifiableSourceConnector",
        "tasks.max": "2",
        "topic": "verifiable",
        "throughput": "300",
        "report.file": str(sent_file),
    }
    sink = {
        "connector.class": "org.apache.kafka.connect.tools.VerifiableSinkConnector",
        "tasks.max": "1",
        "topics": "verifiable",
        "report.file": str(sink_file),
    }
    herder = start_herder(**{"task.isolation": isolation})
    herder.put_connector_config("vsrc", source, allow_replace=False)
    herder.put_connector_config("vsink", sink, allow_replace=False)

    def flushed_at_least(n: int) -> bool:
        flushed = seqnos(read_lines(sink_file), "flushed")
        return len(flushed) == 2 and all(len(s) >= n for s in flushed.values())

    wait_until(lambda: flushed_at_least(50))
    status = herder.connector_status("vsrc")
    assert status.state == "RUNNING" and [t.state for t in status.tasks] == ["RUNNING"] * 2
    herder.stop()  # clean: every task commits its offsets before it stops
    before = seqnos(read_lines(sent_file))
    assert sorted(before) == [0, 1]
    lines_before = len(read_lines(sent_file))

    herder = start_herder(**{"task.isolation": isolation})
    wait_until(lambda: flushed_at_least(max(len(s) for s in before.values()) + 50))
    after = seqnos(read_lines(sent_file)[lines_before:])
    for task, sent in before.items():
        assert after[task][0] == sent[-1] + 1  # resumed at the stored seqno + 1
    herder.pause_connector("vsrc")
    wait_until(lambda: [t.state for t in herder.connector_status("vsrc").tasks] == ["PAUSED"] * 2)
    # Every sent seqno reaches the sink (a poll under way at the pause may still add some).
    wait_until(lambda: seqnos(read_lines(sink_file), "flushed") == seqnos(read_lines(sent_file)))
    herder.stop()

    report = read_lines(sent_file)
    for task, numbers in seqnos(report).items():
        assert numbers == list(range(len(numbers))), task  # none missing, none repeated
        assert sorted(seqnos(report, "committed")[task]) == numbers
    sink_lines = read_lines(sink_file)
    assert seqnos(sink_lines) == seqnos(sink_lines, "flushed") == seqnos(report)
    assert {line["sinkTask"] for line in sink_lines} == {0}
    assert {line["topic"] for line in sink_lines} == {"verifiable"}


@pytest.mark.slow
def test_complete_record_data_reaches_the_sink_as_a_struct(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path
) -> None:
    herder = start_herder(**{"task.isolation": "thread"})
    herder.put_connector_config(
        "vsrc",
        {
            "connector.class": "VerifiableSource",
            "topic": "complete",
            "throughput": "100",
            "complete.record.data": "true",
            "report.file": str(tmp_path / "source.jsonl"),
        },
        allow_replace=False,
    )
    herder.put_connector_config(
        "vsink",
        {
            "connector.class": "VerifiableSink",
            "topics": "complete",
            "report.file": str(tmp_path / "sink.jsonl"),
        },
        allow_replace=False,
    )
    wait_until(lambda: len(seqnos(read_lines(tmp_path / "sink.jsonl")).get(0, [])) >= 10)
    received = seqnos(read_lines(tmp_path / "sink.jsonl"))[0]
    assert received[:10] == list(range(10))


@pytest.mark.slow
def test_mock_source_task_failure_ends_failed_with_a_trace_and_restarts(
    start_herder: Callable[..., StandaloneHerder],
) -> None:
    herder = start_herder(**{"task.isolation": "thread"})
    herder.put_connector_config(
        "mock",
        {
            "connector.class": "org.apache.kafka.connect.tools.MockSourceConnector",
            "mock_mode": "task-failure",
            "delay_ms": "300",
        },
        allow_replace=False,
    )
    wait_until(lambda: task_state(herder, "mock") == "FAILED", 20)
    task = herder.task_status("mock", 0)
    assert task.trace and "MockFailure" in task.trace and "task-failure" in task.trace
    assert herder.connector_status("mock").state == "RUNNING"  # only the task failed
    herder.restart_task("mock", 0)
    wait_until(lambda: task_state(herder, "mock") == "RUNNING", 10)
    wait_until(lambda: task_state(herder, "mock") == "FAILED", 20)


@pytest.mark.slow
def test_mock_sink_connector_failure_ends_failed_and_a_restart_runs_it_again(
    start_herder: Callable[..., StandaloneHerder],
) -> None:
    herder = start_herder(**{"task.isolation": "thread"})
    herder.put_connector_config(
        "mock",
        {
            "connector.class": "MockSinkConnector",
            "topics": "nothing",
            "mock_mode": "connector-failure",
            "delay_ms": "1500",
        },
        allow_replace=False,
    )
    assert herder.connector_status("mock").state == "RUNNING"
    wait_until(lambda: herder.connector_status("mock").state == "FAILED", 15)
    status = herder.connector_status("mock")
    assert status.trace and "MockFailure" in status.trace and "connector-failure" in status.trace
    herder.restart_connector("mock")
    assert herder.connector_status("mock").state == "RUNNING"
    wait_until(lambda: herder.connector_status("mock").state == "FAILED", 15)


@pytest.mark.slow
def test_mock_sink_task_failure_on_a_topic_that_is_not_there(
    start_herder: Callable[..., StandaloneHerder],
) -> None:
    herder = start_herder(**{"task.isolation": "thread"})
    herder.put_connector_config(
        "mock",
        {
            "connector.class": "MockSink",
            "topics": "nothing",
            "mock_mode": "task-failure",
            "delay_ms": "300",
        },
        allow_replace=False,
    )
    wait_until(lambda: task_state(herder, "mock") == "FAILED", 20)
    assert "MockFailure" in (herder.task_status("mock", 0).trace or "")


@pytest.mark.slow
def test_mock_sink_task_failure_on_an_idle_topic(
    start_herder: Callable[..., StandaloneHerder],
) -> None:
    """The task has its partition and no records come: it fails all the same, because
    the runtime calls put() after every poll, empty or not, as Kafka does."""
    herder = start_herder(**{"task.isolation": "thread"})
    herder.log.create_topic("idle", 1)
    herder.put_connector_config(
        "mock",
        {
            "connector.class": "MockSink",
            "topics": "idle",
            "mock_mode": "task-failure",
            "delay_ms": "1000",
        },
        allow_replace=False,
    )

    def assigned() -> bool:
        task = herder.worker.tasks.get(("mock", 0))
        consumer = getattr(task, "consumer", None)
        return consumer is not None and bool(consumer.assignment())

    wait_until(assigned, 10)
    wait_until(lambda: task_state(herder, "mock") == "FAILED", 10)
    assert "MockFailure" in (herder.task_status("mock", 0).trace or "")
