"""A partition: a directory of segments, its roll policy, recovery point and write lock.

`Partition` is the class callers use; it is composed of parts, one job and one
numbered protocol each:

- `log.partition_load`: the directory's files, opening and recovery (the steps of
  recovering on open), the cross-process write lock and noticing what other
  processes changed;
- `log.partition_read`: reads, with the read hint and the cut-batch cache;
- `log.partition_retention`: retention and compaction's crash-safe swap;
- `log.partition_txn`: transactions (open ones, the last stable offset, the aborted
  index written at each roll);
- this module: the state they share, appends, rolls, flushes and closing.

Appends: one batch at a time under the partition's lock (thread lock and `.lock`
flock), after catching up with what other processes changed. The active segment
rolls when the batch would take it past `segment.bytes`, when either index is full
(`segment.index.bytes`, as in Kafka) or when its first record is `segment.ms` old;
a roll writes the old segment's final time entry, fsyncs it, announces the new
segment list and writes the recovery point. Data is fsynced per `flush.messages` /
`flush.ms`, and always by `flush()` (before an offset commit) and `close()`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from log.batch import (
    BatchHeader,
    ProducerSection,
    encode_batch,
    encode_control_batch,
    parse_header,
)
from log.config import TopicConfig
from log.errors import InvalidRecordError, LogClosedError
from log.fsutil import FileLock, SharedCounter, fsync_dir
from log.partition_load import CLEANER_CHECKPOINT, LOCK_TIMEOUT_S, PartitionLoading
from log.partition_read import PartitionReading
from log.partition_retention import PartitionRetention
from log.partition_txn import PartitionTxn, TxnView
from log.records import Header, Record
from log.segment import Segment

__all__ = ["CLEANER_CHECKPOINT", "LOCK_TIMEOUT_S", "Clock", "Partition", "wall_clock_ms"]

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Partition(PartitionLoading, PartitionReading, PartitionRetention, PartitionTxn):
    """Owns one partition directory. Use through `FileLog`; safe across threads and
    processes (see the module docstrings of its parts)."""

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: TopicConfig,
        *,
        clock: Clock = wall_clock_ms,
    ) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.clock = clock
        self._lock = threading.RLock()
        directory.mkdir(parents=True, exist_ok=True)
        self._flock = FileLock(directory / ".lock")
        self._generation = SharedCounter(directory / ".generation")
        self._segments: tuple[Segment, ...] = ()
        # Segments taken out of the list, closed after a grace (readers may be in them).
        self._retired: list[tuple[float, Segment]] = []
        self._dir_mtime = 0
        self._seen_generation = -1
        # Offsets below this may have gaps that compaction left (see _open).
        self._compacted_below = 0
        self._unflushed_messages = 0
        self._last_flush_ms = clock()
        # Where the last read stopped: (next offset, segment object, byte position).
        # Keyed by the Segment object, not its base offset: a compaction swaps in a
        # new file under the same name, and a position in the old one means nothing.
        self._read_hint: tuple[int, Segment | None, int] = (-1, None, 0)
        # The records of the last batch a read cut short (at `max_records`), from the
        # next offset on: (that offset, segment object, batch position, batch header,
        # records). A consumer polling fewer records than a batch holds would
        # otherwise read, CRC-check and decode the whole batch again on every poll.
        # Keyed like the hint; the lists are never mutated (readers may share them).
        self._cut_batch: tuple[int, Segment, int, BatchHeader, list[Record]] | None = None
        self._txn = TxnView()
        self.closed = False
        # Bytes recovery and catching up cut off (torn or corrupt tails), all told.
        self.truncated_bytes = 0
        with self._locked():
            self._open()

    # ----------------------------------------------------------------- offsets

    @property
    def log_start_offset(self) -> int:
        segments = self._segments
        first = segments[0]
        if first.valid_end == 0 and len(segments) == 1:
            return first.next_offset
        return first.base_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    def earliest_offset(self) -> int:
        self._refresh_for_read()
        return self.log_start_offset

    def latest_offset(self) -> int:
        self._refresh_for_read()
        return self.log_end_offset

    def size_bytes(self) -> int:
        return sum(s.valid_end for s in self._segments)

    @property
    def segments(self) -> tuple[Segment, ...]:
        return self._segments

    # ------------------------------------------------------------------ append

    def append(
        self,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None = None,
        timestamps: Sequence[int] | None = None,
        headers: Sequence[Sequence[Header]] | None = None,
        codec: int = 0,
    ) -> range:
        """Append one batch; return the offsets it was given."""
        if self.config.compacted and (keys is None or any(k is None for k in keys)):
            raise InvalidRecordError(
                self.topic, self.partition, "a compacted topic needs a key on every record"
            )
        data = encode_batch(
            values,
            keys=keys,
            timestamps=timestamps,
            headers=headers,
            timestamp=self.clock(),
            codec=codec,
        )
        return self.append_encoded(data)

    def append_encoded(self, data: bytearray) -> range:
        """Append a batch encoded by `encode_batch` (the base offset gets patched)."""
        header = parse_header(data)
        if header.size > self.config.max_message_bytes:
            raise InvalidRecordError(
                self.topic,
                self.partition,
                f"batch of {header.size} bytes is larger than "
                f"max.message.bytes={self.config.max_message_bytes}",
            )
        with self._locked():
            self._check_open()
            self._catch_up_writer()
            return self._append_locked(data, header)

    def _append_locked(self, data: bytearray, header: BatchHeader) -> range:
        active = self._segments[-1]
        if self._should_roll(active, len(data)):
            active = self._roll()
        base = active.next_offset
        data[0:8] = base.to_bytes(8, "little", signed=True)
        header = header._replace(base_offset=base)
        active.append(data, header)
        self._unflushed_messages += header.record_count
        self._maybe_flush()
        return range(base, header.next_offset)

    def append_transactional(
        self,
        producer: ProducerSection,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None = None,
        timestamps: Sequence[int] | None = None,
        headers: Sequence[Sequence[Header]] | None = None,
        codec: int = 0,
    ) -> range:
        """Append one batch of `producer`'s open transaction (the coordinator added
        this partition to it first). Raises ProducerFencedError when a newer epoch of
        the producer id wrote here (a marker of the coordinator's, say): a fenced
        producer's batches never reach the log."""
        if self.config.compacted and (keys is None or any(k is None for k in keys)):
            raise InvalidRecordError(
                self.topic, self.partition, "a compacted topic needs a key on every record"
            )
        data = encode_batch(
            values,
            keys=keys,
            timestamps=timestamps,
            headers=headers,
            timestamp=self.clock(),
            codec=codec,
            producer=producer,
        )
        header = parse_header(data)
        if header.size > self.config.max_message_bytes:
            raise InvalidRecordError(
                self.topic,
                self.partition,
                f"batch of {header.size} bytes is larger than "
                f"max.message.bytes={self.config.max_message_bytes}",
            )
        with self._locked():
            self._check_open()
            self._catch_up_writer()
            self._txn_mark()
            self.txn_view()
            self._txn_check_epoch(producer.producer_id, producer.producer_epoch)
            return self._append_locked(data, header)

    def write_marker(
        self,
        producer: ProducerSection,
        *,
        commit: bool,
        coordinator_epoch: int = 0,
        before: int | None = None,
        sync: bool = True,
    ) -> int | None:
        """End `producer`'s transaction here with a COMMIT or ABORT control batch;
        return its offset, or None when there is nothing to end: the producer has no
        transaction open here and this epoch's marker is already in (the
        coordinator's steps are redone after a crash; a second marker must change
        nothing), or the transaction open here began at or after `before`, so it is
        a later one of the producer's (the one ended here was marked already). A
        marker with a newer epoch is written even with nothing open: it tells the
        partition of the epoch, so a fenced producer's later batches are refused
        here too. `sync`: fsynced before this returns (else the coordinator makes it
        durable before anything relies on it, log.txn_coordinator)."""
        with self._locked():
            self._check_open()
            self._catch_up_writer()
            self._txn_mark()
            view = self.txn_view()
            assert view is not None
            pid, epoch = producer.producer_id, producer.producer_epoch
            first = view.open.get(pid)
            if first is None and view.epochs.get(pid, -1) >= epoch:
                return None
            if first is not None and before is not None and first >= before:
                return None
            self._txn_check_epoch(pid, epoch)
            data = encode_control_batch(
                producer, commit=commit, coordinator_epoch=coordinator_epoch, timestamp=self.clock()
            )
            offsets = self._append_locked(data, parse_header(data))
            if sync:
                self._sync_locked()
            return offsets.start

    def open_transaction_start(self, producer_id: int) -> int | None:
        """The first offset of `producer_id`'s transaction open here, as the files
        say now (None: none is open)."""
        with self._locked():
            self._check_open()
            self._catch_up_writer()
            view = self.txn_view()
            return None if view is None else view.open.get(producer_id)

    def _should_roll(self, active: Segment, incoming: int) -> bool:
        if active.valid_end == 0:
            return False
        cfg = self.config
        if active.valid_end + incoming > cfg.segment_bytes:
            return True
        # A full index rolls the segment, as in Kafka (see log.index).
        if active.index.full(cfg.segment_index_bytes) or active.time_index.full(
            cfg.segment_index_bytes
        ):
            return True
        return (
            active.first_timestamp >= 0
            and self.clock() - active.first_timestamp >= self.config.segment_ms
        )

    def _roll(self) -> Segment:
        """Close the active segment (final time-index entry, fsync) and start a new
        one at the next offset. Under the lock."""
        old = self._segments[-1]
        if old.max_timestamp >= 0:
            old.time_index.append(old.max_timestamp, old.last_batch_base())
        old.sync_all()
        self._txn_before_roll(old)
        with self._changing_segments():
            new = self._new_segment(old.next_offset, create=True)
            self._segments = (*self._segments, new)
            fsync_dir(self.directory)
        self._note_dir()
        self._write_recovery_point()
        self._note_dir()
        return new

    def roll(self) -> None:
        """Roll now if the active segment holds anything (used by tests and tools)."""
        with self._locked():
            self._catch_up_writer()
            if self._segments[-1].valid_end:
                self._roll()

    def _maybe_flush(self) -> None:
        cfg = self.config
        if (
            self._unflushed_messages >= cfg.flush_messages
            or self.clock() - self._last_flush_ms >= cfg.flush_ms
        ):
            self._sync_locked()

    def flush(self) -> None:
        """fsync everything appended so far (called before committing offsets)."""
        with self._lock:
            if self.closed:
                return
            self._sync_locked()

    def _sync_locked(self) -> None:
        for seg in self._segments[-2:]:
            seg.sync()
        self._unflushed_messages = 0
        self._last_flush_ms = self.clock()

    def flush_if_due(self) -> None:
        """The background flusher's call: honour `flush.ms` for idle partitions."""
        if self._unflushed_messages and self.clock() - self._last_flush_ms >= self.config.flush_ms:
            self.flush()

    # --------------------------------------------------------------- lifecycle

    def _check_open(self) -> None:
        if self.closed:
            raise LogClosedError(f"partition {self.topic}-{self.partition}")

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            try:
                with self._locked():
                    self._catch_up_writer()
                    for seg in self._segments[-2:]:
                        seg.sync_all()
                    self._write_recovery_point()
            finally:
                self.closed = True
                for seg in self._segments:
                    seg.close()
                for _, seg in self._retired:
                    seg.close()
                self._retired = []
                self._flock.close()
                self._generation.close()

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.partition}, {len(self._segments)} segments)"
