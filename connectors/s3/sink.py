"""S3Sink: topics into S3 objects, exactly once for deterministic layouts.

How a record reaches the bucket and its offset the log (numbered as in the code):
1. `put(records)` splits the batch into runs of one topic partition and hands each
   to that partition's TopicPartitionWriter (writer.py), which fills objects and
   commits them when a rotation rule fires; then every writer's scheduled rotation
   is checked — `put` runs after every poll, empty or not, so this is the timer.
2. When a writer committed objects, the task asks the runtime for an offset commit
   soon (`request_commit`), which narrows the window a crash can replay.
3. `pre_commit` returns each partition's `safe_offset()`: the first offset not in a
   complete object. Records buffered in open objects are never acknowledged.
4. An S3 failure that outlived the store's retries resets the writer (uploads
   aborted) and rewinds the partition to its safe offset, so the objects are rebuilt
   from the log — identical, for the deterministic rules. Refused credentials, a
   missing bucket or another writer's object under one of ours (a conditional write
   refused, store.py) fail the task instead: retrying cannot fix those.

`start` checks the bucket once, so a missing bucket, bad credentials or an
unreachable endpoint fail the task at once with a message that says which.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigValue,
    SinkConnector,
    SinkRecord,
    SinkTask,
    TopicPartition,
)
from connectors.s3.config import SINK_CONFIG, SinkSettings, validate_sink
from connectors.s3.errors import (
    S3AccessError,
    S3BucketMissingError,
    S3ObjectExistsError,
    S3StoreError,
)
from connectors.s3.formats import make_format
from connectors.s3.partitioners import make_partitioner
from connectors.s3.sidecars import make_sidecars
from connectors.s3.store import Store
from connectors.s3.writer import TopicPartitionWriter

__all__ = ["S3SinkConnector", "S3SinkTask"]

_log = logging.getLogger("connectors.s3")
_PARTITION = operator.attrgetter("kafka_partition")
_TOPIC = operator.attrgetter("topic")
VERSION = "0.1.0"


class S3SinkConnector(SinkConnector):
    """Confluent's `io.confluent.connect.s3.S3SinkConnector`, same keys."""

    VERSION = VERSION

    def config(self) -> ConfigDef:
        return SINK_CONFIG

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        return validate_sink(props)

    def start(self, props: Mapping[str, str]) -> None:
        SinkSettings.parse(props)  # refuse a bad config before any task starts
        self._props = dict(props)

    def task_class(self) -> type:
        return S3SinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass


class S3SinkTask(SinkTask):
    """See the module docstring."""

    VERSION = VERSION

    def start(self, props: Mapping[str, str]) -> None:
        self.settings = SinkSettings.parse(props)
        self.store = Store(self.settings.store, conditional=self.settings.conditional_writes)
        self.store.check_bucket()
        self.format = make_format(self.settings.layout)
        self.sidecars = make_sidecars(self.settings.layout)
        self.partitioner, self.extractor = make_partitioner(self.settings.layout)
        self.writers: dict[TopicPartition, TopicPartitionWriter] = {}

    def _writer(self, tp: TopicPartition) -> TopicPartitionWriter:
        writer = self.writers.get(tp)
        if writer is None:
            writer = self.writers[tp] = TopicPartitionWriter(
                tp,
                settings=self.settings,
                store=self.store,
                fmt=self.format,
                partitioner=self.partitioner,
                extractor=self.extractor,
                sidecars=self.sidecars,
            )
        return writer

    def open(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            self._writer(tp)

    def put(self, records: Sequence[SinkRecord]) -> None:
        # Step 1
        committed = False
        failed: set[TopicPartition] = set()
        for tp, run in _runs(records):
            if tp in failed:
                continue  # rewound: the rest comes again from the safe offset
            writer = self._writer(tp)
            try:
                committed |= writer.write(run)
            except S3StoreError as exc:
                failed.add(tp)
                self._failed(writer, exc)
        for tp, writer in self.writers.items():
            if tp in failed:
                continue
            try:
                committed |= writer.maybe_rotate_on_schedule()
            except S3StoreError as exc:
                self._failed(writer, exc)
        # Step 2
        if committed:
            self.context.request_commit()

    def _failed(self, writer: TopicPartitionWriter, exc: S3StoreError) -> None:
        # Step 4
        if isinstance(exc, (S3AccessError, S3BucketMissingError, S3ObjectExistsError)):
            writer.reset()
            raise exc
        target = writer.reset()
        _log.warning("%s; %s starts its open objects over from offset %s", exc, writer.tp, target)
        if target is not None:
            self.context.offset({writer.tp: target})

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        # Step 3
        safe = {}
        for tp in offsets:
            writer = self.writers.get(tp)
            offset = writer.safe_offset() if writer is not None else None
            if offset is not None:
                safe[tp] = offset
        return safe

    def close(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            writer = self.writers.pop(tp, None)
            if writer is not None:
                writer.close()

    def stop(self) -> None:
        for writer in getattr(self, "writers", {}).values():
            writer.close()
        self.writers = {}
        store = getattr(self, "store", None)
        if store is not None:
            store.close()


def _runs(records: Sequence[SinkRecord]) -> list[tuple[TopicPartition, Sequence[SinkRecord]]]:
    """The batch as runs of consecutive records of one topic partition (slices; the
    runtime's batches are mostly one run per partition, which C-level `map`s and
    `count`s confirm without a Python step per record)."""
    n = len(records)
    if not n:
        return []
    first = records[0]
    if (
        list(map(_PARTITION, records)).count(first.kafka_partition) == n
        and list(map(_TOPIC, records)).count(first.topic) == n
    ):
        return [(first.topic_partition, records)]
    out: list[tuple[TopicPartition, Sequence[SinkRecord]]] = []
    i = 0
    while i < n:
        first = records[i]
        topic, partition = first.topic, first.kafka_partition
        j = i + 1
        while j < n and records[j].kafka_partition == partition and records[j].topic == topic:
            j += 1
        out.append((first.topic_partition, records[i:j]))
        i = j
    return out
