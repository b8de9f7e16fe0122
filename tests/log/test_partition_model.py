"""Model-based test of a partition: random appends, reads, rolls, reopens and
retention, checked against a plain list of records after every step."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from log import FileLog, OffsetOutOfRangeError
from tests.conftest import ManualClock

values_st = st.lists(st.one_of(st.none(), st.binary(max_size=60)), min_size=1, max_size=20)


class PartitionMachine(RuleBasedStateMachine):
    """The model: offset → (key, value, timestamp); the log must agree with it."""

    def __init__(self) -> None:
        super().__init__()
        self.root: Path | None = None
        self.log: FileLog | None = None

    @initialize(tmp=st.builds(object))
    def setup(self, tmp: object) -> None:
        import tempfile

        self.root = Path(tempfile.mkdtemp(prefix="model-"))
        self.clock = ManualClock()
        self.log = FileLog(self.root, background=False, clock=self.clock)
        self.log.create_topic(
            "m", 1, config={"segment.bytes": 700, "index.interval.bytes": 64, "retention.ms": -1}
        )
        self.model: list[tuple[int, bytes | None, bytes | None, int]] = []
        self.start = 0

    def teardown(self) -> None:
        import shutil

        if self.log is not None:
            self.log.close()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    @property
    def end(self) -> int:
        return self.start + len(self.model) if not self.model else self.model[-1][0] + 1

    @rule(values=values_st, keyed=st.booleans(), stamped=st.booleans())
    def append(self, values: list[bytes | None], keyed: bool, stamped: bool) -> None:
        assert self.log is not None
        keys = [b"k%d" % i for i in range(len(values))] if keyed else None
        timestamps = [self.clock.now + i for i in range(len(values))] if stamped else None
        offsets = self.log.append("m", 0, values, keys=keys, timestamps=timestamps)
        assert offsets.start == self.end
        for i, offset in enumerate(offsets):
            ts = timestamps[i] if timestamps else self.clock.now
            self.model.append((offset, keys[i] if keys else None, values[i], ts))
        self.clock.advance(10)

    @precondition(lambda self: self.model)
    @rule(
        data=st.data(),
        max_records=st.one_of(st.none(), st.integers(1, 50)),
        max_bytes=st.integers(1, 3000),
    )
    def read(self, data: st.DataObject, max_records: int | None, max_bytes: int) -> None:
        assert self.log is not None
        i = data.draw(st.integers(0, len(self.model) - 1))
        offset = self.model[i][0]
        got = self.log.read("m", 0, offset, max_records=max_records, max_bytes=max_bytes)
        assert got, "a read below the end returns at least one record"
        if max_records is not None:
            assert len(got) <= max_records
        want = self.model[i : i + len(got)]
        assert [(r.offset, r.key, r.value, r.timestamp) for r in got] == want

    @precondition(lambda self: self.model)
    @rule(max_records=st.integers(1, 7))
    def read_on(self, max_records: int) -> None:
        """A consumer's reads: each from where the last one stopped, small enough to
        stop inside batches (whose rest the partition keeps for the next read)."""
        assert self.log is not None
        offsets = [r[0] for r in self.model]
        cursor = getattr(self, "cursor", offsets[0])
        if cursor not in offsets:
            cursor = offsets[0]
        i = offsets.index(cursor)
        got = self.log.read("m", 0, cursor, max_records=max_records)
        assert 1 <= len(got) <= max_records
        want = self.model[i : i + len(got)]
        assert [(r.offset, r.key, r.value, r.timestamp) for r in got] == want
        self.cursor = got[-1].offset + 1

    @rule()
    def read_at_end(self) -> None:
        assert self.log is not None
        assert self.log.read("m", 0, self.end) == []
        with pytest.raises(OffsetOutOfRangeError):
            self.log.read("m", 0, self.end + 1)

    @rule()
    def roll(self) -> None:
        assert self.log is not None
        self.log.partition("m", 0).roll()

    @rule()
    def reopen(self) -> None:
        assert self.log is not None and self.root is not None
        self.log.close()
        self.log = FileLog(self.root, background=False, clock=self.clock)

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def timestamp_lookup(self, data: st.DataObject) -> None:
        assert self.log is not None
        ts = data.draw(st.integers(self.model[0][3] - 5, self.model[-1][3] + 5))
        expected = next((o for o, _k, _v, t in self.model if t >= ts), None)
        assert self.log.offset_for_timestamp("m", 0, ts) == expected

    @rule(keep_bytes=st.integers(0, 3000))
    def retention_by_size(self, keep_bytes: int) -> None:
        assert self.log is not None
        self.log.alter_topic_config("m", {"retention.bytes": keep_bytes})
        self.log.run_maintenance()
        self.log.alter_topic_config("m", {"retention.bytes": -1})
        start = self.log.earliest_offset("m", 0)
        assert start >= self.start
        self.model = [r for r in self.model if r[0] >= start]
        self.start = start

    @invariant()
    def offsets_agree(self) -> None:
        if self.log is None:
            return
        assert self.log.latest_offset("m", 0) == self.end
        assert self.log.earliest_offset("m", 0) == (self.model[0][0] if self.model else self.end)


PartitionMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_partition_model = PartitionMachine.TestCase
