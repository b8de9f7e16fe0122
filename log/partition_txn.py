"""A partition's transactions: open ones, the last stable offset, aborted ranges.

The part of `log.partition.Partition` that transactions use (the coordinator's side
is `log.txn_coordinator`). A partition written transactionally has a marker file,
`.transactional`, made (durably) before its first transactional batch; a partition
without it costs read_committed readers one `stat` per read and nothing else.

What a process knows of a transactional partition is a `TxnView`, built by walking
batch headers (59 bytes a batch: header and producer section, never the records)
and kept up to date incrementally from where the walk stopped:

- `open`: producer id → first offset of its open transaction in this partition;
  the last stable offset (LSO) is the least of them, else the log end offset;
- `epochs`: producer id → the latest epoch seen in a batch of it (fencing: an
  append with an older epoch is refused);
- `aborted`: the aborted transactions, (producer id, first offset, marker offset),
  in marker order.

The aborted-transactions index, `<base>.txnindex`, is written for a segment when
it rolls (before the next segment exists, through `write_atomic`): the state at the
segment's end (every producer's epoch and its open transaction's first offset, -1
when none) and the transactions aborted by a marker inside it. A process opening
the partition starts from the last closed segment's index and walks only the
segments after it (normally the active one); a segment with no index (rolled
before the partition became transactional) aborted nothing. Indexes are derived:
a damaged one (bad CRC) is ignored and the walk starts further back. Little-endian::

    version int16 = 0 | producers int32 | aborted int32
    producers × (producer_id int64, epoch int16, first_offset int64)
    aborted   × (producer_id int64, first_offset int64, last_offset int64, lso int64)
    crc32 uint32 of everything before it

A read_committed read (see `log.partition_read`) stops before the LSO and skips
control batches and, for transactional batches only, those inside an aborted range
of their producer: with no aborted range at or after the read's offset (the common
case) it does no per-batch work beyond what read_uncommitted does.
"""

from __future__ import annotations

import struct
import threading
import zlib
from bisect import bisect_left
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from log.batch import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    CONTROL_ABORT,
    HEADER_SIZE,
    PRODUCER_SIZE,
    BatchHeader,
    control_type,
    parse_header,
    parse_producer,
)
from log.errors import CorruptRecordError, ProducerFencedError
from log.fsutil import fsync_dir, write_atomic
from log.segment import Segment, segment_name

__all__ = ["TXN_INDEX", "TXN_MARKER", "AbortedTxn", "PartitionTxn", "TxnView", "in_aborted"]

TXN_MARKER = ".transactional"
TXN_INDEX = ".txnindex"
_HEAD = struct.Struct("<hii")
_PRODUCER = struct.Struct("<qhq")
_ABORTED = struct.Struct("<qqqq")
_CRC = struct.Struct("<I")
_WALK_READ = HEADER_SIZE + PRODUCER_SIZE


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset


