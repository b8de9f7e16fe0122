"""Kafka Connect's metrics in Prometheus form, read at scrape time.

`ConnectCollector` is a prometheus-client custom collector: each scrape builds the
metric families from `connect.metrics.view` (the herder's stores, the worker's task
handles and their last counters, the log's topics) and nothing lives between
scrapes. Why: 200 connectors × 3 tasks × ~20 metrics would be 12,000 live metric
objects, each taking a lock on the hot path; reading plain counters once per scrape
costs one pass (see bench/ops_bench.py for the figure).

`render()`, what `/metrics` serves, writes the same families in the text format itself:
prometheus-client's `generate_latest` validates and escapes every label of every sample,
which made a scrape of a large worker slow (docs/performance.md), where here a task's
label text is escaped once and shared by all its samples. The collector stays the way to
put these metrics in any other prometheus-client registry.

Names: Kafka Connect's MBean attribute names, snake-cased, prefixed `tributary_` and
the group (`worker`, `connector`, `task`, `source_task`, `sink_task`, `task_error`,
`log`), with Prometheus' conventions: counters end in `_total`, times are seconds
(Kafka's `*-avg-time-ms`/`*-max-time-ms` become a `_seconds` summary — rate of sum
over rate of count is the average — and a `_max_seconds` gauge), enums are a
`state` label. Labels: `connector`, `task`, and `topic`/`partition` for lag.

| Prometheus | Kafka Connect (MBean type: attribute) |
| --- | --- |
| tributary_worker_connector_count{state} | connect-worker-metrics: connector-count |
| tributary_worker_task_count{state} | connect-worker-metrics: task-count |
| tributary_worker_connector_task_count{connector,state} | connector-{running,…}-task-count |
| tributary_connector_info{connector,type,connector_class} | connector-type, connector-class |
| tributary_connector_status{connector,state} | connector-metrics: status |
| tributary_task_status{connector,task,state} | connector-task-metrics: status |
| tributary_task_batch_size_records | connector-task-metrics: batch-size-avg/max |
| tributary_task_offset_commit_{completion,failure}_total | offset-commit-success/failure-* |
| tributary_task_offset_commit_seconds, …_max_seconds | offset-commit-avg/max-time-ms |
| tributary_source_task_source_record_{poll,write}_total | source-record-poll/write-total |
| tributary_source_task_poll_batch_seconds, …_max_seconds | poll-batch-avg/max-time-ms |
| tributary_sink_task_sink_record_{read,send}_total | sink-record-read/send-total |
| tributary_sink_task_put_batch_seconds, …_max_seconds | put-batch-avg/max-time-ms |
| tributary_sink_task_partition_count | sink-task-metrics: partition-count |
| tributary_sink_partition_lag_records{connector,topic,partition} | (per partition) |
| tributary_task_error_record_{failures,errors}_total | total-record-failures/errors |
| tributary_task_error_records_skipped_total | total-records-skipped |
| tributary_task_error_deadletterqueue_produce_requests_total | deadletterqueue-produce-requests |
| tributary_log_appends_total, tributary_log_fsync_seconds | (the log, per task) |
| tributary_log_topic_{partitions,segments,size_bytes}{topic} | (the log, per topic) |
| tributary_worker_rebalance_completed_total | rebalance: completed-rebalances-total |
| tributary_worker_rebalance_seconds, …_max_seconds | rebalance: rebalance-avg/max-time-ms |
| tributary_worker_rebalance_{epoch,rebalancing} | rebalance: epoch, rebalancing |
| tributary_worker_rebalance_time_since_last_rebalance_seconds | time-since-last-rebalance-ms |
| tributary_worker_rebalance_leader{leader} | rebalance: leader-name |
| tributary_worker_group_members, tributary_worker_assigned_{connectors,tasks} | (the group) |

A task's counters start at zero when it (re)starts, as Kafka's do; Prometheus'
`rate()` handles the reset. A task running in a child process reports the counters
it last shipped (at most a second old).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from connect.metrics.view import STATES, ConnectorView, connectors_view, log_usage, sink_lag

__all__ = ["CONTENT_TYPE", "ConnectCollector", "render"]

#: The text exposition format's content type (version 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_P = "tributary_"


def _escape(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        value = value.replace("\\", r"\\").replace('"', r"\"").replace("\n", r"\n")
    return value


class _Labels:
    """Label names and values, with their text form made once."""

    __slots__ = ("pairs", "text")

    def __init__(self, **labels: str) -> None:
        self.pairs = labels
        self.text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())

    def plus(self, **more: str) -> _Labels:
        return _Labels(**self.pairs, **more)


class _Family:
    """One metric family: name, type, help and its samples (suffix, labels, value)."""

    __slots__ = ("doc", "kind", "name", "rows")

    def __init__(self, name: str, kind: str, doc: str) -> None:
        self.name, self.kind, self.doc = _P + name, kind, doc
        self.rows: list[tuple[str, _Labels, float]] = []

    def add(self, labels: _Labels, value: float) -> None:
        self.rows.append(("_total" if self.kind == "counter" else "", labels, value))

    def add_summary(self, labels: _Labels, count: float, total: float) -> None:
        self.rows.append(("_count", labels, count))
        self.rows.append(("_sum", labels, total))

    def to_metric(self) -> Metric:
        metric = Metric(self.name, self.doc, self.kind)
        for suffix, labels, value in self.rows:
            metric.add_sample(self.name + suffix, dict(labels.pairs), value)
        return metric

    def write(self, out: list[str]) -> None:
        exposed = self.name + "_total" if self.kind == "counter" else self.name
        out.append(f"# HELP {exposed} {self.doc}\n# TYPE {exposed} {self.kind}\n")
        name = self.name
        out.extend(
            f"{name}{suffix}{{{labels.text}}} {_number(value)}\n"
            for suffix, labels, value in self.rows
        )


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def families(herder: Any) -> list[_Family]:
    """Every family, read from the herder now (see the module docstring)."""
    connectors = connectors_view(herder)
    out = _worker(connectors) + _tasks(connectors)
    rebalance = getattr(herder, "rebalance_metrics", None)
    if rebalance is not None:  # a distributed worker
        out += _rebalance(rebalance())
    log = getattr(herder, "log", None)
    if log is not None:
        out += _lag(connectors, log) + _log(log)
    return out


class ConnectCollector(Collector):
    """Builds every family from the herder's current state on each `collect()`."""

    def __init__(self, herder: Any) -> None:
        self.herder = herder

    def collect(self) -> Iterator[Metric]:
        for family in families(self.herder):
            yield family.to_metric()


