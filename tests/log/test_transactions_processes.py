"""Transactions across real processes on one log directory: a producer killed with
SIGKILL in the middle of a transaction (its transaction is aborted once its timeout
passes, and read_committed readers are held up no longer than that), a producer
fenced by a newer one in another process, and two processes whose transactions
interleave on the same partitions. Children talk over stdout and stdin (the
`spawn` fixture of test_multiprocess); every wait has a deadline."""

from __future__ import annotations

import time

import pytest

from log import FileLog
from tests.log.test_multiprocess import spawn  # noqa: F401  (the fixture)
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

TOPIC = "t"
COMMITTED = "read_committed"


def _values(log: FileLog, partition: int, *, committed: bool = True) -> list[bytes | None]:
    level = COMMITTED if committed else "read_uncommitted"
    out: list[bytes | None] = []
    offset = log.earliest_offset(TOPIC, partition)
    while True:
        records = log.read(TOPIC, partition, offset, isolation_level=level)
        after = getattr(records, "next_offset", records[-1].offset + 1 if records else offset)
        if after == offset:
            return out
        out += [r.value for r in records]
        offset = after


def _settled(log: FileLog) -> bool:
    """Whether no transaction is open in the topic; the read_committed reads are
    what lets a reader abort an expired one."""
    for partition in (0, 1):
        _values(log, partition)
    return all(log.last_stable_offset(TOPIC, p) == log.latest_offset(TOPIC, p) for p in (0, 1))


_OPEN_AND_HANG = """
    import sys
    from log import FileLog
    log = FileLog(sys.argv[1], background=False)
    producer = log.transactional_producer("victim", transaction_timeout_ms=int(sys.argv[2]))
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(50):
        producer.append("t", i % 2, [b"doomed-%d" % i])
    print("open", flush=True)
    sys.stdin.readline()
"""


def test_a_killed_producers_transaction_is_aborted_after_its_timeout(
    make_log,
    spawn,  # noqa: F811  (the imported fixture)
    tmp_path,
) -> None:
    timeout_ms = 2_000
    log_dir = tmp_path / "log"
    reader = make_log(log_dir)
    reader.create_topic(TOPIC, 2)
    child = spawn(_OPEN_AND_HANG, log_dir, timeout_ms)
    child.expect("open")
    reader.append(TOPIC, 0, [b"plain"])
    assert _values(reader, 0) == [], "the open transaction holds read_committed back"
    child.kill()
    killed_at = time.monotonic()
    # A reader (no maintenance thread) is held up no longer than the timeout: its
    # own reads find the expired transaction and abort it.
    wait_until(
        lambda: _values(reader, 0) == [b"plain"],
        timeout_s=timeout_ms / 1000 + 10,
        what="the dead producer's transaction aborted",
    )
    held = time.monotonic() - killed_at
    assert held < timeout_ms / 1000 + 5
    for partition in (0, 1):
        assert reader.last_stable_offset(TOPIC, partition) == reader.latest_offset(TOPIC, partition)
        assert not any(v.startswith(b"doomed") for v in _values(reader, partition))
    assert reader.transactions.describe("victim").state == "CompleteAbort"
    # A log opened afterwards (another process's view) sees the same.
    fresh = make_log(log_dir)
    assert _values(fresh, 0) == [b"plain"] and _values(fresh, 1) == []


_FENCED_LATER = """
    import sys
    from log import FileLog
    from log.errors import ProducerFencedError
    log = FileLog(sys.argv[1], background=False)
    producer = log.transactional_producer("shared")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append("t", 0, [b"old-1"])
    print("appended", flush=True)
    sys.stdin.readline()
    try:
        producer.append("t", 0, [b"old-2"])
        producer.commit_transaction()
        print("committed", flush=True)
    except ProducerFencedError as exc:
        print("fenced", exc.epoch, exc.current_epoch, flush=True)
"""


def test_a_producer_fenced_from_another_process_gets_a_clear_error(
    make_log,
    spawn,  # noqa: F811  (the imported fixture)
    tmp_path,
) -> None:
    log_dir = tmp_path / "log"
    log = make_log(log_dir)
    log.create_topic(TOPIC)
    child = spawn(_FENCED_LATER, log_dir)
    child.expect("appended")
    newer = log.transactional_producer("shared")
    newer.init_transactions()
    child.send("go")
    line = child.line()
    assert line is not None and line.startswith("fenced"), line
    _, old_epoch, current = line.split()
    assert int(current) > int(old_epoch) and int(current) <= newer.epoch
    assert child.finish() == []
    newer.begin_transaction()
    newer.append(TOPIC, 0, [b"new"])
    newer.commit_transaction()
    assert _values(log, 0) == [b"new"]
    assert b"old-2" not in _values(log, 0, committed=False), "refused, never written"


