"""VerifiableSink: a line for each record received and each record made durable.

Kafka's system-test sink (`org.apache.kafka.connect.tools.VerifiableSinkConnector`),
the counterpart of VerifiableSource:

- `put()` reports each record as `{"name", "task": <record key>, "sinkTask": <this
  task's id>, "topic", "partition", "offset", "time_ms", "seqno": <record value>}`;
  the key is the source task's id, so seqnos can be checked per source task. When
  the value is a VerifiableSource struct (`complete.record.data`), `seqno` is its
  `seqno` field (Kafka's prints the whole struct there). `partition` is ours: Kafka
  reports only the offset.
- `flush(offsets)` — called before the runtime commits those partitions' consumer
  offsets — reports the records of those partitions received since the last flush
  again, with `"flushed": true` and the flush time. A test takes the flushed seqnos
  per source task: none may be missing, and after a clean restart none repeated.

Lines go to `report.file` or stdout, as for the source (`connectors.verifiable.report`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfigType,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Struct,
    TopicPartition,
    at_least,
)
from connectors.verifiable.report import REPORT_FILE_CONFIG, ReportWriter, define_report_file, plain

__all__ = ["VerifiableSinkConnector", "VerifiableSinkTask"]

ID_CONFIG = "id"

CONFIG = define_report_file(ConfigDef())
#: A task's config: the connector's plus its `id`, which `task_configs` sets.
TASK_CONFIG = CONFIG.merged(
    ConfigDef()
    .define("name", ConfigType.STRING, "", None, Importance.HIGH, "The connector's name")
    .define(ID_CONFIG, ConfigType.INT, NO_DEFAULT, at_least(0), Importance.HIGH, "Task id")
)


def _seqno(value: Any) -> Any:
    if isinstance(value, Struct) and value.schema.field("seqno") is not None:
        return value.get("seqno")
    if isinstance(value, Mapping) and "seqno" in value:  # the struct, read without schema
        return value["seqno"]
    return plain(value)


class VerifiableSinkConnector(SinkConnector):
    VERSION = "0.1.0"

    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG.parse(props)
        self._props = dict(props)

    def task_class(self) -> type:
        return VerifiableSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._props, ID_CONFIG: str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        return None


class VerifiableSinkTask(SinkTask):
    VERSION = "0.1.0"

    def start(self, props: Mapping[str, str]) -> None:
        parsed = TASK_CONFIG.parse(props)
        self.name: str = parsed["name"]
        self.id: int = parsed[ID_CONFIG]
        self._report = ReportWriter(parsed[REPORT_FILE_CONFIG])
        self._unflushed: dict[TopicPartition, list[dict[str, Any]]] = {}

    def put(self, records: Sequence[SinkRecord]) -> None:
        if not records:
            return
        now_ms = int(time.time() * 1000)
        events = []
        for record in records:
            event = {
                "name": self.name,
                "task": plain(record.key),
                "sinkTask": self.id,
                "topic": record.topic,
                "partition": record.kafka_partition,
                "offset": record.kafka_offset,
                "time_ms": now_ms,
                "seqno": _seqno(record.value),
            }
            events.append(event)
            # Keyed as the runtime keys the offsets it flushes: the pre-transform position.
            self._unflushed.setdefault(record.topic_partition, []).append(event)
        self._report.write(events)

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        now_ms = int(time.time() * 1000)
        events = []
        for tp in offsets:
            for event in self._unflushed.pop(tp, ()):
                events.append({**event, "time_ms": now_ms, "flushed": True})
        self._report.write(events)

    def stop(self) -> None:
        self._report.close()
