"""Topic administration, names, configs and the public append/read surface."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from log import (
    FileLog,
    InvalidConfigError,
    InvalidRecordError,
    InvalidTopicError,
    Log,
    LogNotFoundError,
    OffsetOutOfRangeError,
    TopicConfig,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)


def test_filelog_implements_the_log_protocol(file_log: FileLog) -> None:
    assert isinstance(file_log, Log)


def test_create_describe_list_delete(file_log: FileLog, tmp_path: Path) -> None:
    desc = file_log.create_topic("orders", 3, config={"retention.ms": "1000"})
    assert [p.partition for p in desc.partitions] == [0, 1, 2]
    assert desc.config["retention.ms"] == 1000
    assert all(p.earliest_offset == p.latest_offset == 0 for p in desc.partitions)
    file_log.append("orders", 1, [b"a", b"b"])
    desc = file_log.describe_topic("orders")
    assert desc.partitions[1].latest_offset == 2
    assert desc.partitions[1].size_bytes > 0
    assert file_log.list_topics() == ["orders"]
    with pytest.raises(TopicExistsError):
        file_log.create_topic("orders", 1)
    file_log.delete_topic("orders")
    assert file_log.list_topics() == []
    assert not (tmp_path / "log" / "orders").exists()
    with pytest.raises(UnknownTopicOrPartitionError):
        file_log.describe_topic("orders")
    with pytest.raises(UnknownTopicOrPartitionError):
        file_log.delete_topic("orders")
    file_log.create_topic("orders", 1)  # the name can be reused, starting empty
    assert file_log.latest_offset("orders", 0) == 0


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "a b", "é", "x" * 250, "a\x00b"])
def test_bad_topic_names_never_touch_the_disk(file_log: FileLog, tmp_path: Path, name: str) -> None:
    before = sorted(p.name for p in (tmp_path / "log").iterdir())
    with pytest.raises(InvalidTopicError) as info:
        file_log.create_topic(name, 1)
    assert info.value.name == name
    with pytest.raises(InvalidTopicError):
        file_log.append(name, 0, [b"x"])
    assert sorted(p.name for p in (tmp_path / "log").iterdir()) == before
    assert not (tmp_path / "x").exists()


def test_legal_names_at_the_limits(file_log: FileLog) -> None:
    for name in ("a", "A-b_c.d", "x" * 249, "__internal"):
        file_log.create_topic(name, 1)
    assert "x" * 249 in file_log.list_topics()
    assert "__internal" not in file_log.list_topics()
    assert "__internal" in file_log.list_topics(include_internal=True)


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"segment.bytes": "lots"}, "segment.bytes"),
        ({"retention.ms": -5}, "retention.ms"),
        ({"cleanup.policy": "shred"}, "cleanup.policy"),
        ({"no.such.key": 1}, "no.such.key"),
        ({"min.cleanable.dirty.ratio": 2}, "min.cleanable.dirty.ratio"),
        ({"compression.type": "snappy"}, "compression.type"),
    ],
)
def test_bad_config_names_the_key(file_log: FileLog, config: dict, key: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        file_log.create_topic("t", 1, config=config)
    assert info.value.key == key
    assert key in str(info.value)
    assert "t" not in file_log.list_topics()


def test_bad_partition_counts(file_log: FileLog) -> None:
    for bad in (0, -1):
        with pytest.raises(InvalidConfigError):
            file_log.create_topic("t", bad)
    file_log.create_topic("t", 2)
    with pytest.raises(UnknownTopicOrPartitionError):
        file_log.append("t", 2, [b"x"])
    with pytest.raises(UnknownTopicOrPartitionError):
        file_log.read("t", -1, 0)


def test_add_partitions_and_alter_config(file_log: FileLog, make_log) -> None:
    file_log.create_topic("t", 2)
    file_log.create_partitions("t", 5)
    assert file_log.partition_count("t") == 5
    assert file_log.append("t", 4, [b"x"]) == range(0, 1)
    with pytest.raises(InvalidConfigError):
        file_log.create_partitions("t", 3)  # never shrinks
    file_log.alter_topic_config("t", {"retention.ms": 5000})
    assert file_log.topic_config("t").retention_ms == 5000
    file_log.alter_topic_config("t", {"retention.ms": None})
    assert file_log.topic_config("t").retention_ms == TopicConfig().retention_ms
    with pytest.raises(InvalidConfigError):
        file_log.alter_topic_config("t", {"segment.bytes": "x"})
    meta = json.loads((file_log.directory / "t" / "topic.json").read_text())
    assert meta == {"partitions": 5, "config": {}}
    # A second log over the same directory sees all of it.
    other = make_log(file_log.directory)
    assert other.partition_count("t") == 5
    assert other.read("t", 4, 0)[0].value == b"x"


def test_reads_inside_one_batch_decode_it_once(
    file_log: FileLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consumer taking fewer records than a batch holds gets the rest of the batch
    from the read that cut it, not from decoding the batch again."""
    import log.partition_read

    decoded: list[int] = []
    real = log.partition_read.decode_records

    def counting(*args: object, **kwargs: object) -> object:
        decoded.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(log.partition_read, "decode_records", counting)
    file_log.create_topic("t", 1)
    file_log.append("t", 0, [b"%d" % i for i in range(10)], headers=[[("h", b"x")]] * 10)
    file_log.append("t", 0, [b"10", b"11"])
    got = []
    offset = 0
    while offset < 12:
        records = file_log.read("t", 0, offset, max_records=3)
        got += records
        offset = records[-1].offset + 1
    assert [r.value for r in got] == [b"%d" % i for i in range(12)]
    assert all(r.headers == (("h", b"x"),) for r in got[:10]) and got[10].headers == ()
    assert len(decoded) == 2  # each batch once, though the first was read in four steps
    # A read elsewhere (a seek back) is served from the log again, and correctly.
    assert [r.value for r in file_log.read("t", 0, 1, max_records=2)] == [b"1", b"2"]
    assert [r.value for r in file_log.read("t", 0, 9)] == [b"9", b"10", b"11"]


