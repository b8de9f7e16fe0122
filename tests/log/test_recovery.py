"""Crash recovery on open, on real files: torn tails, flipped bits, damaged indexes,
trailing garbage, a compaction swap interrupted at each step, and leftovers of
interrupted deletes and cleanings. Each case damages a copy of a cleanly written
log the way a crash or a bad disk would, reopens it, and checks what survives."""

from __future__ import annotations

import os
import random
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from log import CorruptRecordError, FileLog, Record
from log.batch import HEADER_SIZE, BatchHeader, parse_header
from log.cleaner import clean_partition
from log.fsutil import FileLock

TOPIC = "t"


# ---------------------------------------------------------------------- helpers


class _Clock:
    """A manual millisecond clock (the log must not roll on wall-clock time here)."""

    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _open(directory: Path, clock: Callable[[], int]) -> FileLog:
    return FileLog(directory, background=False, clock=clock)


def _read_all(log: FileLog, topic: str = TOPIC, partition: int = 0) -> list[Record]:
    out: list[Record] = []
    offset = log.earliest_offset(topic, partition)
    end = log.latest_offset(topic, partition)
    while offset < end:
        records = log.read(topic, partition, offset, max_records=10_000)
        assert records, f"nothing read at {offset} below the log end {end}"
        out += records
        offset = records[-1].offset + 1
    return out


def _batches(path: Path) -> list[tuple[int, BatchHeader]]:
    """(position, header) of every batch in a segment file written by the log."""
    data = path.read_bytes()
    out = []
    position = 0
    while position < len(data):
        header = parse_header(data, position)
        out.append((position, header))
        position += header.size
    assert position == len(data), f"{path} does not end on a batch boundary"
    return out


def _segment_logs(partition_dir: Path) -> list[Path]:
    return sorted(partition_dir.glob("*.log"))


def _partition_dir(log_dir: Path, topic: str = TOPIC, partition: int = 0) -> Path:
    return log_dir / topic / str(partition)


def _copy(src: Path, dst: Path) -> Path:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


def _flip_bit(path: Path, position: int, bit: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ (1 << bit)]))


def _first_offset_at_or_after(records: list[Record], timestamp: int) -> int | None:
    return next((r.offset for r in records if r.timestamp >= timestamp), None)


def _mixed_batches(last_codec: str | None) -> list[dict]:
    """Batches with keys, headers, null values and null keys, some compressed; the
    last one (the one a crash tears) uses `last_codec`."""
    return [
        {
            "values": [b"a0", None, b"a2"],
            "keys": [b"k0", b"k1", None],
            "headers": [[("h", b"1")], [], [("n", None), ("e", b"")]],
        },
        {"values": [b"b-%d" % i * 8 for i in range(4)], "compression": "gzip"},
        {"values": [None, None], "keys": [b"t0", b"t1"]},
        {
            "values": [b"c-%d" % i for i in range(5)],
            "keys": [b"ck%d" % i for i in range(5)],
            "headers": [[("i", b"%d" % i)] for i in range(5)],
            "compression": "zstd",
        },
        {"values": [b"d-\x00\xff" * 3], "keys": [b""], "compression": "lz4"},
        {
            "values": [b"last-%d" % i for i in range(4)] + [None],
            "keys": [b"lk%d" % i for i in range(5)],
            "headers": [[("seq", b"%d" % i), ("null", None)] for i in range(5)],
            "compression": last_codec,
        },
    ]


def _write(log: FileLog, batches: list[dict], clock: _Clock, *, roll_after: int = -1) -> None:
    for i, batch in enumerate(batches):
        clock.now += 10
        log.append(TOPIC, 0, **batch)
        if i == roll_after:
            log.partition(TOPIC, 0).roll()


# ------------------------------------------------------------ 1. torn tail


