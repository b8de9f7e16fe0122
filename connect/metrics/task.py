"""The counters a running task keeps: plain integers and floats bumped once per batch,
never per record, and read (or shipped to the worker) only when someone asks.

Why plain attributes and not prometheus-client metric objects: a worker may run 600
tasks, most of them in child processes; a live metric object per task and per metric
would cost a lock per update on the hot path and thousands of objects per scrape. A
task updates its own `TaskMetrics` from its own thread (one writer, so no lock), and
`snapshot()` copies the numbers into a dict that can cross a pipe (see
`connect.worker.process_task`) and feed the scrape-time collector
(`connect.metrics.prometheus`).

The names follow Kafka Connect's task metrics (source-task-metrics, sink-task-metrics,
connector-task-metrics, task-error-metrics), in snake case:

| field | Kafka Connect |
| --- | --- |
| records_polled / records_written | source-record-poll-total / source-record-write-total |
| records_read / records_sent | sink-record-read-total / sink-record-send-total |
| batches, batch_seconds_sum/max | poll-batch-*-time-ms (source), put-batch-*-time-ms (sink) |
| offset_commit_success/failure, offset_commit_seconds_sum/max | offset-commit-* |
| record_failures, records_skipped | total-record-failures, total-records-skipped |
| dlq_records | deadletterqueue-produce-requests |
| log_appends, log_fsyncs, log_fsync_seconds_* | (the log: batches appended, flushes) |

Bytes are not counted here (that would be a pass over every record); the scrape reads
each topic's size on disk instead.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["COUNTER_FIELDS", "TaskMetrics"]

#: Fields that only grow while a task runs (a restart starts them at zero again).
COUNTER_FIELDS = (
    "records_polled",
    "records_written",
    "records_read",
    "records_sent",
    "batches",
    "batch_seconds_sum",
    "offset_commit_success",
    "offset_commit_failure",
    "offset_commit_seconds_sum",
    "log_appends",
    "log_fsyncs",
    "log_fsync_seconds_sum",
)
_MAX_FIELDS = ("batch_seconds_max", "offset_commit_seconds_max", "log_fsync_seconds_max")


class TaskMetrics:
    """One task's counters (see the module docstring). Written by the task's thread."""

    __slots__ = (*COUNTER_FIELDS, *_MAX_FIELDS, "kind")

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "source" | "sink"
        for name in COUNTER_FIELDS:
            setattr(self, name, 0)
        for name in _MAX_FIELDS:
            setattr(self, name, 0.0)

    def batch(self, seconds: float) -> None:
        """One poll (source) or put (sink) of a batch took `seconds`."""
        self.batches += 1
        self.batch_seconds_sum += seconds
        if seconds > self.batch_seconds_max:
            self.batch_seconds_max = seconds

    def commit(self, seconds: float, *, ok: bool) -> None:
        """One offset commit attempt, successful or not, took `seconds`."""
        if ok:
            self.offset_commit_success += 1
        else:
            self.offset_commit_failure += 1
        self.offset_commit_seconds_sum += seconds
        if seconds > self.offset_commit_seconds_max:
            self.offset_commit_seconds_max = seconds

    def fsync(self, seconds: float) -> None:
        """The log made this task's appends durable (one flush) in `seconds`."""
        self.log_fsyncs += 1
        self.log_fsync_seconds_sum += seconds
        if seconds > self.log_fsync_seconds_max:
            self.log_fsync_seconds_max = seconds

    def snapshot(self, **extra: Any) -> dict[str, Any]:
        """The numbers as a plain dict (picklable), with `extra` merged in."""
        out: dict[str, Any] = {name: getattr(self, name) for name in self.__slots__}
        out["at"] = time.time()
        out.update(extra)
        return out
