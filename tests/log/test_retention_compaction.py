"""Retention (time, size) and compaction (latest per key, tombstones), run by the
maintenance pass with an injected clock; appends go on while cleaning."""

from __future__ import annotations

import threading

from log import FileLog
from log.cleaner import clean_partition


def _fill(log: FileLog, topic: str, batches: int, *, keys: int = 0, start: int = 0) -> None:
    for i in range(start, start + batches):
        key = [b"k%d" % (i % keys)] if keys else None
        log.append(topic, 0, [b"value-%05d" % i], keys=key)


def test_time_retention_deletes_old_closed_segments(make_log, clock) -> None:
    log = make_log(clock=clock)
    log.create_topic("t", 1, config={"segment.bytes": 300, "retention.ms": 10_000})
    _fill(log, "t", 20)
    clock.advance(5_000)
    _fill(log, "t", 20, start=20)
    part = log.partition("t", 0)
    segments_before = len(part.segments)
    assert log.run_maintenance()["segments_deleted"] == 0
    clock.advance(6_000)  # the first 20 are now 11 s old, the rest 6 s
    deleted = log.run_maintenance()["segments_deleted"]
    assert deleted > 0 and len(part.segments) == segments_before - deleted
    start = log.earliest_offset("t", 0)
    assert 0 < start <= 20
    assert log.read("t", 0, start)[0].offset == start
    assert log.latest_offset("t", 0) == 40
    clock.advance(100_000)
    log.run_maintenance()
    assert len(part.segments) == 1, "the active segment is never deleted"
    assert log.latest_offset("t", 0) == 40


def test_size_retention_keeps_the_newest_bytes(make_log, clock) -> None:
    log = make_log(clock=clock)
    log.create_topic(
        "t", 1, config={"segment.bytes": 300, "retention.bytes": 1000, "retention.ms": -1}
    )
    _fill(log, "t", 100)
    log.run_maintenance()
    part = log.partition("t", 0)
    assert part.size_bytes() < 1000 + 300
    assert log.latest_offset("t", 0) == 100
    start = log.earliest_offset("t", 0)
    assert [r.value for r in log.read("t", 0, start, max_records=1000)] == [
        b"value-%05d" % i for i in range(start, 100)
    ]


def test_compaction_keeps_latest_per_key(make_log, clock) -> None:
    log = make_log(clock=clock)
    log.create_topic(
        "c",
        1,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": 400,
            "min.cleanable.dirty.ratio": 0.01,
        },
    )
    _fill(log, "c", 200, keys=7)
    part = log.partition("c", 0)
    size_before = part.size_bytes()
    active_base = part.segments[-1].base_offset
    stats = log.run_maintenance()
    assert stats["partitions_cleaned"] == 1 and stats["records_compacted"] > 0
    assert part.size_bytes() < size_before
    records = log.read("c", 0, log.earliest_offset("c", 0), max_records=10_000)
    closed = [r for r in records if r.offset < active_base]
    # In the cleaned part, each key appears at most once, and holds its latest value there.
    keys = [r.key for r in closed]
    assert len(keys) == len(set(keys))
    latest = {}
    for i in range(200):
        latest[b"k%d" % (i % 7)] = (i, b"value-%05d" % i)
    final = {}
    for r in records:
        final[r.key] = (r.offset, r.value)
    assert final == latest, "reading the whole topic still gives every key's latest value"
    offsets = [r.offset for r in records]
    assert offsets == sorted(offsets)
    assert log.latest_offset("c", 0) == 200
    # It survives a reopen, and appends continue at the same offset.
    log.close()
    again = make_log(log.directory, clock=clock)
    assert [(r.offset, r.value) for r in again.read("c", 0, 0, max_records=10_000)] == [
        (r.offset, r.value) for r in records
    ]
    assert again.append("c", 0, [b"new"], keys=[b"k1"]) == range(200, 201)


def test_tombstones_go_after_delete_retention(make_log, clock) -> None:
    log = make_log(clock=clock)
    log.create_topic(
        "c",
        1,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": 300,
            "delete.retention.ms": 10_000,
            "min.cleanable.dirty.ratio": 0.01,
        },
    )
    log.append("c", 0, [b"v1", b"v2"], keys=[b"a", b"b"])
    log.append("c", 0, [None], keys=[b"a"])  # delete a
    log.partition("c", 0).roll()
    log.append("c", 0, [b"x"], keys=[b"z"])
    clean_partition(log.partition("c", 0), force=True)
    recs = log.read("c", 0, 0, max_records=100)
    assert [(r.key, r.value) for r in recs] == [(b"b", b"v2"), (b"a", None), (b"z", b"x")]
    clock.advance(10_001)
    clean_partition(log.partition("c", 0), force=True)
    recs = log.read("c", 0, log.earliest_offset("c", 0), max_records=100)
    assert [(r.key, r.value) for r in recs] == [(b"b", b"v2"), (b"z", b"x")]


def test_min_compaction_lag_protects_recent_segments(make_log, clock) -> None:
    log = make_log(clock=clock)
    log.create_topic(
        "c",
        1,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": 300,
            "min.compaction.lag.ms": 60_000,
            "min.cleanable.dirty.ratio": 0.01,
        },
    )
    _fill(log, "c", 50, keys=2)
    assert log.run_maintenance()["partitions_cleaned"] == 0
    clock.advance(60_000)
    assert log.run_maintenance()["partitions_cleaned"] == 1


def test_dirty_ratio_skips_mostly_clean_logs(make_log, clock) -> None:
    log = make_log(clock=clock)
    log.create_topic(
        "c",
        1,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": 300,
            "min.cleanable.dirty.ratio": 0.5,
        },
    )
    _fill(log, "c", 100, keys=100)  # all distinct keys: cleaning removes nothing
    assert log.run_maintenance()["partitions_cleaned"] == 1
    _fill(log, "c", 3, keys=100, start=100)
    assert log.run_maintenance()["partitions_cleaned"] == 0, "little new dirt: skipped"


def test_appends_continue_during_compaction(make_log, clock) -> None:
    log = make_log(clock=clock)
    log.create_topic(
        "c",
        1,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": 2000,
            "min.cleanable.dirty.ratio": 0.01,
        },
    )
    _fill(log, "c", 300, keys=10)
    stop = threading.Event()
    appended = []

    def writer() -> None:
        i = 1000
        while not stop.is_set():
            offsets = log.append("c", 0, [b"w%d" % i], keys=[b"w%d" % (i % 3)])
            appended.append(offsets.start)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(5):
            clean_partition(log.partition("c", 0), force=True)
    finally:
        stop.set()
        thread.join()
    assert appended == list(range(300, 300 + len(appended)))
    records = log.read("c", 0, 0, max_records=100_000)
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    assert offsets[-1] == 300 + len(appended) - 1
    latest = {r.key: r.value for r in records}
    for i in range(10):
        assert latest[b"k%d" % i] == b"value-%05d" % (290 + i)
