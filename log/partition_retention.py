"""Retention and compaction's swap: the changes to a partition that remove files.

The part of `log.partition.Partition` that deletes segments (`apply_retention`)
and swaps a compaction result in (`swap_in`, its numbered steps in its docstring;
`_finish_swap` completes an interrupted swap when the partition is opened or
re-listed). Both run under the partition's write lock and announce the change of the
segment list to other processes (see `log.partition_load`).

Retention deletes a prefix of whole closed segments, never the active one. A
segment taken out of the list is not closed at once: a reader thread may still be
scanning it, so it is retired and closed after a grace period (`_close_retired`).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from log.config import TopicConfig
from log.fsutil import fsync_dir, read_text, write_atomic
from log.partition_load import COMPACTED_BELOW
from log.segment import Segment

__all__ = ["PartitionRetention"]

# How long a segment taken out of the list stays open for readers still in it.
_RETIRE_GRACE_S = 60.0


class PartitionRetention:
    """Retention and swap (a part of `Partition`; see the module docstring). The
    attributes below are set by `Partition.__init__`."""

    directory: Path
    config: TopicConfig
    clock: Callable[[], int]
    _segments: tuple[Segment, ...]
    _retired: list[tuple[float, Segment]]
    _compacted_below: int
    # From log.partition_load (annotations: they must not shadow).
    _locked: Callable[[], AbstractContextManager[None]]
    _changing_segments: Callable[[], AbstractContextManager[None]]
    _catch_up_writer: Callable[[], None]
    _note_dir: Callable[[], None]
    _reload: Callable[..., None]

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
            total = sum(s.valid_end for s in self._segments)
            for seg in closed:
                too_old = cfg.retention_ms >= 0 and now - seg.max_timestamp > cfg.retention_ms
                too_big = cfg.retention_bytes >= 0 and total - seg.valid_end >= cfg.retention_bytes
                if not (too_old or too_big):
                    break  # retention deletes a prefix only
                doomed.append(seg)
                total -= seg.valid_end
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
        3. The old segments' files are deleted (their `.txnindex` too: it describes
           batches the cleaned files no longer hold), then `replaces` is renamed to
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
                write_atomic(self.directory / COMPACTED_BELOW, str(end).encode())
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
                for suffix in (".log", ".index", ".timeindex", ".txnindex"):
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