def render(herder: Any) -> bytes:
    """One scrape: the text exposition (format 0.0.4) of every family."""
    out: list[str] = []
    for family in families(herder):
        family.write(out)
    return "".join(out).encode()


# ---------------------------------------------------------------------- worker


def _worker(connectors: list[ConnectorView]) -> list[_Family]:
    by_state = Counter(c.state for c in connectors)
    tasks_by_state = Counter(t.state for c in connectors for t in c.tasks)
    count = _Family("worker_connector_count", "gauge", "Connectors by state.")
    task_count = _Family("worker_task_count", "gauge", "Tasks by state.")
    for state in STATES:
        labels = _Labels(state=state)
        count.add(labels, by_state.get(state, 0))
        task_count.add(labels, tasks_by_state.get(state, 0))
    per_connector = _Family("worker_connector_task_count", "gauge", "A connector's tasks by state.")
    info = _Family("connector_info", "gauge", "A connector's type and class (value 1).")
    status = _Family("connector_status", "gauge", "A connector's state (one series, value 1).")
    for c in connectors:
        states = Counter(t.state for t in c.tasks)
        for state in STATES:
            per_connector.add(_Labels(connector=c.name, state=state), states.get(state, 0))
        info.add(_Labels(connector=c.name, type=c.type, connector_class=c.connector_class), 1)
        status.add(_Labels(connector=c.name, state=c.state), 1)
    return [count, task_count, per_connector, info, status]


