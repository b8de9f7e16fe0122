"""A partition: a directory of segments, its roll policy, recovery point and write lock.

Directory contents::

    00000000000000000000.log / .index / .timeindex     closed segments ...
    00000000000000052311.log / .index / .timeindex     ... and the active (last) one
    .lock             flock'ed by the one process writing at a time
    .generation       a count of changes to the segment list, shared by processes
    recovery-point    offset below which everything is known to be fsynced
    compacted-below   offset below which compaction may have left gaps
    .swap/            a compaction result being swapped in (finished on open)
    .cleaning/        a compaction in progress (discarded on open)

Opening recovers (numbered as in the code):
  1. Finish or undo work in flight: `*.deleted` files are unlinked, `.cleaning/` is
     removed, `.swap/` is completed (see `swap_in`).
  2. Segments wholly below the recovery point are trusted: their data is not
     scanned, their indexes are sanity-checked and rebuilt when a check fails.
  3. Every segment from the one holding the recovery point on is validated from the
     recovery point's index position (or its last index entry), batch by batch;
     the first bad batch is cut off together with any segment after it. In the
     last segment offsets must run without gaps from `compacted-below` on: appends
     never leave one, and a compacted segment can be the last one (when a cut made
     it so), so gaps below that offset are compaction's, not damage.

Writers: appends from any thread or process serialise on a thread lock and the
`.lock` flock. On taking the lock a writer first catches up with what other
processes changed (new segments, deletions, appended batches, a torn tail left by a
writer that died). Readers take no lock: they read up to the end of the last batch
they have validated, so they never see a partial batch.

Noticing another process's roll, deletion or swap: the lock holder bumps the
`.generation` count before it changes the segment list and again after (a
`SharedCounter`: memory-mapped, so checking it on every append is cheap). A process
whose remembered count differs re-lists the directory; one that looked between the
two bumps looks again after the second, and an odd count left by a writer that died
midway is made even by the next lock holder once it has re-listed. The directory's
mtime is compared too: it also catches a topic deleted (the directory is gone) or
files changed by hand, but alone it would miss two changes within one tick of the
filesystem's clock.
"""

from __future__ import annotations

import gc
import os
import shutil
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from pathlib import Path

from log.batch import HEADER_SIZE, BatchHeader, decode_records, encode_batch, parse_header
from log.config import TopicConfig
from log.errors import CorruptRecordError, InvalidRecordError, OffsetOutOfRangeError
from log.fsutil import FileLock, SharedCounter, fsync_dir, read_text, write_atomic
from log.records import Header, Record
from log.segment import ScannedBatch, Segment

__all__ = ["CLEANER_CHECKPOINT", "Partition"]

# The cleaner's checkpoint: the offset up to which it last compacted the partition.
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
_COMPACTED_BELOW = "compacted-below"

