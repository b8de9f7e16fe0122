"""Model-based test of a compacted partition through crashes: random keyed appends,
rolls, compactions, clean reopens and crashes that tear or garble bytes (in the
active segment or, with the recovery point lost too, in a closed compacted one),
checked after every step against a plain reference model.

The rule under test: offset gaps that compaction left are never taken for damage,
whichever segment ends up last, so recovery cuts exactly at the damaged batch and
nothing valid before it is ever lost. (A compacted segment that a cut made the last
one used to be scanned as if appends alone had written it: its gaps cut good
records on the next open.)"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from log import FileLog
from log.batch import parse_header
from log.cleaner import clean_partition
from tests.conftest import ManualClock

TOPIC = "m"
CRC_START = 17  # the CRC covers the batch from this byte on (docs/log-format.md)

Model = dict[int, tuple[bytes, bytes | None]]  # offset → (key, value)


def _batches(path: Path) -> list[tuple[int, int, int, int]]:
    """(position, size, base offset, next offset) of each batch in a segment file."""
    data = path.read_bytes()
    out = []
    position = 0
    while position < len(data):
        header = parse_header(data, position)
        out.append((position, header.size, header.base_offset, header.next_offset))
        position += header.size
    return out


class CompactedPartitionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root: Path | None = None
        self.log: FileLog | None = None

    @initialize(index_interval=st.sampled_from([64, 4096]))
    def setup(self, index_interval: int) -> None:
        # 4096 (more than a segment): no index entries, so every open scans whole
        # segments; 64: recovery starts at index entries.
        self.root = Path(tempfile.mkdtemp(prefix="compact-model-"))
        self.clock = ManualClock()
        self.log = FileLog(self.root / "log", background=False, clock=self.clock)
        self.log.create_topic(
            TOPIC,
            1,
            config={
                "cleanup.policy": "compact",
                "segment.bytes": 500,
                "index.interval.bytes": index_interval,
            },
        )
        self.model: Model = {}
        self.end = 0
        self.generation = 0

    def teardown(self) -> None:
        if self.log is not None:
            self.log.close()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    @property
    def pdir(self) -> Path:
        assert self.log is not None
        return self.log.directory / TOPIC / "0"

    # ------------------------------------------------------------------ steps

    @rule(
        keys=st.lists(st.sampled_from([b"a", b"b", b"c", b"d", b"e"]), min_size=1, max_size=6),
        tombstone=st.booleans(),
    )
    def append(self, keys: list[bytes], tombstone: bool) -> None:
        assert self.log is not None
        values = [b"%s@%d" % (k, self.end + i) for i, k in enumerate(keys)]
        if tombstone:
            values[-1] = None
        offsets = self.log.append(TOPIC, 0, values, keys=keys)
        assert offsets.start == self.end
        for offset, key, value in zip(offsets, keys, values, strict=True):
            self.model[offset] = (key, value)
        self.end = offsets.stop
        self.clock.advance(10)

    @rule()
    def roll(self) -> None:
        assert self.log is not None
        self.log.partition(TOPIC, 0).roll()

    @rule()
    def compact(self) -> None:
        """The cleaner keeps the latest record per key below the active segment
        (tombstones stay: delete.retention.ms is a day of the manual clock)."""
        assert self.log is not None
        part = self.log.partition(TOPIC, 0)
        active_base = part.segments[-1].base_offset
        clean_partition(part, force=True)
        latest: dict[bytes, int] = {}
        for offset in sorted(o for o in self.model if o < active_base):
            latest[self.model[offset][0]] = offset
        self.model = {
            o: kv for o, kv in self.model.items() if o >= active_base or latest[kv[0]] == o
        }

    @rule()
    def reopen(self) -> None:
        assert self.log is not None
        self.log.close()
        self.log = FileLog(self.log.directory, background=False, clock=self.clock)

    def _crash(self) -> Path:
        """A crash image: the files as they are now (page cache included), the log
        never closed; the running log is then dropped. Returns the image's root."""
        assert self.log is not None and self.root is not None
        self.generation += 1
        image = self.root / f"crash-{self.generation}"
        shutil.copytree(self.log.directory, image)
        old = self.log.directory
        self.log.close()
        self.log = None
        shutil.rmtree(old)
        return image

    def _reopen(self, image: Path) -> None:
        self.log = FileLog(image, background=False, clock=self.clock)

    @rule()
    def crash(self) -> None:
        """A crash that damages nothing loses nothing."""
        self._reopen(self._crash())

    @rule(data=st.data())
    def crash_garbling_a_batch(self, data: st.DataObject) -> None:
        """A crash (or a bad disk) garbles a byte of one batch, in the active segment
        or a closed one. When the batch lies below the recovery point the recovery
        point is lost too (else the damage would lie in trusted data, a read error
        and not a recovery case): recovery then validates every segment."""
        image = self._crash()
        pdir = image / TOPIC / "0"
        segments = [p for p in sorted(pdir.glob("*.log")) if p.stat().st_size]
        if not segments:
            self._reopen(image)
            return
        segment = data.draw(st.sampled_from(segments), label="segment")
        batches = _batches(segment)
        i = data.draw(st.integers(0, len(batches) - 1), label="batch")
        position, size, _base, _next = batches[i]
        byte = data.draw(st.integers(position + CRC_START, position + size - 1), label="byte")
        flip = data.draw(st.integers(1, 255), label="xor")
        with open(segment, "r+b") as f:
            f.seek(byte)
            old = f.read(1)[0]
            f.seek(byte)
            f.write(bytes([old ^ flip]))
        self._lose_from(pdir, segment, batches, i)
        self._reopen(image)

    @rule(data=st.data())
    def crash_tearing_the_tail(self, data: st.DataObject) -> None:
        """A crash tears the active segment's tail anywhere in its last batches."""
        image = self._crash()
        pdir = image / TOPIC / "0"
        segment = sorted(pdir.glob("*.log"))[-1]
        batches = _batches(segment)
        if not batches:
            self._reopen(image)
            return
        i = data.draw(st.integers(max(0, len(batches) - 3), len(batches) - 1), label="batch")
        position, size, _base, _next = batches[i]
        cut = data.draw(st.integers(position, position + size - 1), label="cut")
        with open(segment, "r+b") as f:
            f.truncate(cut)
        self._lose_from(pdir, segment, batches, i)
        self._reopen(image)

    @rule(garbage=st.binary(min_size=1, max_size=300))
    def crash_leaving_garbage(self, garbage: bytes) -> None:
        """Bytes after the last batch (a torn write of the next one) are cut; nothing
        before them is lost."""
        image = self._crash()
        segment = sorted((image / TOPIC / "0").glob("*.log"))[-1]
        with open(segment, "ab") as f:
            f.write(garbage)
        self._reopen(image)

    def _lose_from(
        self, pdir: Path, segment: Path, batches: list[tuple[int, int, int, int]], i: int
    ) -> None:
        """The model after recovery cuts `segment` at batch `i`: everything from that
        batch on is gone, and the log ends where the batch before it ended."""
        base = batches[i][2]
        recovery_point = pdir / "recovery-point"
        if recovery_point.exists() and base < int(recovery_point.read_text()):
            recovery_point.unlink()
        self.model = {o: kv for o, kv in self.model.items() if o < base}
        self.end = batches[i - 1][3] if i else int(segment.stem)

    # ------------------------------------------------------------- invariants

    @precondition(lambda self: self.log is not None)
    @invariant()
    def reads_agree_with_the_model(self) -> None:
        assert self.log is not None
        assert self.log.latest_offset(TOPIC, 0) == self.end
        got: Model = {}
        offset = self.log.earliest_offset(TOPIC, 0)
        while offset < self.end:
            records = self.log.read(TOPIC, 0, offset, max_records=1000)
            assert records, f"nothing read at {offset} below the log end {self.end}"
            got.update((r.offset, (r.key, r.value)) for r in records)
            offset = records[-1].offset + 1
        assert got == self.model


CompactedPartitionMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_compacted_partition_through_crashes = CompactedPartitionMachine.TestCase
