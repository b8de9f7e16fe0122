"""The log shared by real processes: a writer killed with SIGKILL mid-stream, writers
racing on one partition, a reader polling while another process writes, and a
consumer group split over two processes. Children are small scripts that talk to the
test over stdout (one line per event) and stdin (a "go" line); every wait has a
deadline, and no step sleeps for a fixed time."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from log import Consumer, FileLog, Record, TopicPartition

pytestmark = pytest.mark.integration

TOPIC = "t"
TIMEOUT_S = 30.0


class _Child:
    """A Python child process running `script`, with its stdout lines in a queue."""

    def __init__(self, script: str, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)  # EOF

    def line(self, timeout_s: float = TIMEOUT_S) -> str | None:
        """The next line, or None at EOF; fails the test after `timeout_s`."""
        try:
            return self._lines.get(timeout=timeout_s)
        except queue.Empty:
            pytest.fail(f"no output from the child in {timeout_s} s; stderr: {self.stderr()}")

    def expect(self, wanted: str) -> None:
        got = self.line()
        assert got == wanted, f"expected {wanted!r}, got {got!r}; stderr: {self.stderr()}"

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def rest(self) -> list[str]:
        """Every line up to EOF (the child must be exiting)."""
        out = []
        while (line := self.line()) is not None:
            out.append(line)
        return out

    def finish(self) -> list[str]:
        """The remaining lines, after the child exits with status 0."""
        lines = self.rest()
        assert self.proc.wait(TIMEOUT_S) == 0, self.stderr()
        return lines

    def stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return "(running)"
        return self.proc.stderr.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(TIMEOUT_S)
        self._reader.join(TIMEOUT_S)  # the dead child's stdout is at EOF
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def spawn(subprocess_env) -> Iterator[Callable[..., _Child]]:
    """Start children; any still running at the end of the test is killed."""
    children: list[_Child] = []

    def factory(script: str, *args: object) -> _Child:
        child = _Child(script, [str(a) for a in args], subprocess_env)
        children.append(child)
        return child

    yield factory
    for child in children:
        child.kill()


def _read_all(log: FileLog, partition: int = 0) -> list[Record]:
    out: list[Record] = []
    offset = log.earliest_offset(TOPIC, partition)
    end = log.latest_offset(TOPIC, partition)
    while offset < end:
        records = log.read(TOPIC, partition, offset)
        assert records, f"nothing read at {offset} below the log end {end}"
        out += records
        offset = records[-1].offset + 1
    return out


# ------------------------------------------------ 1. SIGKILL loses no acked record

_ACKING_WRITER = """
    import sys
    from log import FileLog
    log = FileLog(sys.argv[1], background=False)
    for i in range(int(sys.argv[2])):
        acked = log.append("t", 0, [b"r%d" % i])
        print(acked.start, flush=True)
"""


@pytest.mark.parametrize("kill_after", [1, 150, 900])
def test_sigkilled_writer_loses_no_acked_record(make_log, spawn, tmp_path, kill_after) -> None:
    log_dir = tmp_path / "log"
    with make_log(log_dir) as log:
        # Small segments and a dense index: the kill also lands near rolls.
        log.create_topic(
            TOPIC,
            1,
            config={"flush.messages": 1, "segment.bytes": 2048, "index.interval.bytes": 128},
        )
    writer = spawn(_ACKING_WRITER, log_dir, 1_000_000)
    acked = [int(writer.line() or "-1") for _ in range(kill_after)]
    writer.kill()  # mid-stream: it was still appending
    acked += [int(line) for line in writer.rest()]
    assert acked == list(range(len(acked))), "one writer acks offsets 0, 1, 2, ..."

    with make_log(log_dir) as log:
        records = _read_all(log)
        assert [r.offset for r in records] == list(range(len(records)))
        assert len(records) >= len(acked), "an acked record was lost"
        assert [r.value for r in records] == [b"r%d" % r.offset for r in records]
        end = len(records)
        assert log.append(TOPIC, 0, [b"after"]) == range(end, end + 1)
    with make_log(log_dir) as log:
        assert log.partition(TOPIC, 0).truncated_bytes == 0
        assert log.read(TOPIC, 0, end)[0].value == b"after"


# ------------------------------------------- 2. writers racing on one partition

_RACING_WRITER = """
    import sys
    from log import FileLog
    log = FileLog(sys.argv[1], background=False)
    me, batches = sys.argv[2], int(sys.argv[3])
    log.latest_offset("t", 0)  # open the partition before the race starts
    print("ready", flush=True)
    assert sys.stdin.readline() == "go\\n"
    for i in range(batches):
        values = [b"%s:%d:%d" % (me.encode(), i, j) for j in range(i % 3 + 1)]
        acked = log.append("t", 0, values)
        print(acked.start, acked.stop, flush=True)
    log.close()
