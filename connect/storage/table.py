"""Tables behind the runtime's stores: key → value maps that are either kept in memory
(tests, throwaway workers) or in a compacted topic of the log.

A `LogTable` is the one place a store's state changes: a write appends the record,
fsyncs it, and then reads the topic up to and past its own offset, applying every
record in log order — including other workers' writes that came first. So every
process that replays the topic agrees on the state, and the log decides races.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from log import Header, Log, TopicExistsError, partition_for_key

__all__ = ["Apply", "Headers", "LogTable", "MemoryTable", "Table"]

#: Called for every record in order: (key, value or None for a tombstone), and with
#: `start(apply, headers=True)` the record's headers as a third argument.
Apply = Callable[..., None]
Headers = tuple[Header, ...]


class Table(Protocol):
    def start(self, apply: Apply, *, headers: bool = False) -> None:
        """Replay everything there is into `apply` before returning."""

    def write(self, items: list[tuple[bytes, bytes | None]], headers: Headers = ()) -> None:
        """Durably write records (each with `headers`); when this returns, `apply` has
        seen them."""

    def refresh(self) -> None:
        """Apply what other processes wrote since the last look."""

    def stop(self) -> None: ...


class MemoryTable:
    """A table that lives as long as the process (no other process sees it)."""

    def __init__(self) -> None:
        self._apply: Apply | None = None
        self._headers = False
        self._lock = threading.Lock()

    def start(self, apply: Apply, *, headers: bool = False) -> None:
        self._apply = apply
        self._headers = headers

    def write(self, items: list[tuple[bytes, bytes | None]], headers: Headers = ()) -> None:
        assert self._apply is not None, "start() first"
        with self._lock:
            for key, value in items:
                if self._headers:
                    self._apply(key, value, tuple(headers))
                else:
                    self._apply(key, value)

    def refresh(self) -> None:
        return None

    def stop(self) -> None:
        return None


class LogTable:
    """A table kept in a compacted topic of `log` (created on first use).

    `isolation_level="read_committed"` replays only committed transactions, up to each
    partition's last stable offset: the table of a topic that exactly-once source
    tasks write inside their transactions (connect.worker.source_transactions), where
    an aborted offset must never count."""

    def __init__(
        self,
        log: Log,
        topic: str,
        *,
        partitions: int = 1,
        isolation_level: str = "read_uncommitted",
    ) -> None:
        self._log = log
        self.topic = topic
        self._partitions = partitions
        self._isolation = isolation_level
        self._positions: list[int] = []
        self._apply: Apply | None = None
        self._headers = False
        self._lock = threading.RLock()  # applying records (short)
        # Why a second lock: a write waits for its fsync; readers refreshing meanwhile
        # (REST status reads while tasks report states) must not queue behind it.
        self._write_lock = threading.Lock()

    def start(self, apply: Apply, *, headers: bool = False) -> None:
        self._headers = headers
        with contextlib.suppress(TopicExistsError):
            self._log.create_topic(
                self.topic, self._partitions, config={"cleanup.policy": "compact"}
            )
        count = self._log.partition_count(self.topic)
        with self._lock:
            self._apply = apply
            self._positions = [0] * count  # refresh starts at each log start
            self.refresh()

    def refresh(self, partitions: Iterable[int] | None = None) -> None:
        """Apply what was written since the last look: to every partition, or to
        `partitions` only (a write's own: see `write`)."""
        with self._lock:
            assert self._apply is not None, "start() first"
            chosen = list(range(len(self._positions)) if partitions is None else partitions)
            ranges = self._ranges(chosen)
            for p in chosen:
                earliest, end = ranges[p]
                position = max(self._positions[p], earliest)
                while position < end:
                    records = self._read(p, position)
                    for rec in records:
                        if rec.key is None:
                            continue
                        if self._headers:
                            self._apply(rec.key, rec.value, rec.headers)
                        else:
                            self._apply(rec.key, rec.value)
                    # Past control batches and aborted transactions a read skipped.
                    after = getattr(records, "next_offset", None)
                    if after is None:
                        after = records[-1].offset + 1 if records else position
                    if after <= position:
                        break  # caught up (read_committed: at the last stable offset)
                    position = after
                self._positions[p] = position

    def _ranges(self, partitions: list[int]) -> dict[int, tuple[int, int]]:
        """(earliest, latest) of each partition: in one round where the log can
        (KafkaLog.offset_ranges: one ListOffsets request each for the earliest and the
        latest offsets of all of them; one watermarks request for a single partition),
        else one partition at a time. Why: on Kafka a partition's look was otherwise a
        consumer and two requests of its own, and the offsets topic's 25 partitions
        took about 3 s of a worker's start."""
        batched = getattr(self._log, "offset_ranges", None)
        if batched is not None:
            return batched(self.topic, partitions)
        out = {}
        for p in partitions:
            end = self._log.latest_offset(self.topic, p)  # the end first, as always
            out[p] = (self._log.earliest_offset(self.topic, p), end)
        return out

    def _read(self, p: int, position: int) -> list:
        if self._isolation == "read_uncommitted":  # the log's default: no extra argument
            return self._log.read(self.topic, p, position, max_bytes=4 << 20)
        return self._log.read(
            self.topic, p, position, max_bytes=4 << 20, isolation_level=self._isolation
        )

    def behind(self) -> list[int]:
        """The partitions whose replay has not reached their log end offset yet (with
        read_committed: held back by an open transaction), after a refresh."""
        self.refresh()
        ranges = self._ranges(list(range(len(self._positions))))
        return [p for p, position in enumerate(self._positions) if position < ranges[p][1]]

    def write(self, items: list[tuple[bytes, bytes | None]], headers: Headers = ()) -> None:
        if not items:
            return
        by_partition: dict[int, list[tuple[bytes, bytes | None]]] = {}
        count = len(self._positions)
        for key, value in items:
            by_partition.setdefault(partition_for_key(key, count), []).append((key, value))
        with self._write_lock:
            for p, rows in by_partition.items():
                self._log.append(
                    self.topic,
                    p,
                    [v for _, v in rows],
                    keys=[k for k, _ in rows],
                    headers=[headers] * len(rows) if headers else None,
                )
                self._log.flush(self.topic, p)
        # Applies this write and everything before it in its partitions, in log order.
        # Why not every partition: on Kafka each partition's look is a watermark request
        # through a consumer of its own, and the offsets topic's 25 partitions outnumber
        # the reader pool's 16, so a whole refresh made 25 consumers every time, and a
        # source task's offset commit held its polling thread for a second or more
        # (the MySQL CDC bench's latency p99: docs/performance.md). The other
        # partitions' news waits for the next refresh, as if the write came sooner.
        self.refresh(by_partition)

    def stop(self) -> None:
        return None
