"""The transaction coordinator's journal (log.txn_journal) and what it lets the
coordinator skip: a torn tail cut before the next record, compaction, a COMPLETE
lost to a machine crash redone from PREPARE without a second marker, a state file
from before journals, and partitions added ahead of their first write (the
previous transaction's) that get no marker unless written, a transaction whose
unsynced ONGOING record a crash lost, the one disk wait of a steady transaction
and a crash inside it. The SIGKILL at each step is in test_transactions_processes."""

from __future__ import annotations

import json
import os
import signal
import struct
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from log import FileLog, txn_journal
from log.errors import ProducerFencedError
from log.fsutil import at_once
from log.partition import Partition
from log.txn_coordinator import TXN_DIR
from tests.conftest import ManualClock
from tests.waiting import wait_until

TOPIC = "t"
COMMITTED = "read_committed"


def _values(log: FileLog, partition: int) -> list[bytes | None]:
    out: list[bytes | None] = []
    offset = log.earliest_offset(TOPIC, partition)
    while True:
        records = log.read(TOPIC, partition, offset, isolation_level=COMMITTED)
        after = getattr(records, "next_offset", records[-1].offset + 1 if records else offset)
        if after == offset:
            return out
        out += [r.value for r in records]
        offset = after


def _journal(log: FileLog) -> Path:
    (path,) = (log.directory / TXN_DIR).glob(f"*{txn_journal.JOURNAL_SUFFIX}")
    return path


def _record_starts(path: Path) -> list[int]:
    data, starts, position = path.read_bytes(), [], 0
    while position < len(data):
        starts.append(position)
        position += 8 + struct.unpack_from("<I", data, position)[0]
    return starts


def test_a_torn_tail_is_cut_before_the_next_record(tmp_path) -> None:
    path = tmp_path / "j.txnlog"
    end = txn_journal.append_record(path, b"one", valid_end=0, size=0, durable=True)
    end = txn_journal.append_record(path, b"two", valid_end=end, size=end, durable=True)
    with path.open("ab") as f:  # a crash in the middle of a long record
        f.write(struct.pack("<II", 500, 0) + b"x" * 200)
    last, valid_end, size = txn_journal.load(path)
    assert (last, valid_end) == (b"two", end) and size == end + 208
    end = txn_journal.append_record(path, b"3", valid_end=valid_end, size=size, durable=False)
    assert txn_journal.load(path) == (b"3", end, end), "the garbage is gone, not hidden behind"
    path.write_bytes(path.read_bytes()[:-1] + b"!")  # a garbled last record
    assert txn_journal.load(path)[0] == b"two"


def test_the_journal_is_compacted(make_log) -> None:
    log = make_log()
    log.create_topic(TOPIC, 2)
    producer = log.transactional_producer("c")
    producer.init_transactions()
    sizes = []
    for i in range(60):
        producer.begin_transaction()
        producer.append(TOPIC, i % 2, [b"%d" % i])
        producer.commit_transaction()
        sizes.append(_journal(log).stat().st_size)
    assert max(sizes) <= txn_journal.COMPACT_BYTES
    assert min(sizes[20:]) < max(sizes) / 4, "rewritten to one record now and then"
    assert log.transactions.describe("c").state == "CompleteCommit"
    assert not list((log.directory / TXN_DIR).glob("*.tmp"))
    assert len(_values(log, 0)) + len(_values(log, 1)) == 60


def test_a_lost_complete_is_redone_from_prepare_without_a_second_marker(make_log, tmp_path) -> None:
    """COMPLETE is not synced: a machine crash may leave the journal ending in
    PREPARE. Reopening redoes the markers' step, which finds them all in."""
    log = make_log()
    log.create_topic(TOPIC, 2)
    producer = log.transactional_producer("p")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"a"])
    producer.append(TOPIC, 1, [b"b"])
    producer.commit_transaction()
    ends = [log.latest_offset(TOPIC, p) for p in (0, 1)]
    producer.close()
    log.close()
    path = _journal(log)
    with path.open("r+b") as f:
        f.truncate(_record_starts(path)[-1])
    body = txn_journal.load(path)[0]
    assert body is not None and json.loads(body)["state"] == "PrepareCommit"
    reopened = make_log(tmp_path / "log")
    assert reopened.transactions.describe("p").state == "CompleteCommit"
    assert [reopened.latest_offset(TOPIC, p) for p in (0, 1)] == ends, "no marker twice"
    assert (_values(reopened, 0), _values(reopened, 1)) == ([b"a"], [b"b"])