@pytest.mark.parametrize("codec", [None, "gzip", "lz4", "zstd"])
@pytest.mark.parametrize("layout", ["one-segment", "rolled-dense-index"])
def test_torn_tail_at_every_byte_is_cut_to_the_batch_boundary(tmp_path, codec, layout) -> None:
    clock = _Clock()
    original = tmp_path / "original"
    config = {"index.interval.bytes": 1} if layout == "rolled-dense-index" else {}
    with _open(original, clock) as log:
        log.create_topic(TOPIC, 1, config=config)
        _write(log, _mixed_batches(codec), clock, roll_after=1 if config else -1)
        records = _read_all(log)
    last_log = _segment_logs(_partition_dir(original))[-1]
    batches = _batches(last_log)
    assert len(batches) >= 2
    last_start, last_header = batches[-1]
    last_base = last_header.base_offset
    if layout == "rolled-dense-index":
        assert last_log.with_suffix(".index").stat().st_size > 0, "the test needs index entries"
    file_end = last_log.stat().st_size
    kept = [r for r in records if r.offset < last_base]
    assert len(kept) < len(records)

    for length in range(last_start, file_end):
        copy = _copy(original, tmp_path / "copy")
        torn = _partition_dir(copy) / last_log.name
        os.truncate(torn, length)
        clock.now += 10
        with _open(copy, clock) as log:
            part = log.partition(TOPIC, 0)
            where = f"torn at {length} (batch at {last_start}..{file_end})"
            assert part.truncated_bytes == length - last_start, where
            assert torn.stat().st_size == last_start, where
            assert log.latest_offset(TOPIC, 0) == last_base, where
            assert _read_all(log) == kept, where
            for r in kept:
                assert log.offset_for_timestamp(TOPIC, 0, r.timestamp) == (
                    _first_offset_at_or_after(kept, r.timestamp)
                ), where
            assert log.offset_for_timestamp(TOPIC, 0, last_header.max_timestamp) is None, where
            appended = log.append(TOPIC, 0, [b"after", None], keys=[b"x", b"y"])
            assert appended == range(last_base, last_base + 2), where
            assert [(r.key, r.value) for r in log.read(TOPIC, 0, last_base)] == [
                (b"x", b"after"),
                (b"y", None),
            ], where
        # The repaired log opens again with nothing left to cut.
        with _open(copy, clock) as log:
            assert log.partition(TOPIC, 0).truncated_bytes == 0, where
            assert _read_all(log)[: len(kept)] == kept, where
            assert log.latest_offset(TOPIC, 0) == last_base + 2, where


# ------------------------------------------------------------ 2. bit flips


def _write_plain(log: FileLog, clock: _Clock, count: int, *, records: int = 3) -> None:
    for i in range(count):
        clock.now += 10
        log.append(
            TOPIC,
            0,
            [b"v%04d-%d" % (i, j) + b"." * 20 for j in range(records)],
            keys=[b"k%d" % (i % 7)] * records,
            headers=[[("i", b"%d" % i)]] * records,
        )


def test_bit_flip_in_the_last_batch_drops_it(tmp_path) -> None:
    clock = _Clock()
    original = tmp_path / "original"
    with _open(original, clock) as log:
        log.create_topic(TOPIC, 1)
        _write(log, _mixed_batches("zstd")[:-1], clock)
        clock.now += 10
        log.append(TOPIC, 0, [b"last-%d" % i for i in range(6)], keys=[b"k"] * 6)
        records = _read_all(log)
    last_log = _segment_logs(_partition_dir(original))[-1]
    last_start, last_header = _batches(last_log)[-1]
    kept = [r for r in records if r.offset < last_header.base_offset]

    # Everything after the base offset is covered by the length, magic and CRC checks.
    # (Flips in the base offset are the next test.)
    positions = range(last_start + 8, last_start + last_header.size, 3)
    assert len(positions) > 20
    for n, position in enumerate(positions):
        copy = _copy(original, tmp_path / "copy")
        _flip_bit(_partition_dir(copy) / last_log.name, position, n % 8)
        with _open(copy, clock) as log:
            where = f"bit {n % 8} of byte {position} (batch at {last_start})"
            assert log.latest_offset(TOPIC, 0) == last_header.base_offset, where
            assert (_partition_dir(copy) / last_log.name).stat().st_size == last_start, where
            assert _read_all(log) == kept, where


def _base_offset_flips(base: int) -> tuple[list[int], list[int]]:
    """Bits of a base offset whose flip lowers it, and (below bit 62) raises it."""
    lowering = [b for b in range(64) if base >> b & 1] + [63]
    raising = [b for b in range(62) if not base >> b & 1]
    return lowering, raising


def _last_batch_log(tmp_path: Path, clock: _Clock) -> tuple[Path, Path, int, BatchHeader]:
    original = tmp_path / "original"
    with _open(original, clock) as log:
        log.create_topic(TOPIC, 1)
        _write_plain(log, clock, 6)
    last_log = _segment_logs(_partition_dir(original))[-1]
    position, header = _batches(last_log)[-1]
    return original, last_log, position, header


