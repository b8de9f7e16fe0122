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

Threads: one writer thread (under the partition's lock) appends; readers search the
in-memory arrays, which only ever grow by whole entries (or are replaced whole).
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path

__all__ = ["OffsetIndex", "TimeIndex"]

_OFFSET_ENTRY = struct.Struct("<II")
_TIME_ENTRY = struct.Struct("<qI")


class OffsetIndex:
    """Owns `<base>.index`."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.rel_offsets = array("I")
        self.positions = array("I")
        self._fd = -1

    def load(self, *, repair: bool = True) -> None:
        """Read the file into memory, dropping a torn last entry (and, with
        `repair`, cutting it from the file)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        usable = len(data) - len(data) % _OFFSET_ENTRY.size
        rel, pos = array("I"), array("I")
        for r, p in _OFFSET_ENTRY.iter_unpack(data[:usable]):
            rel.append(r)
            pos.append(p)
        self.rel_offsets, self.positions = rel, pos
        if usable != len(data) and repair:
            self.rewrite()

    def open_for_append(self) -> None:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if self.rel_offsets and (rel <= self.rel_offsets[-1] or position <= self.positions[-1]):
            return  # never out of order: keeps the arrays searchable
        self.open_for_append()
        os.write(self._fd, _OFFSET_ENTRY.pack(rel, position))
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
        keep = bisect_left(self.positions, position)
        if keep < len(self.positions):
            del self.rel_offsets[keep:]
            del self.positions[keep:]
            self.rewrite()

    def drop_last(self) -> None:
        del self.rel_offsets[-1:]
        del self.positions[-1:]
        self.rewrite()

    def clear(self) -> None:
        self.rel_offsets, self.positions = array("I"), array("I")
        self.rewrite()

    def rewrite(self) -> None:
        """Write the in-memory entries out whole (after a cut or a rebuild)."""
        self.close()
        data = b"".join(
            _OFFSET_ENTRY.pack(r, p) for r, p in zip(self.rel_offsets, self.positions, strict=True)
        )
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def sync(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class TimeIndex:
    """Owns `<base>.timeindex`."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.timestamps = array("q")
        self.rel_offsets = array("I")
        self._fd = -1

    def load(self, *, repair: bool = True) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        usable = len(data) - len(data) % _TIME_ENTRY.size
        ts, rel = array("q"), array("I")
        for t, r in _TIME_ENTRY.iter_unpack(data[:usable]):
            ts.append(t)
            rel.append(r)
        self.timestamps, self.rel_offsets = ts, rel
        if usable != len(data) and repair:
            self.rewrite()

    def append(self, max_timestamp: int, offset: int) -> None:
        rel = offset - self.base_offset
        if self.timestamps and (
            max_timestamp <= self.timestamps[-1] or rel <= self.rel_offsets[-1]
        ):
            return
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(self._fd, _TIME_ENTRY.pack(max_timestamp, rel))
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
        keep = bisect_left(self.rel_offsets, next_offset - self.base_offset)
        if keep < len(self.rel_offsets):
            del self.timestamps[keep:]
            del self.rel_offsets[keep:]
            self.rewrite()

    def clear(self) -> None:
        self.timestamps, self.rel_offsets = array("q"), array("I")
        self.rewrite()

    def rewrite(self) -> None:
        self.close()
        data = b"".join(
            _TIME_ENTRY.pack(t, r) for t, r in zip(self.timestamps, self.rel_offsets, strict=True)
        )
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def sync(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
