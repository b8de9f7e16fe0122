"""VerifiableSource: numbered records, and a line for each one sent and each one stored.

Kafka's system-test source (`org.apache.kafka.connect.tools.VerifiableSourceConnector`),
with the same configs, records and report lines, so the same checks carry over:

- `tasks.max` tasks; task *i* (its `id`) has the source partition `{"id": i}` and
  counts its own seqnos 0, 1, 2, … with the offset `{"seqno": n}`. On start a task
  reads its stored offset and resumes at stored seqno + 1 (0 when none is stored).
- Each record has key = task id (INT32) and value = seqno (INT64), or with
  `complete.record.data=true` a struct of `name`, `task`, `topic`, `time_ms`, `seqno`.
- `throughput` caps each task's rate (records per second; negative: no cap; 0: send
  nothing). The task waits for the next record's due time on an event, never spins,
  and does not burst more than a second's worth to catch up after a pause.
- Report lines (see `connectors.verifiable.report`): on send
  `{"name", "task", "topic", "time_ms", "seqno"}`; once the record is in the log
  (`commit_record`) the same with `"committed": true`. A test takes the committed
  seqnos per task and checks that none is missing.

One difference: where Kafka's task returns one record per poll, ours returns every
record that is due (up to 1000), which keeps the rate and lets the log write batches.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from connect.api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    NO_DEFAULT,
    STRING_SCHEMA,
    ConfigDef,
    ConfigType,
    DataError,
    ExactlyOnceSupport,
    Importance,
    RecordMetadata,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Struct,
    at_least,
    non_empty_string,
)
from connectors.verifiable.report import REPORT_FILE_CONFIG, ReportWriter, define_report_file

__all__ = ["VerifiableSourceConnector", "VerifiableSourceTask"]

ID_CONFIG = "id"
ID_FIELD = "id"
SEQNO_FIELD = "seqno"
MAX_BATCH = 1000

CONFIG = define_report_file(
    ConfigDef()
    .define(
        "topic",
        ConfigType.STRING,
        NO_DEFAULT,
        non_empty_string,
        Importance.HIGH,
        "The topic to send the numbered records to",
    )
    .define(
        "throughput",
        ConfigType.LONG,
        NO_DEFAULT,
        None,
        Importance.HIGH,
        "Records per second each task sends at most; a negative value means no limit, "
        "0 means the tasks send nothing",
    )
    .define(
        "complete.record.data",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Whether the value is a struct of name, task, topic, time_ms and seqno instead "
        "of the bare seqno",
    )
)
#: A task's config: the connector's plus its `id`, which `task_configs` sets.
TASK_CONFIG = CONFIG.merged(
    ConfigDef()
    .define("name", ConfigType.STRING, "", None, Importance.HIGH, "The connector's name")
    .define(ID_CONFIG, ConfigType.INT, NO_DEFAULT, at_least(0), Importance.HIGH, "Task id")
)

COMPLETE_VALUE_SCHEMA = Schema.struct(
    [
        ("name", STRING_SCHEMA),
        ("task", INT32_SCHEMA),
        ("topic", STRING_SCHEMA),
        ("time_ms", INT64_SCHEMA),
        ("seqno", INT64_SCHEMA),
    ]
)


class VerifiableSourceConnector(SourceConnector):
    VERSION = "0.1.0"

    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG.parse(props)
        self._props = dict(props)

    def task_class(self) -> type:
        return VerifiableSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._props, ID_CONFIG: str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        return None

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Its seqnos go on from the stored one: a restart repeats none it committed."""
        return ExactlyOnceSupport.SUPPORTED


class VerifiableSourceTask(SourceTask):
    VERSION = "0.1.0"
    #: Seconds for pacing (monotonic); tests set a manual one on the instance.
    clock: Callable[[], float] = staticmethod(time.monotonic)

    def start(self, props: Mapping[str, str]) -> None:
        parsed = TASK_CONFIG.parse(props)
        self.name: str = parsed["name"]
        self.id: int = parsed[ID_CONFIG]
        self.topic: str = parsed["topic"]
        self.throughput: int = parsed["throughput"]
        self.complete_record_data: bool = parsed["complete.record.data"]
        self._value_schema = COMPLETE_VALUE_SCHEMA if self.complete_record_data else INT64_SCHEMA
        self.partition = {ID_FIELD: self.id}  # one dict: the runtime keys offsets by it
        stored = self.context.offset_storage_reader.offset(self.partition)
        last = None if stored is None else stored.get(SEQNO_FIELD)
        if stored is not None and (not isinstance(last, int) or isinstance(last, bool)):
            raise DataError(
                f"the stored offset {stored} of source partition {self.partition} "
                f"has no integer '{SEQNO_FIELD}'"
            )
        self.seqno: int = 0 if last is None else last + 1
        self.starting_seqno = self.seqno
        self._report = ReportWriter(parsed[REPORT_FILE_CONFIG])
        self._stopped = threading.Event()
        self._pace_start = self.clock()  # record k is due at start + k / throughput
        self._pace_sent = 0

    # ------------------------------------------------------------------ pacing

    def _due(self) -> int:
        """How many records may go now (at most MAX_BATCH)."""
        if self.throughput < 0:
            return MAX_BATCH
        if self.throughput == 0:
            return 0
        elapsed = self.clock() - self._pace_start
        owed = int(elapsed * self.throughput + 1e-9) + 1 - self._pace_sent  # 1e-9: float error
        if owed > self.throughput:  # paused or starved: do not burst to catch up
            self._pace_start = self.clock() - self._pace_sent / self.throughput
            owed = 1
        return min(owed, MAX_BATCH)

    def _wait_for_next(self) -> None:
        """Sleep (woken by stop) until the next record is due, at most a second."""
        if self.throughput == 0:
            self._stopped.wait(1.0)
            return
        due_at = self._pace_start + self._pace_sent / self.throughput
        self._stopped.wait(min(max(due_at - self.clock(), 0.0), 1.0))

    # ------------------------------------------------------------------- hooks

    def poll(self) -> list[SourceRecord] | None:
        count = self._due()
        if count <= 0:
            self._wait_for_next()
            if self._stopped.is_set():
                return None
            count = self._due()
            if count <= 0:
                return None
        now_ms = int(time.time() * 1000)
        events = []
        records = []
        for seqno in range(self.seqno, self.seqno + count):
            event = {
                "name": self.name,
                "task": self.id,
                "topic": self.topic,
                "time_ms": now_ms,
                "seqno": seqno,
            }
            events.append(event)
            records.append(
                SourceRecord(
                    topic=self.topic,
                    key_schema=INT32_SCHEMA,
                    key=self.id,
                    value_schema=self._value_schema,
                    value=Struct(COMPLETE_VALUE_SCHEMA, event)
                    if self.complete_record_data
                    else seqno,
                    source_partition=self.partition,
                    source_offset={SEQNO_FIELD: seqno},
                )
            )
        self._report.write(events)  # printed before the records leave, as Kafka's
        self.seqno += count
        self._pace_sent += count
        return records

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        offset = record.source_offset or {}
        self._report.write(
            [
                {
                    "name": self.name,
                    "task": self.id,
                    "topic": self.topic,
                    "time_ms": int(time.time() * 1000),
                    "seqno": offset.get(SEQNO_FIELD),
                    "committed": True,
                }
            ]
        )

    def wakeup(self) -> None:
        self._stopped.set()  # the poll's wait ends; stop() releases the rest

    def stop(self) -> None:
        self._stopped.set()
        self._report.close()
