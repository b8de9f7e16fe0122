"""KafkaLog's group member in a rebalance: what a consumer is told, and what it commits.

A revocation reaches the consumer inside the coordinator's revoke, before the
partitions move, so what it commits there is where the next owner starts (the two-
member case, on the real broker too, is the contract suite's
test_group_members_share_partitions_and_take_over). A lost assignment is different:
the member was thrown out (here: it did not poll within max.poll.interval.ms, as a
sink task stuck in put() would not), its generation is gone, and nothing may be
committed: `on_lost` is told, `on_revoke` is not, and no offset is written.
"""

from __future__ import annotations

import time

from log import Consumer, TopicPartition
from tests.waiting import wait_until


def test_a_lost_assignment_is_given_up_without_a_commit(make_kafka_log) -> None:
    log = make_kafka_log(
        member_config={
            "session.timeout.ms": 3000,
            "heartbeat.interval.ms": 300,
            "max.poll.interval.ms": 3000,
        }
    )
    log.create_topic("t", 1)
    log.append("t", 0, [b"a", b"b"])
    told: list[tuple[str, set]] = []
    consumer = Consumer(
        log, group_id="g", auto_offset_reset="earliest", auto_commit_interval_ms=600_000
    )
    consumer.subscribe(
        ["t"],
        on_revoke=lambda tps: told.append(("revoke", tps)),
        on_lost=lambda tps: told.append(("lost", tps)),
    )
    got: list = []
    wait_until(lambda: got.extend(consumer.poll(0.1)) or len(got) == 2, 30, "the records")
    time.sleep(4.5)  # the fault: no poll for longer than max.poll.interval.ms
    wait_until(lambda: consumer.poll(0.1) is not None and told, 30, "the member hears of it")
    assert told[0] == ("lost", {TopicPartition("t", 0)})
    assert ("revoke", {TopicPartition("t", 0)}) not in told
    assert log.committed_offsets("g") == {}  # auto-commit: nothing on a lost assignment
    consumer.close()
