"""Opening a partition directory, recovering it, and keeping up with other processes.

This is the part of `log.partition.Partition` that owns the directory's files as a
whole: which segments exist, the recovery point, the cross-process write lock and
the count that tells other processes the segment list changed. Reading lives in
`log.partition_read`, retention and compaction's swap in `log.partition_retention`.

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
     removed, `.swap/` is completed (see `Partition.swap_in`).
  2. Segments wholly below the recovery point are trusted: their data is not
     scanned, their indexes are sanity-checked and rebuilt when a check fails.
  3. Every segment from the one holding the recovery point on is validated from the
     recovery point's index position (or its last index entry), batch by batch;
     the first bad batch is cut off together with any segment after it. In the
     last segment offsets must run without gaps from `compacted-below` on: appends
     never leave one, and a compacted segment can be the last one (when a cut made
     it so), so gaps below that offset are compaction's, not damage.
The bytes cut, then and whenever a writer later finds a torn tail another process
left, are counted in `truncated_bytes`.

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

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from log.config import TopicConfig
from log.fsutil import FileLock, SharedCounter, read_text, write_atomic
from log.segment import Segment

__all__ = ["CLEANER_CHECKPOINT", "COMPACTED_BELOW", "LOCK_TIMEOUT_S", "PartitionLoading"]

# The cleaner's checkpoint: the offset up to which it last compacted the partition.
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
# The offset below which compaction may have left gaps (written by `swap_in`).
COMPACTED_BELOW = "compacted-below"
RECOVERY_POINT = "recovery-point"

LOCK_TIMEOUT_S = 30.0


class PartitionLoading:
    """Opening, recovery, the write lock and the view of the segment list (a part of
    `Partition`; see the module docstring). Holds no state of its own: the
    attributes below are set by `Partition.__init__`."""

    directory: Path
    config: TopicConfig
    _lock: threading.RLock
    _flock: FileLock
    _generation: SharedCounter
    _segments: tuple[Segment, ...]
    _retired: list[tuple[float, Segment]]
    _dir_mtime: int
    _seen_generation: int
    _compacted_below: int
    truncated_bytes: int
    # From log.partition_retention (an annotation, not a stub: it must not shadow it).
    _finish_swap: Callable[[], None]

    # ----------------------------------------------------------------- opening

    def _open(self) -> None:
        """Recover the directory, by the numbered steps of the module docstring.
        Under the lock (`Partition.__init__` takes it)."""
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
                self.truncated_bytes += cut
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
        for name in (COMPACTED_BELOW, CLEANER_CHECKPOINT):
            text = read_text(self.directory / name)
            try:
                found = max(found, int(text) if text else 0)
            except ValueError:
                continue
        return found

    def _read_recovery_point(self) -> int:
        text = read_text(self.directory / RECOVERY_POINT)
        try:
            return int(text) if text else 0
        except ValueError:
            return 0

    def _write_recovery_point(self) -> None:
        write_atomic(self.directory / RECOVERY_POINT, str(self._segments[-1].next_offset).encode())

    def _delete_segment_files(self, base: int) -> None:
        seg = Segment(self.directory, base)
        seg.close()
        seg.delete_files()

    # ---------------------------------------------------------- lock and views

    class _Locked:
        """The thread lock, then the `.lock` flock (threads of this process queue on
        the first, so only one of them waits on the file)."""

        __slots__ = ("p",)

        def __init__(self, p: PartitionLoading) -> None:
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
        return PartitionLoading._Locked(self)

    def _catch_up_writer(self) -> None:
        """Under the lock: take in what other processes did since we last looked."""
        if self._dir_changed():
            self._reload(writer=True)
            self._settle_generation()
        active = self._segments[-1]
        if active.file_size() != active.valid_end:
            self.truncated_bytes += active.catch_up(writer=True)

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
                        self.truncated_bytes += seg.recover()
                    else:
                        seg.load_for_reading()
            elif i + 1 < len(bases):
                # It may have been the active segment when we last looked: take in
                # what its writer added before rolling it.
                if seg.file_size() != seg.valid_end:
                    self.truncated_bytes += seg.catch_up(writer=writer)
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
        if active.file_size() > active.valid_end:
            with self._lock:
                active.catch_up(writer=False)