class TxnView:
    """One process's knowledge of a partition's transactions (module docstring)."""

    def __init__(self) -> None:
        self.transactional = False
        self.open: dict[int, int] = {}
        self.epochs: dict[int, int] = {}
        self.aborted: list[AbortedTxn] = []
        self._lasts: list[int] = []
        self.segment: Segment | None = None  # where the walk stands
        self.position = 0
        self.end_offset = 0  # the offset after the last batch walked

    def last_stable_offset(self, log_end: int) -> int:
        return min(self.open.values(), default=log_end)

    def aborted_from(self, offset: int) -> dict[int, list[tuple[int, int]]] | None:
        """Producer id → aborted (first, last) ranges ending at or after `offset`;
        None when there is none (then a read filters nothing)."""
        aborted = self.aborted
        if not aborted or aborted[-1].last_offset < offset:
            return None
        ranges: dict[int, list[tuple[int, int]]] = {}
        lasts = self._lasts  # the marker offsets, kept beside `aborted` (both in order)
        if len(lasts) != len(aborted):
            lasts.extend(a.last_offset for a in aborted[len(lasts) :])
        for a in aborted[bisect_left(lasts, offset) :]:
            ranges.setdefault(a.producer_id, []).append((a.first_offset, a.last_offset))
        return ranges

    def forget_below(self, start: int) -> None:
        """Drop the aborted transactions whose marker retention has deleted: no read
        can reach them (a long-lived process would otherwise keep them all)."""
        aborted = self.aborted
        if aborted and aborted[0].last_offset < start:
            keep = next((i for i, a in enumerate(aborted) if a.last_offset >= start), len(aborted))
            del aborted[:keep]
            del self._lasts[:keep]

    def take(self, buf: bytes, position: int, base_offset: int, attributes: int) -> None:
        """Account for the transactional batch at `position` of `buf`."""
        pid, epoch, _seq = parse_producer(buf, position)
        if epoch > self.epochs.get(pid, -1):
            self.epochs[pid] = epoch
        if not attributes & ATTR_CONTROL:
            self.open.setdefault(pid, base_offset)
            return
        first = self.open.pop(pid, None)
        if first is None:
            return  # a marker for nothing open here (a coordinator's retry)
        header = parse_header(buf, position)
        if control_type(buf, position, header) == CONTROL_ABORT:
            self.aborted.append(AbortedTxn(pid, first, base_offset))


def in_aborted(buf: bytes, pos: int, header: BatchHeader, ranges: dict | None) -> bool:
    """Whether the transactional data batch at `pos` of `buf` lies in an aborted
    transaction of its producer (`ranges`: `TxnView.aborted_from`)."""
    if ranges is None:
        return False
    spans = ranges.get(parse_producer(buf, pos).producer_id)
    base = header.base_offset
    return spans is not None and any(first <= base <= last for first, last in spans)


def encode_txn_index(view: TxnView, base: int, end: int) -> bytes:
    """The `.txnindex` of the segment [base, end) for the state at `end`."""
    aborted = [a for a in view.aborted if base <= a.last_offset < end]
    lso = view.last_stable_offset(end)
    parts = [_HEAD.pack(0, len(view.epochs), len(aborted))]
    parts += [_PRODUCER.pack(p, e, view.open.get(p, -1)) for p, e in view.epochs.items()]
    parts += [_ABORTED.pack(a.producer_id, a.first_offset, a.last_offset, lso) for a in aborted]
    body = b"".join(parts)
    return body + _CRC.pack(zlib.crc32(body))


