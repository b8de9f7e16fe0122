"""The sink runtime's Arrow batch path (`SinkTask.put_batches`): taken when the task
implements it, there are no transforms and the value converter decodes the messages
(`to_arrow`); records otherwise — and every runtime duty (offsets and commits,
restarts, tombstones, pause/resume, redelivery, dead letters) holds either way."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from connect.api import (
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    Converter,
    RetriableError,
    Schema,
    SinkRecord,
    SinkTask,
    Struct,
    TopicPartition,
)
from connect.api.sink_batch import SinkBatch
from connect.converters import ByteArrayConverter, JsonConverter, SimpleHeaderConverter
from connect.errors import DeadLetterQueueReporter, ErrorPolicy, RetryWithTolerance
from connect.worker.lease import Lease
from connect.worker.sink_task import WorkerSinkTask
from log import FileLog

TOPIC = "orders"
#: Optional, so that a null payload is a record without a value (not an error).
ROW = Schema.struct(
    [("id", INT64_SCHEMA), ("note", OPTIONAL_STRING_SCHEMA)], name="row", optional=True
)
ROW_V2 = Schema.struct(
    [("id", INT64_SCHEMA), ("note", OPTIONAL_STRING_SCHEMA), ("extra", OPTIONAL_STRING_SCHEMA)],
    name="row",
    version=2,
    optional=True,
)


def row(i: int, schema: Schema = ROW) -> Struct:
    value = Struct(schema).put("id", i).put("note", None if i % 4 == 0 else f"n{i}")
    if schema is ROW_V2:
        value.put("extra", "x")
    return value


def envelopes(ids: Sequence[int], schema: Schema = ROW) -> list[bytes | None]:
    converter = JsonConverter()
    converter.configure({"schemas.enable": True}, is_key=False)
    return converter.from_connect_batch(TOPIC, [schema] * len(ids), [row(i, schema) for i in ids])


class ListSink(SinkTask):
    """Keeps what it is handed; `put_batches` as the runtime's contract says."""

    def __init__(self) -> None:
        self.batches: list[SinkBatch] = []
        self.records: list[SinkRecord] = []
        self.puts = 0
        self.fail_batches_once = False
        self.opened: list[TopicPartition] = []
        self.closed: list[TopicPartition] = []

    def start(self, props: Mapping[str, str]) -> None:
        return None

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.puts += 1
        self.records.extend(records)

    def put_batches(self, batches: Sequence[SinkBatch]) -> Any:
        if self.fail_batches_once:
            self.fail_batches_once = False
            raise RetriableError("the store is busy")
        self.batches.extend(batches)
        return None

    def open(self, partitions: Sequence[TopicPartition]) -> None:
        self.opened.extend(partitions)

    def close(self, partitions: Sequence[TopicPartition]) -> None:
        self.closed.extend(partitions)

    def stop(self) -> None:
        return None

    def ids(self) -> list[int]:
        """Every value written, as ids, from batches and records alike."""
        out = [i for b in self.batches for i in b.values.column("id").to_pylist()]
        return out + [r.value.get("id") for r in self.records if r.value is not None]

    def offsets(self, partition: int) -> list[int]:
        """Every offset accounted for in `partition` (rows, tombstones, records)."""
        out = [
            o
            for b in self.batches
            if b.partition == partition
            for o in [*b.offsets.tolist(), *b.tombstones.tolist()]
        ]
        return sorted(
            out + [r.kafka_offset for r in self.records if r.kafka_partition == partition]
        )


class RecordsOnlySink(ListSink):
    """Declares put_batches, then answers NotImplemented (a task that decides late)."""

    def put_batches(self, batches: Sequence[SinkBatch]) -> Any:
        return NotImplemented


class NoArrow(JsonConverter):
    def to_arrow(self, topic: str, data: Sequence[bytes | None]) -> list[Any] | None:
        return None


@pytest.fixture
def log(tmp_path: Path) -> Iterator[FileLog]:
    with FileLog(tmp_path / "log", background=False) as opened:
        opened.create_topic(TOPIC, 2)
        yield opened


def json_converter(**config: Any) -> Converter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": True, **config}, is_key=False)
    return converter


MakeTask = Callable[..., WorkerSinkTask]


@pytest.fixture
def make_task(log: FileLog) -> Iterator[MakeTask]:
    made: list[WorkerSinkTask] = []

    def factory(
        plugin: SinkTask,
        *,
        value_converter: Converter | None = None,
        transform: Any = None,
        policy: ErrorPolicy | None = None,
        max_poll_records: int = 10_000,
    ) -> WorkerSinkTask:
        policy = policy or ErrorPolicy()
        dlq = (
            DeadLetterQueueReporter(
                log, policy.dlq_topic, connector="lake", task=0, context_headers=True
            )
            if policy.dlq_topic
            else None
        )
        keys = ByteArrayConverter()
        keys.configure({}, True)
        headers = SimpleHeaderConverter()
        headers.configure({})
        task = WorkerSinkTask(
            "lake",
            0,
            plugin,
            {},
            log=log,
            topics=[TOPIC],
            topics_regex="",
            key_converter=keys,
            value_converter=value_converter or json_converter(),
            header_converter=headers,
            transform=transform,
            errors=RetryWithTolerance(
                policy, connector="lake", task=0, reporters=[dlq] if dlq else []
            ),
            dlq=dlq,
            offset_flush_interval_ms=3_600_000,
            on_status=lambda *args: None,
            max_poll_records=max_poll_records,
        )
        task.initialize_and_start()
        made.append(task)
        return task

    yield factory
    for task in made:
        task.stop_plugin()
        task.close_resources()


