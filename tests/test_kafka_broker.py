"""The session broker's `empty()` (tests/kafka_broker.py), which every test on the real
broker starts with: a group it cannot delete because a member is still in it fails it,
naming the group and the member, instead of being passed over without a word (the next
test's group of that name would have had the member in it)."""

from __future__ import annotations

from log import TopicPartition
from log.kafka import KafkaLog
from tests.kafka_broker import KafkaBroker
from tests.waiting import wait_until


def test_empty_names_a_member_left_in_a_group_and_deletes_the_group_once_it_left(
    kafka_broker: KafkaBroker,
) -> None:
    kafka_broker.empty()
    member_config = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
    with KafkaLog(kafka_broker.bootstrap, timeout_s=10, member_config=member_config) as log:
        log.create_topic("lines", 1)
        member = log.join_group("connect-file-sink", "file-sink-0", ["lines"])
        try:
            wait_until(lambda: member.target() == {TopicPartition("lines", 0)}, 30, "assigned")
            try:
                kafka_broker.empty(groups_timeout_s=1.0)
            except TimeoutError as exc:
                failure = str(exc)
            else:
                raise AssertionError("empty() passed over a group with a live member")
        finally:
            member.leave()
    assert "group 'connect-file-sink'" in failure, failure
    assert "tributary-file-sink-0 at " in failure, failure  # the member's client id, host
    assert "['lines-0']" in failure, failure  # and what it holds
    kafka_broker.empty(groups_timeout_s=10.0)  # the member left: the group goes
    with KafkaLog(kafka_broker.bootstrap, timeout_s=10) as log:
        assert log.list_groups() == []
