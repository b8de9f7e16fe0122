"""Kafka Connect's metrics in Prometheus form, read at scrape time.

`ConnectCollector` is a prometheus-client custom collector: each scrape builds the
metric families from `connect.metrics.view` (the herder's stores, the worker's task
handles and their last counters, the log's topics) and nothing lives between
scrapes. Why: 200 connectors × 3 tasks × ~20 metrics would be 12,000 live metric
objects, each taking a lock on the hot path; reading plain counters once per scrape
costs one pass (see bench/ops_bench.py for the figure).

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

A task's counters start at zero when it (re)starts, as Kafka's do; Prometheus'
`rate()` handles the reset. A task running in a child process reports the counters
it last shipped (at most a second old).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from connect.metrics.view import STATES, connectors_view, sink_lag, topics_view

__all__ = ["CONTENT_TYPE", "ConnectCollector", "render"]

#: The text exposition format's content type (version 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_TASK = ["connector", "task"]
_P = "tributary_"


def _counter(name: str, doc: str, labels: list[str] = _TASK) -> CounterMetricFamily:
    return CounterMetricFamily(_P + name, doc, labels=labels)


def _gauge(name: str, doc: str, labels: list[str] = _TASK) -> GaugeMetricFamily:
    return GaugeMetricFamily(_P + name, doc, labels=labels)


def _summary(name: str, doc: str) -> SummaryMetricFamily:
    return SummaryMetricFamily(_P + name, doc, labels=_TASK)


class ConnectCollector(Collector):
    """Builds every family from the herder's current state on each `collect()`."""

    def __init__(self, herder: Any) -> None:
        self.herder = herder

    def collect(self) -> Iterator[Metric]:
        connectors = connectors_view(self.herder)
        yield from self._worker(connectors)
        yield from self._tasks(connectors)
        log = getattr(self.herder, "log", None)
        if log is not None:
            yield from self._lag(connectors, log)
            yield from self._log(log)

    # ------------------------------------------------------------------ worker

    @staticmethod
    def _worker(connectors: list) -> Iterator[Metric]:
        by_state = Counter(c.state for c in connectors)
        tasks_by_state = Counter(t.state for c in connectors for t in c.tasks)
        count = _gauge("worker_connector_count", "Connectors by state.", ["state"])
        task_count = _gauge("worker_task_count", "Tasks by state.", ["state"])
        for state in STATES:
            count.add_metric([state], by_state.get(state, 0))
            task_count.add_metric([state], tasks_by_state.get(state, 0))
        per_connector = _gauge(
            "worker_connector_task_count",
            "A connector's tasks by state.",
            ["connector", "state"],
        )
        info = _gauge(
            "connector_info",
            "A connector's type and class (value 1).",
            ["connector", "type", "connector_class"],
        )
        status = _gauge(
            "connector_status",
            "A connector's current state (one series, value 1).",
            ["connector", "state"],
        )
        for c in connectors:
            states = Counter(t.state for t in c.tasks)
            for state in STATES:
                per_connector.add_metric([c.name, state], states.get(state, 0))
            info.add_metric([c.name, c.type, c.connector_class], 1)
            status.add_metric([c.name, c.state], 1)
        yield from (count, task_count, per_connector, info, status)

    # ------------------------------------------------------------------- tasks

    @staticmethod
    def _tasks(connectors: list) -> Iterator[Metric]:
        status = _gauge(
            "task_status", "A task's current state (one series, value 1).", [*_TASK, "state"]
        )
        batch = _summary(
            "task_batch_size_records",
            "Batches a task handled (polled by a source, put to a sink) and their records.",
        )
        commits_ok = _counter("task_offset_commit_completion", "Offset commits that succeeded.")
        commits_failed = _counter("task_offset_commit_failure", "Offset commits that failed.")
        commit_time = _summary("task_offset_commit_seconds", "Time taken by offset commits.")
        commit_max = _gauge("task_offset_commit_max_seconds", "Longest offset commit.")
        polled = _counter("source_task_source_record_poll", "Records polled from the source.")
        written = _counter(
            "source_task_source_record_write", "Records written to the log (after transforms)."
        )
        poll_time = _summary("source_task_poll_batch_seconds", "Time taken to poll a batch.")
        poll_max = _gauge("source_task_poll_batch_max_seconds", "Longest poll of a batch.")
        read = _counter("sink_task_sink_record_read", "Records read from the log.")
        sent = _counter("sink_task_sink_record_send", "Records put to the sink (after transforms).")
        put_time = _summary("sink_task_put_batch_seconds", "Time taken to put a batch.")
        put_max = _gauge("sink_task_put_batch_max_seconds", "Longest put of a batch.")
        partitions = _gauge("sink_task_partition_count", "Log partitions assigned to the task.")
        failures = _counter(
            "task_error_record_failures", "Failed attempts at processing a record (retries too)."
        )
        errors = _counter(
            "task_error_record_errors", "Records that failed after retries (skipped or fatal)."
        )
        skipped = _counter("task_error_records_skipped", "Records skipped under errors.tolerance.")
        dlq = _counter(
            "task_error_deadletterqueue_produce_requests", "Records sent to the dead-letter topic."
        )
        appends = _counter("log_appends", "Batches the task appended to the log.")
        fsync = _summary("log_fsync_seconds", "Time taken to make the task's appends durable.")
        fsync_max = _gauge("log_fsync_max_seconds", "Longest fsync of the task's appends.")
        for c in connectors:
            for t in c.tasks:
                labels = [c.name, str(t.task)]
                status.add_metric([*labels, t.state], 1)
                m = t.metrics
                if not m:
                    continue  # a child that has not shipped its first counters yet
                batches = m.get("batches", 0)
                if t.type == "sink":
                    batch.add_metric(labels, batches, m.get("records_sent", 0))
                    read.add_metric(labels, m.get("records_read", 0))
                    sent.add_metric(labels, m.get("records_sent", 0))
                    put_time.add_metric(labels, batches, m.get("batch_seconds_sum", 0.0))
                    put_max.add_metric(labels, m.get("batch_seconds_max", 0.0))
                    partitions.add_metric(labels, m.get("partition_count", 0))
                    dlq.add_metric(labels, m.get("dlq_records", 0))
                else:
                    batch.add_metric(labels, batches, m.get("records_polled", 0))
                    polled.add_metric(labels, m.get("records_polled", 0))
                    written.add_metric(labels, m.get("records_written", 0))
                    poll_time.add_metric(labels, batches, m.get("batch_seconds_sum", 0.0))
                    poll_max.add_metric(labels, m.get("batch_seconds_max", 0.0))
                ok, bad = m.get("offset_commit_success", 0), m.get("offset_commit_failure", 0)
                commits_ok.add_metric(labels, ok)
                commits_failed.add_metric(labels, bad)
                commit_time.add_metric(labels, ok + bad, m.get("offset_commit_seconds_sum", 0.0))
                commit_max.add_metric(labels, m.get("offset_commit_seconds_max", 0.0))
                n_failures, n_skipped = m.get("record_failures", 0), m.get("records_skipped", 0)
                failures.add_metric(labels, n_failures)
                skipped.add_metric(labels, n_skipped)
                # A record that exhausted its retries is skipped (tolerated) or fails
                # the task (the one record behind a FAILED task with record failures).
                fatal = 1 if t.state == "FAILED" and n_failures > n_skipped else 0
                errors.add_metric(labels, n_skipped + fatal)
                appends.add_metric(labels, m.get("log_appends", 0))
                fsync.add_metric(labels, m.get("log_fsyncs", 0), m.get("log_fsync_seconds_sum", 0))
                fsync_max.add_metric(labels, m.get("log_fsync_seconds_max", 0.0))
        yield from (status, batch, commits_ok, commits_failed, commit_time, commit_max)
        yield from (polled, written, poll_time, poll_max)
        yield from (read, sent, put_time, put_max, partitions)
        yield from (failures, errors, skipped, dlq, appends, fsync, fsync_max)

    # --------------------------------------------------------------- lag, log

    @staticmethod
    def _lag(connectors: list, log: Any) -> Iterator[Metric]:
        lag = _gauge(
            "sink_partition_lag_records",
            "Log end offset minus the sink connector's committed offset.",
            ["connector", "topic", "partition"],
        )
        end = _gauge(
            "sink_partition_log_end_offset",
            "Log end offset of a partition a sink connector reads.",
            ["connector", "topic", "partition"],
        )
        for c in connectors:
            if c.type != "sink":
                continue
            for item in sink_lag(log, c.name, c.config):
                labels = [c.name, item.topic, str(item.partition)]
                lag.add_metric(labels, item.lag)
                end.add_metric(labels, item.log_end_offset)
        yield from (lag, end)

    @staticmethod
    def _log(log: Any) -> Iterator[Metric]:
        labels = ["topic"]
        partitions = _gauge("log_topic_partitions", "Partitions of a topic.", labels)
        segments = _gauge("log_topic_segments", "Segments of a topic on disk.", labels)
        size = _gauge("log_topic_size_bytes", "Size of a topic's segments on disk.", labels)
        for topic in topics_view(log):
            partitions.add_metric([topic.name], topic.partitions)
            segments.add_metric([topic.name], topic.segments)
            size.add_metric([topic.name], topic.size_bytes)
        yield from (partitions, segments, size)


def render(herder: Any) -> bytes:
    """One scrape: the text exposition of everything `ConnectCollector` reads."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ConnectCollector(herder))
    return generate_latest(registry)
