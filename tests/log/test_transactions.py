"""Transactions on the embedded log: a model test (random transactions, plain appends,
rolls and reopens checked against a plain model of what read_committed and
read_uncommitted must return), then the edges one by one: fencing, the timeout,
recovery of a commit cut between its steps, offsets sent in a transaction, the
aborted index, and what the format refuses."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from log import Consumer, FileLog, TopicPartition
from log.batch import ATTR_CONTROL, MAGIC_TXN, ProducerSection, encode_batch, parse_header
from log.cleaner import clean_partition
from log.errors import InvalidTxnStateError, ProducerFencedError
from log.partition import Partition
from log.partition_txn import decode_txn_index
from log.records import Fetched
from tests.conftest import ManualClock
from tests.waiting import wait_until

TOPIC = "t"
COMMITTED = "read_committed"


def _values(log: FileLog, partition: int, *, committed: bool) -> list[bytes | None]:
    """Every record from the log start, following `Fetched.next_offset` past skips."""
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


def _committed_records(log: FileLog) -> list:
    out: list = []
    offset = 0
    while records := log.read(TOPIC, 0, offset, isolation_level=COMMITTED):
        out += records
        offset = getattr(records, "next_offset", records[-1].offset + 1)
    return out


# ------------------------------------------------------------------- the model


class TransactionsModel(RuleBasedStateMachine):
    """Two transactional ids and plain appends on the two partitions of a compacted
    topic, with rolls, compaction and reopens, against a model: per partition, the
    records in offset order with their key and fate."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="txn-model-"))
        self.directory = self.root / "log"
        self.log = FileLog(self.directory, background=False)
        config = {"segment.bytes": 600, "cleanup.policy": "compact"}
        self.log.create_topic(TOPIC, 2, config=config)
        self.producers = {}
        # partition -> [offset, key, value, owner]: owner None (plain or committed),
        # "aborted", or the transactional id whose transaction is open.
        self.records: dict[int, list[list]] = {0: [], 1: []}
        self.open: dict[str, bool] = {}
        self.counter = 0

    def _producer(self, tid: str):
        if tid not in self.producers:
            producer = self.log.transactional_producer(tid)
            producer.init_transactions()
            self.producers[tid] = producer
        return self.producers[tid]

    def _value(self) -> bytes:
        self.counter += 1
        return b"v%d" % self.counter

    @rule(
        tid=st.sampled_from(["a", "b"]),
        partition=st.sampled_from([0, 1]),
        keys=st.lists(st.sampled_from([b"k0", b"k1", b"k2"]), min_size=1, max_size=3),
    )
    def transactional_append(self, tid: str, partition: int, keys: list[bytes]) -> None:
        producer = self._producer(tid)
        if not self.open.get(tid):
            producer.begin_transaction()
            self.open[tid] = True
        values = [self._value() for _ in keys]
        offsets = producer.append(TOPIC, partition, values, keys=keys)
        added = zip(offsets, keys, values, strict=True)
        self.records[partition] += [[o, k, v, tid] for o, k, v in added]

    @rule(tid=st.sampled_from(["a", "b"]), commit=st.booleans())
    def end(self, tid: str, commit: bool) -> None:
        if not self.open.get(tid):
            return
        producer = self.producers[tid]
        producer.commit_transaction() if commit else producer.abort_transaction()
        self.open[tid] = False
        for records in self.records.values():
            for rec in records:
                if rec[3] == tid:
                    rec[3] = None if commit else "aborted"

    @rule(partition=st.sampled_from([0, 1]), key=st.sampled_from([b"k0", b"k1", b"k2"]))
    def plain_append(self, partition: int, key: bytes) -> None:
        value = self._value()
        offset = self.log.append(TOPIC, partition, [value], keys=[key]).start
        self.records[partition].append([offset, key, value, None])

    @rule(partition=st.sampled_from([0, 1]))
    def compact(self, partition: int) -> None:
        """Roll, then clean: what is below the cleaned end keeps the latest committed
        record per key; aborted records there go; open transactions are never there."""
        part = self.log.partition(TOPIC, partition)
        part.roll()
        result = clean_partition(part, force=True)
        if not result.segments_before:
            return
        end = part.segments[result.segments_after].base_offset
        records = self.records[partition]
        assert all(r[0] >= end for r in records if r[3] not in (None, "aborted"))
        latest = {r[1]: r[0] for r in records if r[0] < end and r[3] is None}
        self.records[partition] = [
            r for r in records if r[0] >= end or (r[3] is None and latest[r[1]] == r[0])
        ]

    @rule()
    def reopen(self) -> None:
        """A second FileLog on the directory: it learns the state from the
        aborted index of rolled segments and the walk of the rest."""
        other = FileLog(self.directory, background=False)
        try:
            self._check(other)
        finally:
            other.close()

    def _check(self, log: FileLog) -> None:
        for partition, records in self.records.items():
            everything = [r[2] for r in records]
            assert _values(log, partition, committed=False) == everything
            stable = []
            for _offset, _key, value, owner in records:
                if owner not in (None, "aborted"):
                    break  # the LSO: the first record of an open transaction
                if owner is None:
                    stable.append(value)
            assert _values(log, partition, committed=True) == stable

    @invariant()
    def reads_match_the_model(self) -> None:
        self._check(self.log)

    def teardown(self) -> None:
        for producer in self.producers.values():
            producer.close()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


