"""Reading a partition: records from an offset, and the offset for a timestamp.

The part of `log.partition.Partition` that readers use. Readers take no lock: they
read up to the end of the last batch they have validated (`Segment.valid_end`), so
they never see a partial batch; a read that finds the offset outside what it knows
first takes in what other processes changed (`_refresh_for_read`, in
`log.partition_load`).

Two caches keep a consumer's steady polling cheap, both keyed by the `Segment`
object (not its base offset: a compaction swaps in a new file under the same name,
and a position in the old one means nothing):

- the read hint, (next offset, segment, byte position): where the last read
  stopped, so the next read from there skips the index lookup;
- the cut batch, (next offset, segment, batch position, header, records): the rest
  of a batch a read cut short at `max_records`, so the next read from exactly there
  does not read, CRC-check and decode the whole batch again. Its lists are never
  mutated (readers may share them).

A read steps (numbered as in `_read`):
  1. Refresh the view when the offset is outside it; refuse an offset outside the
     log, return [] at its end (read_committed: at the last stable offset).
  2. Serve the rest of the cut batch when the read starts exactly there.
  3. Scan whole batches from the hint (or the index entry at or before the offset),
     decoding each from the offset on, until `max_records` or `max_bytes`; a batch
     cut short becomes the cut batch. Control batches are skipped (both isolation
     levels, as Kafka's consumers do); read_committed also stops at the last stable
     offset and skips the batches of aborted transactions (`log.partition_txn`).
     When skipped batches end the read, the list returned is a `Fetched` naming the
     next offset to read, so a consumer moves past them.

`read_values` reads the same records, batches and skips as each batch's values left
as the batch holds them (`log.batch.BatchValues`, for a sink handed Arrow batches):
steps 1 and 3 without the cut batch, which a record read made.

An index entry that does not name the batch found at its position (damage) is
caught by the first batch the scan reads there: the index is rebuilt and the scan
starts again, so good data is never reported corrupt (`_batches_from`).
"""

from __future__ import annotations

import gc
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import chain
from typing import TYPE_CHECKING

from log.batch import (
    ATTR_CONTROL,
    ATTR_TXN_BITS,
    BatchHeader,
    BatchValues,
    decode_records,
    decode_values,
)
from log.errors import CorruptRecordError, OffsetOutOfRangeError
from log.fsutil import FileLock
from log.partition_txn import in_aborted
from log.records import Fetched, Record
from log.segment import ScannedBatch, Segment

if TYPE_CHECKING:
    from log.partition_txn import TxnView

__all__ = ["READ_COMMITTED", "READ_UNCOMMITTED", "PartitionReading"]

READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"
_NO_STOP = 1 << 62


def _cut_usable(cut: tuple, offset: int, seg: Segment, stop: int, ranges: dict | None) -> bool:
    """Whether the cut batch serves a read from `offset` in `seg`: a batch cut by a
    read of the other isolation level may lie past the LSO, or be aborted."""
    header = cut[3]
    return (
        cut[0] == offset
        and cut[1] is seg
        and header.next_offset <= stop
        and not (ranges is not None and header.attributes & ATTR_TXN_BITS)
    )


def _fetched(out: list[Record], skipped_to: int) -> list[Record]:
    """`out`, as a Fetched naming `skipped_to` when skipped batches ended the read."""
    if skipped_to < 0 or (out and skipped_to <= out[-1].offset + 1):
        return out
    fetched = Fetched(out)
    fetched.next_offset = skipped_to
    return fetched


def _aborted(buf: bytes, pos: int, header: BatchHeader, ranges: dict | None) -> bool:
    """Whether the transactional batch at `pos` is a control batch or belongs to an
    aborted transaction (`ranges`: producer id → aborted (first, last) ranges)."""
    return bool(header.attributes & ATTR_CONTROL) or in_aborted(buf, pos, header, ranges)


