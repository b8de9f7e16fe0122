"""End-to-end tests of `connect log …`: the real console script in subprocesses, on
real log directories. Nothing is mocked; every check reads what the CLI printed or
what a later CLI run reports about the directory it left behind."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from log import FileLog, partition_for_key
from tests.integration.conftest import WorkerProcess, free_port
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
_SCRIPT = Path(sys.executable).with_name("connect")
CONNECT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "connect.cli.main"]
RUN_TIMEOUT_S = 60
#: Guard against a consumer that never stops; tests of stopping itself do not use it.
GUARD = ["--timeout-ms", "5000"]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


class Cli:
    """Runs `connect log --log-dir DIR …` (or `connect log …` with log_dir=None)."""

    def __init__(self, env: dict[str, str], log_dir: Path, cwd: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.cwd = cwd

    def run(
        self, *args: str, stdin: str | None = None, log_dir: Path | bool | None = True
    ) -> subprocess.CompletedProcess[str]:
        prefix = ["log"]
        if log_dir is True:
            prefix += ["--log-dir", str(self.log_dir)]
        elif isinstance(log_dir, Path):
            prefix += ["--log-dir", str(log_dir)]
        return subprocess.run(
            [*CONNECT, *prefix, *args],
            input=stdin if stdin is not None else "",
            capture_output=True,
            encoding="utf-8",
            env=self.env,
            cwd=self.cwd,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )

    def ok(
        self, *args: str, stdin: str | None = None, log_dir: Path | bool | None = True
    ) -> subprocess.CompletedProcess[str]:
        proc = self.run(*args, stdin=stdin, log_dir=log_dir)
        assert proc.returncode == 0, f"{args}: rc={proc.returncode}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def fails(
        self, *args: str, stdin: str | None = None, log_dir: Path | bool | None = True
    ) -> str:
        """Run a command that must be refused; return its one stderr line."""
        return assert_one_line_error(self.run(*args, stdin=stdin, log_dir=log_dir))

    # --- conveniences built on the CLI itself
    def topics(self, *extra: str) -> list[str]:
        return self.ok("topics", *extra).stdout.splitlines()

    def describe(self, topic: str) -> dict:
        return json.loads(self.ok("describe", topic, "--json").stdout)

    def produce(self, topic: str, lines: Iterable[str], *extra: str) -> int:
        lines = list(lines)
        proc = self.ok("produce", topic, *extra, stdin="".join(f"{x}\n" for x in lines))
        assert proc.stdout == ""
        assert f"produced {len(lines)} record(s) to {topic}" in proc.stderr
        return len(lines)

    def consume_json(self, topic: str, *extra: str) -> list[dict]:
        proc = self.ok("consume", topic, "--json", *extra)
        return [json.loads(line) for line in proc.stdout.splitlines()]

    def groups(self) -> dict[str, dict[str, dict[str, int | str]]]:
        """`groups` parsed: group -> "topic-partition" -> {committed, end, lag}
        (numbers as ints; anything else, e.g. for a deleted topic, as printed)."""
        out: dict[str, dict[str, dict[str, int | str]]] = {}
        current = None
        for line in self.ok("groups").stdout.splitlines():
            if not line.startswith("  "):
                current = out.setdefault(line, {})
                continue
            assert current is not None, line
            tp, *fields = line.strip().split("\t")
            current[tp] = {k: _number(v) for k, v in (f.split("=", 1) for f in fields)}
        return out


def _number(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def assert_one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0, f"expected failure, got rc=0: {proc.stdout!r}"
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, f"expected one stderr line, got:\n{proc.stderr}"
    assert lines[0].startswith("error:"), lines[0]
    assert proc.stdout == "", proc.stdout
    return lines[0]


def _keyed_partition(key: str, partitions: int) -> int:
    return partition_for_key(key.encode(), partitions)


def _by_partition(records: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for rec in records:
        out.setdefault(rec["partition"], []).append(rec)
    return out


@pytest.fixture
def cli(subprocess_env: dict[str, str], tmp_path: Path) -> Cli:
    return Cli(subprocess_env, tmp_path / "log", tmp_path)


# ----------------------------------------------------------------- topic admin


def test_topic_lifecycle_create_describe_alter_delete(cli: Cli) -> None:
    cli.log_dir.mkdir()  # an empty log: what `create` makes of a missing directory
    assert cli.topics() == []
    assert cli.topics("--all") == []

    proc = cli.ok("create", "orders", "--partitions", "3", "--config", "retention.ms=1000")
    assert proc.stdout.strip() == "created topic orders with 3 partition(s)"
    assert cli.topics() == ["orders"]
    assert cli.topics("--all") == ["orders"]  # no group has committed: no offsets topic

    keys = [f"k{i}" for i in range(30)]
    cli.produce("orders", (f"{k}:v{i}" for i, k in enumerate(keys)), "--key-separator", ":")
    expected = Counter(_keyed_partition(k, 3) for k in keys)

    # Table form.
    table = cli.ok("describe", "orders").stdout.splitlines()
    head = table[0].split("\t")
    assert head[0] == "Topic: orders"
    assert head[1] == "Partitions: 3"
    rows = [line.split() for line in table[2:5]]
    assert table[1].split() == ["PARTITION", "EARLIEST", "LATEST", "SIZE", "SEGMENTS"]
    assert [int(r[0]) for r in rows] == [0, 1, 2]
    for part, earliest, latest, size, segments in rows:
        assert int(earliest) == 0
        assert int(latest) == expected[int(part)]
        assert (int(size) > 0) == (int(latest) > 0)
        assert int(segments) >= 1
    total = sum(int(r[3]) for r in rows)
    assert head[2] == f"Size: {total} bytes"
    assert table[5:] == ["Config: retention.ms=1000"]

    # JSON form: the same facts.
    desc = cli.describe("orders")
    assert set(desc) == {"topic", "partitions", "size_bytes", "config"}
    assert desc["topic"] == "orders"
    assert [p["partition"] for p in desc["partitions"]] == [0, 1, 2]
    for p, row in zip(desc["partitions"], rows, strict=True):
        assert set(p) == {"partition", "earliest_offset", "latest_offset", "size_bytes", "segments"}
        assert [
            p["partition"],
            p["earliest_offset"],
            p["latest_offset"],
            p["size_bytes"],
            p["segments"],
        ] == [int(x) for x in row]
    assert desc["size_bytes"] == total
    assert desc["config"]["retention.ms"] == 1000
    assert desc["config"]["cleanup.policy"] == "delete"

    # Grow partitions; existing data stays where it was.
    assert cli.ok("alter", "orders", "--partitions", "5").stdout.strip() == "altered topic orders"
    grown = cli.describe("orders")
    assert [p["partition"] for p in grown["partitions"]] == [0, 1, 2, 3, 4]
    assert [p["latest_offset"] for p in grown["partitions"]] == [expected[p] for p in range(3)] + [
        0,
        0,
    ]
    assert grown["config"]["retention.ms"] == 1000

    # Change config; earlier overrides survive unless replaced.
    cli.ok("alter", "orders", "--config", "segment.ms=60000", "--config", "retention.ms=2000")
    altered = cli.describe("orders")
    assert altered["config"]["retention.ms"] == 2000
    assert altered["config"]["segment.ms"] == 60000
    assert len(altered["partitions"]) == 5
    table = cli.ok("describe", "orders").stdout.splitlines()
    assert table[-1] == "Config: retention.ms=2000, segment.ms=60000"

    # Both at once.
    cli.ok("alter", "orders", "--partitions", "6", "--config", "cleanup.policy=compact")
    both = cli.describe("orders")
    assert len(both["partitions"]) == 6
    assert both["config"]["cleanup.policy"] == "compact"

    assert cli.ok("delete", "orders").stdout.strip() == "deleted topic orders"
    assert cli.topics() == []
    assert "orders" in cli.fails("describe", "orders")

    # The name is free again, and the new topic starts empty.
    cli.ok("create", "orders")
    fresh = cli.describe("orders")
    assert [(p["earliest_offset"], p["latest_offset"]) for p in fresh["partitions"]] == [(0, 0)]
    assert fresh["config"]["retention.ms"] != 1000


def test_topics_all_lists_consumer_offsets_once_a_group_committed(cli: Cli) -> None:
    cli.ok("create", "t", "--partitions", "2")
    cli.produce("t", ["a", "b", "c"])
    cli.ok("consume", "t", "--from-beginning", "--max-messages", "3", *GUARD)  # no group
    assert cli.topics("--all") == ["t"]
    out = cli.ok("consume", "t", "--group", "g1", "--from-beginning", "--max-messages", "3")
    assert sorted(out.stdout.splitlines()) == ["a", "b", "c"]
    assert cli.topics("--all") == ["__consumer_offsets", "t"]
    assert cli.topics() == ["t"]


# --------------------------------------------------------- produce and consume


def test_produce_unkeyed_then_consume_in_per_partition_order(cli: Cli) -> None:
    cli.ok("create", "t", "--partitions", "3")
    lines = [f"line-{i}" for i in range(200)] + ["k:v looks keyed but is not"]
    cli.produce("t", lines)

    plain = cli.ok("consume", "t", "--from-beginning", "--max-messages", str(len(lines)))
    assert Counter(plain.stdout.splitlines()) == Counter(lines)

    records = cli.consume_json("t", "--from-beginning", "--max-messages", str(len(lines)), *GUARD)
    assert Counter(r["value"] for r in records) == Counter(lines)
    assert all(r["key"] is None for r in records)
    index = {line: i for i, line in enumerate(lines)}
    for part, recs in _by_partition(records).items():
        assert [r["offset"] for r in recs] == list(range(len(recs))), part
        positions = [index[r["value"]] for r in recs]
        assert positions == sorted(positions), f"partition {part} out of order"
        # The plain output keeps the same per-partition order.
        mine = {r["value"] for r in recs}
        assert [v for v in plain.stdout.splitlines() if v in mine] == [r["value"] for r in recs]


def test_produce_with_key_separator_lands_by_key_and_keeps_order(cli: Cli) -> None:
    cli.ok("create", "t", "--partitions", "3")
    lines = [f"user{i % 7}:event-{i}" for i in range(60)]
    cli.produce("t", lines, "--key-separator", ":")

    expected: dict[int, list[tuple[str, str]]] = {}
    for line in lines:
        key, value = line.split(":", 1)
        expected.setdefault(_keyed_partition(key, 3), []).append((key, value))

    records = cli.consume_json("t", "--from-beginning", "--max-messages", "60", *GUARD)
    got = {p: [(r["key"], r["value"]) for r in recs] for p, recs in _by_partition(records).items()}
    assert got == expected

    plain = cli.ok("consume", "t", "--from-beginning", "--max-messages", "60", *GUARD)
    out = plain.stdout.splitlines()
    assert Counter(out) == Counter(v for _, v in (x.split(":", 1) for x in lines))
    for part, pairs in expected.items():
        mine = {v for _, v in pairs}
        assert [v for v in out if v in mine] == [v for _, v in pairs], part


def test_produce_to_one_partition(cli: Cli) -> None:
    cli.ok("create", "t", "--partitions", "3")
    lines = [f"p1-{i}" for i in range(25)]
    cli.produce("t", lines, "--partition", "1")
    desc = cli.describe("t")
    assert [p["latest_offset"] for p in desc["partitions"]] == [0, 25, 0]

    # Keyed lines too: --partition wins over the key's hash.
    keyed = [f"key{i}:val{i}" for i in range(10)]
    cli.produce("t", keyed, "--partition", "1", "--key-separator", ":")
    records = cli.consume_json("t", "--from-beginning", "--max-messages", "35", *GUARD)
    assert {r["partition"] for r in records} == {1}
    assert [r["offset"] for r in records] == list(range(35))
    assert [r["value"] for r in records] == lines + [f"val{i}" for i in range(10)]
    assert [r["key"] for r in records] == [None] * 25 + [f"key{i}" for i in range(10)]


def test_consume_max_messages_prints_exactly_n(cli: Cli) -> None:
    cli.ok("create", "t")
    cli.produce("t", [f"m{i}" for i in range(10)])
    started = time.monotonic()
    proc = cli.ok("consume", "t", "--from-beginning", "--max-messages", "4")  # no timeout
    assert proc.stdout.splitlines() == ["m0", "m1", "m2", "m3"]
    assert time.monotonic() - started < 20


def test_consume_json_lines_have_every_field(cli: Cli) -> None:
    cli.ok("create", "t", "--partitions", "2")
    before = int(time.time() * 1000)
    cli.produce("t", ["alpha:1", "beta:2", "no separator here"], "--key-separator", ":")
    after = int(time.time() * 1000)
    records = cli.consume_json("t", "--from-beginning", "--max-messages", "3", *GUARD)
    assert len(records) == 3
    for rec in records:
        assert set(rec) == {"topic", "partition", "offset", "timestamp", "key", "value", "headers"}
        assert rec["topic"] == "t"
        assert rec["partition"] in (0, 1)
        assert isinstance(rec["offset"], int) and rec["offset"] >= 0
        assert isinstance(rec["timestamp"], int)
        assert before - 1000 <= rec["timestamp"] <= after + 1000
        assert rec["headers"] == []
    assert {(r["key"], r["value"]) for r in records} == {
        ("alpha", "1"),
        ("beta", "2"),
        (None, "no separator here"),
    }
    for rec in records:
        if rec["key"] is not None:
            assert rec["partition"] == _keyed_partition(rec["key"], 2)


def test_consume_print_key(cli: Cli) -> None:
    cli.ok("create", "t")
    cli.produce("t", ["k1:v1", "plain", "k2:v2"], "--key-separator", ":")
    proc = cli.ok("consume", "t", "--from-beginning", "--max-messages", "3", "--print-key")
    assert proc.stdout.splitlines() == ["k1\tv1", "null\tplain", "k2\tv2"]


def test_consume_from_offset_of_a_partition(cli: Cli) -> None:
    cli.ok("create", "t", "--partitions", "3")
    cli.produce("t", [f"x{i}" for i in range(10)], "--partition", "1")
    cli.produce("t", [f"y{i}" for i in range(5)], "--partition", "2")

    proc = cli.ok("consume", "t", "--partition", "1", "--offset", "4", "--max-messages", "6")
    assert proc.stdout.splitlines() == [f"x{i}" for i in range(4, 10)]

    records = cli.consume_json("t", "--partition", "2", "--offset", "3", "--timeout-ms", "500")
    assert [(r["partition"], r["offset"], r["value"]) for r in records] == [
        (2, 3, "y3"),
        (2, 4, "y4"),
    ]
    # The log end is a valid place to start: nothing yet.
    at_end = cli.ok("consume", "t", "--partition", "1", "--offset", "10", "--timeout-ms", "300")
    assert at_end.stdout == ""
    # --partition alone reads only that partition.
    only = cli.ok("consume", "t", "--partition", "2", "--from-beginning", "--timeout-ms", "500")
    assert only.stdout.splitlines() == [f"y{i}" for i in range(5)]


def test_consume_timeout_exits_when_no_more_data(cli: Cli) -> None:
    cli.ok("create", "t", "--partitions", "2")
    cli.produce("t", ["one", "two", "three"])
    started = time.monotonic()
    proc = cli.ok("consume", "t", "--from-beginning", "--timeout-ms", "500")
    elapsed = time.monotonic() - started
    assert sorted(proc.stdout.splitlines()) == ["one", "three", "two"]
    assert 0.5 <= elapsed < 15

    # Without --from-beginning (and no group) a consumer starts at the end.
    latest = cli.ok("consume", "t", "--timeout-ms", "500")
    assert latest.stdout == ""


def test_consume_read_committed_shows_only_committed_transactions(cli: Cli) -> None:
    """Transactions written through the log API (the CLI writes none): the default,
    read_uncommitted, prints every record but no control record; read_committed
    leaves out the aborted transaction and stops before the open one."""
    cli.ok("create", "t")
    with FileLog(cli.log_dir, background=False) as log:
        producer = log.transactional_producer("cli", transaction_timeout_ms=600_000)
        producer.init_transactions()
        for value, commit in ((b"committed", True), (b"aborted", False)):
            producer.begin_transaction()
            producer.append("t", 0, [value])
            producer.commit_transaction() if commit else producer.abort_transaction()
        log.append("t", 0, [b"plain"])
        producer.begin_transaction()
        producer.append("t", 0, [b"open"])
        log.append("t", 0, [b"after-open"])
        everything = cli.ok("consume", "t", "--from-beginning", "--timeout-ms", "500")
        assert everything.stdout.splitlines() == [
            "committed",
            "aborted",
            "plain",
            "open",
            "after-open",
        ]
        committed = cli.ok(
            "consume",
            "t",
            "--from-beginning",
            "--timeout-ms",
            "500",
            "--isolation-level",
            "read_committed",
        )
        assert committed.stdout.splitlines() == ["committed", "plain"]
        producer.commit_transaction()
    committed = cli.ok(
        "consume",
        "t",
        "--from-beginning",
        "--timeout-ms",
        "500",
        "--isolation-level",
        "read_committed",
    )
    assert committed.stdout.splitlines() == ["committed", "plain", "open", "after-open"]
    bad = cli.run("consume", "t", "--isolation-level", "read_all")
    assert bad.returncode != 0 and "read_committed" in bad.stderr


def test_consume_follows_records_produced_by_another_process(cli: Cli) -> None:
    cli.ok("create", "t")
    consumer = subprocess.Popen(
        [
            *CONNECT,
            *("log", "--log-dir", str(cli.log_dir), "consume", "t", "--from-beginning"),
            *("--max-messages", "3", "--timeout-ms", "15000"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        encoding="utf-8",
        env=cli.env,
    )
    try:
        time.sleep(0.3)
        cli.produce("t", ["late-1", "late-2", "late-3"])
        out, err = consumer.communicate(timeout=30)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.communicate()
    assert consumer.returncode == 0, err
    assert out.splitlines() == ["late-1", "late-2", "late-3"]


def test_consumer_group_commits_and_resumes(cli: Cli) -> None:
    cli.ok("create", "t", "--partitions", "3")
    first = [f"u{i}:first-{i}" for i in range(30)]
    cli.produce("t", first, "--key-separator", ":")
    per_part = Counter(_keyed_partition(line.split(":")[0], 3) for line in first)

    run1 = cli.ok("consume", "t", "--group", "G", "--from-beginning", "--timeout-ms", "500")
    assert Counter(run1.stdout.splitlines()) == Counter(f"first-{i}" for i in range(30))

    run2 = cli.ok("consume", "t", "--group", "G", "--from-beginning", "--timeout-ms", "500")
    assert run2.stdout == ""

    groups = cli.groups()
    assert "G" in groups
    g = groups["G"]
    for tp, info in g.items():
        assert tp.startswith("t-")
        assert info["lag"] == 0, (tp, info)
        assert info["committed"] == info["end"] == per_part[int(tp.split("-")[1])]
    assert sum(info["committed"] for info in g.values()) == 30
    assert {f"t-{p}" for p, n in per_part.items() if n} <= set(g)

    second = [f"u{i}:second-{i}" for i in range(5)]
    cli.produce("t", second, "--key-separator", ":")
    run3 = cli.ok("consume", "t", "--group", "G", "--timeout-ms", "500")
    assert Counter(run3.stdout.splitlines()) == Counter(f"second-{i}" for i in range(5))
    g = cli.groups()["G"]
    assert all(info["lag"] == 0 for info in g.values()), g
    assert sum(info["committed"] for info in g.values()) == 35


def test_consumer_group_commits_only_what_it_printed(cli: Cli) -> None:
    cli.ok("create", "t")
    lines = [f"r{i}" for i in range(10)]
    cli.produce("t", lines)
    part1 = cli.ok("consume", "t", "--group", "H", "--from-beginning", "--max-messages", "4")
    assert part1.stdout.splitlines() == lines[:4]
    assert cli.groups()["H"] == {"t-0": {"committed": 4, "end": 10, "lag": 6}}
    part2 = cli.ok("consume", "t", "--group", "H", "--timeout-ms", "500")
    assert part2.stdout.splitlines() == lines[4:]
    assert cli.groups()["H"] == {"t-0": {"committed": 10, "end": 10, "lag": 0}}


def test_consumer_group_on_one_partition_commits_that_partition(cli: Cli) -> None:
    cli.ok("create", "t", "--partitions", "2")
    cli.produce("t", ["p0-a", "p0-b", "p0-c"], "--partition", "0")
    cli.produce("t", ["p1-a"], "--partition", "1")
    args = ("consume", "t", "--group", "P", "--partition", "0", "--from-beginning")
    first = cli.ok(*args, "--max-messages", "2")
    assert first.stdout.splitlines() == ["p0-a", "p0-b"]
    assert cli.groups()["P"] == {"t-0": {"committed": 2, "end": 3, "lag": 1}}
    rest = cli.ok(*args, "--timeout-ms", "500")
    assert rest.stdout.splitlines() == ["p0-c"]
    assert cli.groups()["P"] == {"t-0": {"committed": 3, "end": 3, "lag": 0}}


# --------------------------------------------------------------- worker config


def test_worker_config_log_dir_works_like_log_dir(cli: Cli, tmp_path: Path) -> None:
    worker = tmp_path / "worker.json"
    worker.write_text(json.dumps({"log.dir": str(cli.log_dir), "group.id": "ignored"}))
    w = ["--worker-config", str(worker)]
    cli.ok(*w, "create", "wt", "--partitions", "2", log_dir=None)
    proc = cli.run(*w, "produce", "wt", log_dir=None, stdin="one\ntwo\n")
    assert proc.returncode == 0, proc.stderr
    out = cli.ok(*w, "consume", "wt", "--from-beginning", "--max-messages", "2", log_dir=None)
    assert sorted(out.stdout.splitlines()) == ["one", "two"]
    assert cli.ok(*w, "topics", log_dir=None).stdout.splitlines() == ["wt"]
    # The same directory through --log-dir.
    assert cli.topics() == ["wt"]
    assert sum(p["latest_offset"] for p in cli.describe("wt")["partitions"]) == 2


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "missing.json"),  # no such file
        ("{not json", "bad.json"),
        ("", "bad.json"),
        (json.dumps({"group.id": "x"}), "log.dir"),
        (json.dumps({"log.dir": ""}), "log.dir"),
        (json.dumps(["log.dir", "/tmp"]), "bad.json"),  # valid JSON, not an object
        (json.dumps({"log.dir": 5}), "log.dir"),  # not a path
    ],
    ids=["missing", "invalid-json", "empty", "no-log-dir", "empty-log-dir", "list", "int-dir"],
)
def test_bad_worker_config_is_one_line_error(
    cli: Cli, tmp_path: Path, content: str | None, fragment: str
) -> None:
    path = tmp_path / ("missing.json" if content is None else "bad.json")
    if content is not None:
        path.write_text(content)
    message = cli.fails("--worker-config", str(path), "topics", log_dir=None)
    assert fragment in message


def test_no_log_dir_at_all(cli: Cli) -> None:
    message = cli.fails("topics", log_dir=None)
    assert "--log-dir" in message
    assert list(cli.cwd.iterdir()) == []  # nothing created anywhere


def test_log_dir_that_is_a_file(cli: Cli, tmp_path: Path) -> None:
    not_a_dir = tmp_path / "plain-file"
    not_a_dir.write_text("hello")
    message = cli.fails("topics", log_dir=not_a_dir)
    assert message == f"error: no log at {not_a_dir} (not a directory)"


# ------------------------------------------------------------- where the log is


def test_log_options_go_before_or_after_the_subcommand(cli: Cli, tmp_path: Path) -> None:
    after = ("--log-dir", str(cli.log_dir))
    cli.ok("create", "t", "--partitions", "2", *after, log_dir=None)
    cli.ok("produce", "t", *after, log_dir=None, stdin="one\ntwo\n")
    assert cli.ok("topics", *after, log_dir=None).stdout.splitlines() == ["t"]
    assert cli.topics() == ["t"]  # before
    got = cli.ok("consume", "t", "--from-beginning", "--max-messages", "2", *after, log_dir=None)
    assert sorted(got.stdout.splitlines()) == ["one", "two"]
    worker = tmp_path / "worker.json"
    worker.write_text(json.dumps({"log.dir": str(cli.log_dir)}))
    listed = cli.ok("topics", "--worker-config", str(worker), log_dir=None)
    assert listed.stdout.splitlines() == ["t"]
    # Given before and after, the one after the subcommand wins.
    elsewhere = tmp_path / "elsewhere"
    assert cli.fails("topics", "--log-dir", str(elsewhere)) == f"error: no log at {elsewhere}"


READS = [
    ["topics"],
    ["describe", "t"],
    ["consume", "t", *GUARD],
    ["dump", "t"],
    ["dump", "t", "-o", "dump.jsonl"],
    ["groups"],
    ["alter", "t", "--partitions", "2"],
    ["delete", "t"],
]


@pytest.mark.parametrize("args", READS, ids=[" ".join(a[:3]) for a in READS])
def test_a_missing_log_dir_is_one_line_and_is_never_created(cli: Cli, args: list[str]) -> None:
    proc = cli.run(*args)
    assert assert_one_line_error(proc) == f"error: no log at {cli.log_dir}"
    assert proc.returncode == 1
    assert list(cli.cwd.iterdir()) == []  # no log directory, no dump file


def test_create_makes_a_missing_log_dir(cli: Cli) -> None:
    nested = cli.log_dir / "a" / "b"
    cli.ok("create", "t", log_dir=nested)
    assert cli.ok("topics", log_dir=nested).stdout.splitlines() == ["t"]


def test_relative_log_dir_is_resolved_as_the_worker_does_and_ctrl_c_stops_it_with_130(
    cli: Cli, tmp_path: Path
) -> None:
    """A worker started in `home` with log.dir `data/log` keeps its log in
    home/data/log; `--worker-config` finds it from `home` and, from anywhere else,
    says where it looked (creating nothing there)."""
    home = tmp_path / "home"
    home.mkdir()
    worker = WorkerProcess(
        home,
        {"log.dir": "data/log", "listeners": f"http://127.0.0.1:{free_port()}"},
        [],
    )
    try:
        worker.wait_ready()
        config = str(worker.config_path)
        here = Cli(cli.env, cli.log_dir, home)
        internal = here.ok("topics", "--all", "--worker-config", config, log_dir=None)
        assert "connect-configs" in internal.stdout.splitlines()
        away = tmp_path / "away"
        away.mkdir()
        message = Cli(cli.env, cli.log_dir, away).fails(
            "--worker-config", config, "topics", log_dir=None
        )
        assert message.startswith(
            f"error: no log at {away / 'data' / 'log'} (log.dir 'data/log' of"
        )
        assert "relative to the current directory" in message
        assert list(away.iterdir()) == []

        # Ctrl-C stops the worker cleanly, with the status every command gives it.
        worker.proc.send_signal(signal.SIGINT)
        assert worker.proc.wait(60) == 130, worker.stderr
    finally:
        if worker.proc.poll() is None:
            worker.kill()
    assert "worker stopped" in worker.stderr
    assert "Traceback" not in worker.stderr


# ------------------------------------------------------------------------ Ctrl-C


def _lines(proc: subprocess.Popen[bytes], n: int, timeout_s: float = 30.0) -> list[str]:
    """At least `n` lines from a running child's stdout, read as they come."""
    fd = proc.stdout.fileno()  # type: ignore[union-attr]
    deadline = time.monotonic() + timeout_s
    buffer = b""
    lines: list[str] = []
    while len(lines) < n:
        left = deadline - time.monotonic()
        assert left > 0, f"{n} lines not printed within {timeout_s} s: {lines}"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 1 << 16)
            assert chunk, f"stdout closed after {lines}"
            *complete, buffer = (buffer + chunk).split(b"\n")
            lines += [line.decode() for line in complete]
    return lines