TransactionsModel.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_transactions_model = TransactionsModel.TestCase


# ------------------------------------------------------------------- the edges


def test_control_batches_are_skipped_and_name_the_next_offset(make_log) -> None:
    log = make_log()
    log.create_topic(TOPIC)
    producer = log.transactional_producer("p")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"a", b"b"])
    assert log.last_stable_offset(TOPIC, 0) == 0
    assert log.read(TOPIC, 0, 0, isolation_level=COMMITTED) == []
    producer.commit_transaction()
    assert log.latest_offset(TOPIC, 0) == 3, "two records and the COMMIT marker"
    records = log.read(TOPIC, 0, 0, isolation_level=COMMITTED)
    assert [r.value for r in records] == [b"a", b"b"]
    assert isinstance(records, Fetched) and records.next_offset == 3, "past the marker"
    assert not isinstance(log.read(TOPIC, 0, 0, max_records=1), Fetched), "nothing skipped"
    # A read that starts at the marker returns nothing but moves past it.
    at_marker = log.read(TOPIC, 0, 2)
    assert at_marker == [] and isinstance(at_marker, Fetched) and at_marker.next_offset == 3
    assert log.last_stable_offset(TOPIC, 0) == 3


def test_a_new_epoch_fences_the_old_producer(make_log) -> None:
    log = make_log()
    log.create_topic(TOPIC, 2)
    old = log.transactional_producer("id")
    old.init_transactions()
    old.begin_transaction()
    old.append(TOPIC, 0, [b"zombie-1"])
    new = log.transactional_producer("id")
    new.init_transactions()  # aborts the old transaction, fences its producer
    assert new.producer_id == old.producer_id and new.epoch > old.epoch
    with pytest.raises(ProducerFencedError) as err:
        old.append(TOPIC, 0, [b"zombie-2"])  # a partition it had written
    assert (err.value.topic, err.value.partition) == (TOPIC, 0)
    assert err.value.current_epoch > err.value.epoch
    with pytest.raises(InvalidTxnStateError):
        old.commit_transaction()  # fenced: the handle is done
    old2 = log.transactional_producer("id")
    old2._producer = old._producer  # the same stale epoch, a fresh handle
    old2._state = "Ready"
    old2.begin_transaction()
    with pytest.raises(ProducerFencedError):
        old2.append(TOPIC, 1, [b"zombie-3"])  # a partition new to the transaction
    new.begin_transaction()
    new.append(TOPIC, 0, [b"new"])
    new.commit_transaction()
    assert _values(log, 0, committed=True) == [b"new"]
    assert _values(log, 1, committed=True) == []


