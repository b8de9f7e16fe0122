"""A sink's redelivery after RetriableError, on a real standalone worker with task
processes: the group's committed offset never passes what the task accepted (after a
clean stop, a kill, a rebalance), redeliveries back off, and what is delivered once
the store is back arrives exactly once — for `put` and `put_batches` alike."""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from connect.herder.standalone import StandaloneHerder
from log import Consumer, FileLog, TopicPartition
from log.records import Record
from tests.connect.worker.retry_plugins import Trace
from tests.connect.worker.test_sink_batches import envelopes
from tests.waiting import wait_until

TOPIC = "orders"
GROUP = "connect-sink"
SINKS = {
    "records": "tests.connect.worker.retry_plugins.RetryingSink",
    "batches": "tests.connect.worker.retry_plugins.RetryingBatchSink",
}
#: How each kind of sink is handed the records (JsonConverter envelopes decode to Arrow).
WAYS = {"records": "record", "batches": "batch"}


@pytest.fixture(params=sorted(SINKS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def sink_config(kind: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": SINKS[kind],
        "topics": TOPIC,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
        "trace.file": str(tmp_path / "trace"),
        "fail.file": str(tmp_path / "fail"),
        **extra,
    }


def committed(log: FileLog) -> dict[int, int]:
    return {tp.partition: o.offset for tp, o in log.committed_offsets(GROUP).items()}


def offsets(partition: int, count: int) -> list[tuple[str, int, int]]:
    return [(TOPIC, partition, o) for o in range(count)]


def retries_of(trace: Trace, count: int) -> Callable[[], list[float] | None]:
    def enough() -> list[float] | None:
        found = trace.retries()
        return found if len(found) >= count else None

    return enough


def test_a_clean_stop_commits_nothing_undelivered_and_retries_back_off(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path, kind: str
) -> None:
    (tmp_path / "fail").touch()
    trace = Trace(tmp_path / "trace")
    herder = start_herder()
    herder.log.create_topic(TOPIC, 1)
    herder.log.append(TOPIC, 0, envelopes(range(3)))
    herder.put_connector_config("sink", sink_config(kind, tmp_path), allow_replace=False)
    retries = wait_until(retries_of(trace, 4), 60, "four redeliveries")
    # The default back-off: 0.1, 0.2 and 0.4 s before the second, third and fourth
    # (it was a tight loop: hundreds of thousands of put() calls in five seconds).
    assert retries[3] - retries[0] >= 0.6
    herder.stop()  # a clean stop: the final commit, then the revoke's
    assert trace.delivered() == []
    assert committed(herder.log) == {}  # was {0: 3}: three records skipped
    (tmp_path / "fail").unlink()
    again = start_herder()
    wait_until(lambda: committed(again.log) == {0: 3}, 60, "the commit after delivery")
    assert trace.delivered() == offsets(0, 3)  # each once
    assert trace.ways() == {WAYS[kind]}


def test_the_task_s_own_timeout_spaces_the_redeliveries(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path
) -> None:
    (tmp_path / "fail").touch()
    trace = Trace(tmp_path / "trace")
    herder = start_herder()
    herder.log.create_topic(TOPIC, 1)
    herder.log.append(TOPIC, 0, envelopes(range(2)))
    config = sink_config("records", tmp_path, **{"timeout.ms": "400"})
    herder.put_connector_config("sink", config, allow_replace=False)
    retries = wait_until(retries_of(trace, 3), 60, "three redeliveries")
    assert retries[2] - retries[0] >= 0.8  # the default would have waited 0.3 s


def test_a_killed_task_s_commits_stop_at_what_was_delivered(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path, kind: str
) -> None:
    trace = Trace(tmp_path / "trace")
    herder = start_herder()
    herder.log.create_topic(TOPIC, 1)
    herder.log.append(TOPIC, 0, envelopes(range(5)))
    herder.put_connector_config("sink", sink_config(kind, tmp_path), allow_replace=False)
    wait_until(lambda: committed(herder.log) == {0: 5}, 60, "the first five committed")
    (tmp_path / "fail").touch()
    herder.log.append(TOPIC, 0, envelopes(range(5, 8)))
    wait_until(retries_of(trace, 1), 60, "a redelivery")
    # Periodic commits go on while the task retries (every 100 ms here): wait for two.
    seen = trace.pre_commits()
    wait_until(lambda: trace.pre_commits() >= seen + 2, 60, "two commits while retrying")
    pid = herder.worker.tasks[("sink", 0)].pid  # type: ignore[attr-defined]
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: herder.connector_status("sink").tasks[0].state == "FAILED", 60, "FAILED")
    assert committed(herder.log) == {0: 5}  # was {0: 8}: three records skipped
    (tmp_path / "fail").unlink()
    herder.restart_task("sink", 0)
    wait_until(lambda: committed(herder.log) == {0: 8}, 60, "the rest committed")
    assert trace.delivered() == offsets(0, 8)  # each once, in order
    assert trace.ways() == {WAYS[kind]}


def test_a_rebalance_during_redelivery_hands_over_what_was_not_delivered(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path, kind: str
) -> None:
    """A second member joins while the task retries: the task must go on heartbeating,
    give the partition up without committing past what it delivered, and leave that
    partition's records out of its redelivery (the new owner has them)."""
    (tmp_path / "fail").touch()
    trace = Trace(tmp_path / "trace")
    herder = start_herder()
    herder.log.create_topic(TOPIC, 2)
    for p in range(2):
        herder.log.append(TOPIC, p, envelopes(range(p * 100, p * 100 + 3)))
    herder.put_connector_config("sink", sink_config(kind, tmp_path), allow_replace=False)
    wait_until(
        lambda: any(w[0] == "retry" and w[2] == "6" for w in trace.lines()), 60, "both retried"
    )
    # Members are dealt partitions in sorted order: "sink-0" keeps 0, this one gets 1.
    other = Consumer(
        herder.log,
        group_id=GROUP,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        member_id="zz-newcomer",
    )
    try:
        other.subscribe([TOPIC])
        got: list[Record] = []

        def handed_over() -> bool:
            got.extend(other.poll(0.1))
            return bool(got)

        wait_until(handed_over, 60, "partition 1 handed over")
        assert committed(herder.log) == {}  # the revoke's commit: nothing delivered yet
        assert other.assignment() == {TopicPartition(TOPIC, 1)}
        assert [(r.partition, r.offset) for r in got] == [(1, 0), (1, 1), (1, 2)]
        retried = len(trace.retries())
        wait_until(
            lambda: any(w[0] == "retry" and w[2] == "3" for w in trace.lines()[retried:]),
            60,
            "a redelivery of partition 0 alone",
        )
        (tmp_path / "fail").unlink()
        wait_until(lambda: committed(herder.log) == {0: 3}, 60, "partition 0 committed")
        assert trace.delivered() == offsets(0, 3)
    finally:
        other.close()
    # Back with the task: partition 1 from its committed offset (none: the start).
    wait_until(lambda: committed(herder.log) == {0: 3, 1: 3}, 60, "partition 1 committed")
    assert Counter(trace.delivered()) == Counter(offsets(0, 3) + offsets(1, 3))
    assert trace.ways() == {WAYS[kind]}


def test_pre_commit_cannot_commit_past_what_was_consumed(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path
) -> None:
    """A task whose pre_commit() claims offsets it was never handed (here: 100 more)
    gets what was consumed committed, as Kafka clamps it."""
    trace = Trace(tmp_path / "trace")
    herder = start_herder()
    herder.log.create_topic(TOPIC, 1)
    herder.log.append(TOPIC, 0, envelopes(range(3)))
    config = sink_config("records", tmp_path, **{"pre.commit.skew": "100"})
    herder.put_connector_config("sink", config, allow_replace=False)
    wait_until(lambda: committed(herder.log), 60, "a commit")
    assert committed(herder.log) == {0: 3}  # was {0: 103}: a hundred records skipped
    assert trace.delivered() == offsets(0, 3)


def test_batches_accepted_before_a_failing_put_are_committed_once(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path
) -> None:
    """One poll, two ways: partition 0's rows go to put_batches() and are accepted;
    partition 1 holds only tombstones, which go to put(), which keeps failing. The
    batches' offsets are the task's to commit; a restart must not write them again."""
    (tmp_path / "fail").touch()
    trace = Trace(tmp_path / "trace")
    herder = start_herder()
    herder.log.create_topic(TOPIC, 2)
    herder.log.append(TOPIC, 0, envelopes(range(3)))
    herder.log.append(TOPIC, 1, [None, None])
    config = sink_config("batches", tmp_path, **{"fail.batches": "false"})
    herder.put_connector_config("sink", config, allow_replace=False)
    wait_until(retries_of(trace, 2), 60, "put() retried")
    assert trace.delivered() == offsets(0, 3)
    herder.stop()
    assert committed(herder.log) == {0: 3}  # was {}: the three rows written again
    (tmp_path / "fail").unlink()
    again = start_herder()
    wait_until(lambda: committed(again.log) == {0: 3, 1: 2}, 60, "the tombstones committed")
    assert Counter(trace.delivered()) == Counter(offsets(0, 3) + offsets(1, 2))
