"""One transactional.id's coordinator state as an append-only journal: each state
change is one record appended (and, where the protocol needs it, fdatasynced), the
last valid record is the state.

Why not a state file replaced whole (`write_atomic`) per change: that is a temp
file written and fsynced, a rename and a directory fsync, four to five system calls
that wait on the disk, and a transaction changes the state three or four times
(measured: most of the cost of a small transaction). An append is one write and
one `fdatasync`, and the change that need not be durable at once (COMPLETE, see
log.txn_coordinator) is a write alone: the next durable append to the same file
makes it durable too, since an fdatasync covers everything written before it.

Layout (little-endian), records back to back::

    length uint32 | crc32 uint32 of the body | body: the state as JSON (UTF-8)

Protocol of an append (under the coordinator's lock):
  1. The journal is read (`load`): records are taken up to the first one that is
     torn (shorter than its length) or fails its CRC; `valid_end` is where it ends.
  2. A tail past `valid_end` (a record a crash cut) is truncated away, so the new
     record does not land behind garbage that would hide it from readers.
  3. The record is appended with one write; fdatasynced when durable, side by side
     with the caller's `beside` calls (the fsyncs of a transaction's data: one wait
     on the disk for both, log.txn_coordinator says why that is safe).
  4. At a durable append that, with the two unsynced records a steady transaction
     appends before its next durable one (COMPLETE, the next ONGOING: about its
     size each), would pass `COMPACT_BYTES`, the journal is replaced by its last
     record alone, through `write_atomic` (temp file fsynced, renamed,
     directory fsynced): a crash leaves the old journal or the new one, each
     ending in the same state.

A journal that does not exist yet is created by step 4's `write_atomic`, so its
directory entry is durable before anything relies on it.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from log.fsutil import at_once, write_atomic

__all__ = ["COMPACT_BYTES", "JOURNAL_SUFFIX", "append_record", "load"]

JOURNAL_SUFFIX = ".txnlog"
COMPACT_BYTES = 16 * 1024  # ~60 records: a rewrite every few dozen transactions
_HEAD = struct.Struct("<II")


def _frame(body: bytes) -> bytes:
    return _HEAD.pack(len(body), zlib.crc32(body)) + body


def load(path: Path) -> tuple[bytes | None, int, int]:
    """Step 1: (the last valid record's body or None, valid_end, file size)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, 0, 0
    last: bytes | None = None
    position, size = 0, len(data)
    while position + _HEAD.size <= size:
        length, crc = _HEAD.unpack_from(data, position)
        end = position + _HEAD.size + length
        if end > size:
            break  # torn
        body = data[position + _HEAD.size : end]
        if zlib.crc32(body) != crc:
            break  # garbled: nothing after it is trusted
        last, position = body, end
    return last, position, size


def append_record(
    path: Path,
    body: bytes,
    *,
    valid_end: int,
    size: int,
    durable: bool,
    beside: Sequence[Callable[[], object]] = (),
) -> int:
    """Steps 2 to 4 for one record; `valid_end` and `size` from `load` under the same
    lock (no one else appended since). `beside`: calls run side by side with the
    durable record's write and sync (at_once: a failure is raised once all ended).
    The journal's new end."""
    record = _frame(body)
    if size == 0 or (durable and valid_end + 3 * len(record) > COMPACT_BYTES):
        # Step 4 (also the creation of a new journal: its directory entry is synced).
        # Only for a durable record: a rewrite is durable, and a record meant to
        # wait for the next fdatasync may not be on disk before what that waits for.
        at_once([partial(write_atomic, path, record), *beside])
        return len(record)
    at_once([partial(_append, path, record, valid_end, size, durable), *beside])
    return valid_end + len(record)


def _append(path: Path, record: bytes, valid_end: int, size: int, durable: bool) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        if size > valid_end:
            # Step 2
            os.ftruncate(fd, valid_end)
        # Step 3
        os.lseek(fd, valid_end, os.SEEK_SET)
        view = memoryview(record)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fdatasync(fd)
    finally:
        os.close(fd)