def _rebalance(m: dict[str, Any]) -> list[_Family]:
    none = _Labels()

    def gauge(name: str, doc: str, value: float) -> _Family:
        family = _Family(name, "gauge", doc)
        family.add(none, value)
        return family

    completed = _Family(
        "worker_rebalance_completed", "counter", "Generations this worker has applied."
    )
    completed.add(none, m["completed_rebalances_total"])
    took = _Family(
        "worker_rebalance_seconds", "summary", "Time to apply a generation (stop, acknowledge)."
    )
    took.add_summary(none, m["completed_rebalances_total"], m["rebalance_seconds_sum"])
    leader = _Family("worker_rebalance_leader", "gauge", "The group's leader (value 1).")
    leader.add(_Labels(leader=m["leader"]), 1)
    last = m["last_rebalance_time"]
    return [
        completed,
        took,
        gauge(
            "worker_rebalance_max_seconds",
            "Longest generation to apply.",
            m["rebalance_max_seconds"],
        ),
        gauge("worker_rebalance_epoch", "The generation this worker runs.", m["epoch"]),
        gauge(
            "worker_rebalance_rebalancing",
            "1 while a generation is being applied.",
            int(m["rebalancing"]),
        ),
        gauge(
            "worker_rebalance_time_since_last_rebalance_seconds",
            "Since this worker last applied a generation (NaN: never).",
            time.time() - last if last else float("nan"),
        ),
        leader,
        gauge("worker_group_members", "Live members of the group.", m["members"]),
        gauge(
            "worker_assigned_connectors", "Connectors this worker runs.", m["assigned_connectors"]
        ),
        gauge("worker_assigned_tasks", "Tasks this worker runs.", m["assigned_tasks"]),
    ]


# ----------------------------------------------------------------------- tasks


class _TaskFamilies:
    """The per-task families, Kafka Connect's task, source-task, sink-task and
    task-error metrics (plus the log's), filled one task at a time."""

    def __init__(self) -> None:
        self.status = _Family("task_status", "gauge", "A task's state (one series, value 1).")
        self.batch = _Family(
            "task_batch_size_records",
            "summary",
            "Batches a task handled (polled by a source, put to a sink) and their records.",
        )
        self.commits_ok = _Family(
            "task_offset_commit_completion", "counter", "Offset commits that succeeded."
        )
        self.commits_failed = _Family(
            "task_offset_commit_failure", "counter", "Offset commits that failed."
        )
        self.commit_time = _Family(
            "task_offset_commit_seconds", "summary", "Time taken by offset commits."
        )
        self.commit_max = _Family(
            "task_offset_commit_max_seconds", "gauge", "Longest offset commit."
        )
        self.polled = _Family(
            "source_task_source_record_poll", "counter", "Records polled from the source."
        )
        self.written = _Family(
            "source_task_source_record_write",
            "counter",
            "Records written to the log (after transforms).",
        )
        self.poll_time = _Family(
            "source_task_poll_batch_seconds", "summary", "Time taken to poll a batch."
        )
        self.poll_max = _Family(
            "source_task_poll_batch_max_seconds", "gauge", "Longest poll of a batch."
        )
        self.read = _Family("sink_task_sink_record_read", "counter", "Records read from the log.")
        self.sent = _Family(
            "sink_task_sink_record_send", "counter", "Records put to the sink (after transforms)."
        )
        self.put_time = _Family(
            "sink_task_put_batch_seconds", "summary", "Time taken to put a batch."
        )
        self.put_max = _Family(
            "sink_task_put_batch_max_seconds", "gauge", "Longest put of a batch."
        )
        self.partitions = _Family(
            "sink_task_partition_count", "gauge", "Log partitions assigned to the task."
        )
        self.failures = _Family(
            "task_error_record_failures",
            "counter",
            "Failed attempts at processing a record (retries too).",
        )
        self.errors = _Family(
            "task_error_record_errors",
            "counter",
            "Records that failed after retries (skipped or fatal).",
        )
        self.skipped = _Family(
            "task_error_records_skipped", "counter", "Records skipped under errors.tolerance."
        )
        self.dlq = _Family(
            "task_error_deadletterqueue_produce_requests",
            "counter",
            "Records sent to the dead-letter topic.",
        )
        self.appends = _Family("log_appends", "counter", "Batches the task appended to the log.")
        self.fsync = _Family(
            "log_fsync_seconds", "summary", "Time taken to make the task's writes durable."
        )
        self.fsync_max = _Family(
            "log_fsync_max_seconds", "gauge", "Longest fsync of the task's writes."
        )

    def add(self, task: Any, labels: _Labels) -> None:
        """One task's samples: its state always, its counters once it has some."""
        self.status.add(labels.plus(state=task.state), 1)
        m = task.metrics
        if not m:
            return  # a child that has not shipped its first counters yet
        if task.type == "sink":
            self._sink(labels, m.get)
        else:
            self._source(labels, m.get)
        self._commits(labels, m.get)
        self._errors(labels, task.state, m.get)
        self.appends.add(labels, m.get("log_appends", 0))
        self.fsync.add_summary(labels, m.get("log_fsyncs", 0), m.get("log_fsync_seconds_sum", 0.0))
        self.fsync_max.add(labels, m.get("log_fsync_seconds_max", 0.0))

    def _sink(self, labels: _Labels, get: Callable[[str, Any], Any]) -> None:
        batches = get("batches", 0)
        self.batch.add_summary(labels, batches, get("records_sent", 0))
        self.read.add(labels, get("records_read", 0))
        self.sent.add(labels, get("records_sent", 0))
        self.put_time.add_summary(labels, batches, get("batch_seconds_sum", 0.0))
        self.put_max.add(labels, get("batch_seconds_max", 0.0))
        self.partitions.add(labels, get("partition_count", 0))
        self.dlq.add(labels, get("dlq_records", 0))

    def _source(self, labels: _Labels, get: Callable[[str, Any], Any]) -> None:
        batches = get("batches", 0)
        self.batch.add_summary(labels, batches, get("records_polled", 0))
        self.polled.add(labels, get("records_polled", 0))
        self.written.add(labels, get("records_written", 0))
        self.poll_time.add_summary(labels, batches, get("batch_seconds_sum", 0.0))
        self.poll_max.add(labels, get("batch_seconds_max", 0.0))

    def _commits(self, labels: _Labels, get: Callable[[str, Any], Any]) -> None:
        ok, bad = get("offset_commit_success", 0), get("offset_commit_failure", 0)
        self.commits_ok.add(labels, ok)
        self.commits_failed.add(labels, bad)
        self.commit_time.add_summary(labels, ok + bad, get("offset_commit_seconds_sum", 0.0))
        self.commit_max.add(labels, get("offset_commit_seconds_max", 0.0))

    def _errors(self, labels: _Labels, state: str, get: Callable[[str, Any], Any]) -> None:
        n_failures, n_skipped = get("record_failures", 0), get("records_skipped", 0)
        self.failures.add(labels, n_failures)
        self.skipped.add(labels, n_skipped)
        # A record that exhausted its retries is skipped (tolerated) or fails the
        # task (the one record behind a FAILED task with record failures).
        fatal = 1 if state == "FAILED" and n_failures > n_skipped else 0
        self.errors.add(labels, n_skipped + fatal)

    def in_order(self) -> list[_Family]:
        return [
            self.status, self.batch, self.commits_ok, self.commits_failed, self.commit_time,
            self.commit_max, self.polled, self.written, self.poll_time, self.poll_max,
            self.read, self.sent, self.put_time, self.put_max, self.partitions,
            self.failures, self.errors, self.skipped, self.dlq, self.appends, self.fsync,
            self.fsync_max,
        ]  # fmt: skip


