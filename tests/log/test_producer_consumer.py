"""Producer and Consumer through the public API, and group membership in-process."""

from __future__ import annotations

import threading
import time

import pytest

from log import (
    Consumer,
    FileLog,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    Producer,
    TopicPartition,
    partition_for_key,
)
from log.group import assign_round_robin


def _drain(consumer: Consumer, want: int, timeout_s: float = 10.0) -> list:
    out: list = []
    deadline = time.monotonic() + timeout_s
    while len(out) < want and time.monotonic() < deadline:
        out.extend(consumer.poll(0.2))
    return out


def test_keyed_records_follow_the_kafka_partitioner(file_log: FileLog) -> None:
    file_log.create_topic("t", 6)
    with Producer(file_log) as producer:
        for i in range(600):
            producer.send("t", b"v%d" % i, b"key-%d" % (i % 40))
    for p in range(6):
        for rec in file_log.read("t", p, 0, max_records=10_000):
            assert partition_for_key(rec.key, 6) == p
    total = sum(file_log.latest_offset("t", p) for p in range(6))
    assert total == 600


def test_unkeyed_records_stick_per_batch_and_spread(file_log: FileLog) -> None:
    file_log.create_topic("t", 3)
    with Producer(file_log, batch_max_records=100) as producer:
        for i in range(900):
            producer.send("t", b"v%d" % i)
    counts = [file_log.latest_offset("t", p) for p in range(3)]
    assert sum(counts) == 900
    assert all(c % 100 == 0 and c > 0 for c in counts), counts


def test_explicit_partition_timestamp_headers(file_log: FileLog) -> None:
    file_log.create_topic("t", 2)
    seen = []
    with Producer(file_log, on_delivery=lambda t, p, offsets: seen.append((t, p, offsets))) as pr:
        pr.send("t", b"a", partition=1, timestamp=42, headers=[("h", b"1"), ("n", None)])
        pr.send("t", None, b"k", partition=1)
    rec = file_log.read("t", 1, 0)
    assert rec[0].timestamp == 42 and rec[0].headers == (("h", b"1"), ("n", None))
    assert rec[1].value is None and rec[1].key == b"k"
    assert rec[1].timestamp > 1_600_000_000_000  # stamped at send time
    assert seen == [("t", 1, range(0, 2))]


def test_linger_sends_without_flush(file_log: FileLog) -> None:
    file_log.create_topic("t", 1)
    producer = Producer(file_log, linger_ms=20)
    try:
        producer.send("t", b"x")
        deadline = time.monotonic() + 5
        while file_log.latest_offset("t", 0) == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert file_log.latest_offset("t", 0) == 1
    finally:
        producer.close()


def test_producer_surfaces_errors(file_log: FileLog) -> None:
    file_log.create_topic("c", 1, config={"cleanup.policy": "compact"})
    producer = Producer(file_log, linger_ms=10_000)
    producer.send("c", b"no key", partition=0)
    with pytest.raises(Exception, match="key"):
        producer.flush()
    producer.close()


def test_assign_seek_poll_commit(file_log: FileLog) -> None:
    file_log.create_topic("t", 2)
    file_log.append("t", 0, [b"a%d" % i for i in range(10)])
    file_log.append("t", 1, [b"b%d" % i for i in range(5)])
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    consumer = Consumer(
        file_log, group_id="g", auto_offset_reset="earliest", enable_auto_commit=False
    )
    consumer.assign([tp0, tp1])
    got = _drain(consumer, 15)
    assert sorted((r.partition, r.offset) for r in got) == (
        [(0, i) for i in range(10)] + [(1, i) for i in range(5)]
    )
    assert consumer.position(tp0) == 10
    consumer.seek(tp0, 7)
    assert [r.offset for r in consumer.poll(0.5) if r.partition == 0] == [7, 8, 9]
    consumer.commit({tp0: 8, tp1: OffsetAndMetadata(3, "note")})
    assert consumer.committed([tp0, tp1]) == {
        tp0: OffsetAndMetadata(8, "", consumer.committed([tp0])[tp0].commit_timestamp),
        tp1: consumer.committed([tp1])[tp1],
    }
    assert file_log.committed_offsets("g")[tp1].metadata == "note"
    consumer.close()
    # A new consumer of the group starts at the committed offsets.
    again = Consumer(file_log, group_id="g", enable_auto_commit=False)
    again.assign([tp0, tp1])
    got = _drain(again, 4)
    assert sorted((r.partition, r.offset) for r in got) == [(0, 8), (0, 9), (1, 3), (1, 4)]
    again.close()


def test_reset_policies(file_log: FileLog) -> None:
    file_log.create_topic("t", 1)
    file_log.append("t", 0, [b"old"])
    tp = TopicPartition("t", 0)
    latest = Consumer(file_log, group_id="a", auto_offset_reset="latest")
    latest.assign([tp])
    assert latest.poll(0.1) == []
    file_log.append("t", 0, [b"new"])
    assert [r.value for r in latest.poll(1.0)] == [b"new"]
    none = Consumer(file_log, group_id="b", auto_offset_reset="none")
    none.assign([tp])
    with pytest.raises(NoOffsetForPartitionError):
        none.poll(0.1)
    with pytest.raises(ValueError):
        Consumer(file_log, auto_offset_reset="sometimes")