def _start(cli: Cli, *args: str, stdin: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*CONNECT, "log", "--log-dir", str(cli.log_dir), *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli.env,
        cwd=cli.cwd,
    )


def _interrupt(proc: subprocess.Popen[bytes]) -> tuple[bytes, str]:
    """Ctrl-C; what the child printed after it, once it exited."""
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return out, err.decode()


def test_ctrl_c_stops_consume_follow_with_130_and_commits_what_it_printed(cli: Cli) -> None:
    cli.ok("create", "t")
    consumer = _start(cli, "consume", "t", "--group", "G", "--from-beginning")
    cli.produce("t", ["a", "b", "c"])
    assert _lines(consumer, 3) == ["a", "b", "c"]
    out, err = _interrupt(consumer)
    assert consumer.returncode == 130
    assert (out, err) == (b"", "interrupted\n")
    assert cli.groups()["G"] == {"t-0": {"committed": 3, "end": 3, "lag": 0}}


def test_ctrl_c_stops_produce_with_130_after_appending_every_line_read(cli: Cli) -> None:
    cli.ok("create", "t")
    producer = _start(cli, "produce", "t", stdin=subprocess.PIPE)
    producer.stdin.write(b"a\nb\nc\n")  # type: ignore[union-attr]
    producer.stdin.flush()  # type: ignore[union-attr]
    wait_until(lambda: cli.describe("t")["partitions"][0]["latest_offset"] == 3, 30, "3 lines")
    out, err = _interrupt(producer)  # stdin still open: it was waiting for more
    assert producer.returncode == 130
    assert (out, err) == (
        b"",
        "interrupted: produced 3 record(s) to t, every line read before Ctrl-C\n",
    )
    assert (
        cli.consume_json("t", "--from-beginning", *GUARD, "--max-messages", "3")[2]["value"] == "c"
    )