def test_a_state_file_from_before_journals_is_finished_and_replaced(
    make_log, tmp_path, monkeypatch
) -> None:
    log = make_log()
    log.create_topic(TOPIC, 2)
    producer = log.transactional_producer("old")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"x"])
    producer.append(TOPIC, 1, [b"y"])

    def crash(self: Partition, *args: object, **kwargs: object) -> None:
        raise OSError("simulated crash before the markers")

    monkeypatch.setattr(Partition, "write_marker", crash)
    with pytest.raises(OSError):
        producer.commit_transaction()
    monkeypatch.undo()
    log.close()
    path = _journal(log)
    body = txn_journal.load(path)[0]
    assert body is not None and json.loads(body)["state"] == "PrepareCommit"
    legacy = path.with_suffix(".json")
    legacy.write_bytes(body)  # the same state, as the version before wrote it
    path.unlink()
    reopened = make_log(tmp_path / "log")
    assert reopened.transactions.describe("old").state == "CompleteCommit"
    assert (_values(reopened, 0), _values(reopened, 1)) == ([b"x"], [b"y"])
    assert path.exists() and not legacy.exists()


def test_a_partition_added_ahead_gets_a_marker_only_when_written(
    make_log, clock: ManualClock
) -> None:
    """The previous transaction's partitions are added with the next one's first:
    not written, the commit leaves them alone; a timeout abort marks them (the new
    epoch), so a zombie's batch there is refused."""
    log = make_log(clock=clock)
    log.create_topic(TOPIC, 2)
    producer = log.transactional_producer("s", transaction_timeout_ms=1_000)
    producer.init_transactions()

    count = [0]

    def transaction(*partitions: int, commit: bool = True) -> None:
        count[0] += 1
        producer.begin_transaction()
        for p in partitions:
            producer.append(TOPIC, p, [b"%d-%d" % (count[0], p)])
        if commit:
            producer.commit_transaction()

    transaction(0, 1)
    one_end = log.latest_offset(TOPIC, 1)
    transaction(0, commit=False)
    meta = log.transactions.describe("s")
    assert meta is not None and sorted(map(tuple, meta.partitions)) == [(TOPIC, 0), (TOPIC, 1)]
    producer.commit_transaction()
    assert log.latest_offset(TOPIC, 1) == one_end, "no marker where nothing was written"
    assert log.last_stable_offset(TOPIC, 1) == one_end
    transaction(0, 1)
    one_end = log.latest_offset(TOPIC, 1)
    transaction(0, commit=False)  # adds partition 1 ahead again
    clock.advance(1_000)
    assert log.run_maintenance()["transactions_aborted"] == 1
    assert log.latest_offset(TOPIC, 1) == one_end + 1, "the new epoch's marker"
    with pytest.raises(ProducerFencedError) as fenced:
        producer.append(TOPIC, 1, [b"zombie"])  # no coordinator call: added already
    assert (fenced.value.topic, fenced.value.partition) == (TOPIC, 1), "refused by the partition"
    assert (_values(log, 0), _values(log, 1)) == ([b"1-0", b"2-0", b"3-0"], [b"1-1", b"3-1"])


def _state(path: Path) -> dict:
    body = txn_journal.load(path)[0]
    assert body is not None
    return json.loads(body)