"""


BATCHES = 400


def test_concurrent_writers_get_dense_unique_offsets(make_log, spawn, tmp_path) -> None:
    log_dir = tmp_path / "log"
    with make_log(log_dir) as log:
        log.create_topic(TOPIC, 1, config={"segment.bytes": 4096, "index.interval.bytes": 256})
    writers = {name: spawn(_RACING_WRITER, log_dir, name, BATCHES) for name in "abcd"}
    for child in writers.values():
        child.expect("ready")
    for child in writers.values():
        child.send("go")
    acked = {
        name: [tuple(map(int, line.split())) for line in child.finish()]
        for name, child in writers.items()
    }

    with make_log(log_dir) as log:
        records = _read_all(log)
    total = sum(i % 3 + 1 for i in range(BATCHES)) * len(writers)
    assert [r.offset for r in records] == list(range(total))
    assert max(Counter(r.value for r in records).values()) == 1, "a record was written twice"
    by_offset = {r.offset: r.value for r in records}
    for name, ranges in acked.items():
        assert len(ranges) == BATCHES
        got = [by_offset[o] for start, stop in ranges for o in range(start, stop)]
        want = [
            b"%s:%d:%d" % (name.encode(), i, j) for i in range(BATCHES) for j in range(i % 3 + 1)
        ]
        assert got == want, f"writer {name}'s acked offsets hold other records"


# ---------------------------------- 3. a reader polling while another process writes

_BATCH_WRITER = """
    import sys
    from log import FileLog
    log = FileLog(sys.argv[1], background=False)
    for i in range(int(sys.argv[2])):
        n = i % 7 + 1
        values = [b"%d/%d/%d" % (i, j, n) + b"." * (i % 50) for j in range(n)]
        log.append("t", 0, values, compression="gzip" if i % 5 == 0 else None)
    log.close()
