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

Threads and processes: only the holder of the partition lock appends, truncates or
recovers. Readers use `pread` on their own view of `size` (the end of the last
complete batch they know of) and never see a partial batch; a reader in another
process learns of new batches with `catch_up`, which validates before it trusts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from log.batch import HEADER_SIZE, LENGTH_FIELD_END, MAGIC, BatchHeader, parse_header, verify_crc
from log.errors import CorruptRecordError
from log.index import OffsetIndex, TimeIndex

__all__ = ["Segment", "segment_name"]

_READ_CHUNK = 1 << 20
_MIN_BATCH_LENGTH = HEADER_SIZE - LENGTH_FIELD_END


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
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.path = directory / segment_name(base_offset, suffix)
        self.index = OffsetIndex(directory / segment_name(base_offset, ".index"), base_offset)
        self.time_index = TimeIndex(
            directory / segment_name(base_offset, ".timeindex"), base_offset
        )
        self.index_interval_bytes = index_interval_bytes
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = 0  # end of the last complete, valid batch this object knows of
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
    ) -> Iterator[tuple[bytes, int, int, BatchHeader]]:
        """Yield (buffer, position in buffer, file position, header) for each batch
        in [start, limit). Raises _Invalid at the first batch that does not check out."""
        file_pos = start
        while file_pos < limit:
            want = min(max(_READ_CHUNK, HEADER_SIZE), limit - file_pos)
            buf = os.pread(self._fd, want, file_pos)
            pos = 0
            progressed = False
            while pos + HEADER_SIZE <= len(buf):
                header = parse_header(buf, pos)
                self._check_header(header, file_pos + pos, expected_next)
                end = pos + header.size
                if file_pos + end > limit:
                    raise _Invalid(
                        file_pos + pos, "batch runs past the end of the data", incomplete=True
                    )
                if end > len(buf):
                    if pos == 0:  # one batch larger than the chunk: read it whole
                        buf = os.pread(self._fd, header.size, file_pos)
                        if len(buf) < header.size:
                            raise _Invalid(file_pos, "short read", incomplete=True)
                    else:
                        break
                if check_crc and not verify_crc(buf, pos, header):
                    raise _Invalid(file_pos + pos, "CRC mismatch")
                yield buf, pos, file_pos + pos, header
                expected_next = header.next_offset
                pos += header.size
                progressed = True
            if not progressed:  # fewer than HEADER_SIZE bytes left before the limit
                raise _Invalid(file_pos, "partial batch header", incomplete=True)
            file_pos += pos

    def _check_header(self, header: BatchHeader, position: int, expected_next: int | None) -> None:
        if header.magic != MAGIC:
            raise _Invalid(position, f"unknown format version {header.magic}")
        if header.batch_length < _MIN_BATCH_LENGTH or header.record_count < 1:
            raise _Invalid(position, "impossible batch length or record count")
        if header.last_offset_delta < header.record_count - 1:
            raise _Invalid(position, "last offset delta smaller than the record count")
        if expected_next is not None and header.base_offset < expected_next:
            raise _Invalid(
                position,
                f"offset {header.base_offset} goes backwards (expected {expected_next} or more)",
            )
        if header.base_offset < self.base_offset:
            raise _Invalid(position, f"offset {header.base_offset} is below the segment base")

    def batches(
        self, start: int, limit: int | None = None
    ) -> Iterator[tuple[bytes, int, int, BatchHeader]]:
        """Committed batches from byte `start` up to this view's `size`; a batch
        that fails its checks raises CorruptRecordError with its position."""
        end = self.size if limit is None else limit
        try:
            yield from self._scan(start, end, expected_next=None)
        except _Invalid as exc:
            raise CorruptRecordError(str(self.path), exc.position, exc.reason) from None

    def position_for(self, offset: int) -> int:
        """Byte position of a batch at or before the one holding `offset`."""
        return self.index.lookup(offset)[1]

    # ----------------------------------------------------------------- recovery

    def recover(self, *, from_position: int | None = None) -> int:
        """Load the indexes, validate the data from a trusted position (the last
        index entry by default, or `from_position`), truncate what fails, and
        return the number of bytes cut. Called only under the partition lock."""
        self.index.load()
        self.time_index.load()
        file_size = self.file_size()
        start = self._trusted_start(file_size)
        if from_position is not None and from_position < start:
            start = self._restart_indexes_at(from_position)
        truncated = self._scan_and_cut(start, file_size, writer=True)
        if self.size > 0 and self.first_timestamp < 0:
            self.first_timestamp = parse_header(os.pread(self._fd, HEADER_SIZE, 0)).first_timestamp
        return truncated

    def _trusted_start(self, file_size: int) -> int:
        """The last index entry that names a real batch, after dropping bad ones;
        the whole index is rebuilt from 0 when it does not check out."""
        idx = self.index
        ok = all(
            idx.positions[i] < idx.positions[i + 1] and idx.rel_offsets[i] < idx.rel_offsets[i + 1]
            for i in range(len(idx.positions) - 1)
        )
        while ok and idx.positions and idx.positions[-1] + HEADER_SIZE > file_size:
            idx.drop_last()
        if ok and idx.positions:
            offset, position = idx.last()
            try:
                header = parse_header(os.pread(self._fd, HEADER_SIZE, position))
                ok = header.magic == MAGIC and header.base_offset <= offset <= header.last_offset
            except Exception:
                ok = False
        if not ok:
            return self._restart_indexes_at(0)
        offset, position = idx.last()
        self._bytes_since_index = 0
        # Time entries after the trusted batch are re-derived by the scan.
        self.time_index.truncate_to_offset(offset + 1)
        self.size = position
        if position == 0:
            self.next_offset = self.base_offset
        else:
            header = parse_header(os.pread(self._fd, HEADER_SIZE, position))
            self.next_offset = header.base_offset
        self.max_timestamp = self.time_index.timestamps[-1] if self.time_index.timestamps else -1
        return position

    def _restart_indexes_at(self, position: int) -> int:
        if position == 0:
            self.index.clear()
            self.time_index.clear()
            self.size, self.next_offset, self.max_timestamp = 0, self.base_offset, -1
            self.first_timestamp = -1
            self._bytes_since_index = 0
            return 0
        self.index.truncate_to_position(position + 1)
        header = parse_header(os.pread(self._fd, HEADER_SIZE, position))
        self.time_index.truncate_to_offset(header.base_offset)
        self.size = position
        self.next_offset = header.base_offset
        self.max_timestamp = self.time_index.timestamps[-1] if self.time_index.timestamps else -1
        return position

    def _scan_and_cut(self, start: int, file_size: int, *, writer: bool) -> int:
        expected = self.next_offset if start > 0 else None
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
                self.size = position
                return 0
            cut = file_size - position
            os.ftruncate(self._fd, position)
            os.fsync(self._fd)
            self.index.truncate_to_position(position)
            self.time_index.truncate_to_offset(self.next_offset)
            self.size = position
            return cut
        self.size = position
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
        self.size = position + header.size

    def catch_up(self, *, writer: bool) -> int:
        """Take in batches another process appended since this view's `size`.
        A writer (holding the lock, so no one else is writing) cuts a torn tail;
        a reader stops before it. Returns bytes cut."""
        file_size = self.file_size()
        if file_size == self.size:
            return 0
        if writer:
            # The other writer's index entries past our view are dropped and
            # re-derived by the validating scan below.
            self.index.load()
            self.time_index.load()
            self.index.truncate_to_position(self.size)
            self.time_index.truncate_to_offset(self.next_offset)
        return self._scan_and_cut(self.size, file_size, writer=writer)

    def same_file(self) -> bool:
        """False once the name points at another file (a compaction swapped it)."""
        try:
            return os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
        except FileNotFoundError:
            return False

    def load_for_reading(self) -> None:
        """A reader's view of a segment another process may be writing: start at the
        last index entry that names a real batch and scan forward. Changes no file."""
        self.index.load(repair=False)
        self.time_index.load(repair=False)
        start = 0
        if self.index.positions:
            offset, position = self.index.last()
            raw = os.pread(self._fd, HEADER_SIZE, position)
            if len(raw) == HEADER_SIZE:
                header = parse_header(raw)
                if header.magic == MAGIC and header.base_offset <= offset <= header.last_offset:
                    start = position
                    self.next_offset = header.base_offset
                    self.max_timestamp = (
                        self.time_index.timestamps[-1] if self.time_index.timestamps else -1
                    )
        self.size = start
        self._scan_and_cut(start, self.file_size(), writer=False)
        if self.size > 0 and self.first_timestamp < 0:
            self.first_timestamp = parse_header(os.pread(self._fd, HEADER_SIZE, 0)).first_timestamp

    # ------------------------------------------------------------------ writing

    def append(self, data: bytes | bytearray, header: BatchHeader) -> int:
        """Write one encoded batch at the end; return its position. Under the lock."""
        position = self.size
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
        self.size = position + len(data)  # last: readers trust `size`
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

    def truncate_to(self, position: int) -> None:
        os.ftruncate(self._fd, position)
        self.index.truncate_to_position(position)
        self.size = position

    # ---------------------------------------------------------------- lifecycle

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    def close(self) -> None:
        self.index.close()
        self.time_index.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete_files(self) -> None:
        """Rename to `.deleted` first so that an interrupted delete is finished on
        the next open, then unlink."""
        for path in (self.path, self.index.path, self.time_index.path):
            try:
                doomed = path.with_name(path.name + ".deleted")
                os.replace(path, doomed)
                os.unlink(doomed)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return f"Segment({self.path.name}, size={self.size}, next_offset={self.next_offset})"
