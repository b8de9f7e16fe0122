"""A log opened in one process keeps a correct view while another process appends,
rolls, compacts and deletes underneath it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from log import FileLog, UnknownTopicOrPartitionError

pytestmark = pytest.mark.integration

_WRITER = textwrap.dedent(
    """
    import sys
    from log import FileLog
    log = FileLog(sys.argv[1], background=False)
    action = sys.argv[2]
    if action == "append":
        start = log.latest_offset("t", 0)
        for i in range(int(sys.argv[3])):
            log.append("t", 0, [b"x%d" % (start + i)], keys=[b"k%d" % ((start + i) % 3)])
    elif action == "roll":
        log.partition("t", 0).roll()
    elif action == "compact":
        from log.cleaner import clean_partition
        clean_partition(log.partition("t", 0), force=True)
    elif action == "delete":
        log.delete_topic("t")
    log.close()
    """
)


def _other_process(directory: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "-c", _WRITER, str(directory), *args], check=True, env=env, timeout=60
    )


def _read_all(log: FileLog) -> list[tuple[int, bytes | None]]:
    out: list[tuple[int, bytes | None]] = []
    offset = log.earliest_offset("t", 0)
    while offset < log.latest_offset("t", 0):
        records = log.read("t", 0, offset, max_records=1000)
        out += [(r.offset, r.value) for r in records]
        offset = records[-1].offset + 1
    return out


def test_reader_sees_records_appended_before_a_roll(make_log, tmp_path, subprocess_env) -> None:
    log = make_log()
    log.create_topic("t", 1)
    _other_process(log.directory, subprocess_env, "append", "5")
    assert log.latest_offset("t", 0) == 5
    assert len(log.read("t", 0, 0, max_records=100)) == 5
    # More records land in the segment we know, then it rolls and more follow.
    _other_process(log.directory, subprocess_env, "append", "5")
    _other_process(log.directory, subprocess_env, "roll")
    _other_process(log.directory, subprocess_env, "append", "3")
    assert _read_all(log) == [(i, b"x%d" % i) for i in range(13)]


def test_reader_follows_a_compaction_swap(make_log, subprocess_env) -> None:
    log = make_log()
    log.create_topic("t", 1, config={"cleanup.policy": "compact", "segment.bytes": 300})
    _other_process(log.directory, subprocess_env, "append", "40")
    before = _read_all(log)  # leaves a read position inside the old files
    assert len(before) == 40
    _other_process(log.directory, subprocess_env, "compact")
    after = _read_all(log)
    assert len(after) < 40
    assert [o for o, _ in after] == sorted({o for o, _ in after})
    latest = {}
    for offset, value in before:
        latest[offset % 3] = (offset, value)
    assert {o % 3: (o, v) for o, v in after} == latest
    # A writer in this process continues at the right offset after the swap.
    assert log.append("t", 0, [b"mine"], keys=[b"k0"]) == range(40, 41)


def test_topic_deleted_by_another_process(make_log, subprocess_env) -> None:
    log = make_log()
    log.create_topic("t", 1)
    log.append("t", 0, [b"x"], keys=[b"k"])
    _other_process(log.directory, subprocess_env, "delete")
    assert "t" not in log.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError):
        log.append("t", 0, [b"y"])