_TRANSACTIONS = """
    import sys
    from log import FileLog
    log = FileLog(sys.argv[1], background=False)
    name, count = sys.argv[2], int(sys.argv[3])
    producer = log.transactional_producer(name)
    producer.init_transactions()
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(count):
        producer.begin_transaction()
        for j in range(3):
            producer.append("t", j % 2, [b"%s-%d-%d" % (name.encode(), i, j)])
        if i % 3 == 2:
            producer.abort_transaction()
        else:
            producer.commit_transaction()
    print("done", flush=True)
"""


def test_two_processes_transactions_interleave_on_the_same_partitions(
    make_log,
    spawn,  # noqa: F811  (the imported fixture)
    tmp_path,
) -> None:
    """Free-running: every race of two writers' batches and markers, with small
    segments so rolls (and their aborted indexes) happen under them."""
    log_dir = tmp_path / "log"
    log = make_log(log_dir)
    log.create_topic(TOPIC, 2, config={"segment.bytes": 2048})
    count = 30
    children = [spawn(_TRANSACTIONS, log_dir, name, count) for name in ("a", "b")]
    for child in children:
        child.expect("ready")
    for child in children:
        child.send("go")
    for child in children:
        child.expect("done")
        assert child.finish() == []
    for partition in (0, 1):
        seen = _values(log, partition)
        for name in ("a", "b"):
            mine = [v for v in seen if v.startswith(name.encode() + b"-")]
            wanted = [
                b"%s-%d-%d" % (name.encode(), i, j)
                for i in range(count)
                if i % 3 != 2
                for j in range(3)
                if j % 2 == partition
            ]
            assert mine == wanted, f"{name} on partition {partition}"
        assert log.last_stable_offset(TOPIC, partition) == log.latest_offset(TOPIC, partition)
        everything = _values(log, partition, committed=False)
        assert len(everything) == count * 2 * (2 if partition == 0 else 1)


_COMMANDED = """
    import sys
    from log import FileLog
    log = FileLog(sys.argv[1], background=False)
    producer = log.transactional_producer(sys.argv[2])
    producer.init_transactions()
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "append":
            print(producer.append("t", int(args[0]), [args[1].encode()]).start, flush=True)
        else:
            getattr(producer, cmd + "_transaction")()
            print("ok", flush=True)
"""


def test_interleaved_transactions_of_two_processes_resolve_each_on_its_own(
    make_log,
    spawn,  # noqa: F811  (the imported fixture)
    tmp_path,
) -> None:
    """Step by step: A and B open transactions on both partitions, A commits while
    B's is open (the LSO stays at B's first offset), then B aborts."""
    log_dir = tmp_path / "log"
    log = make_log(log_dir)
    log.create_topic(TOPIC, 2)
    a, b = spawn(_COMMANDED, log_dir, "A"), spawn(_COMMANDED, log_dir, "B")
    a.expect("ready")
    b.expect("ready")

    def run(child, command: str) -> str:
        child.send(command)
        line = child.line()
        assert line is not None, child.stderr()
        return line

    run(a, "begin")
    run(b, "begin")
    run(a, "append 0 a0")
    b_first = int(run(b, "append 0 b0"))
    run(a, "append 1 a1")
    run(b, "append 1 b1")
    run(a, "append 0 a2")
    assert log.last_stable_offset(TOPIC, 0) == 0
    run(a, "commit")
    assert log.last_stable_offset(TOPIC, 0) == b_first == 1
    assert _values(log, 0) == [b"a0"], "B's open transaction holds back what follows it"
    assert _values(log, 1) == [b"a1"], "committed, and before B's first offset there"
    assert log.last_stable_offset(TOPIC, 1) == 1
    run(b, "abort")
    assert _values(log, 0) == [b"a0", b"a2"]
    assert _values(log, 1) == [b"a1"]
    for partition in (0, 1):
        assert log.last_stable_offset(TOPIC, partition) == log.latest_offset(TOPIC, partition)
    a.send("begin")
    assert a.line() == "ok"
    a.proc.stdin.close()
    b.proc.stdin.close()
    assert a.finish() == [] and b.finish() == []


_COMMIT_LOOP = """
    import sys
    from log import FileLog
    log = FileLog(sys.argv[1], background=False)
    producer = log.transactional_producer("loop", transaction_timeout_ms=1500)
    producer.init_transactions()
    i = 0
    while True:
        producer.begin_transaction()
        producer.append("t", 0, [b"%d" % i, b"%d" % i])
        producer.append("t", 1, [b"%d" % i])
        producer.commit_transaction()
        print(i, flush=True)
        i += 1
"""