def test_append_returns_offsets_and_read_bounds(file_log: FileLog) -> None:
    file_log.create_topic("t", 1)
    assert file_log.append("t", 0, [b"a", b"b", b"c"]) == range(0, 3)
    assert file_log.append("t", 0, [b"d"], keys=[b"k"], headers=[[("h", b"v")]]) == range(3, 4)
    recs = file_log.read("t", 0, 1)
    assert [(r.offset, r.value) for r in recs] == [(1, b"b"), (2, b"c"), (3, b"d")]
    assert recs[-1].key == b"k" and recs[-1].headers == (("h", b"v"),)
    assert [r.offset for r in file_log.read("t", 0, 0, max_records=2)] == [0, 1]
    # max_bytes is soft for the first batch (a consumer must always make progress).
    assert len(file_log.read("t", 0, 0, max_bytes=1)) == 3
    assert file_log.read("t", 0, 4) == []
    with pytest.raises(OffsetOutOfRangeError) as info:
        file_log.read("t", 0, 5)
    assert (info.value.offset, info.value.start, info.value.end) == (5, 0, 4)
    with pytest.raises(OffsetOutOfRangeError):
        file_log.read("t", 0, -1)


def test_compacted_topics_refuse_null_keys(file_log: FileLog) -> None:
    file_log.create_topic("c", 1, config={"cleanup.policy": "compact"})
    with pytest.raises(InvalidRecordError):
        file_log.append("c", 0, [b"v"])
    with pytest.raises(InvalidRecordError):
        file_log.append("c", 0, [b"v", b"w"], keys=[b"k", None])
    assert file_log.latest_offset("c", 0) == 0


def test_max_message_bytes(file_log: FileLog) -> None:
    file_log.create_topic("t", 1, config={"max.message.bytes": 1000})
    with pytest.raises(InvalidRecordError, match=r"max\.message\.bytes"):
        file_log.append("t", 0, [b"x" * 2000])
    assert file_log.append("t", 0, [b"x" * 100]) == range(0, 1)


