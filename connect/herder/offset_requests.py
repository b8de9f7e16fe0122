"""What an operator's offsets request may say, checked before anything is written.

The bodies of `PATCH /connectors/{name}/offsets` (so `connect offsets set` and
`reset --to-datetime` too), in Kafka Connect's shapes: a sink's partitions are
`{"kafka_topic", "kafka_partition"}` with `{"kafka_offset"}`, a source's whatever its
connector keys them by. Why a module of its own: these are pure functions of the
request (and of the log's bounds), and the herder (connect.herder.base) only writes
what they return; a reader looking for why a request was refused finds every rule
here. `source_stores` says where a source connector's offsets are read and written
(its own offsets topic too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.herder.api import BadRequestError
from connect.storage import LogTable, OffsetStore
from connect.storage.offsets import partition_key
from log import Log, TopicPartition

__all__ = ["require_in_range", "sink_offsets", "source_offsets", "source_stores", "stored_offsets"]


def sink_offsets(offsets: list[dict[str, Any]]) -> dict[TopicPartition, int | None]:
    """A sink's requested offsets by partition (None: reset to auto.offset.reset)."""
    out: dict[TopicPartition, int | None] = {}
    for entry in offsets:
        partition = entry.get("partition") or {}
        topic = partition.get("kafka_topic")
        number = partition.get("kafka_partition")
        if not isinstance(topic, str) or not isinstance(number, int) or number < 0:
            raise BadRequestError(
                "Sink connector offsets need a partition with a string "
                "'kafka_topic' and a non-negative int 'kafka_partition'"
            )
        offset = entry.get("offset")
        if offset is None:
            out[TopicPartition(topic, number)] = None
            continue
        value = offset.get("kafka_offset") if isinstance(offset, dict) else None
        if not isinstance(value, int) or value < 0:
            raise BadRequestError(
                "Sink connector offsets need an 'offset' with a non-negative int 'kafka_offset'"
            )
        out[TopicPartition(topic, number)] = value
    return out


def require_in_range(log: Log, name: str, changes: Mapping[TopicPartition, int | None]) -> None:
    """Refuse a sink offset outside its partition's [log start, log end] (an
    unknown topic or partition is refused by the log, naming it).

    Why: this is the one place every door that sets sink offsets goes through
    (PATCH /connectors/{name}/offsets, so `connect offsets set` and `reset
    --to-datetime` too). An offset past the end was taken silently and showed a
    lag of 0, then the sink found its position out of range and replayed the whole
    partition from the start; one before the start (retention deleted it) would
    be reset the same way. The log end itself is valid: nothing left to replay."""
    problems = []
    for tp, offset in sorted(changes.items()):
        if offset is None:
            continue  # a reset: auto.offset.reset decides, as documented
        start = log.earliest_offset(tp.topic, tp.partition)
        end = log.latest_offset(tp.topic, tp.partition)
        if not start <= offset <= end:
            problems.append(
                f"{offset} for {tp.topic}-{tp.partition} is outside its valid range {start}..{end}"
            )
    if problems:
        raise BadRequestError(
            f"Offsets for connector {name} must lie between each partition's log start "
            f"and log end offsets (the end: nothing to replay): {'; '.join(problems)}"
        )


def source_offsets(
    offsets: list[dict[str, Any]],
) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """A source's requested (partition, offset) pairs (offset None: forget it)."""
    items = []
    for entry in offsets:
        partition = entry.get("partition")
        offset = entry.get("offset")
        if not isinstance(partition, dict) or not partition:
            raise BadRequestError("Each source offset needs a non-empty 'partition' object")
        if offset is not None and not isinstance(offset, dict):
            raise BadRequestError("A source 'offset' must be an object or null")
        items.append((partition, offset))
    return items


def source_stores(
    log: Log,
    worker_config: Mapping[str, Any],
    props: Mapping[str, str],
    worker_store: OffsetStore,
    *,
    create: bool,
) -> list[OffsetStore]:
    """Where a source connector's offsets are: the worker's store, then the
    connector's own `offsets.storage.topic` when it has one (an exactly-once task
    reads that one first and falls back to the worker's, which gets a copy of its
    commits: connect.worker.source_transactions), read_committed. Why both: an
    operator's change written to the worker's topic alone would be shadowed by the
    task's own topic; Kafka writes both too. `create`: make the connector's topic
    if it does not exist yet (a write), else leave it out (a read)."""
    topic = str(props.get("offsets.storage.topic") or "").strip()
    if not topic or topic == worker_config.get("offset.storage.topic", "connect-offsets"):
        return [worker_store]
    if not create and topic not in log.list_topics():
        return [worker_store]
    partitions = int(worker_config.get("offset.storage.partitions", 25))
    own = OffsetStore(LogTable(log, topic, partitions=partitions, isolation_level="read_committed"))
    own.start()
    return [worker_store, own]


def stored_offsets(
    stores: list[OffsetStore], name: str
) -> dict[bytes, tuple[dict[str, Any], dict[str, Any]]]:
    """The connector's offsets by partition key, a later store's winning."""
    merged: dict[bytes, tuple[dict[str, Any], dict[str, Any]]] = {}
    for store in stores:
        for partition, offset in store.get_all(name):
            merged[partition_key(name, partition)] = (partition, offset)
    return merged