def test_a_transaction_past_its_timeout_is_aborted(make_log, clock: ManualClock) -> None:
    log = make_log(clock=clock)
    log.create_topic(TOPIC)
    dead = log.transactional_producer("d", transaction_timeout_ms=5_000)
    dead.init_transactions()
    dead.begin_transaction()
    dead.append(TOPIC, 0, [b"never"])
    log.append(TOPIC, 0, [b"after"])
    assert log.run_maintenance()["transactions_aborted"] == 0, "within its timeout"
    assert log.last_stable_offset(TOPIC, 0) == 0
    clock.advance(5_000)
    assert log.run_maintenance()["transactions_aborted"] == 1
    assert log.last_stable_offset(TOPIC, 0) == log.latest_offset(TOPIC, 0)
    assert _values(log, 0, committed=True) == [b"after"]
    with pytest.raises(ProducerFencedError):
        dead.append(TOPIC, 0, [b"zombie"])
    assert log.transactions.describe("d").state == "CompleteAbort"


def test_a_read_committed_read_aborts_an_expired_transaction(make_log, clock) -> None:
    """No maintenance thread: the reader held up by the open transaction ends it."""
    log = make_log(clock=clock)
    log.create_topic(TOPIC)
    dead = log.transactional_producer("d", transaction_timeout_ms=1_000)
    dead.init_transactions()
    dead.begin_transaction()
    dead.append(TOPIC, 0, [b"never"])
    log.append(TOPIC, 0, [b"after"])
    assert log.read(TOPIC, 0, 0, isolation_level=COMMITTED) == []
    clock.advance(1_000)
    log.read(TOPIC, 0, 0, isolation_level=COMMITTED)  # sees the expiry, aborts
    assert _values(log, 0, committed=True) == [b"after"]


def test_a_commit_cut_after_prepare_is_finished_on_open(make_log, tmp_path, monkeypatch) -> None:
    """The coordinator fails after PREPARE_COMMIT and one marker (a crash between
    step 2's markers): the next FileLog on the directory writes the rest."""
    log = make_log()
    log.create_topic(TOPIC, 2)
    producer = log.transactional_producer("c")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"x0"])
    producer.append(TOPIC, 1, [b"x1"])
    real = Partition.write_marker
    written: list[int] = []

    def crash_after_one(self: Partition, *args: object, **kwargs: object) -> int | None:
        if written:
            raise OSError("simulated crash between markers")
        written.append(self.partition)
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Partition, "write_marker", crash_after_one)
    with pytest.raises(OSError):
        producer.commit_transaction()
    monkeypatch.setattr(Partition, "write_marker", real)
    assert log.transactions.describe("c").state == "PrepareCommit"
    committed_first, other = written[0], 1 - written[0]
    assert _values(log, committed_first, committed=True) == [b"x%d" % committed_first]
    assert _values(log, other, committed=True) == []
    reopened = make_log(tmp_path / "log")
    assert reopened.transactions.describe("c").state == "CompleteCommit"
    for partition in (0, 1):
        assert _values(reopened, partition, committed=True) == [b"x%d" % partition]
    assert log.latest_offset(TOPIC, committed_first) == 2, "one marker, not two"


def test_offsets_sent_in_a_transaction_count_once_it_commits(make_log) -> None:
    log = make_log()
    log.create_topic(TOPIC)
    tp = TopicPartition(TOPIC, 0)
    producer = log.transactional_producer("g")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send_offsets_to_transaction("group", {tp: 7})
    assert log.committed_offsets("group") == {}
    producer.abort_transaction()
    assert log.committed_offsets("group") == {}
    producer.begin_transaction()
    producer.send_offsets_to_transaction("group", {tp: 9})
    producer.commit_transaction()
    assert log.committed_offsets("group")[tp].offset == 9
    log.commit_offsets("group", {tp: 11})  # plain commits still work after markers
    assert log.committed_offsets("group")[tp].offset == 11


