"""The limits of one segment: `segment.bytes` and the other int-typed keys stop at
Kafka's 2^31 − 1 (an index entry holds positions and relative offsets in 32 bits),
a full offset or time index rolls the segment (`segment.index.bytes`), and the
cleaner never merges segments into one whose offsets an index entry cannot hold."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from log import FileLog, InvalidConfigError, TopicConfig
from log.batch import encode_batch
from log.cleaner import clean_partition
from log.config import INT_MAX
from log.segment import segment_name
from tests.conftest import ManualClock

INT_KEYS = ["segment.bytes", "segment.index.bytes", "index.interval.bytes", "max.message.bytes"]


def _read_all(log: FileLog, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    offset = log.earliest_offset(topic, 0)
    end = log.latest_offset(topic, 0)
    while offset < end:
        records = log.read(topic, 0, offset, max_records=100_000, max_bytes=1 << 26)
        assert records, f"nothing read at {offset} below the log end {end}"
        out += [(r.offset, r.key, r.value) for r in records]
        offset = records[-1].offset + 1
    return out


# ------------------------------------------------------------ int-typed keys


@pytest.mark.parametrize("key", INT_KEYS)
def test_an_int_key_above_kafkas_limit_is_refused_naming_key_and_limit(
    file_log: FileLog, key: str
) -> None:
    with pytest.raises(InvalidConfigError) as refused:
        file_log.create_topic("t", 1, config={key: 2**31})
    message = str(refused.value)
    assert refused.value.key == key
    assert key in message and "2147483647" in message and "\n" not in message
    assert file_log.list_topics() == []  # nothing was created
    file_log.create_topic("t", 1, config={key: str(INT_MAX)})
    assert file_log.topic_config("t").to_dict()[key] == INT_MAX
    with pytest.raises(InvalidConfigError, match=key):
        file_log.alter_topic_config("t", {key: 5 * 2**30})
    assert file_log.topic_config("t").to_dict()[key] == INT_MAX


def test_a_topic_saved_with_segment_bytes_past_the_limit_opens_at_the_limit(
    make_log, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An older version accepted segment.bytes=5 GiB (and failed every append once a
    segment passed 4 GiB). Such a topic opens, its data readable and writable, with
    segments capped at the limit and one warning that names the topic and key."""
    log = make_log()
    log.create_topic("old", 1)
    log.append("old", 0, [b"before"])
    log.close()
    meta_path = tmp_path / "log" / "old" / "topic.json"
    meta = json.loads(meta_path.read_text())
    meta["config"] = {"segment.bytes": 5 * 2**30, "retention.ms": 1000}
    meta_path.write_text(json.dumps(meta))

    caplog.set_level(logging.WARNING, logger="log.config")
    log = make_log()
    assert log.topic_config("old").segment_bytes == INT_MAX
    assert log.topic_config("old").retention_ms == 1000
    assert log.append("old", 0, [b"after"]) == range(1, 2)
    assert [v for _o, _k, v in _read_all(log, "old")] == [b"before", b"after"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "topic old: segment.bytes=5368709120 is above its limit 2147483647; using 2147483647"
    ]
    # Another key can still be altered; the saved one is read as before.
    log.alter_topic_config("old", {"retention.ms": 2000})
    assert log.topic_config("old").retention_ms == 2000
    assert log.topic_config("old").segment_bytes == INT_MAX
    # Setting the key itself to a valid value repairs the saved config.
    log.alter_topic_config("old", {"segment.bytes": 1 << 20})
    assert json.loads(meta_path.read_text())["config"]["segment.bytes"] == 1 << 20
    assert len(caplog.records) == 1


def test_parse_stored_still_refuses_what_was_never_valid() -> None:
    with pytest.raises(InvalidConfigError, match=r"segment\.bytes"):
        TopicConfig.parse_stored({"segment.bytes": "big"}, topic="t")
    with pytest.raises(InvalidConfigError, match=r"segment\.bytes"):
        TopicConfig.parse_stored({"segment.bytes": 1}, topic="t")


# --------------------------------------------------------------- full indexes


def _index_sizes(partition_dir: Path, suffix: str) -> list[int]:
    return [p.stat().st_size for p in sorted(partition_dir.glob(f"*{suffix}"))]


