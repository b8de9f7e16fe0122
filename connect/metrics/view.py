"""What a worker is doing right now, read in one pass: connectors, their tasks, the
tasks' counters, sink lag and the log's topics. The Prometheus collector, the REST
`/ops` endpoints and through them the CLI all read this, so they never disagree.

It reads the herder's stores and worker as they are (no copies kept, nothing
registered per task): a scrape costs one pass over what runs, however many tasks
there are. The herder is duck-typed — the standalone herder has `configs`,
`status`, `worker` and `log`; a herder without one of them yields less, not an error.

A task that runs on another worker of a cluster has no counters here: with `peers`
(what `connect ps` and the console read, see connect.rest.peers) the view asks the
workers that the tasks' statuses name, once per worker, for theirs. The Prometheus
scrape keeps to this worker's own tasks, so that summing the workers' series counts
every task once.

Lag of a sink partition is its log end offset minus the connector's committed
offset (group `connect-<name>`); a partition with nothing committed yet counts from
its earliest offset, where a sink with `auto.offset.reset=earliest` would start.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from log import LogError, TopicPartition

__all__ = [
    "STATES",
    "ConnectorView",
    "PartitionLag",
    "PeerMetrics",
    "TaskView",
    "TopicView",
    "connectors_view",
    "log_usage",
    "partition_at_end",
    "partition_for_time",
    "sink_lag",
    "sink_topics",
]

#: Observed states a connector or task can report (connect.storage.State).
STATES = ("UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "RESTARTING", "STOPPED")


@dataclass(slots=True)
class TaskView:
    connector: str
    task: int
    state: str
    worker_id: str
    type: str
    metrics: Mapping[str, Any]

    @property
    def records_in(self) -> int:
        """Records the task took in: polled from its source, or read from the log."""
        key = "records_read" if self.type == "sink" else "records_polled"
        return int(self.metrics.get(key, 0))

    @property
    def records_out(self) -> int:
        """Records the task handed on: written to the log, or put to its sink."""
        key = "records_sent" if self.type == "sink" else "records_written"
        return int(self.metrics.get(key, 0))

    def to_json(self) -> dict[str, Any]:
        return {
            "connector": self.connector,
            "task": self.task,
            "state": self.state,
            "worker_id": self.worker_id,
            "type": self.type,
            "records_in": self.records_in,
            "records_out": self.records_out,
            "metrics": dict(self.metrics),
        }


@dataclass(slots=True)
class ConnectorView:
    name: str
    type: str
    connector_class: str
    state: str
    worker_id: str
    target: str
    config: Mapping[str, str]
    tasks: list[TaskView] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PartitionLag:
    connector: str
    topic: str
    partition: int
    log_end_offset: int
    committed_offset: int | None
    lag: int

    def to_json(self) -> dict[str, Any]:
        return {
            "connector": self.connector,
            "topic": self.topic,
            "partition": self.partition,
            "log_end_offset": self.log_end_offset,
            "committed_offset": self.committed_offset,
            "lag": self.lag,
        }


@dataclass(frozen=True, slots=True)
class TopicView:
    name: str
    partitions: int
    segments: int
    size_bytes: int


#: Counters of tasks on other workers: called with the ids of the workers that run
#: tasks this one does not, it answers worker id → (connector, task) → counters, for
#: the workers it could reach.
PeerMetrics = Callable[[set[str]], Mapping[str, Mapping[tuple[str, int], Mapping[str, Any]]]]


def connectors_view(herder: Any, *, peers: PeerMetrics | None = None) -> list[ConnectorView]:
    """Every connector of the herder's config with its status and tasks, sorted; with
    `peers`, tasks of other workers carry the counters those workers report."""
    configs = getattr(herder, "configs", None)
    status = getattr(herder, "status", None)
    worker = getattr(herder, "worker", None)
    if configs is None or status is None:
        return []
    known = getattr(herder, "known", None)
    if known is not None:  # a LogHerder: its last known state while the log is away
        snapshot = known.configs()
        known.refresh_status()
    else:
        snapshot = configs.snapshot()
        status.refresh()
    running = dict(worker.tasks) if worker is not None else {}
    task_statuses = status.tasks_by_connector()
    types: dict[str, tuple[str, str]] = {}
    out = []
    for name in sorted(snapshot.connectors):
        config = snapshot.connectors[name]
        class_name = str(config.get("connector.class", ""))
        if class_name not in types:
            kind = worker.connector_type(config) if worker is not None else "unknown"
            types[class_name] = (kind, class_name)
        kind = types[class_name][0]
        own = status.connector(name)
        target = snapshot.targets.get(name)
        view = ConnectorView(
            name=name,
            type=kind,
            connector_class=class_name,
            state=own.state.value if own is not None else "UNASSIGNED",
            worker_id=own.worker_id if own is not None else "",
            target=target.value if target is not None else "STARTED",
            config=config,
        )
        task_count = len(snapshot.tasks.get(name, []))
        for s in task_statuses.get(name, ()):
            index = s.task or 0
            if index >= task_count:
                continue  # a leftover of a larger task set
            handle = running.get((name, index))
            metrics = handle.metrics_snapshot() if handle is not None else {}
            view.tasks.append(
                TaskView(name, index, s.state.value, s.worker_id, kind, metrics or {})
            )
        out.append(view)
    if peers is not None:
        _fill_from_peers(out, peers, herder)
    return out


def _fill_from_peers(views: list[ConnectorView], peers: PeerMetrics, herder: Any) -> None:
    me = herder.worker_id() if hasattr(herder, "worker_id") else ""
    missing = [t for v in views for t in v.tasks if not t.metrics and t.worker_id not in ("", me)]
    if not missing:
        return
    reported = peers({t.worker_id for t in missing})
    for task in missing:
        task.metrics = reported.get(task.worker_id, {}).get((task.connector, task.task), {})


def sink_topics(log: Any, config: Mapping[str, str]) -> list[str]:
    """The topics a sink connector's config names (`topics`, or `topics.regex`
    matched against the log's topics now)."""
    named = [t.strip() for t in str(config.get("topics", "")).split(",") if t.strip()]
    pattern = str(config.get("topics.regex", "")).strip()
    if pattern:
        try:
            regex = re.compile(pattern)
        except re.error:
            return sorted(set(named))
        named += [t for t in log.list_topics() if regex.fullmatch(t)]
    return sorted(set(named))