def _tasks(connectors: list[ConnectorView]) -> list[_Family]:
    families = _TaskFamilies()
    for c in connectors:
        for t in c.tasks:
            families.add(t, _Labels(connector=c.name, task=str(t.task)))
    return families.in_order()


# -------------------------------------------------------------------- lag, log


def _lag(connectors: list[ConnectorView], log: Any) -> list[_Family]:
    lag = _Family(
        "sink_partition_lag_records",
        "gauge",
        "Log end offset minus the sink connector's committed offset.",
    )
    end = _Family(
        "sink_partition_log_end_offset", "gauge", "Log end offset of a partition a sink reads."
    )
    for c in connectors:
        if c.type != "sink":
            continue
        for item in sink_lag(log, c.name, c.config):
            labels = _Labels(connector=c.name, topic=item.topic, partition=str(item.partition))
            lag.add(labels, item.lag)
            end.add(labels, item.log_end_offset)
    return [lag, end]


def _log(log: Any) -> list[_Family]:
    partitions = _Family("log_topic_partitions", "gauge", "Partitions of a topic.")
    segments = _Family("log_topic_segments", "gauge", "Segments of a topic on disk.")
    size = _Family("log_topic_size_bytes", "gauge", "Size of a topic's segments on disk.")
    for topic in log_usage(log):
        labels = _Labels(topic=topic.name)
        partitions.add(labels, topic.partitions)
        segments.add(labels, topic.segments)
        size.add(labels, topic.size_bytes)
    return [partitions, segments, size]