@pytest.mark.parametrize("codec", ["gzip", "lz4", "zstd", "none"])
def test_compressed_topics_round_trip(make_log, codec: str) -> None:
    log = make_log()
    log.create_topic("z", 1, config={"compression.type": codec})
    values = [b"%d-" % i + b"payload" * 20 for i in range(500)]
    log.append("z", 0, values)
    assert [r.value for r in log.read("z", 0, 0)] == values
    log.close()
    assert [r.value for r in make_log(log.directory).read("z", 0, 0)] == values


def test_auto_create_topics(make_log) -> None:
    log = make_log(auto_create_topics=True, num_partitions=4)
    assert log.append("fresh", 3, [b"x"]) == range(0, 1)
    assert log.partition_count("fresh") == 4


def test_roll_by_size_and_age(make_log, clock) -> None:
    log = make_log(clock=clock)
    log.create_topic("t", 1, config={"segment.bytes": 1000, "segment.ms": 60_000})
    for _ in range(10):
        log.append("t", 0, [b"x" * 150])
    part = log.partition("t", 0)
    assert len(part.segments) >= 2
    assert all(s.valid_end <= 1000 for s in part.segments[:-1])
    before = len(part.segments)
    clock.advance(60_001)
    log.append("t", 0, [b"y"])
    assert len(part.segments) == before + 1
    assert [s.base_offset for s in part.segments] == sorted(s.base_offset for s in part.segments)
    assert [r.offset for r in log.read("t", 0, 0, max_records=100)] == list(range(11))


def test_offset_for_timestamp(file_log: FileLog) -> None:
    file_log.create_topic("t", 1, config={"segment.bytes": 500, "index.interval.bytes": 64})
    for i in range(50):
        file_log.append("t", 0, [b"v%d" % i], timestamps=[1000 + 10 * i])
    assert file_log.offset_for_timestamp("t", 0, 0) == 0
    assert file_log.offset_for_timestamp("t", 0, 1000) == 0
    assert file_log.offset_for_timestamp("t", 0, 1001) == 1
    assert file_log.offset_for_timestamp("t", 0, 1250) == 25
    assert file_log.offset_for_timestamp("t", 0, 1490) == 49
    assert file_log.offset_for_timestamp("t", 0, 1491) is None


def test_flush_ms_by_background_maintenance(make_log, clock) -> None:
    log = make_log(clock=clock)
    log.create_topic("t", 1, config={"flush.ms": 1000})
    log.append("t", 0, [b"x"])
    part = log.partition("t", 0)
    assert part.segments[-1].unsynced_bytes > 0
    log.run_maintenance()
    assert part.segments[-1].unsynced_bytes > 0  # not due yet
    clock.advance(1000)
    log.run_maintenance()
    assert part.segments[-1].unsynced_bytes == 0


def test_flush_messages_fsyncs_each_append(file_log: FileLog) -> None:
    file_log.create_topic("t", 1, config={"flush.messages": 1})
    file_log.append("t", 0, [b"x"])
    assert file_log.partition("t", 0).segments[-1].unsynced_bytes == 0


def test_closed_log_refuses_calls(make_log) -> None:
    log = make_log()
    log.create_topic("t", 1)
    log.close()
    with pytest.raises(Exception, match="closed"):
        log.append("t", 0, [b"x"])


def test_create_false_opens_an_existing_log_only(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "log"
    with pytest.raises(LogNotFoundError) as info:
        FileLog(missing, background=False, create=False)
    assert str(info.value) == f"no log at {missing}" and info.value.path == str(missing)
    assert not (tmp_path / "no").exists()
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(LogNotFoundError, match="not a directory"):
        FileLog(a_file, background=False, create=False)
    with FileLog(missing, background=False) as log:  # the default creates it
        log.create_topic("t")
    with FileLog(missing, background=False, create=False) as log:
        assert log.list_topics() == ["t"]