def test_the_aborted_index_is_written_at_roll(make_log, tmp_path) -> None:
    log = make_log()
    log.create_topic(TOPIC)
    part = log.partition(TOPIC, 0)
    a = log.transactional_producer("a")
    b = log.transactional_producer("b")
    a.init_transactions()
    b.init_transactions()
    a.begin_transaction()
    a.append(TOPIC, 0, [b"a1"])
    b.begin_transaction()
    b.append(TOPIC, 0, [b"b1"])
    a.abort_transaction()
    part.roll()  # b's transaction is open across the roll
    index = part.directory / f"{0:020d}.txnindex"
    open_, epochs, aborted = decode_txn_index(index)
    assert open_ == {b.producer_id: 1}
    assert set(epochs) == {a.producer_id, b.producer_id}
    assert [(x.producer_id, x.first_offset, x.last_offset) for x in aborted] == [
        (a.producer_id, 0, 2)
    ]
    b.append(TOPIC, 0, [b"b2"])
    b.commit_transaction()
    fresh = make_log(tmp_path / "log")
    assert _values(fresh, 0, committed=True) == [b"b1", b"b2"]
    # A damaged index is ignored: the walk starts further back and agrees.
    index.write_bytes(index.read_bytes()[:-1] + b"\x00")
    assert decode_txn_index(index) is None
    again = make_log(tmp_path / "log")
    assert _values(again, 0, committed=True) == [b"b1", b"b2"]


def test_transactional_batches_survive_recovery(make_log, tmp_path) -> None:
    """Reopening scans and validates magic-2 batches like any other."""
    log = make_log()
    log.create_topic(TOPIC)
    producer = log.transactional_producer("r")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"r1"], keys=[b"k"], headers=[[("h", b"v")]])
    producer.commit_transaction()
    log.close()
    reopened = make_log(tmp_path / "log")
    part = reopened.partition(TOPIC, 0)
    assert part.truncated_bytes == 0
    record = reopened.read(TOPIC, 0, 0)[0]
    assert (record.key, record.value, record.headers) == (b"k", b"r1", (("h", b"v"),))
    raw = part.segments[0].pread(200, 0)
    header = parse_header(raw)
    assert header.magic == MAGIC_TXN
    marker = parse_header(raw, header.size)
    assert marker.attributes & ATTR_CONTROL


def test_compaction_of_a_transactional_partition(make_log, tmp_path) -> None:
    """Committed transactional records compact by key like plain ones; aborted ones
    and markers go; nothing at or past the LSO is touched; read_committed reads the
    same before and after, here and in a log opened afterwards."""
    log = make_log()
    log.create_topic(TOPIC, config={"cleanup.policy": "compact", "segment.bytes": 400})
    part = log.partition(TOPIC, 0)
    producer = log.transactional_producer("k")
    producer.init_transactions()
    for i in range(6):
        producer.begin_transaction()
        producer.append(TOPIC, 0, [b"t%d" % i], keys=[b"k%d" % (i % 2)])
        if i == 4:
            producer.abort_transaction()  # k0's t4: must never win over t2
        else:
            producer.commit_transaction()
        log.append(TOPIC, 0, [b"p%d" % i], keys=[b"plain"])
    other = log.transactional_producer("open")
    other.init_transactions()
    other.begin_transaction()
    open_first = other.append(TOPIC, 0, [b"open"], keys=[b"k0"]).start
    log.append(TOPIC, 0, [b"late"], keys=[b"late"])
    part.roll()
    before = _committed_records(log)
    result = clean_partition(part, force=True)
    assert result.segments_before > 0 and result.records_removed > 0
    cleaned_end = part.segments[result.segments_after].base_offset
    assert 0 < cleaned_end <= open_first, "nothing at or past the LSO is cleaned"
    latest = {r.key: r.offset for r in before if r.offset < cleaned_end}
    wanted = [r.value for r in before if r.offset >= cleaned_end or latest[r.key] == r.offset]
    assert _values(log, 0, committed=True) == wanted
    assert b"t2" in wanted and b"t4" not in wanted, "k0: the aborted t4 never wins"
    assert log.last_stable_offset(TOPIC, 0) == open_first
    everything = _values(log, 0, committed=False)
    assert b"t4" not in everything and b"open" in everything and b"late" in everything
    other.commit_transaction()
    done = [*wanted, b"open", b"late"]
    assert _values(log, 0, committed=True) == done
    reopened = make_log(tmp_path / "log")
    assert reopened.partition(TOPIC, 0).truncated_bytes == 0
    assert _values(reopened, 0, committed=True) == done