@pytest.fixture
def big(cli: Cli) -> int:
    """Topic `big`, large enough that a dump of it is still running when interrupted."""
    count = 400_000
    cli.ok("create", "big")
    cli.produce("big", (str(i) for i in range(count)))
    return count


def test_ctrl_c_during_a_dump_to_stdout_exits_130_and_says_it_is_partial(
    cli: Cli, big: int
) -> None:
    dump = _start(cli, "dump", "big")
    assert _lines(dump, 1)  # writing; the pipe we no longer read now holds it up
    out, err = _interrupt(dump)
    assert dump.returncode == 130
    assert err == "interrupted: the dump of big on stdout is partial\n"
    assert 0 < out.count(b"\n") < big


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def test_ctrl_c_during_a_dump_to_a_file_leaves_no_partial_file(
    cli: Cli, big: int, tmp_path: Path
) -> None:
    output = tmp_path / "dump.jsonl"
    output.write_text("an older dump\n")
    partial = tmp_path / "dump.jsonl.partial"
    dump = _start(cli, "dump", "big", "-o", str(output))
    try:
        wait_until(
            lambda: _size(partial) or dump.poll() is not None,
            30,
            "the dump writing",
            interval_s=0.005,
        )
        dump.send_signal(signal.SIGSTOP)  # hold it mid-dump: Ctrl-C must land while it writes
        assert dump.poll() is None, "the dump ended before it could be interrupted"
        assert _size(partial) > 0
        dump.send_signal(signal.SIGINT)
        dump.send_signal(signal.SIGCONT)
        out, err = dump.communicate(timeout=30)
    finally:
        if dump.poll() is None:
            dump.kill()
            dump.communicate()
    assert dump.returncode == 130
    assert out == b""
    assert err.decode() == (
        f"interrupted: {output} not written (the dump of big was incomplete; its partial "
        "file was removed)\n"
    )
    assert not partial.exists()
    assert output.read_text() == "an older dump\n"  # untouched