def drain(task: WorkerSinkTask, total: int, *, limit: int = 50) -> None:
    """Iterate until the task has consumed `total` records."""
    for _ in range(limit):
        task.iterate()
        if task.metrics.records_read >= total:
            return
    raise AssertionError(f"{task.metrics.records_read} of {total} records read")


def fill(log: FileLog, per_partition: int = 50) -> None:
    for p in range(2):
        ids = [p * 1000 + i for i in range(per_partition)]
        log.append(TOPIC, p, envelopes(ids))


def committed(log: FileLog) -> dict[int, int]:
    tps = [TopicPartition(TOPIC, p) for p in range(2)]
    found = log.committed_offsets("connect-lake", tps)  # type: ignore[arg-type]
    return {tp.partition: meta.offset for tp, meta in found.items()}


def test_batches_carry_every_value_offset_and_timestamp(log: FileLog, make_task: MakeTask) -> None:
    fill(log)
    sink = ListSink()
    task = make_task(sink)
    assert task.batch_path
    drain(task, 100)
    assert sink.records == []
    assert sink.puts >= 1  # put() still ends every poll, with nothing in it here
    assert sorted(sink.ids()) == sorted([*range(50), *range(1000, 1050)])
    for p in range(2):
        assert sink.offsets(p) == list(range(50))
    batch = next(b for b in sink.batches if b.partition == 1)
    assert batch.value_schema == ROW
    assert batch.values.schema.names == ["id", "note"]
    assert batch.values.column("note").to_pylist()[:2] == [None, "n1001"]
    stored = log.read(TOPIC, 1, int(batch.offsets[0]), max_records=1)[0]
    assert int(batch.timestamps[0]) == stored.timestamp
    assert task.metrics.records_read == task.metrics.records_sent == 100
    task.commit_offsets()
    assert committed(log) == {0: 50, 1: 50}


def test_a_schema_change_makes_one_batch_per_run_in_order(
    log: FileLog, make_task: MakeTask
) -> None:
    log.append(TOPIC, 0, envelopes(range(3)) + envelopes(range(3, 5), ROW_V2) + envelopes([5]))
    sink = ListSink()
    task = make_task(sink)
    drain(task, 6)
    assert [(b.value_schema.version, b.offsets.tolist()) for b in sink.batches] == [
        (None, [0, 1, 2]),
        (2, [3, 4]),
        (None, [5]),
    ]


def test_tombstones_and_null_payloads_are_accounted_for_in_their_batch(
    log: FileLog, make_task: MakeTask
) -> None:
    null_payload = envelopes([0])[0]
    assert null_payload is not None
    null_payload = null_payload[: null_payload.index(b'"payload":') + 10] + b"null}"
    values = [None, *envelopes([1, 2]), None, null_payload, *envelopes([5]), None]
    log.append(TOPIC, 0, values)
    sink = ListSink()
    task = make_task(sink)
    drain(task, 7)
    assert sink.records == []
    [batch] = sink.batches
    assert batch.offsets.tolist() == [1, 2, 5]
    assert batch.tombstones.tolist() == [0, 3, 4, 6]
    assert (batch.first_offset, batch.last_offset, batch.records_in) == (0, 6, 7)
    assert task.metrics.records_sent == 7
    task.commit_offsets()
    assert committed(log)[0] == 7


def test_only_tombstones_go_the_record_way(log: FileLog, make_task: MakeTask) -> None:
    log.append(TOPIC, 0, [None, None])
    sink = ListSink()
    task = make_task(sink)
    drain(task, 2)
    assert sink.batches == []
    assert [(r.kafka_offset, r.value) for r in sink.records] == [(0, None), (1, None)]


def test_transforms_keep_the_record_path(log: FileLog, make_task: MakeTask) -> None:
    fill(log, 5)
    sink = ListSink()
    task = make_task(sink, transform=lambda record: record)
    assert not task.batch_path
    drain(task, 10)
    assert sink.batches == []
    assert sorted(sink.ids()) == sorted([*range(5), *range(1000, 1005)])


@pytest.mark.parametrize(
    "converter",
    [
        pytest.param(lambda: NoArrow(), id="to_arrow-None"),
        pytest.param(lambda: json_converter(**{"schemas.enable": False}), id="schemaless"),
    ],
)
def test_a_converter_without_arrow_keeps_the_record_path(
    log: FileLog, make_task: MakeTask, converter: Callable[[], Converter]
) -> None:
    log.append(TOPIC, 0, [json.dumps({"id": i}).encode() for i in range(3)])
    conv = converter()
    if isinstance(conv, NoArrow):
        conv.configure({"schemas.enable": False}, is_key=False)
    sink = ListSink()
    task = make_task(sink, value_converter=conv)
    assert task.batch_path  # the task would take batches: the converter says no
    drain(task, 3)
    assert sink.batches == []
    assert [r.value for r in sink.records] == [{"id": 0}, {"id": 1}, {"id": 2}]


