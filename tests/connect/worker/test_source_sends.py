"""A poll's appends gathered per partition (`connect.worker.source_sends`): one append
per partition and shape, in poll order, each part told its own offsets; and a source
task whose polls mix SourceBatches and records makes one append per poll."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from connect.worker.source_sends import PollAppends
from tests.connect.test_source_batches import JSON, ROWS, BatchSource
from tests.waiting import wait_until


def test_parts_of_a_partition_go_as_one_append_in_order_and_land_where_they_are(
    make_log: Callable[..., Any],
) -> None:
    log = make_log()
    log.create_topic("t", 2)
    appended: list[tuple[str, int, int]] = []
    landed: dict[str, tuple[list[int], list[int] | None]] = {}
    appends = PollAppends(log.append, lambda *a: appended.append(a))

    def landing(name: str) -> Callable[[Sequence[int], list[int] | None], None]:
        return lambda offsets, stamps: landed.__setitem__(name, (list(offsets), stamps))

    appends.add("t", 0, [b"a0", b"a1"], keys=None, landing=landing("a"))
    appends.add("t", 1, [b"b0"], keys=[b"kb"], landing=landing("b"))
    appends.add("t", 0, [b"c0", b"c1", b"c2"], keys=[b"k", None, b"k"], landing=landing("c"))
    # another shape (timestamps): what partition 0 gathered goes first
    appends.add("t", 0, [b"d0"], keys=None, timestamps=[1234], landing=landing("d"))
    assert appended == [("t", 0, 5)]
    appends.add("t", 0, [b"e0"], keys=None)  # no landing asked for; the shape again
    assert appended == [("t", 0, 5), ("t", 0, 1)]
    appends.flush()
    assert appended == [("t", 0, 5), ("t", 0, 1), ("t", 1, 1), ("t", 0, 1)]
    zero = [(r.key, r.value) for r in log.read("t", 0, 0)]
    assert zero == [
        (None, b"a0"), (None, b"a1"), (b"k", b"c0"), (None, b"c1"), (b"k", b"c2"),
        (None, b"d0"), (None, b"e0"),
    ]  # fmt: skip
    assert [(r.key, r.value) for r in log.read("t", 1, 0)] == [(b"kb", b"b0")]
    assert log.read("t", 0, 5)[0].timestamp == 1234
    assert landed == {
        "a": ([0, 1], None),
        "c": ([2, 3, 4], None),
        "d": ([5], [1234]),
        "b": ([0], None),
    }
    appends.flush()  # nothing gathered: no append
    assert len(appended) == 4


def test_a_failed_append_forgets_what_was_gathered(make_log: Callable[..., Any]) -> None:
    log = make_log()
    appended: list[tuple[str, int, int]] = []
    appends = PollAppends(log.append, lambda *a: appended.append(a))
    appends.add("missing", 0, [b"x"], keys=None)  # no such topic: the append fails
    try:
        appends.flush()
    except Exception as exc:  # the log's own error for an unknown topic
        failure: Exception | None = exc
    else:
        failure = None
    assert failure is not None and appended == []
    log.create_topic("missing", 1)
    appends.flush()
    assert appended == [] and log.latest_offset("missing", 0) == 0


def test_a_poll_of_batches_and_records_is_one_append(start_herder, batch_fallbacks) -> None:
    """`mixed` polls are a record, a batch and a record: one append each, on a topic of
    one partition, and `commit_records` gets each part's offsets."""
    BatchSource.POLLS.clear()
    BatchSource.COMMITTED.clear()
    herder = start_herder({"task.isolation": "thread", "num.partitions": "1"})
    herder.put_connector_config(
        "src",
        {
            "connector.class": "tests.connect.test_source_batches.BatchSource",
            "mode": "mixed",
            "value.converter": JSON,
            "key.converter": JSON,
        },
        allow_replace=False,
    )
    wait_until(lambda: sum(n for _, n, _ in BatchSource.COMMITTED) >= ROWS, 30, "all acked")
    task = herder.worker.tasks[("src", 0)]
    polls = len(BatchSource.POLLS)
    assert task.metrics.log_appends == polls == 4
    assert task.metrics.records_written == ROWS
    assert batch_fallbacks == []
    # each part acknowledged on its own, with as many offsets as records
    assert len(BatchSource.COMMITTED) == 3 * polls
    assert all(n == m for _, n, m in BatchSource.COMMITTED)
    records = herder.log.read("rows", 0, 0, max_records=ROWS)
    assert [r.offset for r in records] == list(range(ROWS))
