"""commit_record per record, or commit_records per appended batch, with where each
record landed (and None for what a transform dropped)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connect.api import RecordMetadata
from tests.connect.plugins_for_tests import BatchCommitTrackingSource, CommitTrackingSource
from tests.waiting import wait_until

CONV = "tests.connect.plugins_for_tests.Utf8Converter"
DROP_B = {
    "transforms": "drop",
    "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
    "transforms.drop.predicate": "isB",
    "predicates": "isB",
    "predicates.isB.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isB.pattern": "b",  # every record of topic b is dropped
}


def _herder(start_herder: Callable[..., Any]) -> Any:
    return start_herder(
        {"key.converter": CONV, "value.converter": CONV, "task.isolation": "thread"}
    )


def test_commit_record_sees_each_record_where_it_landed(start_herder) -> None:
    CommitTrackingSource.COMMITTED.clear()
    herder = _herder(start_herder)
    herder.put_connector_config(
        "src",
        {"connector.class": "tests.connect.plugins_for_tests.CommitTrackingSource"},
        allow_replace=False,
    )
    wait_until(lambda: len(CommitTrackingSource.COMMITTED) == 10)
    landed = dict(CommitTrackingSource.COMMITTED)
    for i in range(10):
        meta = landed[f"{'ab'[i % 2]}{i}"]
        assert isinstance(meta, RecordMetadata)
        assert (meta.topic, meta.partition, meta.offset) == ("ab"[i % 2], 0, i // 2)
        assert meta.timestamp > 0
    records = herder.log.read("a", 0, 0)
    assert [(r.offset, r.value) for r in records] == [(i, f"a{2 * i}".encode()) for i in range(5)]


def test_commit_records_gets_one_call_per_batch_and_none_for_dropped(start_herder) -> None:
    BatchCommitTrackingSource.BATCHES.clear()
    herder = _herder(start_herder)
    herder.put_connector_config(
        "src",
        {
            "connector.class": "tests.connect.plugins_for_tests.BatchCommitTrackingSource",
            **DROP_B,
        },
        allow_replace=False,
    )
    wait_until(lambda: len(BatchCommitTrackingSource.BATCHES) == 2)
    appended, dropped = BatchCommitTrackingSource.BATCHES
    assert appended[0] == ["a0", "a2", "a4", "a6", "a8"]
    assert [(m.topic, m.partition, m.offset) for m in appended[1]] == [
        ("a", 0, i) for i in range(5)
    ]
    assert dropped == (["b1", "b3", "b5", "b7", "b9"], [None] * 5)
    assert "b" not in herder.log.list_topics()