"""


def test_reader_never_sees_a_partial_batch_or_a_gap(make_log, spawn, tmp_path) -> None:
    batches = 3000
    total = sum(i % 7 + 1 for i in range(batches))
    log = make_log(tmp_path / "log")
    log.create_topic(TOPIC, 1, config={"segment.bytes": 8192, "index.interval.bytes": 512})
    writer = spawn(_BATCH_WRITER, log.directory, batches)
    offset = 0
    next_batch = next_record = 0  # the batch expected next, and its record
    polls = 0
    deadline = time.monotonic() + TIMEOUT_S
    while offset < total:
        assert time.monotonic() < deadline, f"read {offset} of {total} records in time"
        seq = log.append_sequence()
        # Reads of varying size: each stops at a batch boundary, wherever it falls.
        records = log.read(TOPIC, 0, offset, max_bytes=64 << (polls % 8))
        polls += 1
        if not records:
            assert writer.proc.poll() in (None, 0), writer.stderr()
            log.wait_for_append(seq, 0.005)  # appends by another process are polled for
            continue
        assert [r.offset for r in records] == list(range(offset, offset + len(records)))
        for r in records:
            i, j, n = map(int, r.value.split(b".")[0].split(b"/"))
            assert (i, j) == (next_batch, next_record), f"record {r.offset}: {r.value!r}"
            next_record += 1
            if next_record == n:
                next_batch, next_record = next_batch + 1, 0
        assert next_record == 0, f"the read from {offset} ended inside a batch"
        offset = records[-1].offset + 1
    assert next_batch == batches
    assert writer.finish() == []
    assert polls > 1, "the reader should have polled while the writer wrote"
    assert log.latest_offset(TOPIC, 0) == total


# ------------------------------------------- 4. a consumer group over two processes

_GROUP_MEMBER = """
    import json, sys, time
    from log import Consumer, FileLog
    log = FileLog(sys.argv[1], background=False)
    partitions = int(sys.argv[3])
    consumer = Consumer(
        log, group_id="g", member_id=sys.argv[2], auto_offset_reset="earliest",
        enable_auto_commit=False, heartbeat_interval_ms=0, max_poll_records=50,
    )
    consumer.subscribe(["t"])
    print("joined", flush=True)
    assert sys.stdin.readline() == "go\\n"
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        seen += [[r.partition, r.offset, r.value.decode()] for r in consumer.poll(0.05)]
        mine = consumer.assignment()
        if len(mine) == partitions // 2 and all(
            consumer.position(tp) == log.latest_offset(tp.topic, tp.partition) for tp in mine
        ):
            break
    consumer.commit()
    print(json.dumps({"assigned": sorted(tp.partition for tp in mine), "seen": seen}), flush=True)
    sys.stdin.readline()  # stay in the group until the test has both reports
"""


def test_group_members_in_two_processes_split_and_commit(make_log, spawn, tmp_path) -> None:
    partitions, per_partition = 4, 120
    log_dir = tmp_path / "log"
    with make_log(log_dir) as log:
        log.create_topic(TOPIC, partitions)
        for p in range(partitions):
            for start in range(0, per_partition, 40):
                log.append(TOPIC, p, [b"%d-%d" % (p, o) for o in range(start, start + 40)])
    members = [spawn(_GROUP_MEMBER, log_dir, name, partitions) for name in ("m1", "m2")]
    for child in members:
        child.expect("joined")
    for child in members:
        child.send("go")
    reports = [json.loads(child.line() or "null") for child in members]
    for child in members:
        child.kill()  # no clean leave: commits must already be durable

    assigned = [set(r["assigned"]) for r in reports]
    assert assigned[0].isdisjoint(assigned[1])
    assert assigned[0] | assigned[1] == set(range(partitions))
    seen = [(p, o, v) for r in reports for p, o, v in r["seen"]]
    assert len(seen) == len(set(seen)), "a record was consumed twice"
    assert sorted(seen) == sorted(
        (p, o, f"{p}-{o}") for p in range(partitions) for o in range(per_partition)
    )
    for report in reports:
        assert {p for p, _, _ in report["seen"]} == set(report["assigned"])

    with make_log(log_dir) as log:
        tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
        committed = log.committed_offsets("g", tps)
        assert {tp: c.offset for tp, c in committed.items()} == dict.fromkeys(tps, per_partition)
        for p in range(partitions):
            log.append(TOPIC, p, [b"new-%d" % p])
        # A new member of the group resumes at the committed offsets: only new records.
        with Consumer(log, group_id="g", enable_auto_commit=False) as consumer:
            consumer.assign(tps)
            got: list[Record] = []
            deadline = time.monotonic() + TIMEOUT_S
            while len(got) < partitions and time.monotonic() < deadline:
                got += consumer.poll(0.1)
        assert sorted((r.partition, r.offset, r.value) for r in got) == [
            (p, per_partition, b"new-%d" % p) for p in range(partitions)
        ]


def test_children_see_the_project(spawn) -> None:
    """The children import this checkout's `log` (a broken env fails loudly here)."""
    child = spawn("import log, os, sys; print(os.path.dirname(log.__file__))")
    assert Path(child.finish()[0]) == Path(__file__).resolve().parents[2] / "log"