def test_a_task_without_put_batches_gets_records(log: FileLog, make_task: MakeTask) -> None:
    class Plain(ListSink):
        put_batches = SinkTask.put_batches  # type: ignore[assignment]

    fill(log, 3)
    sink = Plain()
    task = make_task(sink)
    assert not task.batch_path
    drain(task, 6)
    assert sink.batches == [] and len(sink.records) == 6


def test_not_implemented_at_run_time_turns_the_batch_path_off(
    log: FileLog, make_task: MakeTask
) -> None:
    fill(log, 4)
    sink = RecordsOnlySink()
    task = make_task(sink)
    assert task.batch_path
    drain(task, 8)
    assert not task.batch_path
    assert sorted(sink.ids()) == sorted([*range(4), *range(1000, 1004)])
    assert task.metrics.records_sent == 8


def test_a_bad_message_falls_back_to_records_and_is_dead_lettered(
    log: FileLog, make_task: MakeTask
) -> None:
    good = envelopes(range(4))
    prefix = good[0][: good[0].index(b'"payload":') + 10]  # type: ignore[index]
    log.append(TOPIC, 0, [*good[:2], prefix + b'{"id":"not a number"}}', *good[2:]])
    log.append(TOPIC, 1, envelopes([1000, 1001]))
    sink = ListSink()
    policy = ErrorPolicy(tolerate_all=True, dlq_topic="dlq")
    task = make_task(sink, policy=policy)
    drain(task, 7)
    # Partition 0 went the record way (the converter refused its chunk), 1 as a batch.
    assert {b.partition for b in sink.batches} == {1}
    assert sorted(r.value.get("id") for r in sink.records) == [0, 1, 2, 3]
    [dead] = log.read("dlq", 0, 0)
    assert b"not a number" in (dead.value or b"")
    task.commit_offsets()
    assert committed(log) == {0: 5, 1: 2}


def test_a_retriable_error_redelivers_the_same_batches(log: FileLog, make_task: MakeTask) -> None:
    fill(log, 3)
    sink = ListSink()
    sink.fail_batches_once = True
    task = make_task(sink)
    drain(task, 6)
    assert sink.batches == []  # the first delivery failed
    task.iterate()  # the redelivery: nothing new is read
    assert sorted(sink.ids()) == sorted([*range(3), *range(1000, 1003)])
    assert task.metrics.records_read == task.metrics.records_sent == 6


def test_paused_partitions_get_no_batches_until_resumed(log: FileLog, make_task: MakeTask) -> None:
    sink = ListSink()
    task = make_task(sink)
    task.iterate()  # joins the group: both partitions assigned
    assert sorted(sink.opened) == [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    sink.context.pause(TopicPartition(TOPIC, 0))
    fill(log, 3)
    for _ in range(3):
        task.iterate()
    assert {b.partition for b in sink.batches} == {1}
    sink.context.resume(TopicPartition(TOPIC, 0))
    drain(task, 6)
    assert sink.offsets(0) == [0, 1, 2]


def test_a_restart_resumes_where_the_commit_was_with_nothing_lost_or_repeated(
    log: FileLog, make_task: MakeTask
) -> None:
    fill(log, 40)
    first = ListSink()
    task = make_task(first, max_poll_records=15)
    task.iterate()
    task.iterate()
    task.commit_final()  # a clean stop: the sink flushed, the offsets are committed
    task.stop_plugin()
    seen = first.ids()
    assert 0 < len(seen) < 80
    assert first.closed  # revoked on leaving the group
    log.append(TOPIC, 0, envelopes(range(40, 45)))
    second = ListSink()
    again = make_task(second, max_poll_records=15)
    drain(again, 85 - len(seen))
    assert sorted(seen + second.ids()) == sorted([*range(45), *range(1000, 1040)])
    again.commit_offsets()
    assert committed(log) == {0: 45, 1: 40}


@pytest.mark.parametrize("batches", [True, False], ids=["batches", "records"])
def test_a_poll_fenced_while_stopping_is_never_committed(
    log: FileLog, make_task: MakeTask, batches: bool
) -> None:
    """The worker's lease lapses (it may have been evicted) as its task stops: the
    poll in hand is not delivered, and even if the lease comes back before the final
    commit, that commit does not pass records the sink never saw."""
    fill(log, 3)
    sink = ListSink()
    task = make_task(sink, transform=None if batches else (lambda record: record))
    assert task.batch_path is batches
    task.lease = Lease(time.monotonic() + 60)
    task.lease.revoke()
    task.stop()
    drain(task, 6)  # polled, then fenced: the lease lapsed and the task is stopping
    assert sink.ids() == []
    task.lease.extend(time.monotonic() + 60)
    task.commit_final()
    assert committed(log) == {}  # was {0: 3, 1: 3}: six records skipped