def test_the_producer_refuses_calls_out_of_order(make_log) -> None:
    log = make_log()
    log.create_topic(TOPIC)
    producer = log.transactional_producer("o")
    with pytest.raises(InvalidTxnStateError):
        producer.begin_transaction()  # before init_transactions
    producer.init_transactions()
    with pytest.raises(InvalidTxnStateError):
        producer.append(TOPIC, 0, [b"x"])  # before begin_transaction
    producer.begin_transaction()
    with pytest.raises(InvalidTxnStateError):
        producer.begin_transaction()
    producer.commit_transaction()  # nothing written: nothing to mark
    assert log.latest_offset(TOPIC, 0) == 0


def test_close_aborts_the_open_transaction(make_log) -> None:
    log = make_log()
    log.create_topic(TOPIC)
    with log.transactional_producer("x") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.append(TOPIC, 0, [b"gone"])
    assert log.last_stable_offset(TOPIC, 0) == log.latest_offset(TOPIC, 0) == 2
    assert _values(log, 0, committed=True) == []


def test_a_format_1_batch_claiming_a_producer_is_cut_by_recovery(make_log, tmp_path) -> None:
    """Magic 1 with the transactional bit is damage (the magic byte is outside the
    CRC): recovery cuts it like a torn tail, and the batch before it stays."""
    log = make_log()
    log.create_topic(TOPIC)
    log.append(TOPIC, 0, [b"kept"])
    data = encode_batch([b"v"], producer=ProducerSection(1, 0, -1))
    data[12] = 1
    log.partition(TOPIC, 0).append_encoded(data)
    log.close()
    reopened = make_log(tmp_path / "log")
    assert reopened.partition(TOPIC, 0).truncated_bytes == len(data)
    assert [r.value for r in reopened.read(TOPIC, 0, 0)] == [b"kept"]


def test_a_batch_cut_by_a_read_uncommitted_read_is_not_served_to_read_committed(
    make_log,
) -> None:
    log = make_log()
    log.create_topic(TOPIC)
    producer = log.transactional_producer("cut")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"x1", b"x2", b"x3"])
    # Open: a read_uncommitted read cuts the batch; read_committed stops at the LSO.
    assert [r.value for r in log.read(TOPIC, 0, 0, max_records=1)] == [b"x1"]
    assert log.read(TOPIC, 0, 1, isolation_level=COMMITTED) == []
    producer.abort_transaction()
    log.append(TOPIC, 0, [b"after"])
    assert [r.value for r in log.read(TOPIC, 0, 0, max_records=1)] == [b"x1"]
    records = log.read(TOPIC, 0, 1, isolation_level=COMMITTED)
    assert [r.value for r in records] == [b"after"], "the aborted rest is skipped"


def test_a_read_committed_consumer_moves_past_markers_and_aborts(make_log) -> None:
    log = make_log()
    log.create_topic(TOPIC)
    tp = TopicPartition(TOPIC, 0)
    producer = log.transactional_producer("c")
    producer.init_transactions()
    for i, commit in enumerate([True, False, True]):
        producer.begin_transaction()
        producer.append(TOPIC, 0, [b"%d" % i])
        producer.commit_transaction() if commit else producer.abort_transaction()
    end = log.latest_offset(TOPIC, 0)
    consumer = Consumer(log, auto_offset_reset="earliest", isolation_level=COMMITTED)
    consumer.assign([tp])
    got = []
    wait_until(lambda: got.extend(consumer.poll(0.1)) or consumer.position(tp) == end)
    assert [r.value for r in got] == [b"0", b"2"]
    plain = Consumer(log, auto_offset_reset="earliest")
    plain.assign([tp])
    seen = []
    wait_until(lambda: seen.extend(plain.poll(0.1)) or plain.position(tp) == end)
    assert [r.value for r in seen] == [b"0", b"1", b"2"], "no control records, aborted kept"
    with pytest.raises(ValueError, match="isolation_level"):
        Consumer(log, isolation_level="read_everything")


