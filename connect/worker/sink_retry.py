"""A sink task's waits: a delivery kept for redelivery, the back-off before it, and
riding out a log that cannot be reached.

- `Delivery`: what one poll hands the task, kept whole until the task accepts it.
- `Redelivery`: the back-off after put() raised RetriableError (step 1 of the
  iteration in `connect.worker.sink_task`): the task's `context.timeout()` when it set
  one, else 100 ms doubling up to 1 s, with every assigned partition paused and the
  consumer polled meanwhile so the group goes on.
- `LogOutage`: the log is unavailable (a Kafka broker away: `log.LogUnavailableError`).
  As Kafka Connect's tasks do, the task rides it out instead of failing: it waits a
  back-off (doubling up to `_OUTAGE_BACKOFF_MAX_S`) and polls again, for as long as
  the outage lasts; one warning when it starts, one line when the log is back.
Everything here runs on the task's thread.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from connect.api import SinkRecord, TopicPartition
from connect.worker.sink_convert import Chunk
from log import Consumer
from log import TopicPartition as LogTopicPartition

if TYPE_CHECKING:
    from connect.api.sink_batch import SinkBatch

__all__ = ["Delivery", "LogOutage", "Redelivery"]

_log = logging.getLogger("connect.worker")
#: The redelivery back-off when the task sets no `context.timeout()`: from the first,
#: doubling up to the last. Why: a sink whose store is down must not be called in a
#: tight loop (hundreds of thousands of put() calls a second), and one whose store
#: hiccupped should not wait long.
_RETRY_BACKOFF_FIRST_S = 0.1
_RETRY_BACKOFF_MAX_S = 1.0
#: Between polls of a log that cannot be reached. Each failed poll already waited the
#: log's own request timeout; this keeps a log that fails fast (connection refused)
#: from being asked in a tight loop, and lets a stop through within a second or so.
_OUTAGE_BACKOFF_FIRST_S = 0.1
_OUTAGE_BACKOFF_MAX_S = 2.0


@dataclass(slots=True)
class Delivery:
    """What one poll hands the task, kept whole until the task accepts it: the Arrow
    batches, the chunks they were made of (for records, should the task answer
    NotImplemented), the records, and each polled partition's next offset — which
    becomes consumed, and so committable, only once the task took the delivery."""

    batches: list[SinkBatch]
    batched: list[Chunk]
    records: list[SinkRecord]
    offsets: dict[TopicPartition, int]

    def drop(self, revoked: set[TopicPartition]) -> None:
        """Forget revoked partitions: their next owner reads them from the committed
        offset, so delivering them here too would write them twice. (Runs on a
        revocation during a redelivery only: a filter per record is fine there.)"""
        self.batches = [b for b in self.batches if (b.topic, b.partition) not in revoked]
        self.batched = [c for c in self.batched if (c[0].topic, c[0].partition) not in revoked]
        self.records = [r for r in self.records if r.topic_partition not in revoked]
        for tp in revoked:
            self.offsets.pop(tp, None)


class Redelivery:
    """The pending delivery after a RetriableError, and the wait before trying it."""

    def __init__(self, consumer: Consumer, stopping: threading.Event) -> None:
        self._consumer = consumer
        self._stopping = stopping
        self.pending: Delivery | None = None
        #: Set by `context.timeout()`; 0: the default back-off (_RETRY_BACKOFF_*).
        self.backoff_s = 0.0
        self._default_backoff_s = _RETRY_BACKOFF_FIRST_S
        #: Partitions paused for a redelivery (not by the task): resumed after it.
        self.paused: set[LogTopicPartition] = set()

    def revoked(self, partitions: set[LogTopicPartition], revoked: set[TopicPartition]) -> None:
        """The group took these partitions: neither redelivered nor resumed here."""
        if self.pending is not None:
            self.pending.drop(revoked)
        self.paused.difference_update(partitions)

    def back_off(self) -> None:
        """Wait before a redelivery. The consumer is polled with every partition
        paused, as Kafka's is: the group membership goes on (a rebalance revokes here,
        and the task's revoke callback takes the revoked partitions out of the pending
        delivery) while nothing new is read. A wait the task set is honoured; else the
        default doubles, so a store that stays down is called about once a second, not
        in a tight loop."""
        if self.backoff_s > 0:
            wait = self.backoff_s
        else:
            wait = self._default_backoff_s
            self._default_backoff_s = min(wait * 2, _RETRY_BACKOFF_MAX_S)
        deadline = time.monotonic() + wait
        consumer = self._consumer
        while not self._stopping.is_set():
            fresh = consumer.assignment() - consumer.paused()  # incl. newly assigned
            if fresh:
                consumer.pause(fresh)
                self.paused |= fresh
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            for tp, polled in consumer.poll_chunks(min(remaining, 0.1)):
                # Read only from a partition assigned by this very poll, or resumed by
                # the task: put back, to be read after the redelivery.
                consumer.seek(tp, polled[0].offset)

    def accepted(self) -> None:
        """A delivery went through: the next failure starts a fresh back-off, and what
        was paused for the redelivery reads again."""
        self._default_backoff_s = _RETRY_BACKOFF_FIRST_S
        if self.paused:
            self._consumer.resume(self.paused)
            self.paused.clear()


class LogOutage:
    """Whether the log is unreachable for a task, since when, and the wait between
    tries (see the module docstring)."""

    def __init__(self, name: str, stopping: threading.Event) -> None:
        self._name = name
        self._stopping = stopping
        self.since: float | None = None
        self._backoff_s = _OUTAGE_BACKOFF_FIRST_S

    def failed(self, exc: BaseException) -> None:
        """A call on the log failed for want of the log: warn on the first, then wait
        (a stop ends the wait)."""
        if self.since is None:
            self.since = time.monotonic()
            _log.warning(
                "task %s: the log cannot be reached (%s); retrying until it is back",
                self._name,
                exc,
            )
        wait, self._backoff_s = self._backoff_s, min(self._backoff_s * 2, _OUTAGE_BACKOFF_MAX_S)
        self._stopping.wait(wait)

    def failed_quietly(self) -> bool:
        """Whether a failure now is part of a known outage (warned about already)."""
        return self.since is not None

    def ok(self) -> None:
        """A call on the log went through: the outage, if any, is over."""
        if self.since is not None:
            _log.info(
                "task %s: the log is back after %.1f s", self._name, time.monotonic() - self.since
            )
            self.since = None
            self._backoff_s = _OUTAGE_BACKOFF_FIRST_S
