"""The transactions part of the `Log` contract, run against FileLog and KafkaLog on a
real Apache Kafka broker (the `make` fixture of test_contract). librdkafka's mock
cluster is left out: it writes no transaction markers, so it has no last stable
offset to check.

Kafka writes a transaction's markers after `commit_transaction` returns (the
coordinator decides, then tells the partitions), so what a read_committed reader
sees afterwards is waited for, with a deadline; FileLog's commit returns after its
markers, and the same waits return at once.
"""

from __future__ import annotations

import pytest

from log import (
    Consumer,
    InvalidTxnStateError,
    Log,
    ProducerFencedError,
    TopicPartition,
    TransactionalProducer,
)
from tests.log.test_contract import make  # noqa: F401  (the fixture)
from tests.waiting import wait_until

BACKENDS = pytest.mark.parametrize("make", ["file", "kafka-broker"], indirect=True)
COMMITTED = "read_committed"
TIMEOUT_S = 30.0


def _values(log: Log, topic: str, partition: int, *, committed: bool) -> list[bytes | None]:
    """Every record from the log start, following `next_offset` past skipped batches."""
    level = COMMITTED if committed else "read_uncommitted"
    out: list[bytes | None] = []
    offset = log.earliest_offset(topic, partition)
    while True:
        records = log.read(topic, partition, offset, isolation_level=level)
        after = getattr(records, "next_offset", records[-1].offset + 1 if records else offset)
        if after == offset:
            return out
        out += [r.value for r in records]
        offset = after


def _eventually(log: Log, topic: str, partition: int, wanted: list[bytes]) -> None:
    wait_until(
        lambda: _values(log, topic, partition, committed=True) == wanted,
        TIMEOUT_S,
        f"read_committed of {topic}-{partition} to be {wanted}",
    )


@BACKENDS
def test_commit_shows_abort_hides_and_open_holds_back(make) -> None:  # noqa: F811
    log = make()
    log.create_topic("t", 2)
    producer = log.transactional_producer("contract-a")
    assert isinstance(producer, TransactionalProducer)
    producer.init_transactions()
    producer.begin_transaction()
    producer.append("t", 0, [b"c1", b"c2"])
    producer.append("t", 1, [b"c3"])
    producer.commit_transaction()
    _eventually(log, "t", 0, [b"c1", b"c2"])
    _eventually(log, "t", 1, [b"c3"])
    producer.begin_transaction()
    producer.append("t", 0, [b"aborted"])
    producer.abort_transaction()
    log.append("t", 0, [b"plain"])
    _eventually(log, "t", 0, [b"c1", b"c2", b"plain"])
    # read_uncommitted: every record, the aborted one too, and no control record.
    assert _values(log, "t", 0, committed=False) == [b"c1", b"c2", b"aborted", b"plain"]
    producer.begin_transaction()
    first_open = producer.append("t", 0, [b"open"]).start
    log.append("t", 0, [b"after-open"])
    wait_until(lambda: log.last_stable_offset("t", 0) == first_open, TIMEOUT_S, "the LSO")
    assert _values(log, "t", 0, committed=True) == [b"c1", b"c2", b"plain"]
    producer.commit_transaction()
    _eventually(log, "t", 0, [b"c1", b"c2", b"plain", b"open", b"after-open"])
    wait_until(
        lambda: log.last_stable_offset("t", 0) == log.latest_offset("t", 0), TIMEOUT_S, "LSO"
    )
    producer.close()


@BACKENDS
def test_a_read_committed_consumer_ends_at_the_log_end(make) -> None:  # noqa: F811
    log = make()
    log.create_topic("t")
    tp = TopicPartition("t", 0)
    producer = log.transactional_producer("contract-c")
    producer.init_transactions()
    for i, commit in enumerate([True, False, True]):
        producer.begin_transaction()
        producer.append("t", 0, [b"%d" % i])
        producer.commit_transaction() if commit else producer.abort_transaction()
    _eventually(log, "t", 0, [b"0", b"2"])
    end = log.latest_offset("t", 0)
    consumer = Consumer(log, auto_offset_reset="earliest", isolation_level=COMMITTED)
    consumer.assign([tp])
    got: list = []
    wait_until(
        lambda: got.extend(consumer.poll(0.2)) or consumer.position(tp) == end,
        TIMEOUT_S,
        "the consumer at the log end, past the last marker",
    )
    assert [r.value for r in got] == [b"0", b"2"]
    consumer.close()
    producer.close()


@BACKENDS
def test_a_new_producer_of_the_id_fences_the_old(make) -> None:  # noqa: F811
    log = make()
    log.create_topic("t")
    old = log.transactional_producer("contract-f")
    old.init_transactions()
    old.begin_transaction()
    old.append("t", 0, [b"zombie"])
    new = log.transactional_producer("contract-f")
    new.init_transactions()  # aborts the old one's transaction
    with pytest.raises(ProducerFencedError):
        old.append("t", 0, [b"zombie-2"])
        old.commit_transaction()  # Kafka may take the append and refuse the commit
    new.begin_transaction()
    new.append("t", 0, [b"new"])
    new.commit_transaction()
    _eventually(log, "t", 0, [b"new"])
    old.close()
    new.close()


@BACKENDS
def test_offsets_sent_in_a_transaction_count_once_it_commits(make) -> None:  # noqa: F811
    log = make()
    log.create_topic("t")
    tp = TopicPartition("t", 0)
    producer = log.transactional_producer("contract-o")
    producer.init_transactions()
    producer.begin_transaction()
    producer.append("t", 0, [b"x"])
    producer.send_offsets_to_transaction("contract-group", {tp: 5})
    producer.abort_transaction()
    assert log.committed_offsets("contract-group", [tp]) == {}
    producer.begin_transaction()
    producer.append("t", 0, [b"y"])
    producer.send_offsets_to_transaction("contract-group", {tp: 7})
    producer.commit_transaction()
    wait_until(
        lambda: (
            log.committed_offsets("contract-group", [tp]).get(tp) is not None
            and log.committed_offsets("contract-group", [tp])[tp].offset == 7
        ),
        TIMEOUT_S,
        "the offset committed with the transaction",
    )
    producer.close()


@BACKENDS
def test_calls_out_of_order_are_refused(make) -> None:  # noqa: F811
    log = make()
    log.create_topic("t")
    producer = log.transactional_producer("contract-s")
    with pytest.raises(InvalidTxnStateError):
        producer.begin_transaction()
    producer.init_transactions()
    with pytest.raises(InvalidTxnStateError):
        producer.append("t", 0, [b"x"])
    with pytest.raises(InvalidTxnStateError):
        producer.commit_transaction()
    producer.close()