@pytest.mark.parametrize(
    ("growing_timestamps", "suffix", "entries_per_segment"),
    [
        pytest.param(False, ".index", 4096 // 8, id="offset-index"),
        pytest.param(True, ".timeindex", 4096 // 12, id="time-index"),
    ],
)
def test_a_full_index_rolls_the_segment(
    make_log, tmp_path: Path, growing_timestamps: bool, suffix: str, entries_per_segment: int
) -> None:
    """segment.index.bytes=4096 with an entry per batch: the offset index (8-byte
    entries) is full after 512 entries, the time index (12 bytes) after 341 when
    every batch raises the max timestamp; either rolls the segment, as in Kafka,
    instead of letting the index grow without bound."""
    clock = ManualClock()
    log = make_log(clock=clock)
    log.create_topic("t", 1, config={"segment.index.bytes": 4096, "index.interval.bytes": 0})
    batches = 3 * entries_per_segment + 10
    for i in range(batches):
        log.append(
            "t", 0, [b"v%d" % i], timestamps=[clock.now + i if growing_timestamps else clock.now]
        )
    part = log.partition("t", 0)
    # Every segment holds one batch more than it has entries (its first needs none).
    assert [s.base_offset for s in part.segments] == [
        n * (entries_per_segment + 1) for n in range(4)
    ]
    pdir = tmp_path / "log" / "t" / "0"
    assert max(_index_sizes(pdir, suffix)) == 4096 // (8 if suffix == ".index" else 12) * (
        8 if suffix == ".index" else 12
    )
    assert all(size <= 4096 for size in _index_sizes(pdir, ".index"))
    assert all(size <= 4096 for size in _index_sizes(pdir, ".timeindex"))
    expected = [(i, None, b"v%d" % i) for i in range(batches)]
    assert _read_all(log, "t") == expected
    log.close()
    log = make_log(clock=clock)
    assert _read_all(log, "t") == expected
    assert log.partition("t", 0).truncated_bytes == 0
    if growing_timestamps:
        start = ManualClock().now
        assert log.offset_for_timestamp("t", 0, start + 700) == 700


# -------------------------------------------------- compaction across offsets


def test_compaction_keeps_each_cleaned_segment_within_an_index_entrys_reach(
    make_log, tmp_path: Path
) -> None:
    """Two closed segments 5 billion offsets apart (a compacted topic that took that
    many updates) are small enough to clean into one, but its relative offsets would
    not fit an index entry: the cleaner keeps them in separate groups."""
    clock = ManualClock()
    log = make_log(clock=clock)
    log.create_topic("c", 1, config={"cleanup.policy": "compact"})
    log.close()
    pdir = tmp_path / "log" / "c" / "0"
    for name in list(pdir.iterdir()):
        if name.suffix in (".log", ".index", ".timeindex"):
            name.unlink()
    bases = [0, 5_000_000_000, 10_000_000_000]
    for base in bases:
        batch = encode_batch(
            [b"v%d" % base, b"w%d" % base],
            keys=[b"k%d" % base, b"dup"],
            timestamp=clock.now,
            base_offset=base,
        )
        (pdir / segment_name(base)).write_bytes(bytes(batch))
        (pdir / segment_name(base, ".index")).write_bytes(b"")
        (pdir / segment_name(base, ".timeindex")).write_bytes(b"")
    (pdir / "recovery-point").write_text(str(bases[-1] + 2))
    log = make_log(clock=clock)
    part = log.partition("c", 0)
    assert [s.base_offset for s in part.segments] == bases
    result = clean_partition(part, force=True)
    assert result.segments_after == 2
    assert result.records_removed == 1  # the first "dup" (the active segment is not cleaned)
    expected = [
        (0, b"k0", b"v0"),
        (5_000_000_000, b"k5000000000", b"v5000000000"),
        (5_000_000_001, b"dup", b"w5000000000"),
        (10_000_000_000, b"k10000000000", b"v10000000000"),
        (10_000_000_001, b"dup", b"w10000000000"),
    ]
    assert _read_all(log, "c") == expected
    log.close()
    log = make_log(clock=clock)
    assert _read_all(log, "c") == expected
    assert log.partition("c", 0).truncated_bytes == 0
