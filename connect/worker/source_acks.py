"""What a source task has appended to the log but not yet made durable: the partitions
to fsync, and the acknowledgements (`commit_record` and its batch forms) that wait for
that fsync.

Why a module of its own: the plugin API promises `commit_record` once a record is
durable, and an append is not durable until its partition's fsync. So the
acknowledgements wait here (one entry per appended batch, not per record) and are
delivered right after an fsync that covers them: step 2 of the offset commit
(connect.worker.source_task), or sooner, without writing offsets, once the oldest has
waited `ACK_MAX_DELAY_S` or `ACK_MAX_RECORDS` records wait (`due`). Why the early
rounds: a source that learns from `commit_record` what it may release (a CDC source's
WAL position, a verifiable source's report) should not wait a minute-long
`offset.flush.interval.ms` for it, and the queue holds the records themselves, so it
must stay small. Why no round when a poll comes back empty: a source that trickles
(a record, an empty poll, a record) would then fsync per record; a bound in time
keeps it to one fsync a second at most, no cost beside the appends it covers. A task
that overrides none of the hooks queues nothing. Why before the offsets, as Kafka's
producer callbacks come before its offset flush: a worker killed between the two
steps leaves acknowledged records whose offsets a restart polls again (acknowledged
twice), never records in the log whose offsets are committed but which the task was
never told of.

Called from the task's own thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, overload

from connect.api import RecordMetadata
from connect.metrics.task import TaskMetrics
from log import Log

__all__ = ["ACK_MAX_DELAY_S", "ACK_MAX_RECORDS", "Acknowledgements", "Landed"]

#: How long an acknowledgement may wait for its fsync, and how many records may wait
#: (see the module docstring). The queue keeps the records (or the batch) alive until
#: then, so the count is kept near one snapshot chunk of a CDC source: a tenfold bound
#: showed in a snapshot's peak memory (docs/performance.md), and an fsync per ten
#: thousand records costs nothing visible.
ACK_MAX_DELAY_S = 1.0
ACK_MAX_RECORDS = 10_000

#: A queued acknowledgement: the plugin's hook, the records or batch, their metadata.
_Ack = tuple[Callable[[Any, Any], None], Any, Sequence[RecordMetadata | None]]


class Landed(Sequence[RecordMetadata]):
    """The RecordMetadata of an appended batch, made when read (`commit_records`)."""

    def __init__(
        self, topic: str, partition: int, offsets: Sequence[int], timestamps: Sequence[int]
    ) -> None:
        self._topic, self._partition = topic, partition
        self._offsets, self._timestamps = offsets, timestamps

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, i: int) -> RecordMetadata: ...
    @overload
    def __getitem__(self, i: slice) -> list[RecordMetadata]: ...
    def __getitem__(self, i: int | slice) -> RecordMetadata | list[RecordMetadata]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return RecordMetadata(self._topic, self._partition, self._offsets[i], self._timestamps[i])


class Acknowledgements:
    """The partitions written since the last fsync (`written`, added to by each append)
    and the acknowledgements waiting for the next one (see the module docstring)."""

    def __init__(self, log: Log, metrics: TaskMetrics) -> None:
        self._log = log
        self._metrics = metrics
        self.written: set[tuple[str, int]] = set()
        self._acks: list[_Ack] = []
        self._records = 0  # how many records `_acks` holds
        self._since = 0.0  # time.monotonic() when the oldest was queued

    def __bool__(self) -> bool:
        """Whether an acknowledgement waits."""
        return bool(self._acks)

    def queue(self, hook: Callable[[Any, Any], None], items: Any, metadata: Sequence[Any]) -> None:
        """Acknowledge `items` through `hook` once they are durable."""
        if not self._acks:
            self._since = time.monotonic()
        self._acks.append((hook, items, metadata))
        self._records += len(metadata)

    def due(self) -> bool:
        """Whether the waiting acknowledgements should not wait for the next offset
        commit: too many records, or the oldest too long."""
        return bool(self._acks) and (
            self._records >= ACK_MAX_RECORDS or time.monotonic() - self._since >= ACK_MAX_DELAY_S
        )

    def fsync(self) -> None:
        """fsync every log partition written since the last fsync."""
        if self.written:
            started = time.perf_counter()
            for topic, p in self.written:
                self._log.flush(topic, p)
            self._metrics.fsync(time.perf_counter() - started)
            self.written.clear()

    def take(self) -> list[_Ack]:
        """The queued acknowledgements, handed to a transaction's commit (exactly-once:
        its commit makes them durable, `deliver(taken)` after it): what is queued
        meanwhile, a later transaction's, stays here. `written` goes with them."""
        acks, self._acks, self._records = self._acks, [], 0
        self.written.clear()
        return acks

    def drop(self) -> None:
        """Forget the queued acknowledgements: their records were never written (an
        aborted transaction)."""
        self._acks, self._records = [], 0
        self.written.clear()

    def deliver(self, taken: list[_Ack] | None = None) -> None:
        """Call the queued acknowledgements (or those `taken`) in the order queued (the
        records are durable: the caller has just fsynced what they were appended to)."""
        if taken is None:
            taken, self._acks, self._records = self._acks, [], 0
        for hook, items, metadata in taken:
            hook(items, metadata)