def test_a_read_committed_consumer_at_latest_starts_at_the_lso(make_log) -> None:
    """For read_committed, "latest" is the last stable offset, as in Kafka: from the
    log end, the open transaction's records would be skipped for good."""
    log = make_log()
    log.create_topic(TOPIC)
    tp = TopicPartition(TOPIC, 0)
    log.append(TOPIC, 0, [b"old"])
    producer = log.transactional_producer("late")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"pending"])
    consumer = Consumer(log, auto_offset_reset="latest", isolation_level=COMMITTED)
    consumer.assign([tp])
    assert consumer.position(tp) == 1
    producer.commit_transaction()
    got: list = []
    wait_until(lambda: got.extend(consumer.poll(0.1)) or got)
    assert [r.value for r in got] == [b"pending"]
    consumer.seek_to_end([tp])
    assert consumer.position(tp) == log.latest_offset(TOPIC, 0) == 3


def test_a_read_committed_consumer_held_by_an_open_transaction_looks_sooner(
    make_log, tmp_path, monkeypatch
) -> None:
    """Another process's commit wakes no waiter here: a read_committed consumer
    whose records wait behind an open transaction looks again after 5 ms, not after
    the idle 50 ms (an exactly-once sink lagged that much at each catch-up); with
    nothing held back it waits as before."""
    log = make_log()
    log.create_topic(TOPIC)
    tp = TopicPartition(TOPIC, 0)
    log.append(TOPIC, 0, [b"plain"])
    other = make_log(tmp_path / "log")  # another process's view of the same files
    producer = other.transactional_producer("elsewhere")
    producer.init_transactions()
    waits: list[float] = []
    real_wait = log.wait_for_append

    def wait_for_append(after: int, timeout_s: float) -> None:
        waits.append(timeout_s)
        real_wait(after, timeout_s)

    monkeypatch.setattr(log, "wait_for_append", wait_for_append)
    consumer = Consumer(log, auto_offset_reset="earliest", isolation_level=COMMITTED)
    consumer.assign([tp])
    assert [r.value for r in consumer.poll(1.0)] == [b"plain"]
    assert consumer.poll(0.1) == [] and waits[0] == 0.05, "the idle wait"
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"pending"])
    waits.clear()
    assert consumer.poll(0.1) == []
    assert waits and max(waits) <= 0.005, "held back: looks again soon"
    producer.commit_transaction()
    got: list = []
    wait_until(lambda: got.extend(consumer.poll(0.1)) or got, timeout_s=10)
    assert [r.value for r in got] == [b"pending"]
    waits.clear()
    assert consumer.poll(0.06) == [] and waits[0] == 0.05, "nothing held back: the idle wait"


def test_retention_takes_aborted_transactions_and_their_index_away(make_log) -> None:
    log = make_log()
    log.create_topic(TOPIC, config={"retention.bytes": 1, "segment.bytes": 10_000})
    part = log.partition(TOPIC, 0)
    producer = log.transactional_producer("r")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append(TOPIC, 0, [b"gone"])
    producer.abort_transaction()
    part.roll()
    index = part.directory / f"{0:020d}.txnindex"
    assert index.exists() and len(part.txn_view().aborted) == 1
    log.append(TOPIC, 0, [b"kept"])
    part.roll()
    assert log.run_maintenance()["segments_deleted"] >= 1
    assert part.segments[0].base_offset >= 2, "the aborted transaction and its marker went"
    assert not index.exists()
    assert part.txn_view().aborted == []
    log.append(TOPIC, 0, [b"new"])
    assert _values(log, 0, committed=True)[-1:] == [b"new"]