@pytest.mark.parametrize("survives", ["PrepareCommit", "CompleteCommit"])
def test_a_transaction_whose_unsynced_ongoing_record_a_crash_lost_is_aborted(
    make_log, tmp_path, survives: str
) -> None:
    """The next transaction's ONGOING record is not synced when its partitions were
    declared ahead by the PREPARE before it. A machine crash may keep its batches
    and lose the record (and the COMPLETE before it): reopening marks the old
    transaction's partitions only below its bound (not the new batches with its
    outcome) and aborts the new batches, so the LSO does not hang on them."""
    log = make_log()
    log.create_topic(TOPIC, 2)
    producer = log.transactional_producer("lost")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"a"])
    producer.append(TOPIC, 1, [b"b"])
    producer.commit_transaction()
    path = _journal(log)
    states = [_state(path)]
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"lost-0"])
    producer.append(TOPIC, 1, [b"lost-1"])
    assert _state(path)["state"] == "Ongoing"
    epoch = producer.epoch
    log.close()  # the machine stops: the producer never ends its transaction
    starts = _record_starts(path)
    keep = -2 if survives == "PrepareCommit" else -1  # before COMPLETE, or ONGOING
    with path.open("r+b") as f:
        f.truncate(starts[keep])
    assert _state(path)["state"] == survives and states[0]["state"] == "CompleteCommit"
    reopened = make_log(tmp_path / "log")
    assert (_values(reopened, 0), _values(reopened, 1)) == ([b"a"], [b"b"])
    for p in (0, 1):
        end = reopened.latest_offset(TOPIC, p)
        assert end == 4, "data, COMMIT, the lost batch, its ABORT"
        assert reopened.last_stable_offset(TOPIC, p) == end
    meta = reopened.transactions.describe("lost")
    assert meta is not None and meta.state == "CompleteAbort" and meta.epoch == epoch + 1


def test_a_steady_transaction_syncs_its_data_and_prepare_only(make_log, monkeypatch) -> None:
    """A source task's transaction (the same partitions each time): its data
    fsynced (with the previous one's markers) and PREPARE, side by side
    (test_prepare_is_synced_beside_the_data); the ONGOING record, the markers and
    COMPLETE wait for nothing (docs/performance.md)."""
    log = make_log()
    log.create_topic(TOPIC, 2)
    producer = log.transactional_producer("steady")
    producer.init_transactions()
    calls: list[str] = []
    lock = threading.Lock()
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def counted(name: str, real: Callable[[int], None]) -> Callable[[int], None]:
        def call(fd: int) -> None:
            with lock:
                calls.append(name)
            real(fd)

        return call

    monkeypatch.setattr(os, "fsync", counted("fsync", real_fsync))
    monkeypatch.setattr(os, "fdatasync", counted("fdatasync", real_fdatasync))
    for i in range(4):
        if i == 1:
            calls.clear()  # from the second on: the partitions were declared ahead
        producer.begin_transaction()
        producer.append(TOPIC, 0, [b"%d" % i])
        producer.append(TOPIC, 1, [b"%d" % i])
        producer.commit_transaction()
    assert sorted(calls) == ["fdatasync"] * 3 + ["fsync"] * 6, "2 data partitions, 1 PREPARE"
    meta = log.transactions.describe("steady")
    assert meta is not None and sorted(map(tuple, meta.unsynced)) == [(TOPIC, 0), (TOPIC, 1)]
    calls.clear()
    log.transactional_producer("steady").init_transactions()  # a durable change
    assert calls.count("fsync") >= 2, "the markers fsynced before it"
    meta = log.transactions.describe("steady")
    assert meta is not None and meta.unsynced == []
    assert (_values(log, 0), _values(log, 1)) == ([b"0", b"1", b"2", b"3"],) * 2


def test_fsyncs_at_once_run_side_by_side_and_fail_after_all_ended() -> None:
    """The commit's data fsyncs and markers go through `at_once`: the first call
    runs while the second is under way (it waits for it to start), and its failure
    is raised only once the second has ended (nothing after the step may start
    while a marker is still being written)."""
    started, release = threading.Event(), threading.Event()
    ended: list[str] = []

    def second() -> None:
        started.set()
        release.wait(10)
        ended.append("second")

    def first() -> None:
        assert started.wait(10), "the second call did not run beside the first"
        release.set()
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        at_once([first, second])
    assert ended == ["second"]


