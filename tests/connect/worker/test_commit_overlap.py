"""An exactly-once source task's commit at the worker's boundary (`poll`) runs while the
task polls its next records (connect.worker.source_transactions, step 3): the next
poll does not wait for the commit's disk waits, but the next poll's records reach
the log, and the committed records their acknowledgements, only once the commit is
through; a commit that fails there fails the task and nothing after it is written.

The disk is made slow for real work to wait on: the log's fsync of the task's topic
waits for a gate the test opens (a slow disk cannot be had for the asking). The
task runs as a thread on the herder's own FileLog; the fencing is the real one."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from connect.api import (
    STRING_SCHEMA,
    ConfigDef,
    ExactlyOnceSupport,
    SourceConnector,
    SourceRecord,
    SourceTask,
)
from connect.worker.exactly_once_config import fence_producers
from log import FileLog
from tests.waiting import wait_until

TOPIC = "overlap"
PER_POLL = 5
POLLS = 2


class OverlapSource(SourceConnector):
    """POLLS polls of PER_POLL records ("0", "1", …), then empty polls. Its task notes
    each poll it enters and, at each acknowledgement, what the log held."""

    LOG: FileLog | None = None
    #: set when the task enters its poll number n (1, 2, …)
    ENTERED: dict[int, threading.Event] = {}
    #: (value, the topic's log end, its last stable offset, the record's offset)
    ACKED: list[tuple[str, int, int, int]] = []

    def config(self) -> ConfigDef:
        return ConfigDef()

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return OverlapSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        return ExactlyOnceSupport.SUPPORTED


class OverlapSourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        self.polls = 0
        self._stopped = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        self.polls += 1
        OverlapSource.ENTERED.setdefault(self.polls, threading.Event()).set()
        if self.polls > POLLS:
            self._stopped.wait(0.05)
            return None
        first = (self.polls - 1) * PER_POLL
        return [
            SourceRecord(
                topic=TOPIC,
                value_schema=STRING_SCHEMA,
                value=str(n),
                source_partition={"p": 0},
                source_offset={"n": n},
            )
            for n in range(first, first + PER_POLL)
        ]

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        log = OverlapSource.LOG
        assert log is not None and metadata is not None
        end, stable = log.latest_offset(TOPIC, 0), log.last_stable_offset(TOPIC, 0)
        OverlapSource.ACKED.append((str(record.value), end, stable, metadata.offset))

    def stop(self) -> None:
        self._stopped.set()


@pytest.fixture
def slow_disk(
    start_herder: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Iterator[tuple[Any, threading.Event]]:
    """A herder whose log's fsyncs of TOPIC wait for the gate (closed at first; opened
    at teardown, before the herder stops). With the parameter "held", a commit also
    waits for the gate before it reaches the transaction coordinator: the data's fsync
    runs under the coordinator's lock (beside PREPARE's), which a fence takes too, so a
    fence meant to land while the commit is in flight must not meet a commit already
    holding that lock (it would wait for the gate the test opens only after the fence:
    the test failed so under load)."""
    OverlapSource.ENTERED.clear()
    OverlapSource.ACKED.clear()
    OverlapSource.ENTERED.update({n: threading.Event() for n in range(1, POLLS + 2)})
    herder = start_herder(
        {
            "task.isolation": "thread",
            "exactly.once.source.support": "enabled",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        }
    )
    log = herder.log
    OverlapSource.LOG = log
    gate = threading.Event()
    flush = log.flush

    def slow_flush(topic: str, partition: int) -> None:
        if topic == TOPIC:
            assert gate.wait(30), "the gate stayed closed"
        flush(topic, partition)

    monkeypatch.setattr(log, "flush", slow_flush)
    if getattr(request, "param", None) == "held":
        end_transaction = log.transactions.end_transaction

        def held_end(*args: Any, **kwargs: Any) -> Any:
            assert gate.wait(30), "the gate stayed closed"
            return end_transaction(*args, **kwargs)

        monkeypatch.setattr(log.transactions, "end_transaction", held_end)
    herder.put_connector_config(
        "overlap",
        {"connector.class": f"{__name__}.OverlapSource", "topic": TOPIC},
        allow_replace=False,
    )
    yield herder, gate
    gate.set()


def _values(log: FileLog, isolation_level: str) -> list[str]:
    records = log.read(TOPIC, 0, 0, isolation_level=isolation_level)
    return [r.value.decode() for r in records if r.value is not None]


def test_the_next_poll_runs_while_the_commit_waits_its_records_after_it(slow_disk) -> None:
    herder, gate = slow_disk
    log = herder.log
    first = [str(n) for n in range(PER_POLL)]
    assert OverlapSource.ENTERED[2].wait(30), "the second poll was never made"
    # The first transaction's commit still waits on the disk: nothing committed yet,
    # nothing acknowledged, and the second poll's records are not in the log.
    assert _values(log, "read_committed") == []
    assert _values(log, "read_uncommitted") == first
    assert OverlapSource.ACKED == []
    gate.set()
    wanted = [str(n) for n in range(POLLS * PER_POLL)]
    wait_until(lambda: len(OverlapSource.ACKED) == len(wanted), 30, "every record acknowledged")
    assert [value for value, *_ in OverlapSource.ACKED] == wanted  # in order, each once
    # Each acknowledged record was committed when acknowledged; the first poll's were
    # acknowledged before the second poll's records reached the log (its five and
    # the commit marker were all the log held).
    assert all(offset < stable for _, _, stable, offset in OverlapSource.ACKED)
    assert {end for _, end, _, _ in OverlapSource.ACKED[:PER_POLL]} == {PER_POLL + 1}
    assert _values(log, "read_committed") == wanted


@pytest.mark.parametrize("slow_disk", ["held"], indirect=True)
def test_a_commit_that_fails_behind_the_next_poll_fails_the_task(slow_disk) -> None:
    """The task is fenced while its first commit waits on the disk: the commit fails,
    the task fails saying so, and the second poll's records never reach the log."""
    herder, gate = slow_disk
    log = herder.log
    assert OverlapSource.ENTERED[2].wait(30), "the second poll was never made"
    fence_producers(log, ["w1-overlap-0"], transaction_timeout_ms=60_000)
    gate.set()
    wait_until(
        lambda: [t.state for t in herder.connector_status("overlap").tasks] == ["FAILED"],
        30,
        "the task FAILED",
    )
    trace = herder.connector_status("overlap").tasks[0].trace or ""
    assert "was fenced" in trace
    assert _values(log, "read_committed") == []
    assert _values(log, "read_uncommitted") == [str(n) for n in range(PER_POLL)]
    assert OverlapSource.ACKED == []
