"""A sink task's offsets: what it consumed, what it committed, and the commit.

Offset commit, every `offset.flush.interval.ms`, on `context.request_commit()`,
before partitions are revoked, and on a clean stop (numbered as in `commit`):
1. `pre_commit(consumed offsets)` — the task makes its writes durable and says which
   offsets are safe; an offset past what was consumed is clamped to it, one of a
   partition the task does not hold is ignored (the task cannot vouch for records it
   was never handed);
2. the dead-letter topic is fsynced (what it holds must not be lost behind a commit);
3. those offsets are committed for the group (the log fsyncs before recording them).

A partition is consumed up to an offset once the task accepted a delivery that ends
there (`connect.worker.sink_task`, step 4), never when it was merely polled.
Everything here runs on the task's thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from connect.api import SinkTask, TopicPartition
from connect.errors import DeadLetterQueueReporter
from connect.metrics.task import TaskMetrics
from connect.worker.sink_retry import LogOutage
from log import Log, LogError
from log import TopicPartition as LogTopicPartition

__all__ = ["SinkOffsets"]

_log = logging.getLogger("connect.worker")


class SinkOffsets:
    """The consumed and committed offsets of one sink task, and their commit."""

    def __init__(
        self,
        name: str,
        *,
        plugin: SinkTask,
        log: Log,
        group: str,
        dlq: DeadLetterQueueReporter | None,
        metrics: TaskMetrics,
        outage: LogOutage,
        lease_lapsed: Callable[[], bool],
        flush_interval_ms: int,
    ) -> None:
        self._name = name
        self._plugin = plugin
        self._data_log = log
        self._group = group
        self._dlq = dlq
        self._metrics = metrics
        self._outage = outage
        self._lease_lapsed = lease_lapsed
        self._flush_interval_s = flush_interval_ms / 1000
        #: Per partition: the offset after the last record the task accepted.
        self.consumed: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self.requested = False
        self._last_commit = time.monotonic()

    def forget(self, partitions: set[TopicPartition]) -> None:
        """The partitions left this task: their next owner commits from here on."""
        for tp in partitions:
            self.consumed.pop(tp, None)
            self._committed.pop(tp, None)

    def maybe_commit(self) -> None:
        if self.requested or time.monotonic() - self._last_commit >= self._flush_interval_s:
            self.commit()

    def commit(self, *, only: set[TopicPartition] | None = None) -> None:
        """See the module docstring."""
        self.requested = False
        self._last_commit = time.monotonic()
        consumed = {tp: o for tp, o in self.consumed.items() if only is None or tp in only}
        if not consumed or self._lease_lapsed():
            return
        started = time.perf_counter()
        ok = False
        try:
            # Step 1
            changed = self._safe(self._plugin.pre_commit(dict(consumed)), consumed)
            if not changed:
                ok = True
                return
            # Step 2
            if self._dlq is not None:
                self._dlq.flush()
            # Step 3
            ok = self._commit(changed)
        finally:
            self._metrics.commit(time.perf_counter() - started, ok=ok)

    def _safe(
        self, safe: dict[TopicPartition, int], consumed: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """Step 1's answer, clamped to what was consumed, less what is committed."""
        changed = {}
        for tp, offset in safe.items():
            done = consumed.get(tp)
            if done is None:
                continue  # not held by this task (any more): not its to commit
            if offset > done:
                _log.warning(
                    "task %s: pre_commit() returned offset %d for %s, past the %d "
                    "consumed; committing %d",
                    self._name,
                    offset,
                    tp,
                    done,
                    done,
                )
                offset = done
            if self._committed.get(tp) != offset:
                changed[tp] = offset
        return changed

    def _commit(self, changed: dict[TopicPartition, int]) -> bool:
        """Step 3; False when the log refused."""
        flush_started = time.perf_counter()
        try:
            self._data_log.commit_offsets(
                self._group, {LogTopicPartition(*tp): o for tp, o in changed.items()}
            )
        except LogError as exc:
            # Why: as in Kafka Connect, a refused commit (the group rebalancing, the
            # coordinator or the whole broker away) is not the task's failure: the
            # records stay delivered, and the next commit carries the offsets again.
            # Once per outage: the poll's warning already said the log is away.
            if not self._outage.failed_quietly():
                _log.warning("task %s: offset commit failed, will retry: %s", self._name, exc)
            return False
        self._metrics.fsync(time.perf_counter() - flush_started)
        # Not those revoked while the commit waited (served the group): theirs is
        # the next owner's now.
        self._committed.update((tp, o) for tp, o in changed.items() if tp in self.consumed)
        return True