def test_position_out_of_range_is_reset(make_log, clock) -> None:
    log = make_log(clock=clock)
    log.create_topic("t", 1, config={"segment.bytes": 200, "retention.ms": 1000})
    for i in range(20):
        log.append("t", 0, [b"x%02d" % i])
    tp = TopicPartition("t", 0)
    consumer = Consumer(log, auto_offset_reset="earliest")
    consumer.assign([tp])
    consumer.seek(tp, 0)
    clock.advance(5000)
    log.append("t", 0, [b"fresh"])
    log.run_maintenance()
    start = log.earliest_offset("t", 0)
    assert start > 0
    got = _drain(consumer, log.latest_offset("t", 0) - start)
    assert got[0].offset == start and got[-1].value == b"fresh"


def test_auto_commit_on_close(file_log: FileLog) -> None:
    file_log.create_topic("t", 1)
    file_log.append("t", 0, [b"1", b"2", b"3"])
    with Consumer(file_log, group_id="g", auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("t", 0)])
        assert len(_drain(consumer, 3)) == 3
    assert file_log.committed_offsets("g")[TopicPartition("t", 0)].offset == 3
    assert file_log.list_groups() == ["g"]
    file_log.delete_group("g")
    assert file_log.list_groups() == []


def test_pause_and_resume(file_log: FileLog) -> None:
    file_log.create_topic("t", 2)
    file_log.append("t", 0, [b"a"])
    file_log.append("t", 1, [b"b"])
    consumer = Consumer(file_log, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("t", 0), TopicPartition("t", 1)])
    consumer.pause([TopicPartition("t", 1)])
    assert [r.value for r in consumer.poll(0.2)] == [b"a"]
    assert consumer.poll(0.1) == []
    consumer.resume([TopicPartition("t", 1)])
    assert [r.value for r in consumer.poll(0.5)] == [b"b"]


def test_poll_wakes_on_append(file_log: FileLog) -> None:
    file_log.create_topic("t", 1)
    consumer = Consumer(file_log, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("t", 0)])
    timer = threading.Timer(0.1, lambda: file_log.append("t", 0, [b"late"]))
    timer.start()
    started = time.monotonic()
    got = consumer.poll(5.0)
    timer.join()
    assert [r.value for r in got] == [b"late"]
    assert time.monotonic() - started < 2.0


def test_assignment_function_is_deterministic_and_even() -> None:
    members = {"m2": ["a", "b"], "m1": ["a"], "m3": ["a", "b"]}
    counts = {"a": 7, "b": 2}
    first = assign_round_robin(members, counts)
    assert first == assign_round_robin(dict(reversed(list(members.items()))), counts)
    owned = [tp for tps in first.values() for tp in tps]
    assert sorted(owned) == sorted(
        [TopicPartition("a", p) for p in range(7)] + [TopicPartition("b", p) for p in range(2)]
    )
    assert len(owned) == len(set(owned))
    assert all(tp.topic == "a" for tp in first["m1"])
    sizes = [len([tp for tp in first[m] if tp.topic == "a"]) for m in members]
    assert max(sizes) - min(sizes) <= 1


def test_group_members_share_partitions_and_take_over(file_log: FileLog) -> None:
    file_log.create_topic("t", 4)
    for p in range(4):
        file_log.append("t", p, [b"p%d-%d" % (p, i) for i in range(5)])
    assigned: dict[str, list] = {"a": [], "b": []}
    a = Consumer(
        file_log, group_id="g", auto_offset_reset="earliest", member_id="a", heartbeat_interval_ms=0
    )
    b = Consumer(
        file_log, group_id="g", auto_offset_reset="earliest", member_id="b", heartbeat_interval_ms=0
    )
    a.subscribe(["t"], on_assign=lambda tps: assigned["a"].extend(tps))
    b.subscribe(["t"], on_assign=lambda tps: assigned["b"].extend(tps))
    seen = []
    deadline = time.monotonic() + 10
    while len(seen) < 20 and time.monotonic() < deadline:
        seen += a.poll(0.05) + b.poll(0.05)
    assert sorted(r.value for r in seen) == sorted(
        b"p%d-%d" % (p, i) for p in range(4) for i in range(5)
    )
    assert a.assignment() and b.assignment()
    assert a.assignment().isdisjoint(b.assignment())
    assert len(a.assignment() | b.assignment()) == 4
    a.close()  # commits and leaves: b takes everything over
    for p in range(4):
        file_log.append("t", p, [b"late-%d" % p])
    late = []
    deadline = time.monotonic() + 10
    while len(late) < 4 and time.monotonic() < deadline:
        late += b.poll(0.1)
    assert sorted(r.value for r in late) == [b"late-%d" % p for p in range(4)]
    assert len(b.assignment()) == 4
    b.close()
    assert {tp.partition: o.offset for tp, o in file_log.committed_offsets("g").items()} == {
        p: 6 for p in range(4)
    }