class PartitionReading:
    """Reads (a part of `Partition`; see the module docstring). The attributes below
    are set by `Partition.__init__`."""

    topic: str
    partition: int
    _lock: threading.RLock
    _flock: FileLock
    _segments: tuple[Segment, ...]
    _read_hint: tuple[int, Segment | None, int]
    _cut_batch: tuple[int, Segment, int, BatchHeader, list[Record]] | None
    # From log.partition_load and log.partition (annotations: they must not shadow).
    _refresh_for_read: Callable[[], None]
    _catch_up_writer: Callable[[], None]
    log_start_offset: int
    txn_view: Callable[[], TxnView | None]

    def read(
        self,
        offset: int,
        *,
        max_records: int | None = None,
        max_bytes: int = 1 << 20,
        isolation_level: str = READ_UNCOMMITTED,
    ) -> list[Record]:
        """Records from `offset` on: at least one batch when any is there, then
        whole batches while under `max_bytes`, cut to `max_records`.

        Raises OffsetOutOfRangeError before the log start or past the log end;
        at the log end it returns [] (nothing new yet).

        A read cut short inside a batch keeps the batch's remaining records, and the
        next read from exactly there starts with them instead of reading, checking
        and decoding the batch again (a 20 MB batch polled 10,000 records at a time
        was decoded twice over).

        The cyclic garbage collector is paused for the call: a read allocates
        thousands of tuples that hold only bytes, ints and strings (no cycles can
        form), and letting the collector walk them every 700 allocations cost a large
        share of the read time (docs/performance.md).

        read_committed (`isolation_level`) returns only committed records, and
        nothing at or past the last stable offset (see `log.partition_txn`)."""
        stop, ranges = self._read_bounds(offset, isolation_level)
        if not gc.isenabled():
            return self._read(offset, max_records, max_bytes, stop, ranges)
        gc.disable()
        try:
            return self._read(offset, max_records, max_bytes, stop, ranges)
        finally:
            gc.enable()

    def _read_bounds(self, offset: int, isolation_level: str) -> tuple[int, dict | None]:
        """Where a read from `offset` stops, and the aborted transactions' ranges
        (None: read everything): read_uncommitted reads to the end."""
        if isolation_level == READ_UNCOMMITTED:
            return _NO_STOP, None
        if isolation_level != READ_COMMITTED:
            raise ValueError(f"unknown isolation level {isolation_level!r}")
        # The end is taken before the marker file is looked at, and the view
        # stops where its walk did: a batch appended meanwhile (maybe the
        # partition's first transactional one) lies past `stop`.
        self._refresh_for_read()
        stop, ranges = self._segments[-1].next_offset, None
        view = self.txn_view()
        if view is not None:
            stop = view.last_stable_offset(view.end_offset)
            ranges = view.aborted_from(offset)
        return stop, ranges

    def read_values(
        self,
        offset: int,
        *,
        max_records: int | None = None,
        max_bytes: int = 1 << 20,
        isolation_level: str = READ_UNCOMMITTED,
    ) -> tuple[list[BatchValues], int]:
        """What `read` returns, as each batch's values (`BatchValues`), with the
        offset the next read starts at (past skipped batches too): the same records,
        batches and skips, but no Record per record. A batch cut at `max_records`
        is decoded again by the next read (decoding keeps no per-record work)."""
        stop, ranges = self._read_bounds(offset, isolation_level)
        # Step 1
        segments = self._segments
        if offset >= segments[-1].next_offset or offset < segments[0].base_offset:
            self._refresh_for_read()
            segments = self._segments
        start, end = self.log_start_offset, segments[-1].next_offset
        if offset == end or (offset >= stop and start <= offset <= end):
            return [], offset
        if offset < start or offset > end:
            raise OffsetOutOfRangeError(self.topic, self.partition, offset, start, end)
        # Step 3 (no step 2: cut batches are the record reads')
        room = max_records if max_records is not None else 1 << 62
        out: list[BatchValues] = []
        taken_bytes = 0
        next_offset = offset
        for seg, file_pos, buf, pos, header in self._scan(segments, offset):
            if header.next_offset <= next_offset:
                continue
            if header.base_offset >= stop:
                break
            if header.attributes & ATTR_TXN_BITS and _aborted(buf, pos, header, ranges):
                next_offset = header.next_offset
                self._read_hint = (next_offset, seg, file_pos + header.size)
                continue
            if out and taken_bytes + header.size > max_bytes:
                break
            values = decode_values(buf, pos, header, min_offset=next_offset)
            taken_bytes += header.size
            if values.count > room:
                values = values.upto(room)
            if values.count:
                out.append(values)
                room -= values.count
                next_offset = values.last_offset + 1
            if values.hi == len(values.offsets):
                next_offset = max(next_offset, header.next_offset)
                self._read_hint = (next_offset, seg, file_pos + header.size)
            if room <= 0:
                break
        return out, next_offset

    def _scan(self, segments: tuple[Segment, ...], offset: int) -> Iterator[tuple]:
        """(segment, file position, buffer, position, header) of each batch from the
        one holding `offset` on, across segments, from the read hint when it is there."""
        i = bisect_right([s.base_offset for s in segments], offset) - 1
        hint_offset, hint_segment, hint_pos = self._read_hint
        position = hint_pos if (hint_offset == offset and hint_segment is segments[i]) else -1
        for seg in segments[i:]:
            if offset >= seg.next_offset:
                position = -1
                continue
            batches = self._batches_from(seg, offset) if position < 0 else seg.batches(position)
            position = -1
            for buf, pos, file_pos, header in batches:
                yield seg, file_pos, buf, pos, header

    def _read(
        self, offset: int, max_records: int | None, max_bytes: int, stop: int, ranges: dict | None
    ) -> list[Record]:
        # Step 1: a view that holds the offset, which must be in the log.
        segments = self._segments
        if offset >= segments[-1].next_offset or offset < segments[0].base_offset:
            self._refresh_for_read()
            segments = self._segments
        start, end = self.log_start_offset, segments[-1].next_offset
        if offset == end or (offset >= stop and start <= offset <= end):
            return []
        if offset < start or offset > end:
            raise OffsetOutOfRangeError(self.topic, self.partition, offset, start, end)
        limit = max_records if max_records is not None else 1 << 62
        out: list[Record] = []
        skipped_to = -1
        taken_bytes = 0
        i = bisect_right([s.base_offset for s in segments], offset) - 1
        # Step 2: the rest of the batch the previous read cut short: no second read.
        cut = self._cut_batch
        if cut is not None and _cut_usable(cut, offset, segments[i], stop, ranges):
            _, seg, file_pos, header, rest = cut
            if len(rest) > limit:
                self._cut_batch = (rest[limit].offset, seg, file_pos, header, rest[limit:])
                return rest[:limit]
            self._cut_batch = None
            out = list(rest)
            taken_bytes = header.size
            offset = header.next_offset
            self._read_hint = (offset, seg, file_pos + header.size)
            if len(out) >= limit:
                return out
        # Step 3: whole batches from the hint (or the index), the last one maybe cut.
        hint_offset, hint_segment, hint_pos = self._read_hint
        position = hint_pos if (hint_offset == offset and hint_segment is segments[i]) else -1
        while i < len(segments) and len(out) < limit:
            seg = segments[i]
            if offset >= seg.next_offset:
                i += 1
                position = -1
                continue
            batches = self._batches_from(seg, offset) if position < 0 else seg.batches(position)
            for buf, pos, file_pos, header in batches:
                if header.next_offset <= offset:
                    continue
                if header.base_offset >= stop:
                    limit = 0
                    break
                if header.attributes & ATTR_TXN_BITS and _aborted(buf, pos, header, ranges):
                    offset = header.next_offset
                    self._read_hint = (offset, seg, file_pos + header.size)
                    skipped_to = offset
                    continue
                if out and taken_bytes + header.size > max_bytes:
                    limit = 0
                    break
                records = decode_records(
                    buf, pos, header, self.topic, self.partition, min_offset=offset
                )
                taken_bytes += header.size
                room = limit - len(out)
                if len(records) > room:
                    rest = records[room:]
                    del records[room:]
                    out.extend(records)
                    offset = rest[0].offset
                    self._read_hint = (offset, seg, file_pos)
                    self._cut_batch = (offset, seg, file_pos, header, rest)
                    return out
                out.extend(records)
                offset = header.next_offset
                self._read_hint = (offset, seg, file_pos + header.size)
                if len(out) >= limit:
                    break
            else:
                i += 1
                position = -1
                continue
            break
        return _fetched(out, skipped_to)

    def _batches_from(self, seg: Segment, offset: int) -> Iterator[ScannedBatch]:
        """`seg`'s batches from its index entry at or before `offset`.

        The entry is checked against the first batch read there, at no extra I/O:
        when that is not the batch the entry names (the index is damaged, say an
        entry points into the middle of a batch), the index is rebuilt and the
        scan starts again, so good data is never reported corrupt. When it is the
        named batch but fails its CRC, the data is damaged and the error stands."""
        entry, position = seg.index.lookup(offset)
        batches = seg.batches(position)
        if position == 0:
            return batches
        try:
            first = next(batches, None)
        except CorruptRecordError:
            if seg.batch_named(entry, position) is not None:
                raise
            first = None
        if first is not None and first.header.base_offset == entry:
            return chain((first,), batches)
        self._rebuild_index(seg)
        return seg.batches(seg.index.lookup(offset)[1])

    def _rebuild_index(self, seg: Segment) -> None:
        """Rebuild `seg`'s indexes from its data: on disk when the partition lock is
        free to take at once (a reader never waits for a writer), else in memory."""
        with self._lock:
            if not self._flock.try_acquire():
                seg.rebuild_indexes(closed=seg is not self._segments[-1], write=False)
                return
            try:
                self._catch_up_writer()
                segments = self._segments
                seg.rebuild_indexes(closed=seg is not segments[-1], write=seg in segments)
            finally:
                self._flock.release()

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """The first offset whose record timestamp is ≥ `timestamp`, or None."""
        self._refresh_for_read()
        for seg in self._segments:
            if seg.max_timestamp < timestamp:
                continue
            for buf, pos, _fp, header in self._batches_from(seg, seg.time_index.lookup(timestamp)):
                if header.max_timestamp < timestamp:
                    continue
                for record in decode_records(buf, pos, header, self.topic, self.partition):
                    if record.timestamp >= timestamp:
                        return record.offset
        return None
