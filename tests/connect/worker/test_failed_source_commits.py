"""A source task that fails commits the source offsets of what it already put in the
log, as Kafka's WorkerSourceTask does (its final offset commit runs on failure too),
so a restart goes on after them instead of writing them again; a sink task that fails
commits what its put() accepted, as Kafka's WorkerSinkTask does when it closes its
partitions. The offset flush interval is an hour: only the failure's commit can save
those offsets."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from connect.herder.standalone import StandaloneHerder
from tests.connect.worker.retry_plugins import Trace
from tests.waiting import wait_until

HOUR_MS = "3600000"
STRING = "org.apache.kafka.connect.storage.StringConverter"


def _values(herder: StandaloneHerder, topic: str) -> list[str]:
    end = herder.log.latest_offset(topic, 0)
    out: list[str] = []
    while len(out) < end:
        out += [(r.value or b"").decode() for r in herder.log.read(topic, 0, len(out))]
    return out


def _states(herder: StandaloneHerder, name: str) -> list[str]:
    return [t.state for t in herder.connector_status(name).tasks]


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_failed_source_task_commits_what_is_in_the_log_and_a_restart_doubles_nothing(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path, isolation: str
) -> None:
    fail = tmp_path / "fail"
    fail.touch()
    herder = start_herder({"offset.flush.interval.ms": HOUR_MS, "task.isolation": isolation})
    config = {
        "connector.class": "tests.connect.worker.failing_plugins.CountThenFailSource",
        "topic": "counted",
        "count": "80",
        "batch": "10",
        "fail.at": "50",
        "fail.file": str(fail),
        "value.converter": STRING,
    }
    herder.put_connector_config("src", config, allow_replace=False)
    wait_until(lambda: _states(herder, "src") == ["FAILED"], 60, "the task FAILED")
    assert "failing after 50 records" in (herder.connector_status("src").tasks[0].trace or "")
    assert _values(herder, "counted") == [f"n={n}" for n in range(1, 51)]
    # Was: [] — the failure skipped the commit, and the restart wrote n=1..50 again.
    assert herder.connector_offsets("src") == [
        {"partition": {"counter": "one"}, "offset": {"n": 50}}
    ]
    fail.unlink()
    herder.restart_task("src", 0)
    wait_until(lambda: herder.log.latest_offset("counted", 0) >= 80, 60, "80 records")
    wait_until(lambda: _states(herder, "src") == ["RUNNING"], 30, "the task RUNNING")
    assert _values(herder, "counted") == [f"n={n}" for n in range(1, 81)]


def test_a_source_failing_in_the_middle_of_a_poll_commits_nothing_of_that_poll(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path
) -> None:
    """A transform fails on n=55 of the poll n=51..60: the commit after the failure
    stops at n=50, the last record before that poll, never past a record that is not
    in the log."""
    fail = tmp_path / "fail"
    fail.touch()
    herder = start_herder({"offset.flush.interval.ms": HOUR_MS, "task.isolation": "thread"})
    config = {
        "connector.class": "tests.connect.worker.failing_plugins.CountThenFailSource",
        "topic": "counted",
        "count": "80",
        "batch": "10",
        "value.converter": STRING,
        "transforms": "f",
        "transforms.f.type": "tests.connect.worker.failing_plugins.FailOnValue",
        "transforms.f.value": "n=55",
        "transforms.f.fail.file": str(fail),
    }
    herder.put_connector_config("src", config, allow_replace=False)
    wait_until(lambda: _states(herder, "src") == ["FAILED"], 60, "the task FAILED")
    assert "failing on n=55" in (herder.connector_status("src").tasks[0].trace or "")
    assert _values(herder, "counted") == [f"n={n}" for n in range(1, 51)]
    assert herder.connector_offsets("src") == [
        {"partition": {"counter": "one"}, "offset": {"n": 50}}
    ]
    fail.unlink()
    herder.restart_task("src", 0)
    wait_until(lambda: herder.log.latest_offset("counted", 0) >= 80, 60, "80 records")
    assert _values(herder, "counted") == [f"n={n}" for n in range(1, 81)]


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_failed_sink_task_commits_what_put_accepted_and_a_restart_doubles_nothing(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path, isolation: str
) -> None:
    fail = tmp_path / "fail"
    fail.touch()
    trace = Trace(tmp_path / "trace")
    herder = start_herder({"offset.flush.interval.ms": HOUR_MS, "task.isolation": isolation})
    herder.log.create_topic("in", 1)
    herder.log.append("in", 0, [b"a", b"b", b"c"])
    config = {
        "connector.class": "tests.connect.worker.failing_plugins.FailingPutSink",
        "topics": "in",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "trace.file": str(trace.path),
        "fail.file": str(fail),
        "fail.from": "3",
    }
    herder.put_connector_config("sink", config, allow_replace=False)
    wait_until(lambda: len(trace.delivered()) == 3, 60, "three records accepted")
    herder.log.append("in", 0, [b"d", b"e"])
    wait_until(lambda: _states(herder, "sink") == ["FAILED"], 60, "the task FAILED")
    assert "refusing offsets from 3" in (herder.connector_status("sink").tasks[0].trace or "")
    wait_until(
        lambda: (
            herder.connector_offsets("sink")
            == [
                {
                    "partition": {"kafka_topic": "in", "kafka_partition": 0},
                    "offset": {"kafka_offset": 3},
                }
            ]
        ),
        30,
        "what put() accepted committed",
    )
    fail.unlink()
    herder.restart_task("sink", 0)
    wait_until(lambda: len(trace.delivered()) >= 5, 60, "the rest accepted")
    assert Counter(trace.delivered()) == Counter(("in", 0, o) for o in range(5))