def test_bit_flip_lowering_the_last_base_offset_drops_the_batch(tmp_path) -> None:
    clock = _Clock()
    original, last_log, position, header = _last_batch_log(tmp_path, clock)
    lowering, _ = _base_offset_flips(header.base_offset)
    for bit in lowering:
        copy = _copy(original, tmp_path / "copy")
        _flip_bit(_partition_dir(copy) / last_log.name, position + bit // 8, bit % 8)
        with _open(copy, clock) as log:
            assert log.latest_offset(TOPIC, 0) == header.base_offset, f"bit {bit}"
            assert (_partition_dir(copy) / last_log.name).stat().st_size == position


def test_bit_flip_raising_the_last_base_offset_is_detected(tmp_path) -> None:
    clock = _Clock()
    original, last_log, position, header = _last_batch_log(tmp_path, clock)
    _, raising = _base_offset_flips(header.base_offset)
    for bit in raising:
        copy = _copy(original, tmp_path / "copy")
        _flip_bit(_partition_dir(copy) / last_log.name, position + bit // 8, bit % 8)
        with _open(copy, clock) as log:
            assert log.latest_offset(TOPIC, 0) in (header.base_offset, header.next_offset), (
                f"bit {bit}: log end {log.latest_offset(TOPIC, 0)}"
            )


def test_bit_flip_inside_a_trusted_closed_segment_is_reported_with_its_position(
    tmp_path,
) -> None:
    clock = _Clock()
    original = tmp_path / "original"
    with _open(original, clock) as log:
        log.create_topic(TOPIC, 1, config={"segment.bytes": 2000})
        _write_plain(log, clock, 60)
        records = _read_all(log)
    # A clean close wrote the recovery point: every closed segment is trusted on open.
    logs = _segment_logs(_partition_dir(original))
    assert len(logs) >= 3
    victim_log = logs[1]
    batches = _batches(victim_log)
    assert len(batches) >= 5
    position, header = batches[len(batches) // 2]
    # Bytes of the batch the checks cover: length, magic, CRC, attributes, payload.
    targets = [8, 12, 13, 17, 30, HEADER_SIZE, header.size // 2, header.size - 1]
    for n, target in enumerate(targets):
        copy = _copy(original, tmp_path / "copy")
        damaged = _partition_dir(copy) / victim_log.name
        _flip_bit(damaged, position + target, n % 8)
        where = f"bit {n % 8} of byte {target} of the batch at {position}"
        with _open(copy, clock) as log:
            # Not a crash: nothing is cut, nothing is lost on open.
            assert damaged.stat().st_size == victim_log.stat().st_size, where
            assert log.latest_offset(TOPIC, 0) == records[-1].offset + 1, where
            with pytest.raises(CorruptRecordError) as info:
                _read_all(log)
            assert info.value.position == position, where
            assert Path(info.value.path).name == victim_log.name, where
            assert Path(info.value.path).parent.resolve() == damaged.parent.resolve(), where
            # Everything before the bad batch still reads, exactly.
            before = [r for r in records if r.offset < header.base_offset]
            got = log.read(TOPIC, 0, 0, max_records=len(before))
            while len(got) < len(before):
                got += log.read(TOPIC, 0, got[-1].offset + 1, max_records=len(before) - len(got))
            assert got == before, where
            # So does everything in the segments after it.
            after_base = int(logs[2].stem)
            assert (
                log.read(TOPIC, 0, after_base, max_records=5)
                == [r for r in records if r.offset >= after_base][:5]
            ), where
            # And appends go on.
            end = records[-1].offset + 1
            assert log.append(TOPIC, 0, [b"more"]) == range(end, end + 1), where


# ---------------------------------------------------------- 3. damaged index


def _index_log(tmp_path: Path, clock: _Clock) -> tuple[Path, list[Record]]:
    """Segments of ~2 KB with an index entry every 128 bytes."""
    original = tmp_path / "original"
    with _open(original, clock) as log:
        log.create_topic(TOPIC, 1, config={"segment.bytes": 2000, "index.interval.bytes": 128})
        _write_plain(log, clock, 50)
        records = _read_all(log)
    return original, records


def _garbage(path: Path) -> None:
    path.write_bytes(random.Random(path.name).randbytes(path.stat().st_size))


def _partial_entry(path: Path) -> None:
    os.truncate(path, path.stat().st_size - 3)


def _delete(path: Path) -> None:
    path.unlink()


def _zeros(path: Path) -> None:
    path.write_bytes(bytes(path.stat().st_size))


_DAMAGE = {
    "partial-entry": _partial_entry,
    "garbage": _garbage,
    "zeros": _zeros,
    "deleted": _delete,
}


def _check_answers(log: FileLog, records: list[Record]) -> None:
    """Every read and every timestamp lookup gives what the intact log gives."""
    assert _read_all(log) == records
    for r in records:
        assert log.read(TOPIC, 0, r.offset, max_records=1) == [r]
    stamps = sorted({r.timestamp for r in records})
    for ts in [stamps[0] - 1, *stamps, *(t - 1 for t in stamps), stamps[-1] + 1]:
        assert log.offset_for_timestamp(TOPIC, 0, ts) == _first_offset_at_or_after(records, ts), (
            f"timestamp {ts}"
        )


def _damaged_copy(
    tmp_path: Path, which: str, suffix: str, damage: str
) -> tuple[Path, list[Record], Path, bytes]:
    """A copy of an indexed log with one index file of one segment damaged:
    (log dir, records, the damaged file, its intact content)."""
    original, records = _index_log(tmp_path, _Clock())
    logs = _segment_logs(_partition_dir(original))
    assert len(logs) >= 3
    segment = logs[-1] if which == "active" else logs[1]
    intact = segment.with_suffix(suffix).read_bytes()
    assert len(intact) >= 2 * (8 if suffix == ".index" else 12), "the test needs index entries"
    copy = _copy(original, tmp_path / "copy")
    damaged = _partition_dir(copy) / segment.with_suffix(suffix).name
    _DAMAGE[damage](damaged)
    return copy, records, damaged, intact


def _check_rebuilt(log: FileLog, records: list[Record], damaged: Path, intact: bytes) -> None:
    assert damaged.exists() and damaged.stat().st_size > 0, "index not rebuilt"
    assert damaged.read_bytes() == intact, "the rebuilt index differs from the original"
    end = records[-1].offset + 1
    assert log.append(TOPIC, 0, [b"after"]) == range(end, end + 1)


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize("damage", ["partial-entry", "garbage", "zeros", "deleted"])
def test_damaged_index_of_the_active_segment_is_rebuilt(tmp_path, damage, suffix) -> None:
    copy, records, damaged, intact = _damaged_copy(tmp_path, "active", suffix, damage)
    with _open(copy, _Clock()) as log:
        _check_answers(log, records)
        _check_rebuilt(log, records, damaged, intact)


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize("damage", ["partial-entry", "garbage", "zeros", "deleted"])
def test_damaged_index_of_a_closed_segment_gives_right_answers(tmp_path, damage, suffix) -> None:
    copy, records, _damaged, _intact = _damaged_copy(tmp_path, "closed", suffix, damage)
    with _open(copy, _Clock()) as log:
        _check_answers(log, records)


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize("damage", ["partial-entry", "garbage", "zeros", "deleted"])
def test_damaged_index_of_a_closed_segment_is_rebuilt(tmp_path, damage, suffix) -> None:
    copy, records, damaged, intact = _damaged_copy(tmp_path, "closed", suffix, damage)
    with _open(copy, _Clock()) as log:
        log.read(TOPIC, 0, 0, max_records=1)
        _check_rebuilt(log, records, damaged, intact)


@pytest.mark.parametrize("which", ["active", "closed"])
def test_index_entry_pointing_into_a_batch_is_not_trusted(tmp_path, which) -> None:
    original, records = _index_log(tmp_path, _Clock())
    logs = _segment_logs(_partition_dir(original))
    segment = logs[-1] if which == "active" else logs[1]
    copy = _copy(original, tmp_path / "copy")
    index = _partition_dir(copy) / segment.with_suffix(".index").name
    assert index.stat().st_size >= 16
    intact = index.read_bytes()
    # One flipped bit: the first entry's position (low byte at byte 4) moves 4 bytes,
    # into a batch; the entries stay in order and inside the file.
    _flip_bit(index, 4, 2)
    with _open(copy, _Clock()) as log:
        _check_answers(log, records)
        # The read that met the bad entry rebuilt the index (the lock was free).
        assert index.read_bytes() == intact


@pytest.mark.parametrize("which", ["active", "closed"])
def test_index_entry_naming_the_wrong_offset_is_not_trusted(tmp_path, which) -> None:
    """An entry that names an offset of the batch before the one it points at would
    make a read skip records; the read notices the batch is not the one named."""
    original, records = _index_log(tmp_path, _Clock())
    logs = _segment_logs(_partition_dir(original))
    segment = logs[-1] if which == "active" else logs[1]
    copy = _copy(original, tmp_path / "copy")
    index = _partition_dir(copy) / segment.with_suffix(".index").name
    intact = index.read_bytes()
    (rel,) = struct.unpack_from("<I", intact, 0)
    assert rel >= 2
    with open(index, "r+b") as f:
        f.write(struct.pack("<I", rel - 1))  # an offset inside the batch before
    with _open(copy, _Clock()) as log:
        _check_answers(log, records)
        assert index.read_bytes() == intact


def test_a_reader_without_the_lock_rebuilds_the_index_in_memory_only(tmp_path) -> None:
    """While another process holds the partition lock, the read that meets a bad
    entry still gives right answers, and leaves the files to the lock holder."""
    original, records = _index_log(tmp_path, _Clock())
    segment = _segment_logs(_partition_dir(original))[1]
    copy = _copy(original, tmp_path / "copy")
    index = _partition_dir(copy) / segment.with_suffix(".index").name
    _flip_bit(index, 4, 2)
    damaged = index.read_bytes()
    with _open(copy, _Clock()) as log:
        log.partition(TOPIC, 0)  # opened (and recovered) before the lock is taken
        holder = FileLock(_partition_dir(copy) / ".lock")
        holder.acquire()
        try:
            _check_answers(log, records)
            assert index.read_bytes() == damaged
        finally:
            holder.release()
            holder.close()


def test_a_base_offset_raised_into_the_next_segment_is_cut(tmp_path) -> None:
    """Without a recovery point every segment is validated; a closed one (which may
    be compacted, so gaps are allowed) still cannot hold the next segment's offsets:
    the batch is cut there, with the segments after it."""
    clock = _Clock()
    log_dir = tmp_path / "log"
    with _open(log_dir, clock) as log:
        log.create_topic(TOPIC, 1, config={"segment.bytes": 2000})
        _write_plain(log, clock, 30)
        records = _read_all(log)
    pdir = _partition_dir(log_dir)
    (pdir / "recovery-point").unlink()  # as if the crash came before any was written
    logs = _segment_logs(pdir)
    assert len(logs) >= 3
    position, header = _batches(logs[0])[-1]
    next_base = int(logs[1].stem)
    assert header.next_offset == next_base
    _flip_bit(logs[0], position + 2, 0)  # the base offset grows by 65536
    with _open(log_dir, clock) as log:
        assert log.partition(TOPIC, 0).truncated_bytes == header.size
        assert [p.name for p in _segment_logs(pdir)] == [logs[0].name]
        assert _read_all(log) == [r for r in records if r.offset < header.base_offset]
        assert log.latest_offset(TOPIC, 0) == header.base_offset


def test_damaged_index_entry_at_the_recovery_point_cuts_nothing(tmp_path) -> None:
    """Recovery checks the data from the recovery point's index entry on: when that
    entry points into a batch, it starts from the segment start instead of cutting
    the good batches after it."""
    clock = _Clock()
    log_dir = tmp_path / "log"
    with _open(log_dir, clock) as log:
        log.create_topic(TOPIC, 1, config={"index.interval.bytes": 128})
        _write_plain(log, clock, 20)
    recovery_point = int((_partition_dir(log_dir) / "recovery-point").read_text())
    log = _open(log_dir, clock)
    try:
        _write_plain(log, clock, 20)  # not fsynced, not closed: what a crash leaves
        records = _read_all(log)
        copy = _copy(log_dir, tmp_path / "crashed")
    finally:
        log.close()
    index = _partition_dir(copy) / f"{0:020d}.index"
    entries = list(struct.iter_unpack("<II", index.read_bytes()))
    at_recovery_point = max(i for i, (rel, _) in enumerate(entries) if rel <= recovery_point)
    assert 0 < at_recovery_point < len(entries) - 1, "the test needs entries after it"
    _flip_bit(index, 8 * at_recovery_point + 4, 2)
    with _open(copy, clock) as log:
        assert log.partition(TOPIC, 0).truncated_bytes == 0
        assert _read_all(log) == records


# ---------------------------------------------------- 4. garbage after the end


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(random.Random(1).randbytes(100), id="random-100"),
        pytest.param(random.Random(2).randbytes(100), id="random-100-b"),
        pytest.param(random.Random(3).randbytes(5000), id="random-5000"),
        pytest.param(bytes(100), id="zeros-100"),
        pytest.param(bytes(4096), id="zeros-4096"),
        pytest.param(b"\x01" * 10, id="short-10"),
        pytest.param(b"\xff" * 100, id="ones-100"),
    ],
)
def test_garbage_after_the_last_batch_is_cut(tmp_path, garbage) -> None:
    clock = _Clock()
    original = tmp_path / "original"
    with _open(original, clock) as log:
        log.create_topic(TOPIC, 1, config={"index.interval.bytes": 64})
        _write(log, _mixed_batches("gzip"), clock)
        records = _read_all(log)
    segment = _segment_logs(_partition_dir(original))[-1]
    size = segment.stat().st_size
    copy = _copy(original, tmp_path / "copy")
    damaged = _partition_dir(copy) / segment.name
    with open(damaged, "ab") as f:
        f.write(garbage)
    with _open(copy, clock) as log:
        assert log.partition(TOPIC, 0).truncated_bytes == len(garbage)
        assert damaged.stat().st_size == size
        assert _read_all(log) == records
        end = records[-1].offset + 1
        assert log.append(TOPIC, 0, [b"next"]) == range(end, end + 1)
        assert log.read(TOPIC, 0, end)[0].value == b"next"


def test_a_repeated_last_batch_is_cut(tmp_path) -> None:
    """A copy of the last batch after itself (offsets going backwards) is not data."""
    clock = _Clock()
    original = tmp_path / "original"
    with _open(original, clock) as log:
        log.create_topic(TOPIC, 1)
        _write_plain(log, clock, 5)
        records = _read_all(log)
    segment = _segment_logs(_partition_dir(original))[-1]
    position, header = _batches(segment)[-1]
    raw = segment.read_bytes()
    copy = _copy(original, tmp_path / "copy")
    damaged = _partition_dir(copy) / segment.name
    damaged.write_bytes(raw + raw[position:])
    with _open(copy, clock) as log:
        # A partition is recovered when it is first opened, not with the FileLog.
        assert log.partition(TOPIC, 0).truncated_bytes == header.size
        assert damaged.stat().st_size == len(raw)
        assert _read_all(log) == records
        assert log.latest_offset(TOPIC, 0) == header.next_offset


# --------------------------------------------- 5. crash during a compaction swap


COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.01}


def _latest_per_key(records: list[Record]) -> dict[bytes | None, tuple[int, bytes | None]]:
    latest: dict[bytes | None, tuple[int, bytes | None]] = {}
    for r in records:
        latest[r.key] = (r.offset, r.value)
    return latest


class _SwapFixture:
    """A compacted partition before cleaning (`before`), the same partition cleaned
    for real (`after`), and the files of the cleaned segment that replaced the old ones."""

    def __init__(self, tmp_path: Path) -> None:
        self.clock = _Clock()
        self.before = tmp_path / "before"
        with _open(self.before, self.clock) as log:
            log.create_topic(TOPIC, 1, config=COMPACT)
            part = log.partition(TOPIC, 0)
            n = 0
            for segment in range(4):
                for _ in range(6):
                    self.clock.now += 10
                    keys = [b"key-%d" % ((n + j) % 9) for j in range(3)]
                    values: list[bytes | None] = [b"value-%d-%d" % (n, j) for j in range(3)]
                    if n % 5 == 4:
                        values[1] = None  # a recent tombstone: kept by the cleaner
                    log.append(TOPIC, 0, values, keys=keys, headers=[[("n", b"%d" % n)]] * 3)
                    n += 1
                if segment < 3:
                    part.roll()
            self.records = _read_all(log)
            self.old_bases = [s.base_offset for s in part.segments[:-1]]
        assert len(self.old_bases) == 3
        self.expected_latest = _latest_per_key(self.records)

        self.after = _copy(self.before, tmp_path / "after")
        with _open(self.after, self.clock) as log:
            result = clean_partition(log.partition(TOPIC, 0), force=True)
            assert result.segments_before == 3 and result.segments_after == 1
            assert result.records_removed > 0
            self.cleaned = _read_all(log)
        assert len(self.cleaned) < len(self.records)
        assert _latest_per_key(self.cleaned) == self.expected_latest
        new_base = self.old_bases[0]
        self.staged = {
            suffix: (_partition_dir(self.after) / f"{new_base:020d}{suffix}").read_bytes()
            for suffix in (".log", ".index", ".timeindex")
        }
        assert (
            self.staged[".log"]
            != (_partition_dir(self.before) / f"{new_base:020d}.log").read_bytes()
        )

    def state(self, tmp_path: Path, name: str) -> tuple[Path, Path]:
        """A copy of `before` to build a crash state in: (log dir, partition dir)."""
        log_dir = _copy(self.before, tmp_path / name)
        return log_dir, _partition_dir(log_dir)

    def stage(self, directory: Path, suffixes: tuple[str, ...] = (".log", ".index", ".timeindex")):
        directory.mkdir(exist_ok=True)
        for suffix in suffixes:
            (directory / f"{self.old_bases[0]:020d}{suffix}").write_bytes(self.staged[suffix])

    def delete_old(self, pdir: Path, bases: list[int]) -> None:
        for base in bases:
            for suffix in (".log", ".index", ".timeindex"):
                (pdir / f"{base:020d}{suffix}").unlink(missing_ok=True)

    def check(self, log_dir: Path, *, completed: bool) -> None:
        pdir = _partition_dir(log_dir)
        with _open(log_dir, self.clock) as log:
            got = _read_all(log)
            assert got == (self.cleaned if completed else self.records)
            assert _latest_per_key(got) == self.expected_latest
            assert log.latest_offset(TOPIC, 0) == self.records[-1].offset + 1
            # The log goes on: appends, and a later cleaning, keep every latest value.
            clock_now = self.clock.now
            end = self.records[-1].offset + 1
            assert log.append(TOPIC, 0, [b"new"], keys=[b"key-0"]) == range(end, end + 1)
            log.partition(TOPIC, 0).roll()
            clean_partition(log.partition(TOPIC, 0), force=True)
            latest = _latest_per_key(_read_all(log))
            assert latest == {**self.expected_latest, b"key-0": (end, b"new")}
            assert self.clock.now == clock_now
        leftovers = [n for n in os.listdir(pdir) if n.startswith((".swap", ".cleaning"))]
        assert leftovers == []
        assert not [n for n in os.listdir(pdir) if n.endswith((".deleted", ".tmp"))]


@pytest.fixture
def swap(tmp_path) -> _SwapFixture:
    return _SwapFixture(tmp_path)


def test_swap_staged_without_replaces_is_discarded(swap, tmp_path) -> None:
    """Crash in step 1 after the rename would need `replaces`: nothing was promised."""
    log_dir, pdir = swap.state(tmp_path, "s")
    swap.stage(pdir / ".swap")
    swap.check(log_dir, completed=False)


def test_swap_staged_without_replaces_partial_files_is_discarded(swap, tmp_path) -> None:
    log_dir, pdir = swap.state(tmp_path, "s")
    swap.stage(pdir / ".swap", (".log",))
    with open(pdir / ".swap" / f"{swap.old_bases[0]:020d}.log", "r+b") as f:
        f.truncate(len(swap.staged[".log"]) // 2)
    swap.check(log_dir, completed=False)


def test_cleaning_dir_with_replaces_is_discarded(swap, tmp_path) -> None:
    """Crash after `replaces` was written in the staging dir, before its rename."""
    log_dir, pdir = swap.state(tmp_path, "s")
    staging = pdir / ".cleaning-0123456789abcdef"
    swap.stage(staging)
    (staging / "replaces").write_text(" ".join(map(str, swap.old_bases)))
    swap.check(log_dir, completed=False)


def test_swap_with_replaces_completes(swap, tmp_path) -> None:
    """Crash right after step 1: old files all there, the swap is promised."""
    log_dir, pdir = swap.state(tmp_path, "s")
    swap.stage(pdir / ".swap")
    (pdir / ".swap" / "replaces").write_text(" ".join(map(str, swap.old_bases)))
    swap.check(log_dir, completed=True)


@pytest.mark.parametrize("deleted", [1, 2, 3])
def test_swap_with_replaces_and_some_old_files_deleted_completes(swap, tmp_path, deleted) -> None:
    """Crash in step 2, after some old segments were deleted, one mid-rename."""
    log_dir, pdir = swap.state(tmp_path, "s")
    swap.stage(pdir / ".swap")
    (pdir / ".swap" / "replaces").write_text(" ".join(map(str, swap.old_bases)))
    swap.delete_old(pdir, swap.old_bases[: deleted - 1])
    half = pdir / f"{swap.old_bases[deleted - 1]:020d}.log"
    os.replace(half, half.with_name(half.name + ".deleted"))
    swap.check(log_dir, completed=True)


@pytest.mark.parametrize("moved", [(), (".log",), (".log", ".index"), (".timeindex",)])
def test_swap_with_replaced_completes(swap, tmp_path, moved) -> None:
    """Crash in step 3: old files gone, `replaced` written, some new files moved in."""
    log_dir, pdir = swap.state(tmp_path, "s")
    swap.delete_old(pdir, swap.old_bases)
    swap.stage(pdir / ".swap", tuple(s for s in (".log", ".index", ".timeindex") if s not in moved))
    swap.stage(pdir, moved)
    (pdir / ".swap" / "replaced").write_text(" ".join(map(str, swap.old_bases)))
    swap.check(log_dir, completed=True)


def test_swap_with_only_replaced_left_completes(swap, tmp_path) -> None:
    """Crash in step 3 after every file moved, before `.swap/` was removed."""
    log_dir, pdir = swap.state(tmp_path, "s")
    swap.delete_old(pdir, swap.old_bases)
    swap.stage(pdir)
    (pdir / ".swap").mkdir()
    (pdir / ".swap" / "replaced").write_text(" ".join(map(str, swap.old_bases)))
    swap.check(log_dir, completed=True)


# -------------------------------------------------------- 6. leftovers on open


def test_leftover_deleted_files_and_cleaning_dirs_are_removed(tmp_path) -> None:
    clock = _Clock()
    log_dir = tmp_path / "log"
    with _open(log_dir, clock) as log:
        log.create_topic(TOPIC, 1, config={"segment.bytes": 600})
        _write_plain(log, clock, 12)
        records = _read_all(log)
    pdir = _partition_dir(log_dir)
    logs = _segment_logs(pdir)
    assert len(logs) >= 3
    # A delete interrupted between rename and unlink, for files that are gone and
    # for names a live segment also has; a half-written state file; two cleanings.
    leftovers = [
        pdir / "00000000000000099999.log.deleted",
        pdir / "00000000000000099999.index.deleted",
        pdir / (logs[1].name + ".deleted"),
        pdir / (logs[1].with_suffix(".timeindex").name + ".deleted"),
        pdir / "recovery-point.tmp",
    ]
    for path in leftovers:
        path.write_bytes(b"stale" * 50)
    cleaning = pdir / ".cleaning-5f0e"
    cleaning.mkdir()
    (cleaning / logs[0].name).write_bytes(logs[0].read_bytes()[:100])
    (cleaning / "replaces").write_text("0")
    (pdir / ".cleaning-empty").mkdir()
    deleted_topic = log_dir / "~deleted-abc"
    (deleted_topic / "0").mkdir(parents=True)
    (deleted_topic / "0" / logs[0].name).write_bytes(b"x")
    with _open(log_dir, clock) as log:
        assert _read_all(log) == records
        for path in [*leftovers, cleaning, pdir / ".cleaning-empty", deleted_topic]:
            assert not path.exists(), path
        assert [p.name for p in _segment_logs(pdir)] == [p.name for p in logs]
        assert log.list_topics() == [TOPIC]


def test_damaged_time_index_and_batch_of_a_closed_segment_still_open(tmp_path) -> None:
    """Rebuilding a closed segment's indexes stops at a damaged batch; opening the
    partition does not fail on it, and reads report it where it is."""
    clock = _Clock()
    original = tmp_path / "original"
    with _open(original, clock) as log:
        log.create_topic(TOPIC, 1, config={"segment.bytes": 2000})
        _write_plain(log, clock, 30)
        records = _read_all(log)
    logs = _segment_logs(_partition_dir(original))
    assert len(logs) >= 3
    copy = _copy(original, tmp_path / "copy")
    victim = _partition_dir(copy) / logs[1].name
    _flip_bit(victim, 12, 1)  # the first batch's magic: no batch of it checks out
    victim.with_suffix(".timeindex").unlink()
    with _open(copy, clock) as log:
        assert log.latest_offset(TOPIC, 0) == records[-1].offset + 1
        with pytest.raises(CorruptRecordError) as info:
            log.read(TOPIC, 0, int(logs[1].stem))
        assert info.value.position == 0
        after = int(logs[2].stem)
        assert (
            log.read(TOPIC, 0, after, max_records=3)
            == [r for r in records if r.offset >= after][:3]
        )