@pytest.mark.parametrize("kill_after", [1, 15, 60])
def test_a_transaction_killed_anywhere_is_all_or_nothing(
    make_log,
    spawn,  # noqa: F811  (the imported fixture)
    tmp_path,
    kill_after,
) -> None:
    """SIGKILL lands wherever the loop is (appending, preparing, between markers):
    after recovery and the timeout, every transaction is in both partitions whole
    or in neither, and every one reported committed is there."""
    log_dir = tmp_path / "log"
    setup = make_log(log_dir)
    setup.create_topic(TOPIC, 2, config={"segment.bytes": 4096})
    child = spawn(_COMMIT_LOOP, log_dir)
    reported = -1
    while reported < kill_after:
        line = child.line()
        assert line is not None, child.stderr()
        reported = int(line)
    child.kill()
    # The loop ran on while its lines were read: what it printed before the kill counts
    # as reported too (a loaded machine left it dozens of commits ahead: the [60] flake).
    reported = max([reported, *(int(line) for line in child.rest())])
    log = make_log(log_dir)  # opening finishes a decided commit at once
    started = time.monotonic()
    wait_until(lambda: _settled(log), timeout_s=15, what="no transaction left open")
    assert time.monotonic() - started < 1.5 + 5, "held up past the timeout"
    zero, one = _values(log, 0), _values(log, 1)
    assert zero[::2] == zero[1::2] == one, "every transaction whole in both partitions"
    ids = [int(v) for v in one]
    assert ids == list(range(len(ids))), "in order, none missing"
    assert reported + 1 <= len(ids) <= reported + 2, "the reported ones and maybe one more"


_KILLED_AT = """
    import os, signal, sys, threading
    from log import FileLog, txn_journal
    from log.partition import Partition

    point, at = sys.argv[2], int(sys.argv[3])
    now = {"txn": 0}
    dying = threading.Lock()

    def die(committed):
        dying.acquire()  # markers are written side by side: one thread reports
        print("kill", committed, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    def here():
        return now["txn"] == at

    real_record, real_atomic = txn_journal.append_record, txn_journal.write_atomic
    real_append, real_marker = Partition.append_transactional, Partition.write_marker

    def append_record(path, body, **kwargs):
        end = real_record(path, body, **kwargs)
        if here() and point == "added" and b'"Ongoing"' in body:
            die(at)
        if here() and point == "prepared" and b'"PrepareCommit"' in body:
            die(at + 1)
        if here() and point == "torn-complete" and b'"CompleteCommit"' in body:
            os.truncate(path, end - 5)
            die(at + 1)
        return end

    def write_atomic(path, data):
        if point.startswith("compacting") and now["txn"] >= at and (
            point == "compacting" or b'"PrepareCommit"' in data
        ):
            path.with_name(path.name + ".tmp").write_bytes(data)  # then no rename
            # Not renamed: the journal lacks this record; committed if it had PREPARE.
            die(now["txn"] + (b'"CompleteCommit"' in data))
        real_atomic(path, data)

    def append_transactional(self, *args, **kwargs):
        offsets = real_append(self, *args, **kwargs)
        if here() and point == "appended":
            die(at)
        return offsets

    def write_marker(self, *args, **kwargs):
        offset = real_marker(self, *args, **kwargs)
        if here() and point == "marked":
            die(at + 1)
        return offset

    txn_journal.append_record, txn_journal.write_atomic = append_record, write_atomic
    Partition.append_transactional, Partition.write_marker = append_transactional, write_marker
    log = FileLog(sys.argv[1], background=False)
    producer = log.transactional_producer("loop", transaction_timeout_ms=1500)
    producer.init_transactions()
    for i in range(200):
        now["txn"] = i
        producer.begin_transaction()
        producer.append("t", 0, [b"%d" % i, b"%d" % i])
        producer.append("t", 1, [b"%d" % i])
        producer.commit_transaction()
        print(i, flush=True)
"""


@pytest.mark.parametrize(
    "point",
    [
        "added",
        "appended",
        "prepared",
        "marked",
        "torn-complete",
        "compacting",
        "compacting-prepare",
    ],
)
def test_a_transaction_killed_at_each_step_is_all_or_nothing(
    make_log,
    spawn,  # noqa: F811  (the imported fixture)
    tmp_path,
    point,
) -> None:
    """SIGKILL at a chosen step of the 4th transaction (for `compacting`: the first
    journal compaction from then on, killed between its temp file and the rename):
    every transaction is whole in both partitions or in neither, and the doubtful
    one went the way its step decided (committed once PREPARE is in the journal)."""
    log_dir = tmp_path / "log"
    make_log(log_dir).create_topic(TOPIC, 2)
    child = spawn(_KILLED_AT, log_dir, point, 3)
    lines = child.rest()
    assert child.proc.wait(10) == -9, child.stderr()
    assert lines and lines[-1].startswith("kill "), lines
    expected = int(lines[-1].split()[1])
    reported = [int(line) for line in lines[:-1]]
    assert reported == list(range(len(reported))) and len(reported) >= 3
    log = make_log(log_dir)
    wait_until(lambda: _settled(log), timeout_s=15, what="no transaction left open")
    zero, one = _values(log, 0), _values(log, 1)
    assert zero[::2] == zero[1::2] == one, "every transaction whole in both partitions"
    assert [int(v) for v in one] == list(range(expected))
    producer = log.transactional_producer("loop")
    producer.init_transactions()  # the id carries on from its journal
    producer.begin_transaction()
    producer.append(TOPIC, 1, [b"after"])
    producer.commit_transaction()
    assert _values(log, 1)[-1] == b"after"
