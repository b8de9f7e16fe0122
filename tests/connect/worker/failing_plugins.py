"""A source, a transform and a sink for the failed-task commit tests, named by dotted
path (also in task processes). The source counts up in polls of `batch` records and,
while `fail.file` exists, raises once `fail.at` records are out; the transform raises
on one record while its `fail.file` exists; the sink's put() raises (not retriable)
on a record at or past `fail.from` while its `fail.file` exists, and traces what it
accepts as `tests.connect.worker.retry_plugins.Trace` reads it."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence

from connect.api import (
    STRING_SCHEMA,
    ConfigDef,
    ConfigType,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Transformation,
)

CONFIG = (
    ConfigDef()
    .define("topic", ConfigType.STRING, "counted", None, Importance.HIGH, "Topic to write.")
    .define("count", ConfigType.INT, 80, None, Importance.HIGH, "How many records in all.")
    .define("batch", ConfigType.INT, 10, None, Importance.LOW, "Records per poll().")
    .define(
        "fail.at",
        ConfigType.INT,
        50,
        None,
        Importance.HIGH,
        "The poll after this many records raises, while the fail file exists.",
    )
    .define("fail.file", ConfigType.STRING, "", None, Importance.HIGH, "See fail.at.")
)
PARTITION = {"counter": "one"}


class CountThenFailSource(SourceConnector):
    """One task counting 1, 2, … with its source offset {"n": n}."""

    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return CountThenFailSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class CountThenFailSourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(props)
        self.topic, self.count, self.batch = parsed["topic"], parsed["count"], parsed["batch"]
        self.fail_at, self.fail_file = parsed["fail.at"], parsed["fail.file"]
        stored = self.context.offset_storage_reader.offset(PARTITION)
        self.n = int(stored["n"]) if stored else 0
        self._idle = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if self.n >= self.fail_at and self.fail_file and os.path.exists(self.fail_file):
            raise RuntimeError(f"failing after {self.n} records while {self.fail_file} exists")
        if self.n >= self.count:
            self._idle.wait(0.05)  # all sent: do not spin
            return None
        first, self.n = self.n + 1, min(self.n + self.batch, self.count)
        return [
            SourceRecord(
                topic=self.topic,
                value_schema=STRING_SCHEMA,
                value=f"n={n}",
                source_partition=PARTITION,
                source_offset={"n": n},
            )
            for n in range(first, self.n + 1)
        ]

    def stop(self) -> None:
        if hasattr(self, "_idle"):
            self._idle.set()


class FailOnValue(Transformation[SourceRecord]):
    """Raises on the record whose value is `value` while `fail.file` exists."""

    def configure(self, configs: Mapping[str, object]) -> None:
        self.value, self.fail_file = str(configs["value"]), str(configs["fail.file"])

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        if record.value == self.value and os.path.exists(self.fail_file):
            raise RuntimeError(f"failing on {self.value} while {self.fail_file} exists")
        return record


SINK_CONFIG = (
    ConfigDef()
    .define("trace.file", ConfigType.STRING, None, None, Importance.HIGH, "Where puts go.")
    .define("fail.file", ConfigType.STRING, "", None, Importance.HIGH, "See fail.from.")
    .define(
        "fail.from",
        ConfigType.INT,
        0,
        None,
        Importance.HIGH,
        "put() raises on a record at or past this offset while the fail file exists.",
    )
)


class FailingPutSink(SinkConnector):
    def config(self) -> ConfigDef:
        return SINK_CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return FailingPutSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class FailingPutSinkTask(SinkTask):
    def start(self, props: Mapping[str, str]) -> None:
        parsed = SINK_CONFIG.parse(props)
        self.trace, self.fail_file = parsed["trace.file"], parsed["fail.file"]
        self.fail_from = parsed["fail.from"]

    def put(self, records: Sequence[SinkRecord]) -> None:
        if os.path.exists(self.fail_file) and any(
            r.kafka_offset >= self.fail_from for r in records
        ):
            raise RuntimeError(f"refusing offsets from {self.fail_from}")
        with open(self.trace, "a") as f:
            f.write(
                "".join(f"put {r.topic} {r.kafka_partition} {r.kafka_offset} r\n" for r in records)
            )

    def stop(self) -> None:
        return None
