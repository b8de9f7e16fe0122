"""Shared pieces of the S3 connector tests: records into the log, a sink or source
connector on a StandaloneHerder (its task in a child process, as deployed), waits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson
import pytest

from connect.herder.standalone import StandaloneHerder
from log import FileLog
from tests.s3 import Bucket
from tests.waiting import wait_until

JSON = "org.apache.kafka.connect.json.JsonConverter"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"


def schemaless(values: Sequence[Any]) -> list[bytes]:
    return [orjson.dumps(v) for v in values]


def produce(
    log: FileLog,
    topic: str,
    values: Sequence[bytes | None],
    *,
    partition: int = 0,
    partitions: int = 1,
    timestamps: Sequence[int] | None = None,
    keys: Sequence[bytes | None] | None = None,
) -> None:
    if topic not in log.list_topics():
        log.create_topic(topic, partitions)
    log.append(topic, partition, list(values), timestamps=timestamps, keys=keys)
    log.flush(topic, partition)


def sink_config(bucket: Bucket, topics: str, **props: str) -> dict[str, str]:
    return {
        "connector.class": "io.confluent.connect.s3.S3SinkConnector",
        "tasks.max": "1",
        "topics": topics,
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
        "flush.size": "3",
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        "s3.part.retries": "1",
        "s3.retry.backoff.ms": "50",
        **bucket.props,
        **props,
    }


def source_config(bucket: Bucket, **props: str) -> dict[str, str]:
    return {
        "connector.class": "io.confluent.connect.s3.source.S3SourceConnector",
        "tasks.max": "1",
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        "s3.poll.interval.ms": "200",
        **bucket.props,
        **props,
    }


def committed(log: FileLog, connector: str, topic: str, partition: int = 0) -> int | None:
    from log import TopicPartition

    offsets = log.committed_offsets(f"connect-{connector}", [TopicPartition(topic, partition)])
    found = offsets.get(TopicPartition(topic, partition))
    return None if found is None else found.offset


def read_values(
    log: FileLog, topic: str, partition: int = 0, *, keys: bool = False
) -> list[Any]:
    """The values of a partition (or (key, value) pairs with `keys`)."""
    out: list[Any] = []
    if topic not in log.list_topics():
        return out
    offset = 0
    while True:
        batch = log.read(topic, partition, offset)
        if not batch:
            return out
        out.extend((r.key, r.value) if keys else r.value for r in batch)
        offset = batch[-1].offset + 1


def wait_keys(bucket: Bucket, count: int, prefix: str = "", timeout_s: float = 30) -> list[str]:
    return wait_until(lambda: (k := bucket.keys(prefix)) and len(k) >= count and k,
                      timeout_s, f"{count} objects under {prefix!r}")


def task_state(herder: StandaloneHerder, name: str) -> tuple[str, str]:
    status = herder.connector_status(name)
    if not status.tasks:
        return "UNASSIGNED", ""
    return status.tasks[0].state, status.tasks[0].trace or ""


@pytest.fixture
def herder(start_herder: Callable[..., StandaloneHerder]) -> StandaloneHerder:
    return start_herder()