def test_a_failed_dump_leaves_no_partial_file(cli: Cli, tmp_path: Path) -> None:
    """A batch damaged in the middle of a segment (a disk fault) stops the dump half
    way: one line, exit 1, no partial file, an older file untouched."""
    cli.ok("create", "t")
    cli.produce("t", (str(i) for i in range(100_000)))
    (segment,) = (cli.log_dir / "t" / "0").glob("*.log")
    with open(segment, "r+b") as data:
        middle = segment.stat().st_size // 2
        data.seek(middle)
        byte = data.read(1)[0]
        data.seek(middle)
        data.write(bytes([byte ^ 0xFF]))
    output = tmp_path / "dump.jsonl"
    output.write_text("an older dump\n")
    proc = cli.run("dump", "t", "-o", str(output))
    message = assert_one_line_error(proc)
    assert proc.returncode == 1
    assert message.startswith(f"error: {output} not written, the dump of t failed: corrupt")
    assert not (tmp_path / "dump.jsonl.partial").exists()
    assert output.read_text() == "an older dump\n"


def test_a_dump_into_a_fifo_writes_straight_into_it(cli: Cli, tmp_path: Path) -> None:
    """A stream named as a file (a FIFO, /dev/stdout) is written, never renamed over."""
    cli.ok("create", "t")
    cli.produce("t", ["x", "y"])
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(fifo.read_text(encoding="utf-8").splitlines()), daemon=True
    )
    reader.start()
    dump = _start(cli, "dump", "t", "-o", str(fifo))
    try:
        _, err = dump.communicate(timeout=30)
    finally:
        if dump.poll() is None:
            dump.kill()
            dump.communicate()
        reader.join(10)
        if reader.is_alive():  # the dump never opened it: let the reader's open return
            os.close(os.open(fifo, os.O_WRONLY))
            reader.join(10)
    assert dump.returncode == 0, err
    assert [json.loads(line)["value"] for line in lines] == ["x", "y"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log", "pipe"]
    assert fifo.is_fifo()


def test_a_complete_dump_replaces_the_file_and_leaves_no_partial(cli: Cli, tmp_path: Path) -> None:
    output = tmp_path / "dump.jsonl"
    output.write_text("an older dump\n")
    cli.ok("create", "t")
    cli.produce("t", ["x", "y"])
    cli.ok("dump", "t", "-o", str(output))
    assert [json.loads(line)["value"] for line in output.read_text().splitlines()] == ["x", "y"]
    assert not (tmp_path / "dump.jsonl.partial").exists()


# ----------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    """One log with topic `t3` (3 partitions; 4 records in partition 0) that the
    refusal tests below must leave exactly as it was."""
    base = tmp_path_factory.mktemp("shared")
    cli = Cli(_child_env(), base / "log", base)
    cli.ok("create", "t3", "--partitions", "3")
    cli.produce("t3", ["a", "b", "c", "d"], "--partition", "0")
    return cli


def _snapshot(cli: Cli) -> dict[str, bytes]:
    """Every file under the log directory with its content (cheaper than a `describe`
    and stricter: a refused command must not create, grow or write anything)."""
    return {
        str(path.relative_to(cli.log_dir)): path.read_bytes() if path.is_file() else b"<dir>"
        for path in sorted(cli.log_dir.rglob("*"))
    }


COMMANDS = ("create", "describe", "produce", "consume", "delete", "alter")
BAD_NAMES = ["bad/name", "..", "a" * 250, "spaces here"]


@pytest.mark.parametrize("name", BAD_NAMES, ids=["slash", "dotdot", "too-long", "spaces"])
@pytest.mark.parametrize("command", COMMANDS)
def test_invalid_topic_names_are_refused(shared: Cli, command: str, name: str) -> None:
    before = _snapshot(shared)
    args = [command, name]
    if command == "alter":
        args += ["--partitions", "4"]
    message = shared.fails(*args, stdin="x\n")
    assert "invalid topic name" in message
    assert _snapshot(shared) == before
    assert not (shared.log_dir / "bad").exists()
    assert not (shared.log_dir.parent / "bad").exists()


QUICK = ["--timeout-ms", "1000"]
BAD_INPUT = [
    (["describe", "nope"], ["nope", "does not exist"]),
    (["produce", "nope"], ["nope", "does not exist"]),
    (["consume", "nope", "--from-beginning"], ["nope", "does not exist"]),
    (["delete", "nope"], ["nope", "does not exist"]),
    (["alter", "nope", "--partitions", "4"], ["nope", "does not exist"]),
    (["create", "t3"], ["t3", "already exists"]),
    (["create", "new1", "--config", "retention.ms=soon"], ["retention.ms", "integer"]),
    (["create", "new1", "--config", "no.such.key=1"], ["no.such.key", "unknown"]),
    (["create", "new1", "--config", "retention.ms"], ["retention.ms", "KEY=VALUE"]),
    (["create", "new1", "--partitions", "0"], ["partitions"]),
    (["alter", "t3", "--config", "segment.bytes=big"], ["segment.bytes"]),
    (["alter", "t3", "--config", "bogus.setting=3"], ["bogus.setting"]),
    (["alter", "t3", "--partitions", "2"], ["partitions"]),
    (["alter", "t3"], ["nothing to alter"]),
    # (a --timeout-ms so that a missing check fails fast instead of consuming forever)
    (["consume", "t3", "--partition", "0", "--offset", "5", *QUICK], ["5", "out of range"]),
    (["consume", "t3", "--partition", "0", "--offset", "-1", *QUICK], ["--offset", "-1"]),
    (["consume", "t3", "--offset", "0", *QUICK], ["--offset", "--partition"]),
    (["consume", "t3", "--partition", "9", "--from-beginning", *QUICK], ["partition 9"]),
    (["consume", "t3", "--partition", "-1", "--from-beginning", *QUICK], ["partition -1"]),
    (["produce", "t3", "--partition", "9"], ["partition 9"]),
]


@pytest.mark.parametrize(
    ("args", "fragments"),
    BAD_INPUT,
    ids=["_".join(a for a in args if a not in QUICK) for args, _ in BAD_INPUT],
)
def test_bad_input_is_one_line_error(shared: Cli, args: list[str], fragments: list[str]) -> None:
    before = _snapshot(shared)
    message = shared.fails(*args, stdin="should-not-be-written\n")
    for fragment in fragments:
        assert fragment in message, message
    assert _snapshot(shared) == before  # nothing created, grown, written or altered


def test_refused_produce_writes_nothing(shared: Cli) -> None:
    shared.fails("produce", "t3", "--partition", "3", stdin="zzz\n")
    out = shared.ok("consume", "t3", "--from-beginning", "--timeout-ms", "300")
    assert sorted(out.stdout.splitlines()) == ["a", "b", "c", "d"]


# ---------------------------------------------------------------- edge cases


def test_max_messages_zero_prints_nothing(cli: Cli) -> None:
    cli.ok("create", "t")
    cli.produce("t", ["a", "b"])
    proc = cli.run("consume", "t", "--from-beginning", "--max-messages", "0", *GUARD)
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_groups_still_listed_after_a_consumed_topic_is_deleted(cli: Cli) -> None:
    for topic in ("keep", "gone"):
        cli.ok("create", topic)
        cli.produce(topic, ["x", "y"])
        cli.ok("consume", topic, "--group", f"g-{topic}", "--from-beginning", "--max-messages", "2")
    cli.ok("delete", "gone")
    groups = cli.groups()  # must not fail on the deleted topic
    assert groups["g-keep"] == {"keep-0": {"committed": 2, "end": 2, "lag": 0}}


# --------------------------------------------------------------- round trips


def _unicode_lines(n: int) -> list[str]:
    samples = [
        "plain ascii",
        "Grüße aus Köln – ß",
        "日本語のテキスト",
        "emoji 🚀🔥🎉",
        "Ελληνικά και русский",
        "עברית ועربية",
        "e\u0301 combining",
        'quote " and backslash \\',
        "tab\tinside",
        "",
    ]
    return [f"{samples[i % len(samples)]} #{i}" for i in range(n)]


def test_round_trip_5000_unicode_lines_one_partition(cli: Cli) -> None:
    cli.ok("create", "rt")
    lines = [*_unicode_lines(4998), "a:b:c", "", "   padded   "]
    cli.produce("rt", lines)
    proc = cli.ok("consume", "rt", "--from-beginning", "--max-messages", str(len(lines)), *GUARD)
    assert proc.stdout.split("\n") == [*lines, ""]  # exact: order, blanks, spaces
    desc = cli.describe("rt")
    assert desc["partitions"][0]["latest_offset"] == len(lines)


def test_round_trip_5000_keyed_unicode_lines(cli: Cli) -> None:
    cli.ok("create", "rtk", "--partitions", "3")
    body = _unicode_lines(5000)
    lines = [f"kéy-{i % 37}:{v}" if i % 5 else v.replace(":", "") for i, v in enumerate(body)]
    lines[100] = "first:second:third #sep-twice"
    lines[200] = ":empty key #200"
    lines[300] = "empty value:"
    cli.produce("rtk", lines, "--key-separator", ":")

    expected: list[tuple[str | None, str]] = []
    for line in lines:
        key, sep, value = line.partition(":")
        expected.append((key, value) if sep else (None, line))

    records = cli.consume_json("rtk", "--from-beginning", "--max-messages", str(len(lines)), *GUARD)
    assert len(records) == len(lines)
    got = Counter((r["key"], r["value"]) for r in records)
    assert got == Counter(expected)
    assert ("first", "second:third #sep-twice") in got
    assert ("", "empty key #200") in got
    assert ("empty value", "") in got

    index = {pair: i for i, pair in enumerate(expected)}  # values carry #i: unique
    assert len(index) == len(expected)
    for part, recs in _by_partition(records).items():
        assert [r["offset"] for r in recs] == list(range(len(recs)))
        order = [index[(r["key"], r["value"])] for r in recs]
        assert order == sorted(order), f"partition {part} out of order"
        for r in recs:
            if r["key"] is not None:
                assert part == _keyed_partition(r["key"], 3), r