def _partitions(log: Any, topics: list[str]) -> Iterator[TopicPartition]:
    for topic in topics:
        try:
            count = log.partition_count(topic)
        except LogError:
            continue  # not created yet, or deleted: nothing to lag behind
        for p in range(count):
            yield TopicPartition(topic, p)


def sink_lag(log: Any, name: str, config: Mapping[str, str]) -> list[PartitionLag]:
    """Per partition of the sink connector `name`: log end, committed offset, lag."""
    committed = log.committed_offsets(f"connect-{name}")
    out = []
    for tp in _partitions(log, sink_topics(log, config)):
        found = committed.get(tp)
        try:
            end = log.latest_offset(tp.topic, tp.partition)
            start = (
                found.offset if found is not None else log.earliest_offset(tp.topic, tp.partition)
            )
        except LogError:
            continue
        position = found.offset if found is not None else None
        out.append(PartitionLag(name, tp.topic, tp.partition, end, position, max(0, end - start)))
    return out


def partition_for_time(
    log: Any, name: str, config: Mapping[str, str], timestamp_ms: int
) -> list[dict[str, Any]]:
    """Kafka's sink offsets entries (the body of PATCH /connectors/{name}/offsets)
    that move the sink to the first record at or after `timestamp_ms` in each of its
    partitions, found through the log's time index; a partition with no such record
    gets its log end offset (nothing to replay)."""

    def offset_of(tp: TopicPartition) -> int:
        found = log.offset_for_timestamp(tp.topic, tp.partition, timestamp_ms)
        return log.latest_offset(tp.topic, tp.partition) if found is None else found

    return _sink_entries(log, config, offset_of)


def partition_at_end(
    log: Any, name: str, config: Mapping[str, str], *, end: str
) -> list[dict[str, Any]]:
    """The offsets entries (as `partition_for_time`'s) that move the sink to each of
    its partitions' log start (`end="earliest"`: replay all the log still holds) or log
    end (`"latest"`: skip to records not written yet)."""
    if end not in ("earliest", "latest"):
        raise ValueError(f"end must be earliest or latest, got {end!r}")
    read = log.earliest_offset if end == "earliest" else log.latest_offset
    return _sink_entries(log, config, lambda tp: read(tp.topic, tp.partition))


def _sink_entries(
    log: Any, config: Mapping[str, str], offset_of: Callable[[TopicPartition], int]
) -> list[dict[str, Any]]:
    out = []
    for tp in _partitions(log, sink_topics(log, config)):
        try:
            offset = offset_of(tp)
        except LogError:
            continue  # deleted meanwhile
        out.append(
            {
                "partition": {"kafka_topic": tp.topic, "kafka_partition": tp.partition},
                "offset": {"kafka_offset": offset},
            }
        )
    return out


def log_usage(log: Any) -> list[TopicView]:
    """Every topic of an embedded log (internal ones too) with its partitions, segments
    and bytes on disk, from one directory listing per partition.

    Why not `describe_topic`: it reads each topic's metadata and refreshes each
    partition (a stat per segment file and more), a large share of a scrape over
    hundreds of topics (docs/performance.md). The layout
    (`<log.dir>/<topic>/<partition>/<base offset>.log`, docs/log-format.md) is the
    log's stable on-disk contract, so counting its files is exact for segments and
    bytes. [] for a log with no directory (Kafka)."""
    directory = getattr(log, "directory", None)
    if directory is None:
        return []
    out = []
    try:
        topics = [e for e in os.scandir(directory) if e.is_dir() and e.name[0] not in ".~"]
    except OSError:
        return []
    for topic in sorted(topics, key=lambda e: e.name):
        partitions = segments = size = 0
        try:
            for part in os.scandir(topic.path):
                if not part.name.isdigit() or not part.is_dir():
                    continue
                partitions += 1
                for entry in os.scandir(part.path):
                    if entry.name.endswith(".log"):
                        segments += 1
                        size += entry.stat().st_size
        except OSError:
            continue  # deleted while listing
        out.append(TopicView(topic.name, partitions, segments, size))
    return out
