"""A `connect standalone` worker whose log is a Kafka cluster (librdkafka's mock, owned
by this test process): FileStreamSource → topic on Kafka → FileStreamSink, byte for
byte, with the sink's progress kept in Kafka's group offsets."""

from __future__ import annotations

from pathlib import Path

import pytest

from log import TopicPartition
from log.kafka import KafkaLog
from tests.integration.conftest import connector_file
from tests.kafka import MockKafkaCluster
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _lines(count: int, start: int = 0) -> bytes:
    return b"".join(b"line %d with some text\n" % i for i in range(start, start + count))


def test_file_pipeline_through_kafka_is_byte_for_byte(
    tmp_path: Path, start_worker, kafka_cluster: MockKafkaCluster
) -> None:
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    files = [
        connector_file(
            tmp_path,
            "file-source",
            {"connector.class": "FileStreamSource", "file": str(src), "topic": "lines"},
        ),
        connector_file(
            tmp_path,
            "file-sink",
            {"connector.class": "FileStreamSink", "file": str(out), "topics": "lines"},
        ),
    ]
    # bootstrap.servers wins over log.dir; the mock cluster auto-creates 4 partitions,
    # so the offsets and status topics ask for fewer than Kafka Connect's 25 and 5.
    config = {
        "bootstrap.servers": kafka_cluster.bootstrap,
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        # The mock coordinator rebalances a group only once a departed member's session
        # timed out (a real one acts on the LeaveGroup at once): the restarted sink's
        # consumer would wait out Kafka's 45 s default.
        "consumer.session.timeout.ms": "3000",
        "consumer.heartbeat.interval.ms": "300",
    }
    first = _lines(20_000)
    src.write_bytes(first)
    worker = start_worker(files, config)
    wait_until(lambda: out.exists() and out.stat().st_size >= len(first), what="first output")
    assert worker.stop() == 0
    assert out.read_bytes() == first
    # The records went through Kafka, and the sink's position is the group's offset there.
    with KafkaLog(kafka_cluster.bootstrap, timeout_s=5) as log:
        assert log.partition_count("lines") == 1
        end = log.latest_offset("lines", 0)
        assert end == 20_000
        assert log.read("lines", 0, end - 1)[0].value == b"line 19999 with some text"
        wait_until(
            lambda: log.committed_offsets("connect-file-sink").get(TopicPartition("lines", 0)),
            what="the sink's committed offset",
        )
        committed = log.committed_offsets("connect-file-sink")[TopicPartition("lines", 0)]
        assert committed.offset == end
        assert {"connect-configs", "connect-offsets", "connect-status"} <= set(log.list_topics())
    # A restart resumes where the worker stopped: the source from its offset in Kafka's
    # offsets topic, the sink from the group's committed offset.
    second = _lines(5_000, start=20_000)
    with src.open("ab") as f:
        f.write(second)
    worker = start_worker(files, config)
    wait_until(
        lambda: out.stat().st_size >= len(first) + len(second), what="output after the restart"
    )
    assert worker.stop() == 0
    assert out.read_bytes() == first + second
