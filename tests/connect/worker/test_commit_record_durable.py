"""`commit_record` (and `commit_records`, `commit_batch`) keep the plugin API's promise:
a record is acknowledged only once it is durable in the log, i.e. after the fsync
that covers it, not right after its append.

Each task below checks, inside its own acknowledgement hook, whether the segment
holding the record has been fsynced since the record was appended
(`Segment.unsynced_bytes` is 0), on the real FileLog the worker writes to (the tasks
run as threads, so they can see the herder's log object)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pytest

from connect.api import (
    INT64_SCHEMA,
    ConfigDef,
    ConfigType,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceTask,
)
from connect.api.batches import SourceBatch
from log import FileLog
from tests.waiting import wait_until

TOPIC = "durable"
POLLS = 4
PER_POLL = 5
TOTAL = POLLS * PER_POLL
VALUE = Schema.struct([("id", INT64_SCHEMA)], name="d.Value")


def is_durable(log: FileLog, topic: str, partition: int, offset: int) -> bool:
    """Whether the bytes of the record at `offset` have been fsynced: the segment that
    holds it has nothing written since its last fsync."""
    for segment in log.partition(topic, partition).segments:
        if segment.base_offset <= offset < segment.next_offset:
            return segment.unsynced_bytes == 0
    raise AssertionError(f"{topic}-{partition} has no segment holding offset {offset}")


class DurableCheckingSource(SourceConnector):
    """Emits TOTAL records, PER_POLL a poll, as records (`mode=records`, acknowledged
    through `commit_record`) or as SourceBatches (`mode=batches`, `commit_batch`).
    With `idle=false` its poll never comes back empty (a paced source): it sends one
    record with offset -1 a poll after the rest, as a heartbeat would."""

    LOG: FileLog | None = None
    #: (id, the record was durable when acknowledged) in acknowledgement order
    ACKED: list[tuple[int, bool]] = []
    #: commit_record raises (a task whose acknowledgement hook fails)
    RAISE_ON_ACK = False
    #: set by a poll that finds every record sent (all earlier polls are in the log)
    DRAINED = threading.Event()

    def config(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("mode", ConfigType.STRING, "records")
            .define("idle", ConfigType.BOOLEAN, True)
        )

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return DurableCheckingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class DurableCheckingSourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        self.mode = props.get("mode", "records")
        self.idle = props.get("idle", "true") == "true"
        committed = self.context.offset_storage_reader.offset({"p": 0})
        self.next = 0 if committed is None else committed["id"] + 1
        self._stopped = threading.Event()

    def poll(self) -> list[Any] | None:
        self._stopped.wait(0.02)
        if self.next >= TOTAL:
            DurableCheckingSource.DRAINED.set()
            if self.idle:
                return None
            return [self._record(-1)]
        ids = list(range(self.next, self.next + PER_POLL))
        self.next += PER_POLL
        if self.mode == "batches":
            values = pa.RecordBatch.from_arrays([pa.array(ids, pa.int64())], names=["id"])
            return [
                SourceBatch(
                    topic=TOPIC,
                    value_schema=VALUE,
                    values=values,
                    source_partition={"p": 0},
                    source_offset={"id": ids[-1]},
                )
            ]
        return [self._record(i) for i in ids]

    def _record(self, i: int) -> SourceRecord:
        return SourceRecord(
            topic=TOPIC,
            value_schema=INT64_SCHEMA,
            value=i,
            source_partition={"p": 0},
            source_offset={"id": i},
        )

    def _check(self, ident: int, metadata: Any) -> None:
        log = DurableCheckingSource.LOG
        assert log is not None and metadata is not None
        durable = is_durable(log, metadata.topic, metadata.partition, metadata.offset)
        DurableCheckingSource.ACKED.append((ident, durable))

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        if DurableCheckingSource.RAISE_ON_ACK:
            raise RuntimeError("commit_record refuses")
        self._check(record.value, metadata)

    def commit_batch(self, batch: Any, metadata: Sequence[Any]) -> None:
        ids = batch.values.column(0).to_pylist()
        for ident, meta in zip(ids, metadata, strict=True):
            self._check(ident, meta)

    def stop(self) -> None:
        self._stopped.set()


def _start(start_herder: Callable[..., Any], interval_ms: str, **props: str) -> Any:
    DurableCheckingSource.ACKED.clear()
    herder = start_herder(
        {
            "task.isolation": "thread",
            "offset.flush.interval.ms": interval_ms,
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        }
    )
    DurableCheckingSource.LOG = herder.log
    herder.put_connector_config(
        "durable",
        {"connector.class": f"{__name__}.DurableCheckingSource", **props},
        allow_replace=False,
    )
    return herder


def _run(start_herder: Callable[..., Any], interval_ms: str, **props: str) -> list:
    _start(start_herder, interval_ms, **props)
    wait_until(
        lambda: {i for i, _ in DurableCheckingSource.ACKED} >= set(range(TOTAL)),
        timeout_s=30,
        what="every record acknowledged",
    )
    return list(DurableCheckingSource.ACKED)


@pytest.mark.parametrize("mode", ["records", "batches"])
def test_a_record_is_acknowledged_only_once_durable(start_herder, mode: str) -> None:
    acked = _run(start_herder, "100", mode=mode)
    assert [i for i, durable in acked if not durable] == []
    ids = [i for i, _ in acked if i >= 0]
    assert ids == list(range(len(ids)))  # in the order polled, each once


@pytest.mark.parametrize("idle", ["true", "false"])
def test_acknowledgements_do_not_wait_for_a_distant_offset_commit(start_herder, idle: str) -> None:
    """Offsets are committed once a minute here; the records are still acknowledged
    within seconds, after an fsync of their own (the worker's bound on how long an
    acknowledgement may wait), whether the source goes idle or its poll is never
    empty."""
    acked = _run(start_herder, "60000", mode="records", idle=idle)
    assert [i for i, durable in acked if not durable] == []


def test_an_acknowledgement_that_raises_still_commits_what_is_in_the_log(start_herder) -> None:
    """The hook fails the task, but its records are in the log: their offsets are
    committed all the same, so the restarted task goes on after them instead of
    writing them again (was: the hook raised right after the append, before the poll's
    offsets were remembered, and the restart wrote the poll again)."""
    DurableCheckingSource.RAISE_ON_ACK = True
    try:
        herder = _start(start_herder, "3600000", mode="records", idle="true")
        wait_until(
            lambda: [t.state for t in herder.connector_status("durable").tasks] == ["FAILED"],
            timeout_s=30,
            what="the task FAILED",
        )
    finally:
        DurableCheckingSource.RAISE_ON_ACK = False
    assert "commit_record refuses" in (herder.connector_status("durable").tasks[0].trace or "")
    DurableCheckingSource.DRAINED.clear()
    herder.restart_task("durable", 0)
    assert DurableCheckingSource.DRAINED.wait(30), "the restarted task never got to the end"
    records = herder.log.read(TOPIC, 0, 0, max_records=10 * TOTAL)
    values = [json.loads(r.value)["payload"] for r in records]
    assert sorted(values) == list(range(TOTAL))  # each once
