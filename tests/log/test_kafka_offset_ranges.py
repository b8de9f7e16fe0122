"""KafkaLog.offset_ranges and the LogTable replays that use it (log.kafka.reader).

On the real broker the earliest and latest offsets of a topic's partitions come from
one ListOffsets round, so a table replays a 25-partition topic with a consumer only
for the partitions that hold records (a worker's start made 25 before); on the mock
(no admin API) the answers come one partition at a time and must be the same.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient

from connect.storage import LogTable
from log import LogUnavailableError
from log.kafka import KafkaLog
from log.kafka.reader import offset_ranges
from tests.kafka_broker import free_port

_quiet = logging.getLogger("tests.offset_ranges.librdkafka")

MakeKafkaLog = Callable[..., KafkaLog]


@pytest.fixture(params=["mock", "broker"])
def make(request: pytest.FixtureRequest) -> MakeKafkaLog:
    if request.param == "broker":
        return request.getfixturevalue("make_broker_log")
    return request.getfixturevalue("make_kafka_log")


def test_offset_ranges_equal_each_partitions_watermarks(make: MakeKafkaLog) -> None:
    log = make()
    log.create_topic("ranges", 3)
    log.append("ranges", 0, [b"a", b"b"])
    log.append("ranges", 2, [b"c"])
    ranges = log.offset_ranges("ranges")
    assert ranges == {0: (0, 2), 1: (0, 0), 2: (0, 1)}
    assert ranges == {
        p: (log.earliest_offset("ranges", p), log.latest_offset("ranges", p)) for p in range(3)
    }
    assert log.offset_ranges("ranges", [2]) == {2: (0, 1)}


def test_a_table_of_many_partitions_replays_with_readers_only_where_records_are(
    make_broker_log: MakeKafkaLog,
) -> None:
    writer, reader = make_broker_log(), make_broker_log()
    written = LogTable(writer, "offsets", partitions=25)
    seen: dict[bytes, bytes | None] = {}
    written.start(lambda k, v: None)
    items = [(b"key-%d" % i, b"value-%d" % i) for i in range(3)]
    written.write(items)
    replayed = LogTable(reader, "offsets", partitions=25)
    replayed.start(lambda k, v: seen.__setitem__(k, v))
    assert seen == dict(items)
    # Without the batched offsets every partition's look opened a consumer.
    holding = {p for p, n in writer.offset_ranges("offsets").items() if n[1] > 0}
    opened = {p for topic, p in reader._readers._readers if topic == "offsets"}
    assert opened == holding and len(holding) <= 3
    # Another process's write is found by a whole refresh, and `behind` agrees.
    writer_items = [(b"key-9", b"later")]
    written.write(writer_items)
    replayed.refresh()
    assert seen[b"key-9"] == b"later"
    assert replayed.behind() == []


def test_prepared_appends_use_the_producer_made_before_them(
    make_broker_log: MakeKafkaLog,
) -> None:
    """A worker makes its producer before replaying its tables (its idempotence handshake
    then runs beside the replays): the appends after must use that one, not a second."""
    log = make_broker_log()
    log.create_topic("prepared", 1)
    log.prepare_appends()
    made = dict(log._writer._producers)
    assert len(made) == 1
    assert log.append("prepared", 0, [b"a"], keys=[b"k"]) == range(0, 1)
    assert log._writer._producers == made


def test_a_round_no_broker_answers_is_log_unavailable_within_its_timeout() -> None:
    """Not a fallback to each partition's watermarks, which would wait the request
    timeout once more per partition (25 for the offsets topic) while a cluster is away."""
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{free_port()}", "logger": _quiet})
    started = time.monotonic()
    with pytest.raises(LogUnavailableError):
        offset_ranges(admin, "offsets", list(range(25)), timeout_s=1.0, closed=lambda: False)
    assert time.monotonic() - started < 4.0


def test_a_new_topic_is_described_without_a_reader_per_partition(
    make_broker_log: MakeKafkaLog,
) -> None:
    """`create_topic` answers with the topic's description: its offsets come from
    ListOffsets rounds, asked again while the new partitions' leaders come up, not from
    a consumer per partition waiting for its leader (2 s for a fresh offsets topic)."""
    log = make_broker_log()
    described = log.create_topic("fresh", 25)
    assert [(p.partition, p.earliest_offset, p.latest_offset) for p in described.partitions] == [
        (p, 0, 0) for p in range(25)
    ]
    assert [key for key in log._readers._readers if key[0] == "fresh"] == []
