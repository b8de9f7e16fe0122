"""KafkaLog while no broker answers: what fails, how, and how loudly.

A cluster that went away is not a caller's bug: reads, offset fetches and commits fail
with `LogUnavailableError` (the category the runtime's tasks ride out, see
connect.worker.sink_retry) once the log's request timeout has passed, and librdkafka's
connection retries are logged once per client, not several times a second. The
cluster here is librdkafka's mock, torn down under the log (the real broker's
outage, with a worker on it, is tests/integration/test_kafka_worker.py).
"""

from __future__ import annotations

import logging
import time

import pytest

from log import Consumer, LogUnavailableError, TopicPartition
from log.kafka import KafkaLog
from log.kafka.clients import ClientConfig
from tests.kafka import MockKafkaCluster


def test_reads_and_offsets_of_a_cluster_gone_away_are_log_unavailable() -> None:
    cluster = MockKafkaCluster()
    log = KafkaLog(cluster.bootstrap, timeout_s=1.0)
    try:
        log.create_topic("t", 1)
        log.append("t", 0, [b"a", b"b"])
        assert [r.value for r in log.read("t", 0, 0)] == [b"a", b"b"]
        consumer = Consumer(log, group_id="g", auto_offset_reset="earliest")
        consumer.assign([TopicPartition("t", 0)])
        assert len(consumer.poll(1.0)) == 2
        cluster.stop()
        started = time.monotonic()
        with pytest.raises(LogUnavailableError):
            log.read("t", 0, 0)
        assert time.monotonic() - started < 10  # the request timeout, not for ever
        with pytest.raises(LogUnavailableError):
            consumer.poll(0.1)  # what a sink task sees: retried, not fatal
        with pytest.raises(LogUnavailableError):
            log.commit_offsets("g", {TopicPartition("t", 0): 2})
    finally:
        log.close()


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_connection_failures_are_logged_once_per_client() -> None:
    """Each client retries its connection several times a second; one line says so."""
    kept = _Kept()
    librdkafka = logging.getLogger("log.kafka.librdkafka")
    librdkafka.addHandler(kept)
    cluster = MockKafkaCluster()
    log = KafkaLog(cluster.bootstrap, timeout_s=1.0)
    try:
        log.create_topic("t", 1)
        log.append("t", 0, [b"a"])
        cluster.stop()
        for _ in range(3):  # about 3 s of reconnecting by the reader's client
            with pytest.raises(LogUnavailableError):
                log.read("t", 0, 0)
    finally:
        log.close()
        librdkafka.removeHandler(kept)
    failures = [r for r in kept.records if isinstance(r.args, tuple) and r.args[0] == "FAIL"]
    clients = {r.args[1] for r in failures}  # type: ignore[index]
    assert failures, "the outage was not logged at all"
    assert len(failures) == len(clients), [r.getMessage() for r in failures]


def test_appends_wait_kafkas_delivery_timeout_for_a_broker() -> None:
    """An append waits for a broker as long as Kafka's producer does (delivery.timeout.ms,
    120 s; the worker's `kafka.delivery.timeout.ms` or `kafka.message.timeout.ms`
    changes it), never less than the request timeout."""
    assert ClientConfig("b:9092", {}).producer("none")["message.timeout.ms"] == 120_000
    given = ClientConfig("b:9092", {"delivery.timeout.ms": "30000"}).producer("none")
    assert given["message.timeout.ms"] == 30_000
    assert "delivery.timeout.ms" not in given  # librdkafka takes one of the aliases
    alias = ClientConfig("b:9092", {"message.timeout.ms": 20_000}).producer("lz4")
    assert alias["message.timeout.ms"] == 20_000
    floor = ClientConfig("b:9092", {"delivery.timeout.ms": 1000}, timeout_s=10.0)
    assert floor.producer("none")["message.timeout.ms"] == 10_000