LOCK_TIMEOUT_S = 30.0
_RETIRE_GRACE_S = 60.0

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Partition:
    """Owns one partition directory. Use through `FileLog`; safe across threads and
    processes (see the module docstring)."""

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
        self.closed = False
        self.recovered_bytes = 0
        with self._locked():
            self._open()

    # ----------------------------------------------------------------- opening

    def _open(self) -> None:
        # Step 1: finish or undo work in flight.
        for name in os.listdir(self.directory):
            if name.endswith(".deleted") or name.endswith(".tmp"):
                os.unlink(self.directory / name)
        for name in os.listdir(self.directory):
            if name.startswith(".cleaning"):
                shutil.rmtree(self.directory / name, ignore_errors=True)
        if (self.directory / ".swap").exists():
            with self._changing_segments():
                self._finish_swap()
        bases = self._list_bases()
        if not bases:
            self._segments = (self._new_segment(0, create=True),)
            self._settle_generation()
            return
        recovery_point = self._read_recovery_point()
        self._compacted_below = self._read_compacted_below()
        segments: list[Segment] = []
        cut_rest = False
        for i, base in enumerate(bases):
            if cut_rest:
                with self._changing_segments():
                    self._delete_segment_files(base)
                continue
            seg = self._new_segment(base)
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            if next_base is not None and next_base <= recovery_point:
                # Step 2: wholly below the recovery point: trusted.
                seg.load_closed(next_base, write=True)
            else:
                # Step 3: validate from the recovery point (or the last index entry).
                if next_base is None:
                    seg.gaps_below = self._compacted_below
                seg.offset_limit = next_base
                cut = seg.recover(recovery_point=recovery_point)
                self.recovered_bytes += cut
                if next_base is not None and cut:
                    cut_rest = True  # nothing after a corrupt batch can be trusted
                    seg.offset_limit = None  # it is the last segment now
                    seg.gaps_below = self._compacted_below
                elif next_base is not None:
                    if seg.max_timestamp >= 0:  # the final time entry of its roll
                        seg.time_index.append(seg.max_timestamp, seg.last_batch_base())
                    seg.next_offset = next_base
            segments.append(seg)
        self._segments = tuple(segments)
        self._settle_generation()

    def _list_bases(self) -> list[int]:
        return sorted(
            int(name[:20])
            for name in os.listdir(self.directory)
            if name.endswith(".log") and len(name) == 24 and name[:20].isdigit()
        )

    def _new_segment(self, base: int, *, create: bool = False) -> Segment:
        """A Segment object for `base`; `create` makes a new segment (its index files
        too), which appends will fill without gaps."""
        seg = Segment(
            self.directory,
            base,
            index_interval_bytes=self.config.index_interval_bytes,
            create=create,
        )
        if create:
            seg.gaps_below = base  # appends leave no gaps
        return seg

    def _note_dir(self) -> None:
        """Remember the state of the segment list this process has taken in: noted
        before listing, so a change made meanwhile is seen by the next check."""
        self._seen_generation = self._generation.value()
        self._dir_mtime = os.stat(self.directory).st_mtime_ns

    def _dir_changed(self) -> bool:
        """Whether another process may have changed the segment list since
        `_note_dir` (raises FileNotFoundError when the directory is gone)."""
        return (
            self._generation.value() != self._seen_generation
            or os.stat(self.directory).st_mtime_ns != self._dir_mtime
        )

    @contextmanager
    def _changing_segments(self) -> Iterator[None]:
        """Under the lock: announce a change of the segment list to other processes
        (see the module docstring): one bump before, one after."""
        self._generation.bump()
        try:
            yield
        finally:
            self._generation.bump()

    def _settle_generation(self) -> None:
        """Under the lock, with the directory taken in as it is: an odd count means a
        writer died between its two bumps, so bump once more to make every other
        process look again; then note the state."""
        if self._generation.value() % 2:
            self._generation.bump()
        self._note_dir()

    def _read_compacted_below(self) -> int:
        """The offset below which compaction may have left gaps: the file swap_in
        writes before a swap, or the cleaner's checkpoint, which partitions cleaned
        before that file existed have (the larger of the two)."""
        found = 0
        for name in (_COMPACTED_BELOW, CLEANER_CHECKPOINT):
            text = read_text(self.directory / name)
            try:
                found = max(found, int(text) if text else 0)
            except ValueError:
                continue
        return found

    def _read_recovery_point(self) -> int:
        text = read_text(self.directory / "recovery-point")
        try:
            return int(text) if text else 0
        except ValueError:
            return 0

    def _write_recovery_point(self) -> None:
        write_atomic(
            self.directory / "recovery-point", str(self._segments[-1].next_offset).encode()
        )

    def _delete_segment_files(self, base: int) -> None:
        seg = Segment(self.directory, base)
        seg.close()
        seg.delete_files()

    # ---------------------------------------------------------- lock and views

    class _Locked:
        __slots__ = ("p",)

        def __init__(self, p: Partition) -> None:
            self.p = p

        def __enter__(self) -> None:
            self.p._lock.acquire()
            try:
                self.p._flock.acquire(LOCK_TIMEOUT_S)
            except BaseException:
                self.p._lock.release()
                raise

        def __exit__(self, *exc: object) -> None:
            self.p._flock.release()
            self.p._lock.release()

    def _locked(self) -> _Locked:
        return Partition._Locked(self)

    def _catch_up_writer(self) -> None:
        """Under the lock: take in what other processes did since we last looked."""
        if self._dir_changed():
            self._reload(writer=True)
            self._settle_generation()
        active = self._segments[-1]
        if active.file_size() != active.size:
            self.recovered_bytes += active.catch_up(writer=True)

    def _reload(self, *, writer: bool) -> None:
        """Re-list segments after another process rolled, deleted or swapped some."""
        for _ in range(200):
            if not (self.directory / ".swap").exists():
                break
            if writer:
                with self._changing_segments():
                    self._finish_swap()
                break
            time.sleep(0.005)  # a swap is in progress in another process
        if self._generation.replaced() and self.directory.is_dir():
            # The directory was made again (a topic deleted and created): follow
            # the new count, or changes to the new directory would go unnoticed.
            # The old map is left to the collector: a reader thread may be using it.
            self._generation = SharedCounter(self.directory / ".generation")
        self._note_dir()
        bases = self._list_bases()
        if not bases:
            return
        self._compacted_below = self._read_compacted_below()
        current = {s.base_offset: s for s in self._segments}
        fresh: list[Segment] = []
        for i, base in enumerate(bases):
            seg = current.pop(base, None)
            if seg is not None and not seg.same_file():
                current[base] = seg  # replaced under the same name (compaction)
                seg = None
            if seg is None:
                seg = self._new_segment(base)
                if i + 1 < len(bases):
                    seg.load_closed(bases[i + 1], write=writer)
                else:
                    seg.gaps_below = self._compacted_below  # the active segment
                    if writer:
                        self.recovered_bytes += seg.recover()
                    else:
                        seg.load_for_reading()
            elif i + 1 < len(bases):
                # It may have been the active segment when we last looked: take in
                # what its writer added before rolling it.
                if seg.file_size() != seg.size:
                    self.recovered_bytes += seg.catch_up(writer=writer)
                seg.next_offset = bases[i + 1]
            fresh.append(seg)
        self._segments = tuple(fresh)
        now = time.monotonic()
        self._retired.extend((now, s) for s in current.values())

    def _refresh_for_read(self) -> None:
        if self._dir_changed():
            with self._lock:
                self._reload(writer=False)
        active = self._segments[-1]
        if active.file_size() > active.size:
            with self._lock:
                active.catch_up(writer=False)

    # ----------------------------------------------------------------- offsets

    @property
    def log_start_offset(self) -> int:
        segments = self._segments
        first = segments[0]
        if first.size == 0 and len(segments) == 1:
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
        return sum(s.size for s in self._segments)

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

    def _should_roll(self, active: Segment, incoming: int) -> bool:
        if active.size == 0:
            return False
        cfg = self.config
        if active.size + incoming > cfg.segment_bytes:
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
            if self._segments[-1].size:
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

    # -------------------------------------------------------------------- read

    def read(
        self, offset: int, *, max_records: int | None = None, max_bytes: int = 1 << 20
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
        form), and letting the collector walk them every 700 allocations cost a
        third of the read time."""
        if not gc.isenabled():
            return self._read(offset, max_records, max_bytes)
        gc.disable()
        try:
            return self._read(offset, max_records, max_bytes)
        finally:
            gc.enable()

    def _read(self, offset: int, max_records: int | None, max_bytes: int) -> list[Record]:
        segments = self._segments
        if offset >= segments[-1].next_offset or offset < segments[0].base_offset:
            self._refresh_for_read()
            segments = self._segments
        start, end = self.log_start_offset, segments[-1].next_offset
        if offset == end:
            return []
        if offset < start or offset > end:
            raise OffsetOutOfRangeError(self.topic, self.partition, offset, start, end)
        limit = max_records if max_records is not None else 1 << 62
        out: list[Record] = []
        taken_bytes = 0
        i = bisect_right([s.base_offset for s in segments], offset) - 1
        cut = self._cut_batch
        if cut is not None and cut[0] == offset and cut[1] is segments[i]:
            # The rest of the batch the previous read cut short: no second read.
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
        return out

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
        if first is not None and first[3].base_offset == entry:
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

    # ------------------------------------------------------- retention & swap

    def apply_retention(self) -> int:
        """Delete closed segments past `retention.ms` / `retention.bytes`; return
        how many. The active segment is never deleted."""
        cfg = self.config
        if not cfg.deletes or (cfg.retention_ms < 0 and cfg.retention_bytes < 0):
            return 0
        now = self.clock()
        with self._locked():
            self._catch_up_writer()
            closed = list(self._segments[:-1])
            doomed: list[Segment] = []
            total = sum(s.size for s in self._segments)
            for seg in closed:
                too_old = cfg.retention_ms >= 0 and now - seg.max_timestamp > cfg.retention_ms
                too_big = cfg.retention_bytes >= 0 and total - seg.size >= cfg.retention_bytes
                if not (too_old or too_big):
                    break  # retention deletes a prefix only
                doomed.append(seg)
                total -= seg.size
            if doomed:
                with self._changing_segments():
                    self._segments = self._segments[len(doomed) :]
                    for seg in doomed:
                        seg.delete_files()
                        self._retired.append((time.monotonic(), seg))
                    fsync_dir(self.directory)
                self._note_dir()
            self._close_retired()
            return len(doomed)

    def swap_in(self, replaced: Sequence[Segment], staged: Path) -> None:
        """Replace `replaced` (adjacent closed segments) with the cleaned segment
        files in the `staged` directory. Numbered steps, each finished on open:

        1. `compacted-below` is raised to the end of the replaced segments (the next
           segment's base), durably, before any gap is on disk: recovery then never
           takes the gaps for damage, even in a segment that becomes the last one.
        2. `staged` (fsynced by the cleaner) gets a `replaces` file naming the old
           bases and is renamed to `.swap/`: from here on the swap completes.
        3. The old segments' files are deleted, then `replaces` is renamed to
           `replaced`, so a rerun never deletes the new files (same names).
        4. The new files are moved in and `.swap/` is removed.
        """
        with self._locked():
            self._catch_up_writer()
            current = {s.base_offset: s for s in self._segments}
            if any(current.get(s.base_offset) is not s for s in replaced):
                shutil.rmtree(staged, ignore_errors=True)
                return  # the segments changed under the cleaner: drop its work
            # Step 1
            end = replaced[-1].next_offset
            if end > self._compacted_below:
                write_atomic(self.directory / _COMPACTED_BELOW, str(end).encode())
                self._compacted_below = end
            # Step 2
            write_atomic(
                staged / "replaces", " ".join(str(s.base_offset) for s in replaced).encode()
            )
            with self._changing_segments():
                os.replace(staged, self.directory / ".swap")
                fsync_dir(self.directory)
                self._finish_swap()
            self._reload(writer=True)

    def _finish_swap(self) -> None:
        swap = self.directory / ".swap"
        text = read_text(swap / "replaces")
        if text is not None:
            # Step 3
            for base in (int(b) for b in text.split()):
                for suffix in (".log", ".index", ".timeindex"):
                    path = self.directory / f"{base:020d}{suffix}"
                    if path.exists():
                        doomed = path.with_name(path.name + ".deleted")
                        os.replace(path, doomed)
                        os.unlink(doomed)
            fsync_dir(self.directory)
            os.replace(swap / "replaces", swap / "replaced")
            fsync_dir(swap)
        elif not (swap / "replaced").exists():  # step 2 never completed
            shutil.rmtree(swap, ignore_errors=True)
            return
        # Step 4
        for name in os.listdir(swap):
            if name != "replaced":
                os.replace(swap / name, self.directory / name)
        fsync_dir(self.directory)
        shutil.rmtree(swap, ignore_errors=True)
        fsync_dir(self.directory)

    def _close_retired(self) -> None:
        now = time.monotonic()
        keep = []
        for when, seg in self._retired:
            if now - when >= _RETIRE_GRACE_S:
                seg.close()
            else:
                keep.append((when, seg))
        self._retired = keep

    # --------------------------------------------------------------- lifecycle

    def _check_open(self) -> None:
        if self.closed:
            from log.errors import LogClosedError

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


def header_at(seg: Segment, position: int) -> BatchHeader:
    return parse_header(seg.pread(HEADER_SIZE, position))
