"""Where an exactly-once source task's transactions end: `transaction.boundary=connector`
(the task asks at a record or after its poll, commits and aborts; an abort drops
the records and commits their offsets, as Kafka Connect's does), `interval`, and a
connector's own offsets topic (`offsets.storage.topic`): on a standalone herder with
task processes, the topic read at read_committed, and `commit_record` called for what
was committed only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from connect.herder.standalone import StandaloneHerder
from tests.connect.worker.boundary_plugins import expected
from tests.waiting import wait_until

EOS = {"exactly.once.source.support": "enabled"}
BOUNDED = "tests.connect.worker.boundary_plugins.BoundarySource"


def _committed(herder: StandaloneHerder, topic: str) -> list[bytes | None]:
    """The values of partition 0 at read_committed."""
    log = herder.log
    if topic not in log.list_topics():
        return []
    out: list[bytes | None] = []
    offset = 0
    while True:
        records = log.read(topic, 0, offset, isolation_level="read_committed")
        out += [r.value for r in records]
        after = getattr(records, "next_offset", None)
        after = after if after is not None else (records[-1].offset + 1 if records else offset)
        if after <= offset:
            return out
        offset = after


@pytest.mark.parametrize("end", ["commit", "abort"])
def test_the_task_commits_and_aborts_where_it_asks(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path, end: str
) -> None:
    acks = tmp_path / "acks"
    herder = start_herder(EOS)
    config = {
        "connector.class": BOUNDED,
        "topic": "bounded",
        "count": "205",
        "transaction.boundary": "connector",
        "acks.file": str(acks),
        "end": end,
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    herder.put_connector_config("b", config, allow_replace=False)
    want = expected(205, 7, 25, end)
    assert 100 < len(want) < 205  # some aborted, most committed
    # The request after the last poll: 200 to 204 committed, or dropped.
    assert (want[-5:] == [200, 201, 202, 203, 204]) is (end == "commit")
    numbers = [str(n).encode() for n in want]
    wait_until(lambda: _committed(herder, "bounded") == numbers, 60, "the committed numbers")
    assert herder.log.last_stable_offset("bounded", 0) == herder.log.latest_offset("bounded", 0)
    wait_until(lambda: acks.exists() and len(acks.read_text().split()) == len(want), 30, "acks")
    assert [int(n) for n in acks.read_text().split()] == want  # only what committed
    # An abort drops the records but commits their offsets, as Kafka Connect does.
    wait_until(
        lambda: (
            herder.connector_offsets("b")
            == [{"partition": {"counter": "bounded"}, "offset": {"n": 204}}]
        ),
        30,
        "the last offset committed",
    )


def test_an_interval_boundary_and_a_connectors_own_offsets_topic(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path
) -> None:
    src = tmp_path / "in.txt"
    src.write_text("".join(f"line {i}\n" for i in range(500)))
    herder = start_herder(EOS)
    config = {
        "connector.class": "FileStreamSource",
        "file": str(src),
        "topic": "lines",
        "batch.size": "50",
        "transaction.boundary": "interval",
        "transaction.boundary.interval.ms": "1000",
        "offsets.storage.topic": "lines-offsets",
    }
    herder.put_connector_config("src", config, allow_replace=False)
    wait_until(lambda: len(_committed(herder, "lines")) == 500, 60, "every line committed")
    # Ten polls, far fewer transactions: one per interval (their commit markers).
    transactions = herder.log.latest_offset("lines", 0) - 500
    assert 1 <= transactions < 10
    # The offsets in the connector's topic, read committed, and copied to the worker's.
    log = herder.log
    offsets = [
        r.value
        for p in range(log.partition_count("lines-offsets"))
        for r in log.read("lines-offsets", p, 0, isolation_level="read_committed")
    ]
    size = src.stat().st_size
    assert b'{"position":%d}' % size in offsets
    expected_offsets = [{"partition": {"filename": str(src)}, "offset": {"position": size}}]
    wait_until(lambda: herder.connector_offsets("src") == expected_offsets, 30, "global copy")
