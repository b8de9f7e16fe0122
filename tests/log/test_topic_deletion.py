"""A topic deleted while another FileLog (another process, as far as the files go)
reads, writes or commits it: the user of the deleted topic learns it (TopicDeletedError,
saying so), closing stays clean, and no committed offset outlives the topic."""

from __future__ import annotations

import pytest

from log import Consumer, TopicDeletedError, TopicPartition, UnknownTopicOrPartitionError

TP = TopicPartition("doomed", 0)


@pytest.fixture
def logs(make_log):
    """(user, admin): two FileLogs on one directory; the admin deletes."""
    user, admin = make_log(), make_log()
    admin.create_topic("doomed", 1)
    admin.create_topic("kept", 1)
    user.append("doomed", 0, [b"a", b"b", b"c"])
    user.append("kept", 0, [b"x"])
    return user, admin


def test_close_after_another_process_deleted_an_open_topic_is_clean(logs) -> None:
    user, admin = logs
    assert user.latest_offset("doomed", 0) == 3  # opened here
    admin.delete_topic("doomed")
    user.close()  # was FileNotFoundError from the partition's directory


@pytest.mark.parametrize(
    "call",
    [
        lambda log: log.append("doomed", 0, [b"d"]),
        lambda log: log.read("doomed", 0, 3),
        lambda log: log.latest_offset("doomed", 0),
        lambda log: log.offset_for_timestamp("doomed", 0, 0),
        lambda log: log.partition_count("doomed"),
    ],
    ids=["append", "read at the end", "latest_offset", "offset_for_timestamp", "partitions"],
)
def test_a_deleted_topic_says_it_was_deleted(logs, call) -> None:
    """(A reader in the middle of a partition may finish reading what its open files
    hold, as with any deleted file; at the end it learns the topic is gone.)"""
    user, admin = logs
    user.read("doomed", 0, 0)
    admin.delete_topic("doomed")
    with pytest.raises(TopicDeletedError, match="topic 'doomed' was deleted while in use"):
        call(user)
    with pytest.raises(TopicDeletedError):  # and again, once the handles are dropped
        call(user)
    user.create_topic("doomed", 1)  # created anew: an ordinary empty topic
    assert user.latest_offset("doomed", 0) == 0


def test_a_topic_never_seen_still_does_not_exist(logs) -> None:
    user, _ = logs
    with pytest.raises(UnknownTopicOrPartitionError) as info:
        user.read("never", 0, 0)
    assert not isinstance(info.value, TopicDeletedError)


def test_no_committed_offset_outlives_a_deleted_topic(logs) -> None:
    user, admin = logs
    kept = TopicPartition("kept", 0)
    user.commit_offsets("g", {TP: 3, kept: 1})
    admin.delete_topic("doomed")
    assert TP not in user.committed_offsets("g")
    # A late commit (a reader that had not noticed) keeps the rest and reports the gone.
    with pytest.raises(TopicDeletedError):
        user.commit_offsets("g", {TP: 3, kept: 1})
    assert {tp: o.offset for tp, o in user.committed_offsets("g").items()} == {kept: 1}
    # Created again, the topic is read from its start, not from the old offset 3.
    admin.create_topic("doomed", 1)
    admin.append("doomed", 0, [b"new"] * 5)
    consumer = Consumer(user, group_id="g", auto_offset_reset="earliest")
    try:
        consumer.subscribe(["doomed"])
        got = []
        for _ in range(50):
            got += consumer.poll(0.1)
            if len(got) >= 5:
                break
        assert [r.offset for r in got] == [0, 1, 2, 3, 4]
    finally:
        consumer.close()


def test_a_subscribed_consumer_fails_when_its_topic_is_deleted(logs) -> None:
    user, admin = logs
    consumer = Consumer(
        user, group_id="g", auto_offset_reset="earliest", heartbeat_interval_ms=50
    )
    try:
        consumer.subscribe(["doomed"])
        got = []
        for _ in range(50):
            got += consumer.poll(0.1)
            if len(got) >= 3:
                break
        assert len(got) == 3
        admin.delete_topic("doomed")
        with pytest.raises(TopicDeletedError, match="doomed"):
            for _ in range(100):  # at the log end: only the group notices (bounded)
                consumer.poll(0.05)
    finally:
        consumer.close()


def test_a_commit_naming_a_topic_that_never_existed_commits_nothing(logs) -> None:
    user, _ = logs
    kept = TopicPartition("kept", 0)
    with pytest.raises(UnknownTopicOrPartitionError) as info:
        user.commit_offsets("g", {TopicPartition("never", 0): 1, kept: 1})
    assert not isinstance(info.value, TopicDeletedError)
    assert user.committed_offsets("g") == {}


def test_flushing_what_was_appended_to_a_deleted_topic_is_quiet(logs) -> None:
    """A source task fsyncs what it appended before it commits its source offsets:
    those records did reach the log, so their commit must not fail for the deletion."""
    user, admin = logs
    user.append("doomed", 0, [b"d"])
    admin.delete_topic("doomed")
    user.flush("doomed", 0)
    with pytest.raises(TopicDeletedError):
        user.append("doomed", 0, [b"e"])  # the next batch: the task fails here
    user.flush("doomed", 0)  # and its commit of what came before still goes through
    with pytest.raises(UnknownTopicOrPartitionError):
        user.flush("never", 0)  # a topic that never was is still a mistake