def test_fsyncs_at_once_work_in_a_forked_child() -> None:
    """The pool's threads stay in the parent: a forked child makes its own pool
    (with the parent's copy, its calls would wait for ever)."""
    at_once([lambda: None, lambda: None])  # the parent's pool exists
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if both calls ran
        ran: list[int] = []
        at_once([lambda: ran.append(1), lambda: ran.append(2)])
        os._exit(0 if sorted(ran) == [1, 2] else 1)
    status: list[int] = []

    def exited() -> bool:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status.append(code)
        return bool(done)

    try:
        wait_until(exited, timeout_s=10, what="the forked child's fsyncs")
    finally:
        if not status:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status[0]) == 0


def test_prepare_is_synced_beside_the_data(make_log, monkeypatch) -> None:
    """The commit's one wait on the disk: PREPARE's fdatasync starts while the data
    partitions' fsyncs are still under way (each fsync here waits for it)."""
    log = make_log()
    log.create_topic(TOPIC, 2)
    producer = log.transactional_producer("beside")
    producer.init_transactions()
    prepare_started = threading.Event()
    overlapped: list[bool] = []
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def fsync(fd: int) -> None:
        overlapped.append(prepare_started.wait(5))
        real_fsync(fd)

    def fdatasync(fd: int) -> None:
        prepare_started.set()
        real_fdatasync(fd)

    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"a"])
    producer.append(TOPIC, 1, [b"b"])
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdatasync", fdatasync)
    producer.commit_transaction()
    assert overlapped == [True, True], "2 data partitions, each fsynced beside PREPARE"
    assert (_values(log, 0), _values(log, 1)) == ([b"a"], [b"b"])


def test_a_crash_inside_the_commits_disk_wait_aborts_it_and_keeps_the_last(
    make_log, tmp_path, monkeypatch
) -> None:
    """PREPARE_COMMIT reached the disk, but a machine crash took a data partition's
    batch (its fsync beside PREPARE had not ended) and the previous transaction's
    unsynced marker before it. Reopening redoes the previous marker (PREPARE
    carries it as `prior`) and aborts the transaction short of its bound; no marker
    of it was written, so no reader saw it committed."""
    log = make_log()
    log.create_topic(TOPIC, 2)
    producer = log.transactional_producer("cut")
    producer.init_transactions()
    before_marker: dict[int, int] = {}
    real_marker = Partition.write_marker

    def marker(self: Partition, *args: object, **kwargs: object) -> int | None:
        if before_marker.get(self.partition) is not None:
            raise OSError("the machine stops before the second commit's markers")
        before_marker[self.partition] = self.segments[-1].file_size()
        return real_marker(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Partition, "write_marker", marker)
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"a"])
    producer.append(TOPIC, 1, [b"b"])
    producer.commit_transaction()
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"c"])
    producer.append(TOPIC, 1, [b"d"])
    with pytest.raises(OSError, match="machine stops"):
        producer.commit_transaction()
    assert _state(_journal(log))["state"] == "PrepareCommit"
    monkeypatch.setattr(Partition, "write_marker", real_marker)
    log.close()
    # What the disk kept: partition 1 only up to its first batch (its marker and the
    # second batch were not fsynced yet), and no recovery point written at a close.
    pdir = log.directory / TOPIC / "1"
    (segment,) = pdir.glob("*.log")
    os.truncate(segment, before_marker[1])
    for p in (0, 1):
        (log.directory / TOPIC / str(p) / "recovery-point").unlink(missing_ok=True)
    reopened = make_log(tmp_path / "log")
    assert (_values(reopened, 0), _values(reopened, 1)) == ([b"a"], [b"b"])
    for p in (0, 1):
        end = reopened.latest_offset(TOPIC, p)
        assert reopened.last_stable_offset(TOPIC, p) == end, "nothing left open"
    assert reopened.latest_offset(TOPIC, 1) == 2, "b, its COMMIT redone"
    meta = reopened.transactions.describe("cut")
    assert meta is not None and meta.state == "CompleteAbort" and not meta.prior
