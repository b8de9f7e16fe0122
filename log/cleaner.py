"""Log compaction: keep the latest record per key in the closed segments of a
partition, and drop tombstones once they are older than `delete.retention.ms`.

Steps of one cleaning (numbered as in the code):
  1. Pick the cleanable segments: closed (never the active one), and no newer than
     `min.compaction.lag.ms`. Skip when the part written since the last cleaning
     is below `min.cleanable.dirty.ratio` of them.
  2. Build the key → latest offset map over those segments (one C-level
     `dict.update(zip(keys, offsets))` per batch).
  3. Rewrite them, grouped so each group fits in one segment (`segment.bytes`,
     `segment.index.bytes`, and offsets within 2^31 − 1 of its base, so every
     relative offset fits an index entry), into a staging directory: a record
     survives when it is the latest for its key, and a tombstone survives while
     younger than `delete.retention.ms`. Records keep their offsets (batches
     carry offset deltas); compression is kept per batch.
  4. Swap each group in (Partition.swap_in: crash-safe, finished on open) and
     checkpoint how far the partition is clean.

Reads of closed segments need no lock, so appends go on while a partition is
cleaned; only the swap itself takes the partition lock, briefly.

Transactions (a partition with `.transactional`, see log.partition_txn): only
segments wholly below the last stable offset are cleanable (every transaction with
data there has ended); the key map leaves out control batches and the batches of
aborted transactions, and the rewrite drops both. Kept records of committed
transactions are written as plain batches: with no transactional data left in the
cleaned segments, their markers can go too (a marker always follows all of its
transaction's data, and cleaning always starts at the first segment). Kafka's
cleaner keeps markers for `delete.retention.ms`; here they go at once, with their
epochs (a producer fenced that long ago is refused by the coordinator anyway).
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass

from log.batch import (
    ATTR_CODEC_MASK,
    ATTR_CONTROL,
    ATTR_TXN_BITS,
    BatchHeader,
    decode_columns,
    encode_batch,
    parse_header,
)
from log.config import INT_MAX, TopicConfig
from log.fsutil import read_text, write_atomic
from log.index import OffsetIndex, TimeIndex
from log.partition import CLEANER_CHECKPOINT as _CHECKPOINT
from log.partition import Partition
from log.partition_txn import in_aborted
from log.segment import Segment

__all__ = ["CleanResult", "clean_partition"]


@dataclass(frozen=True, slots=True)
class CleanResult:
    segments_before: int = 0
    segments_after: int = 0
    records_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


def _checkpoint(part: Partition) -> int:
    text = read_text(part.directory / _CHECKPOINT)
    try:
        return int(text) if text else 0
    except ValueError:
        return 0


def clean_partition(part: Partition, *, force: bool = False) -> CleanResult:
    """Compact `part` once if it is due (or always with `force`)."""
    cfg = part.config
    if not cfg.compacted:
        return CleanResult()
    now = part.clock()
    # Step 1
    view = part.txn_view()
    stable = view.last_stable_offset(view.end_offset) if view is not None else None
    ranges = view.aborted_from(0) if view is not None else None
    closed = list(part.segments[:-1])
    cleanable: list[Segment] = []
    for seg in closed:
        if seg.max_timestamp >= 0 and now - seg.max_timestamp < cfg.min_compaction_lag_ms:
            break
        if stable is not None and seg.next_offset > stable:
            break  # an open transaction has data here
        cleanable.append(seg)
    if not cleanable:
        return CleanResult()
    clean_upto = _checkpoint(part)
    total = sum(s.valid_end for s in cleanable)
    dirty = sum(s.valid_end for s in cleanable if s.base_offset >= clean_upto)
    if not force and (total == 0 or dirty / total < cfg.min_cleanable_dirty_ratio):
        return CleanResult()

    # Step 2
    latest: dict[bytes | None, int] = {}
    for seg in cleanable:
        for buf, pos, _fp, header in seg.batches(0):
            if header.attributes & ATTR_TXN_BITS and _dropped(buf, pos, header, ranges):
                continue
            cols = decode_columns(buf, pos, header)
            latest.update(zip(cols.keys, cols.offsets, strict=True))

    # Step 3 and 4
    groups = _groups(cleanable, cfg)
    horizon = now - cfg.delete_retention_ms
    removed = bytes_after = 0
    for group in groups:
        staged = part.directory / f".cleaning-{uuid.uuid4().hex}"
        staged.mkdir()
        try:
            out = Segment(
                staged,
                group[0].base_offset,
                index_interval_bytes=cfg.index_interval_bytes,
                create=True,
            )
            removed += _rewrite(group, out, latest, horizon, ranges)
            bytes_after += out.valid_end
            out.sync_all()
            out.close()
            part.swap_in(group, staged)
        finally:
            if staged.exists():
                shutil.rmtree(staged, ignore_errors=True)
    write_atomic(part.directory / _CHECKPOINT, str(cleanable[-1].next_offset).encode())
    return CleanResult(
        segments_before=len(cleanable),
        segments_after=len(groups),
        records_removed=removed,
        bytes_before=total,
        bytes_after=bytes_after,
    )


def _groups(cleanable: list[Segment], cfg: TopicConfig) -> list[list[Segment]]:
    """Runs of adjacent segments whose cleaned result fits one segment: its bytes
    and index entries no more than the inputs' (a rebuilt index has at most one
    entry more per input), and its offsets (up to the next segment's base) within
    INT_MAX of the first base, so an index entry can hold them."""
    max_offset_entries = cfg.segment_index_bytes // OffsetIndex.ENTRY_SIZE
    max_time_entries = cfg.segment_index_bytes // TimeIndex.ENTRY_SIZE
    groups: list[list[Segment]] = [[]]
    size = offset_entries = time_entries = 0
    for seg in cleanable:
        group = groups[-1]
        seg_offset_entries = len(seg.index.positions) + 1
        seg_time_entries = len(seg.time_index.timestamps) + 1
        if group and (
            size + seg.valid_end > cfg.segment_bytes
            or offset_entries + seg_offset_entries > max_offset_entries
            or time_entries + seg_time_entries > max_time_entries
            or seg.next_offset - 1 - group[0].base_offset > INT_MAX
        ):
            group = []
            groups.append(group)
            size = offset_entries = time_entries = 0
        group.append(seg)
        size += seg.valid_end
        offset_entries += seg_offset_entries
        time_entries += seg_time_entries
    return groups


def _dropped(buf: bytes, pos: int, header: BatchHeader, ranges: dict | None) -> bool:
    """A transactional batch the cleaner drops whole: a marker, or aborted data."""
    return bool(header.attributes & ATTR_CONTROL) or in_aborted(buf, pos, header, ranges)


def _rewrite(
    group: list[Segment],
    out: Segment,
    latest: dict[bytes | None, int],
    horizon: int,
    ranges: dict | None,
) -> int:
    """Copy the surviving records of `group` into `out`; return how many were dropped.
    Committed transactional records are rewritten as plain batches (module docstring)."""
    removed = 0
    for seg in group:
        for buf, pos, _fp, header in seg.batches(0):
            transactional = header.attributes & ATTR_TXN_BITS
            if transactional and _dropped(buf, pos, header, ranges):
                removed += header.record_count
                continue
            cols = decode_columns(buf, pos, header)
            keep = [
                i
                for i, (key, offset) in enumerate(zip(cols.keys, cols.offsets, strict=True))
                if latest.get(key) == offset
                and not (cols.values[i] is None and cols.timestamps[i] < horizon)
            ]
            removed += header.record_count - len(keep)
            if not keep:
                continue
            if len(keep) == header.record_count and not transactional:
                raw = bytes(memoryview(buf)[pos : pos + header.size])
                out.append(raw, header)
                continue
            base = cols.offsets[keep[0]]
            data = encode_batch(
                [cols.values[i] for i in keep],
                keys=[cols.keys[i] for i in keep],
                timestamps=[cols.timestamps[i] for i in keep],
                headers=[cols.headers[i] for i in keep],
                codec=header.attributes & ATTR_CODEC_MASK,
                base_offset=base,
                offset_deltas=[cols.offsets[i] - base for i in keep],
            )
            out.append(data, parse_header(data))
    if out.max_timestamp >= 0 and out.valid_end:
        # Like a roll: a final time entry so the segment's max timestamp is known.
        out.time_index.append(out.max_timestamp, out.last_batch_base())
    return removed
