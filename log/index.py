"""Sparse indexes of one segment: offset → byte position, and timestamp → offset.

Both are derived data: a damaged index is rebuilt from the segment's batches.

Sparse rule: after at least `index.interval.bytes` of batches have been written since
the last entry, the next batch gets an entry (the first batch of a segment needs none:
it starts at position 0).

File layouts (little-endian, fixed-size entries, append-only)::

    <base>.index      relative offset uint32 | position uint32          (8 bytes)
    <base>.timeindex  max timestamp so far int64 | relative offset uint32 (12 bytes)

An offset entry (r, p) says: the batch holding offset base + r starts at byte p. A
time entry (t, r) says: every record in batches before the one at base + r, and in
that batch, has a timestamp ≤ t; time entries are appended only when t grows, so
they are sorted on both columns. Entries are written with one `write` each; a torn
last entry (a crash mid-write) is dropped when the file is loaded.

Sanity check (`check`, like Kafka's): done once when an index is loaded, never on a
read. A missing file (a segment's index files are created with it), a size that is
not a whole number of entries, entries that do not grow strictly on both columns, or
entries out of the segment's bounds make the index untrusted; the segment then
rebuilds it from its batches (see `log.segment`).

Size: the files are not preallocated; `segment.index.bytes` bounds them all the same,
as in Kafka: an index holding that many bytes of entries is `full`, and the partition
rolls its segment before appending to it (see `log.partition`).

Threads: one writer thread (under the partition's lock) appends; readers search the
in-memory arrays, which only ever grow by whole entries (or are replaced whole).
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from operator import lt
from pathlib import Path

__all__ = ["OffsetIndex", "TimeIndex"]

_OFFSET_ENTRY = struct.Struct("<II")
_TIME_ENTRY = struct.Struct("<qI")
_LITTLE = sys.byteorder == "little"


def _increasing(column: array) -> bool:
    """Strictly increasing, in C-level passes (an index may hold 100k+ entries)."""
    return all(map(lt, column, column[1:]))


class _IndexFile:
    """The file handling both indexes share: one file of fixed-size entries, kept in
    memory as two parallel arrays, appended one entry per `write` and rewritten whole
    after a cut or a rebuild. Subclasses say how an entry packs (`_ENTRY`) and
    which two columns it holds (`_columns`, `_set_columns`)."""

    _ENTRY: struct.Struct

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.rel_offsets = array("I")
        self.problem: str | None = None  # what `load` found wrong with the file
        self._fd = -1

    def _columns(self) -> tuple[array, array]:
        """The two in-memory columns, in the order an entry packs them."""
        raise NotImplementedError

    def _set_columns(self, data: bytes) -> None:
        """Replace the in-memory columns with the entries in `data`."""
        raise NotImplementedError

    def load(self, *, repair: bool = True) -> None:
        """Read the file into memory, dropping a torn last entry (and, with
        `repair`, cutting it from the file). What was wrong with the file is kept
        in `problem` for `check`."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data, self.problem = b"", "missing"
        else:
            torn = len(data) % self._ENTRY.size
            self.problem = f"{torn} bytes of a torn last entry" if torn else None
            data = data[: len(data) - torn]
        self._set_columns(data)
        if self.problem is not None and self.problem != "missing" and repair:
            self.rewrite()

    def create(self) -> None:
        """Create the empty file: a new segment's indexes exist from the start, so a
        missing file later means a lost one."""
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644))
        self.problem = None

    def open_for_append(self) -> None:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _write_entry(self, first: int, second: int) -> None:
        """Append one entry to the file (the caller appends it to the columns)."""
        self.open_for_append()
        os.write(self._fd, self._ENTRY.pack(first, second))

    def full(self, max_bytes: int) -> bool:
        """Whether as many entries as fit in `max_bytes` (`segment.index.bytes`)
        are written. With growing timestamps the time index fills first (its entries
        are larger), as in Kafka."""
        return len(self.rel_offsets) >= max_bytes // self._ENTRY.size

    def _cut(self, keep: int) -> None:
        """Keep the first `keep` entries (rewriting the file when that drops any)."""
        first, second = self._columns()
        if keep < len(first):
            del first[keep:]
            del second[keep:]
            self.rewrite()

    def rewrite(self) -> None:
        """Write the in-memory entries out whole (after a cut or a rebuild)."""
        self.close()
        pack = self._ENTRY.pack
        data = b"".join(pack(a, b) for a, b in zip(*self._columns(), strict=True))
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        self.problem = None

    def sync(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class OffsetIndex(_IndexFile):
    """Owns `<base>.index`."""

    _ENTRY = _OFFSET_ENTRY
    ENTRY_SIZE = _OFFSET_ENTRY.size

    def __init__(self, path: Path, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self.positions = array("I")

    def _columns(self) -> tuple[array, array]:
        return self.rel_offsets, self.positions

    def _set_columns(self, data: bytes) -> None:
        both = array("I")
        both.frombytes(data)
        if not _LITTLE:
            both.byteswap()
        self.rel_offsets, self.positions = both[0::2], both[1::2]

    def check(self, *, max_rel: int | None = None, max_position: int | None = None) -> str | None:
        """Why the loaded index cannot be trusted, or None (see the module docstring).
        No entry is ever at position 0: a segment's first batch needs none."""
        if self.problem is not None:
            return f"{self.path.name}: {self.problem}"
        rel, pos = self.rel_offsets, self.positions
        if not rel:
            return None
        if not (_increasing(rel) and _increasing(pos)) or pos[0] == 0:
            return f"{self.path.name}: entries out of order"
        if max_rel is not None and rel[-1] > max_rel:
            return f"{self.path.name}: an entry names an offset past the segment"
        if max_position is not None and pos[-1] > max_position:
            return f"{self.path.name}: an entry points past the data"
        return None

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if self.rel_offsets and (rel <= self.rel_offsets[-1] or position <= self.positions[-1]):
            return  # never out of order: keeps the arrays searchable
        self._write_entry(rel, position)
        self.rel_offsets.append(rel)
        self.positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or before `offset`; the segment
        start when there is none. Scanning from there finds `offset`'s batch."""
        i = bisect_right(self.rel_offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self.rel_offsets[i], self.positions[i]

    def last(self) -> tuple[int, int]:
        if not self.rel_offsets:
            return self.base_offset, 0
        return self.base_offset + self.rel_offsets[-1], self.positions[-1]

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or past `position` (the data file was cut there)."""
        self._cut(bisect_left(self.positions, position))

    def drop_last(self) -> None:
        del self.rel_offsets[-1:]
        del self.positions[-1:]
        self.rewrite()

    def clear(self) -> None:
        self.rel_offsets, self.positions = array("I"), array("I")
        self.rewrite()


class TimeIndex(_IndexFile):
    """Owns `<base>.timeindex`."""

    _ENTRY = _TIME_ENTRY
    ENTRY_SIZE = _TIME_ENTRY.size

    def __init__(self, path: Path, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self.timestamps = array("q")

    def _columns(self) -> tuple[array, array]:
        return self.timestamps, self.rel_offsets

    def _set_columns(self, data: bytes) -> None:
        entries = list(zip(*_TIME_ENTRY.iter_unpack(data), strict=True))
        ts, rel = entries if entries else ((), ())
        self.timestamps, self.rel_offsets = array("q", ts), array("I", rel)

    def check(self, *, max_rel: int | None = None) -> str | None:
        """Why the loaded index cannot be trusted, or None (see the module docstring)."""
        if self.problem is not None:
            return f"{self.path.name}: {self.problem}"
        if not self.rel_offsets:
            return None
        if not (_increasing(self.timestamps) and _increasing(self.rel_offsets)):
            return f"{self.path.name}: entries out of order"
        if max_rel is not None and self.rel_offsets[-1] > max_rel:
            return f"{self.path.name}: an entry names an offset past the segment"
        return None

    def append(self, max_timestamp: int, offset: int) -> None:
        rel = offset - self.base_offset
        if self.timestamps and (
            max_timestamp <= self.timestamps[-1] or rel <= self.rel_offsets[-1]
        ):
            return
        self._write_entry(max_timestamp, rel)
        self.timestamps.append(max_timestamp)
        self.rel_offsets.append(rel)

    def lookup(self, timestamp: int) -> int:
        """An offset from which scanning forward finds the first record with a
        timestamp ≥ `timestamp`: the entry just before the first entry ≥ it."""
        i = bisect_left(self.timestamps, timestamp) - 1
        if i < 0:
            return self.base_offset
        return self.base_offset + self.rel_offsets[i]

    def truncate_to_offset(self, next_offset: int) -> None:
        """Drop entries naming `next_offset` or later (the data was cut before it)."""
        self._cut(bisect_left(self.rel_offsets, next_offset - self.base_offset))

    def clear(self) -> None:
        self.timestamps, self.rel_offsets = array("q"), array("I")
        self.rewrite()
