"""A log opened in one process keeps a correct view while another process appends,
rolls, compacts and deletes underneath it, also when the filesystem's clock is too
coarse to tell two changes of the directory apart."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from log import FileLog, UnknownTopicOrPartitionError

pytestmark = pytest.mark.integration

_WRITER = textwrap.dedent(
    """
    import os, sys
    from log import FileLog
    log = FileLog(sys.argv[1], background=False)
    mtime = [a for a in sys.argv[2:] if a.startswith("mtime=")]
    steps = [a for a in sys.argv[2:] if not a.startswith("mtime=")]
    for step in steps:
        action, _, count = step.partition(":")
        if action == "append":
            start = log.latest_offset("t", 0)
            for i in range(int(count)):
                log.append("t", 0, [b"x%d" % (start + i)], keys=[b"k%d" % ((start + i) % 3)])
        elif action == "roll":
            log.partition("t", 0).roll()
        elif action == "compact":
            from log.cleaner import clean_partition
            clean_partition(log.partition("t", 0), force=True)
        elif action == "delete":
            log.delete_topic("t")
        elif action == "create":
            log.create_topic("t", 1)
        elif action == "roll-and-die":
            # SIGKILLed inside the roll, after its first bump of the change count.
            import signal
            from log import fsutil
            bump = fsutil.SharedCounter.bump
            def dying_bump(counter):
                if counter.value() % 2:
                    os.kill(os.getpid(), signal.SIGKILL)
                return bump(counter)
            fsutil.SharedCounter.bump = dying_bump
            log.partition("t", 0).roll()
    log.close()
    if mtime:
        # A coarse clock: all of this happened within the tick the other process saw.
        pdir = os.path.join(sys.argv[1], "t", "0")
        ns = int(mtime[0][len("mtime="):])
        os.utime(pdir, ns=(ns, ns))
    """
)


def _other_process(directory: Path, env: dict[str, str], *args: str) -> None:
    """Run `args` (append:N, roll, compact, delete; mtime=NS to set the partition
    directory's mtime back at the end) in another process."""
    subprocess.run(
        [sys.executable, "-c", _WRITER, str(directory), *args], check=True, env=env, timeout=60
    )


def _dir_mtime(log: FileLog) -> str:
    return f"mtime={os.stat(log.directory / 't' / '0').st_mtime_ns}"


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
    _other_process(log.directory, subprocess_env, "append:5")
    assert log.latest_offset("t", 0) == 5
    assert len(log.read("t", 0, 0, max_records=100)) == 5
    # More records land in the segment we know, then it rolls and more follow.
    _other_process(log.directory, subprocess_env, "append:5")
    _other_process(log.directory, subprocess_env, "roll")
    _other_process(log.directory, subprocess_env, "append:3")
    assert _read_all(log) == [(i, b"x%d" % i) for i in range(13)]


def test_reader_follows_a_compaction_swap(make_log, subprocess_env) -> None:
    log = make_log()
    log.create_topic("t", 1, config={"cleanup.policy": "compact", "segment.bytes": 300})
    _other_process(log.directory, subprocess_env, "append:40")
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


def test_reader_sees_two_rolls_within_one_tick_of_the_directory_clock(
    make_log, subprocess_env
) -> None:
    """Another process rolls, this one looks, the other rolls again within the same
    tick of the filesystem's clock (simulated by setting the directory's mtime back
    to what this process saw): the second roll must not go unnoticed, or the
    records after it stay invisible here."""
    log = make_log()
    log.create_topic("t", 1)
    _other_process(log.directory, subprocess_env, "append:5", "roll", "append:2")
    assert _read_all(log) == [(i, b"x%d" % i) for i in range(7)]
    seen = _dir_mtime(log)
    _other_process(log.directory, subprocess_env, "append:1", "roll", "append:3", seen)
    assert _dir_mtime(log) == seen
    assert log.latest_offset("t", 0) == 11
    assert _read_all(log) == [(i, b"x%d" % i) for i in range(11)]


def test_writer_sees_a_roll_within_one_tick_of_the_directory_clock(
    make_log, subprocess_env
) -> None:
    """A writer here, a roll by another process in the same clock tick as this
    process's last look: appending to the segment it closed would give the records
    offsets of the new segment, where no reader finds them (lost)."""
    log = make_log()
    log.create_topic("t", 1)
    assert log.append("t", 0, [b"x0"], keys=[b"k0"]) == range(0, 1)
    seen = _dir_mtime(log)
    _other_process(log.directory, subprocess_env, "append:2", "roll", seen)
    assert log.append("t", 0, [b"x3"], keys=[b"k0"]) == range(3, 4)
    _other_process(log.directory, subprocess_env, "append:1")
    assert _read_all(log) == [(i, b"x%d" % i) for i in range(5)]
    log.close()
    again = make_log()
    assert _read_all(again) == [(i, b"x%d" % i) for i in range(5)]
    assert again.partition("t", 0).truncated_bytes == 0


def test_writer_sees_a_roll_whose_writer_died_midway(make_log, subprocess_env) -> None:
    """The other process is killed inside its roll, after the new segment is on disk
    but before it announced the end of the change (a SIGKILL at that point, injected
    in the child), within one clock tick of this writer's last look: this writer
    still takes in the new segment and appends there."""
    log = make_log()
    log.create_topic("t", 1)
    assert log.append("t", 0, [b"x0"], keys=[b"k0"]) == range(0, 1)
    pdir = log.directory / "t" / "0"
    seen = os.stat(pdir).st_mtime_ns
    killed = subprocess.run(
        [sys.executable, "-c", _WRITER, str(log.directory), "append:1", "roll-and-die"],
        env=subprocess_env,
        timeout=60,
    )
    assert killed.returncode == -9
    assert len(list(pdir.glob("*.log"))) == 2
    os.utime(pdir, ns=(seen, seen))
    assert log.append("t", 0, [b"x2"], keys=[b"k0"]) == range(2, 3)
    _other_process(log.directory, subprocess_env, "append:1")
    assert _read_all(log) == [(i, b"x%d" % i) for i in range(4)]
    log.close()
    again = make_log()
    assert _read_all(again) == [(i, b"x%d" % i) for i in range(4)]


def test_reader_follows_a_topic_made_again_then_rolled_within_one_tick(
    make_log, subprocess_env
) -> None:
    """Another process deletes the topic and creates it again; this process finds the
    new directory, and then also a roll in it within one tick of the clock."""
    log = make_log()
    log.create_topic("t", 1)
    log.append("t", 0, [b"old"], keys=[b"k0"])
    _other_process(log.directory, subprocess_env, "delete", "create", "append:2")
    assert _read_all(log) == [(0, b"x0"), (1, b"x1")]
    seen = _dir_mtime(log)
    _other_process(log.directory, subprocess_env, "roll", "append:3", seen)
    assert _dir_mtime(log) == seen
    assert _read_all(log) == [(i, b"x%d" % i) for i in range(5)]