def decode_txn_index(path: Path) -> tuple[dict[int, int], dict[int, int], list[AbortedTxn]] | None:
    """(open, epochs, aborted) from a `.txnindex`, or None when it is missing or damaged."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(data) < _HEAD.size + _CRC.size:
        return None
    body = data[: -_CRC.size]
    if _CRC.unpack(data[-_CRC.size :])[0] != zlib.crc32(body):
        return None
    version, producers, aborted_count = _HEAD.unpack_from(body)
    if version != 0 or len(body) != _HEAD.size + producers * _PRODUCER.size + (
        aborted_count * _ABORTED.size
    ):
        return None
    open_: dict[int, int] = {}
    epochs: dict[int, int] = {}
    for pid, epoch, first in _PRODUCER.iter_unpack(
        body[_HEAD.size : _HEAD.size + producers * _PRODUCER.size]
    ):
        epochs[pid] = epoch
        if first >= 0:
            open_[pid] = first
    start = _HEAD.size + producers * _PRODUCER.size
    aborted = [AbortedTxn(p, f, last) for p, f, last, _lso in _ABORTED.iter_unpack(body[start:])]
    return open_, epochs, aborted


class PartitionTxn:
    """Transactions of one partition (a part of `Partition`; module docstring). The
    attributes below are set by `Partition.__init__`."""

    directory: Path
    topic: str
    partition: int
    _lock: threading.RLock
    _segments: tuple[Segment, ...]
    _txn: TxnView
    _refresh_for_read: Callable[[], None]

    def is_transactional(self) -> bool:
        """Whether any transactional batch was ever written here (the marker file)."""
        if not self._txn.transactional and (self.directory / TXN_MARKER).exists():
            self._txn.transactional = True
        return self._txn.transactional

    def has_open_transactions(self) -> bool:
        """Whether the view, as last caught up, holds an open transaction."""
        return bool(self._txn.open)

    def txn_view(self) -> TxnView | None:
        """The view, caught up with the partition's end as this process knows it;
        None for a partition never written transactionally."""
        if not self.is_transactional():
            return None
        with self._lock:
            view = self._txn
            if view.segment is None or view.segment not in self._segments:
                self._txn_bootstrap()
            self._txn_walk()
            self._txn.forget_below(self._segments[0].base_offset)
            return self._txn

    def last_stable_offset(self) -> int:
        """The LSO: the first offset of the oldest open transaction, else the log end."""
        self._refresh_for_read()
        end = self._segments[-1].next_offset
        view = self.txn_view()
        return end if view is None else view.last_stable_offset(view.end_offset)

    def _txn_bootstrap(self) -> None:
        """Start a view from the last closed segment's `.txnindex` (module docstring)."""
        view = TxnView()
        view.transactional = True
        segments = self._segments
        start = 0
        for i in range(len(segments) - 2, -1, -1):
            loaded = decode_txn_index(self._txn_index_path(segments[i]))
            if loaded is not None:
                view.open, view.epochs, _ = loaded
                start = i + 1
                break
        for seg in segments[:start]:
            loaded = decode_txn_index(self._txn_index_path(seg))
            if loaded is not None:
                view.aborted.extend(loaded[2])
        view.segment, view.position = segments[start], 0
        view.end_offset = segments[start].base_offset
        self._txn = view

    def _txn_walk(self) -> None:
        """Walk the batch headers from where the view stands to the known end."""
        view = self._txn
        segments = self._segments
        i = segments.index(view.segment)  # type: ignore[arg-type]
        position = view.position
        for seg in segments[i:]:
            if seg is not view.segment:
                position = 0
            end = seg.valid_end
            while position < end:
                raw = seg.pread(_WALK_READ, position)
                header = parse_header(raw)
                if header.size < HEADER_SIZE or position + header.size > end:
                    # Damage in a trusted (closed) segment, which opening does not
                    # scan: stop here, as a read of it would, instead of looping.
                    raise CorruptRecordError(str(seg.path), position, "impossible batch length")
                if header.attributes & ATTR_TRANSACTIONAL:
                    if header.attributes & ATTR_CONTROL:
                        raw = seg.pread(header.size, position)
                    view.take(raw, 0, header.base_offset, header.attributes)
                position += header.size
                view.end_offset = header.next_offset
            view.segment, view.position = seg, position

    def _txn_index_path(self, seg: Segment) -> Path:
        return self.directory / segment_name(seg.base_offset, TXN_INDEX)

    # ------------------------------------------------------------------ writing

    def _txn_mark(self) -> None:
        """Under the lock, before the first transactional batch: the marker file,
        durable, so every reader and the next roll know to keep the view."""
        if self.is_transactional():
            return
        write_atomic(self.directory / TXN_MARKER, b"")
        fsync_dir(self.directory)
        self._txn.transactional = True

    def _txn_check_epoch(self, producer_id: int, epoch: int) -> None:
        """Under the lock, with the view caught up: refuse a fenced producer."""
        latest = self._txn.epochs.get(producer_id, -1)
        if epoch < latest:
            raise ProducerFencedError(producer_id, epoch, latest, self.topic, self.partition)

    def _txn_before_roll(self, old: Segment) -> None:
        """Under the lock, before the next segment exists: `old`'s `.txnindex`."""
        view = self.txn_view()
        if view is None:
            return
        data = encode_txn_index(view, old.base_offset, old.next_offset)
        write_atomic(self._txn_index_path(old), data)
