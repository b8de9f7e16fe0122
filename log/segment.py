"""A segment: one data file of whole batches and its two sparse indexes.

Files are named by the segment's base offset in 20 digits: `00000000000000000042.log`,
`.index`, `.timeindex`. The data file is a plain concatenation of batches (see
`log.batch`); nothing else is in it, so any prefix that ends on a batch boundary is
a valid segment.

Recovery (`recover`) scans from a trusted position, checks every batch's header
(magic, length, count, offsets following on) and CRC, and truncates the file at the
first batch that fails: a torn write or garbage after a crash. It returns how many
bytes it cut. Index entries that point past the cut, out of order, or at something
that is not the batch they name are dropped and the index is rebuilt by the same scan.

Offsets: batches written by appends are contiguous: a segment's first batch starts
at its base offset and each next one where the previous ended. Only compaction
leaves gaps, and only below the offset up to which the partition was ever compacted.
So a batch may follow a gap only when its last offset is below the segment's
`gaps_below` (the partition sets it: the segment's base for one it made itself, its
compaction horizon for the last segment on open, unbounded for other closed ones);
anywhere else a gap means a flipped bit in a base offset (a field the CRC leaves
out). Offsets must always grow and stay below the next segment's base.

Closed segments below the recovery point are not scanned on open: `load_closed`
sanity-checks their indexes (the checks of `log.index`, plus: the last offset entry
names a real batch, and every time entry but the last sits on an offset entry) and
rebuilds them from the data when a check fails. An earlier entry that points into
the middle of a batch passes those cheap checks; a read that starts at such an entry
finds no batch there, and the reader rebuilds the index (`rebuild_indexes`) and
starts again instead of failing on good data.

Threads and processes: only the holder of the partition lock appends, truncates or
recovers. Readers use `pread` on their own view of `valid_end` (the end of the last
complete batch they know of) and never see a partial batch; a reader in another
process learns of new batches with `catch_up`, which validates before it trusts.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from log.batch import (
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    LENGTH_FIELD_END,
    MAGIC,
    MAGIC_TXN,
    PRODUCER_SIZE,
    BatchHeader,
    parse_header,
    verify_crc,
)
from log.errors import CorruptRecordError
from log.index import OffsetIndex, TimeIndex

__all__ = ["GAPS_ANYWHERE", "ScannedBatch", "Segment", "segment_name"]

_READ_CHUNK = 1 << 20
GAPS_ANYWHERE = 1 << 63  # `gaps_below` of a segment whose gaps nothing bounds
_MIN_BATCH_LENGTH = HEADER_SIZE - LENGTH_FIELD_END


class ScannedBatch(NamedTuple):
    """One batch a scan found: where it is in the buffer read and in the file."""

    buffer: bytes
    position: int  # of the batch in `buffer`
    file_position: int  # of the batch in the data file
    header: BatchHeader


# Builds a ScannedBatch without the Python-level `__new__` a NamedTuple call runs
# (half the cost, paid once per batch scanned; small batches feel it).
_new_tuple = tuple.__new__


def segment_name(base_offset: int, suffix: str = ".log") -> str:
    return f"{base_offset:020d}{suffix}"


class _Invalid(Exception):
    """A batch that does not check out at a position (internal to scanning)."""

    def __init__(self, position: int, reason: str, *, incomplete: bool = False) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason
        self.incomplete = incomplete


class Segment:
    """Owns `<base>.log`, `<base>.index` and `<base>.timeindex`."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        suffix: str = ".log",
        create: bool = False,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.path = directory / segment_name(base_offset, suffix)
        self.index = OffsetIndex(directory / segment_name(base_offset, ".index"), base_offset)
        self.time_index = TimeIndex(
            directory / segment_name(base_offset, ".timeindex"), base_offset
        )
        self.index_interval_bytes = index_interval_bytes
        if create:  # a new segment: its (empty) indexes exist before its data file
            self.index.create()
            self.time_index.create()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        # A batch may follow a gap in the offsets only when its last offset is below
        # this (see the module docstring); the partition narrows it.
        self.gaps_below = GAPS_ANYWHERE
        # Offsets at or past this belong to the next segment (None: no next one yet).
        self.offset_limit: int | None = None
        # The end of the last complete, valid batch this object knows of: readers
        # never read past it. Not the file size: a torn tail or another process's
        # batch not yet taken in (`catch_up`) may lie beyond it.
        self.valid_end = 0
        self.next_offset = base_offset
        self.first_timestamp = -1  # first batch's first timestamp (for time-based roll)
        self.max_timestamp = -1
        self.unsynced_bytes = 0
        self._bytes_since_index = 0

    # ------------------------------------------------------------------ reading

    def pread(self, length: int, position: int) -> bytes:
        return os.pread(self._fd, length, position)

    def file_size(self) -> int:
        return os.fstat(self._fd).st_size

    def _scan(
        self, start: int, limit: int, *, expected_next: int | None, check_crc: bool = True
    ) -> Iterator[ScannedBatch]:
        """Yield a ScannedBatch (buffer, position in buffer, file position, header)
        for each batch in [start, limit). Raises _Invalid at the first batch that does
        not check out."""
        # Per batch, not per record, but a scan of small batches feels every lookup:
        # the functions it calls each time are locals.
        parse, check, crc_ok = parse_header, self._check_header, verify_crc
        new, scanned = _new_tuple, ScannedBatch
        file_pos = start
        while file_pos < limit:
            want = min(max(_READ_CHUNK, HEADER_SIZE), limit - file_pos)
            buf = os.pread(self._fd, want, file_pos)
            pos = 0
            progressed = False
            while pos + HEADER_SIZE <= len(buf):
                header = parse(buf, pos)
                check(header, file_pos + pos, expected_next)
                size = header.size
                end = pos + size
                if file_pos + end > limit:
                    raise _Invalid(
                        file_pos + pos, "batch runs past the end of the data", incomplete=True
                    )
                if end > len(buf):
                    if pos == 0:  # one batch larger than the chunk: read it whole
                        buf = os.pread(self._fd, size, file_pos)
                        if len(buf) < size:
                            raise _Invalid(file_pos, "short read", incomplete=True)
                    else:
                        break
                if check_crc and not crc_ok(buf, pos, header):
                    raise _Invalid(file_pos + pos, "CRC mismatch")
                yield new(scanned, (buf, pos, file_pos + pos, header))
                expected_next = header.next_offset
                pos = end
                progressed = True
            if not progressed:  # fewer than HEADER_SIZE bytes left before the limit
                raise _Invalid(file_pos, "partial batch header", incomplete=True)
            file_pos += pos

    def _check_header(self, header: BatchHeader, position: int, expected_next: int | None) -> None:
        if header.magic != MAGIC:
            # A transactional batch: magic 2 with its producer section (log.batch).
            if header.magic != MAGIC_TXN:
                raise _Invalid(position, f"unknown format version {header.magic}")
            if not header.attributes & ATTR_TRANSACTIONAL or (
                header.batch_length < _MIN_BATCH_LENGTH + PRODUCER_SIZE
            ):
                raise _Invalid(position, "format version 2 without a producer section")
        elif header.attributes & ATTR_TRANSACTIONAL:
            raise _Invalid(position, "a transactional batch of format version 1")
        if header.batch_length < _MIN_BATCH_LENGTH or header.record_count < 1:
            raise _Invalid(position, "impossible batch length or record count")
        if header.last_offset_delta < header.record_count - 1:
            raise _Invalid(position, "last offset delta smaller than the record count")
        if expected_next is not None:
            if header.base_offset < expected_next:
                raise _Invalid(
                    position,
                    f"offset {header.base_offset} goes backwards (expected {expected_next})",
                )
            if header.base_offset != expected_next and header.last_offset >= self.gaps_below:
                raise _Invalid(
                    position, f"offset {header.base_offset} leaves a gap after {expected_next}"
                )
        if header.base_offset < self.base_offset:
            raise _Invalid(position, f"offset {header.base_offset} is below the segment base")
        if self.offset_limit is not None and header.last_offset >= self.offset_limit:
            raise _Invalid(position, f"offset {header.last_offset} belongs to the next segment")

    def batches(self, start: int, limit: int | None = None) -> Iterator[ScannedBatch]:
        """Committed batches from byte `start` up to this view's `valid_end`; a batch
        that fails its checks raises CorruptRecordError with its position."""
        end = self.valid_end if limit is None else limit
        try:
            yield from self._scan(start, end, expected_next=None)
        except _Invalid as exc:
            raise CorruptRecordError(str(self.path), exc.position, exc.reason) from None

    # ----------------------------------------------------------------- recovery

    def recover(self, *, recovery_point: int | None = None) -> int:
        """Load the indexes, validate the data from a trusted position, truncate what
        fails, and return the number of bytes cut. Called only under the partition lock.

        The trusted position is the last index entry that names a real batch or, with
        `recovery_point`, the entry at or before it (what follows the recovery point
        was never fsynced, so a crash may have damaged it anywhere). Indexes that fail
        their sanity checks are dropped and rebuilt by the same scan, from the start."""
        self.index.load()
        self.time_index.load()
        file_size = self.file_size()
        start = self._trusted_start(file_size)
        if recovery_point is not None and start > 0:
            offset, position = self.index.lookup(recovery_point)
            if position < start:
                named = position > 0 and self.batch_named(offset, position) is not None
                start = self._restart_indexes_at(position if named else 0)
        truncated = self._scan_and_cut(start, file_size, writer=True)
        if self.valid_end > 0 and self.first_timestamp < 0:
            self.first_timestamp = parse_header(os.pread(self._fd, HEADER_SIZE, 0)).first_timestamp
        return truncated

    def batch_named(self, offset: int, position: int) -> BatchHeader | None:
        """The header of the batch an index entry (offset, position) names, or None
        when what is there is not that batch."""
        raw = os.pread(self._fd, HEADER_SIZE, position)
        if len(raw) < HEADER_SIZE:
            return None
        header = parse_header(raw)
        if header.magic not in (MAGIC, MAGIC_TXN) or header.base_offset != offset:
            return None
        return header

    def _time_entries_match(self, *, closed: bool) -> bool:
        """Every time entry sits on an offset entry (they are appended together),
        except the final one a roll (or the cleaner) adds to a closed segment."""
        rel = self.time_index.rel_offsets
        if closed:
            rel = rel[:-1]
        return not rel or set(rel) <= set(self.index.rel_offsets)

    def _trusted_start(self, file_size: int) -> int:
        """The last index entry that names a real batch, after dropping entries past
        the data (written just before a batch the crash lost); the indexes are
        rebuilt from 0 when they fail a sanity check."""
        idx, tidx = self.index, self.time_index
        if idx.check() is not None or tidx.check() is not None:
            return self._restart_indexes_at(0)
        while idx.positions and idx.positions[-1] + HEADER_SIZE > file_size:
            idx.drop_last()
        if not idx.positions:
            return self._restart_indexes_at(0)
        offset, position = idx.last()
        tidx.truncate_to_offset(offset + 1)
        header = self.batch_named(offset, position)
        if (
            header is None
            or not self._time_entries_match(closed=False)
            # The trusted batch's time entry is there (or an earlier one covers it).
            or not tidx.timestamps
            or tidx.timestamps[-1] < header.max_timestamp
        ):
            return self._restart_indexes_at(0)
        self._bytes_since_index = 0
        self.valid_end = position
        self.next_offset = header.base_offset
        self.max_timestamp = tidx.timestamps[-1]
        return position

    def _restart_indexes_at(self, position: int) -> int:
        """Keep the index entries up to the batch at `position` (0: none) and make it
        where the next scan starts."""
        self._bytes_since_index = 0
        if position == 0:
            self.index.clear()
            self.time_index.clear()
            self.valid_end, self.next_offset, self.max_timestamp = 0, self.base_offset, -1
            self.first_timestamp = -1
            return 0
        self.index.truncate_to_position(position + 1)
        header = parse_header(os.pread(self._fd, HEADER_SIZE, position))
        # The entry at `position` keeps its time entry: the scan re-derives only
        # the entries after it.
        self.time_index.truncate_to_offset(header.base_offset + 1)
        self.valid_end = position
        self.next_offset = header.base_offset
        self.max_timestamp = self.time_index.timestamps[-1] if self.time_index.timestamps else -1
        return position

    def _scan_and_cut(self, start: int, file_size: int, *, writer: bool) -> int:
        # From the segment start, `next_offset` is the base offset: a first batch
        # above it follows a gap like any other.
        expected = self.next_offset
        position = start
        try:
            for _buf, _pos, file_pos, header in self._scan(
                start, file_size, expected_next=expected
            ):
                self._account(header, file_pos, index=writer)
                position = file_pos + header.size
        except _Invalid as exc:
            position = exc.position
            if not writer:
                self.valid_end = position
                return 0
            cut = file_size - position
            os.ftruncate(self._fd, position)
            os.fsync(self._fd)
            self.index.truncate_to_position(position)
            self.time_index.truncate_to_offset(self.next_offset)
            self.valid_end = position
            return cut
        self.valid_end = position
        return 0

    def _account(self, header: BatchHeader, position: int, *, index: bool) -> None:
        """Update this view's state (and indexes, for the writer) for one batch."""
        if index and position > 0 and self._bytes_since_index >= self.index_interval_bytes:
            self.index.append(header.base_offset, position)
            if header.max_timestamp > self.max_timestamp or not self.time_index.timestamps:
                self.time_index.append(
                    max(header.max_timestamp, self.max_timestamp), header.base_offset
                )
            self._bytes_since_index = 0
        self._bytes_since_index += header.size
        if self.first_timestamp < 0:
            self.first_timestamp = header.first_timestamp
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
        self.next_offset = header.next_offset
        self.valid_end = position + header.size

    def catch_up(self, *, writer: bool) -> int:
        """Take in batches another process appended since this view's `valid_end`.
        A writer (holding the lock, so no one else is writing) cuts a torn tail;
        a reader stops before it. Returns bytes cut."""
        file_size = self.file_size()
        if file_size == self.valid_end:
            return 0
        if writer:
            # The other writer's index entries past our view are dropped and
            # re-derived by the validating scan below.
            self.index.load()
            self.time_index.load()
            self.index.truncate_to_position(self.valid_end)
            self.time_index.truncate_to_offset(self.next_offset)
        return self._scan_and_cut(self.valid_end, file_size, writer=writer)

    def same_file(self) -> bool:
        """False once the name points at another file (a compaction swapped it)."""
        try:
            return os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
        except FileNotFoundError:
            return False

    def load_for_reading(self) -> None:
        """A reader's view of a segment another process may be writing: start at the
        last index entry that names a real batch and scan forward. Changes no file;
        indexes that fail their sanity checks are rebuilt in memory."""
        self.index.load(repair=False)
        self.time_index.load(repair=False)
        start = 0
        trusted = self.index.check() is None and self.time_index.check() is None
        if trusted and self.index.positions:
            offset, position = self.index.last()
            header = self.batch_named(offset, position)
            if header is not None:
                start = position
                self.next_offset = header.base_offset
                self.max_timestamp = (
                    self.time_index.timestamps[-1] if self.time_index.timestamps else -1
                )
        self.valid_end = start
        self._scan_and_cut(start, self.file_size(), writer=False)
        if not trusted:
            self.rebuild_indexes(closed=False, write=False)
        if self.valid_end > 0 and self.first_timestamp < 0:
            self.first_timestamp = parse_header(os.pread(self._fd, HEADER_SIZE, 0)).first_timestamp

    # ------------------------------------------------------ closed segments

    def load_closed(self, next_offset: int, *, write: bool) -> str | None:
        """Open a closed segment (ending before `next_offset`, the next segment's
        base) without scanning its data: load its indexes and sanity-check them, and
        rebuild them when a check fails, on disk with `write` (the lock holder) or
        in memory (a reader). Returns the check that failed, or None."""
        self.index.load(repair=False)
        self.time_index.load(repair=False)
        self.valid_end = self.file_size()
        self.next_offset = self.offset_limit = next_offset
        problem = self.index_problem()
        if problem is not None:
            self.rebuild_indexes(closed=True, write=write)
        if self.time_index.timestamps:
            # A roll appends a final entry, so the last one covers the whole segment.
            self.max_timestamp = self.time_index.timestamps[-1]
        else:
            self.max_timestamp = -1
            try:  # no entry: a small segment; a damaged batch is for its reader to report
                for _buf, _pos, _fp, header in self._scan(0, self.valid_end, expected_next=None):
                    self.max_timestamp = max(self.max_timestamp, header.max_timestamp)
            except _Invalid:
                pass
        return problem

    def index_problem(self) -> str | None:
        """Kafka's sanity check for a closed segment's indexes, plus a look at the
        batch the last offset entry names: cheap, done once on load."""
        idx, tidx = self.index, self.time_index
        max_rel = self.next_offset - self.base_offset - 1
        problem = idx.check(
            max_rel=max_rel, max_position=self.valid_end - HEADER_SIZE
        ) or tidx.check(max_rel=max_rel)
        if problem is not None:
            return problem
        if idx.positions:
            header = self.batch_named(*idx.last())
            if header is None:
                return f"{idx.path.name}: the last entry does not name a batch"
            if not tidx.timestamps or tidx.timestamps[-1] < header.max_timestamp:
                return f"{tidx.path.name}: entries missing"
        if not self._time_entries_match(closed=True):
            return f"{tidx.path.name}: entries that are not on offset entries"
        return None

    def rebuild_indexes(self, *, closed: bool, write: bool) -> None:
        """Derive both indexes from the batches in [0, valid_end) again, by the rule
        `append` follows; a closed segment also gets the final time entry of its
        roll. A damaged batch ends the entries (a read that meets it reports it), so
        every entry names a batch that checks out. `write` replaces the files (only
        the lock holder may); otherwise only this process's view changes."""
        base = self.base_offset
        rel, positions, stamps, time_rel = array("I"), array("I"), array("q"), array("I")
        since = 0
        max_ts = -1
        last_base = base
        try:
            for _buf, _pos, position, header in self._scan(0, self.valid_end, expected_next=None):
                if position > 0 and since >= self.index_interval_bytes:
                    rel.append(header.base_offset - base)
                    positions.append(position)
                    stamp = max(header.max_timestamp, max_ts)
                    if not stamps or stamp > stamps[-1]:
                        stamps.append(stamp)
                        time_rel.append(header.base_offset - base)
                    since = 0
                since += header.size
                max_ts = max(max_ts, header.max_timestamp)
                last_base = header.base_offset
        except _Invalid:
            pass
        # The final entry of a roll, appended under TimeIndex.append's rule.
        if (
            closed
            and max_ts >= 0
            and (not stamps or (max_ts > stamps[-1] and last_base - base > time_rel[-1]))
        ):
            stamps.append(max_ts)
            time_rel.append(last_base - base)
        self.index.rel_offsets, self.index.positions = rel, positions
        self.time_index.timestamps, self.time_index.rel_offsets = stamps, time_rel
        self.index.problem = self.time_index.problem = None
        self._bytes_since_index = since
        if write:
            self.index.rewrite()
            self.time_index.rewrite()

    def last_batch_base(self) -> int:
        """Base offset of the last batch (a scan from the last index entry)."""
        base = self.index.last()[0]
        for _buf, _pos, _fp, header in self.batches(self.index.last()[1]):
            base = header.base_offset
        return base

    # ------------------------------------------------------------------ writing

    def append(self, data: bytes | bytearray, header: BatchHeader) -> int:
        """Write one encoded batch at the end; return its position. Under the lock."""
        position = self.valid_end
        if position > 0 and self._bytes_since_index >= self.index_interval_bytes:
            self.index.append(header.base_offset, position)
            self.time_index.append(
                max(header.max_timestamp, self.max_timestamp), header.base_offset
            )
            self._bytes_since_index = 0
        written = os.pwrite(self._fd, data, position)
        if written != len(data):  # a short write on a regular file: disk full
            os.ftruncate(self._fd, position)
            raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes")
        self._bytes_since_index += len(data)
        if self.first_timestamp < 0:
            self.first_timestamp = header.first_timestamp
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
        self.next_offset = header.next_offset
        self.unsynced_bytes += len(data)
        self.valid_end = position + len(data)  # last: readers trust `valid_end`
        return position

    def sync(self) -> None:
        """fsync the data file (indexes are derived, they are synced on roll/close)."""
        if self.unsynced_bytes:
            os.fsync(self._fd)
            self.unsynced_bytes = 0

    def sync_all(self) -> None:
        os.fsync(self._fd)
        self.unsynced_bytes = 0
        self.index.sync()
        self.time_index.sync()

    # ---------------------------------------------------------------- lifecycle

    def close(self) -> None:
        self.index.close()
        self.time_index.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete_files(self) -> None:
        """Rename to `.deleted` first so that an interrupted delete is finished on
        the next open, then unlink."""
        txn_index = self.path.with_name(segment_name(self.base_offset, ".txnindex"))
        for path in (self.path, self.index.path, self.time_index.path, txn_index):
            try:
                doomed = path.with_name(path.name + ".deleted")
                os.replace(path, doomed)
                os.unlink(doomed)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return (
            f"Segment({self.path.name}, valid_end={self.valid_end}, next_offset={self.next_offset})"
        )
