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
import threading
import time
from collections.abc import Callable

import pytest

from log import Consumer, LogClosedError, LogUnavailableError, TopicPartition
from log.kafka import KafkaLog
from log.kafka.clients import ClientConfig
from log.kafka.reader import ReaderPool
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


def test_a_source_tasks_appender_has_no_delivery_timeout() -> None:
    """Kafka Connect's source producers have no delivery timeout (0 is librdkafka's "no
    limit"); a given one keeps the floor of the request timeout."""
    config = ClientConfig("b:9092", {"delivery.timeout.ms": 30_000}, timeout_s=10.0)
    assert config.producer("none", delivery_timeout_ms=0)["message.timeout.ms"] == 0
    assert config.producer("none", delivery_timeout_ms=60_000)["message.timeout.ms"] == 60_000
    assert config.producer("none", delivery_timeout_ms=1)["message.timeout.ms"] == 10_000
    assert config.producer("none")["message.timeout.ms"] == 30_000  # the runtime's own


class _Call(threading.Thread):
    """A call on its own thread: `error` is what it raised, `took` how long it ran."""

    def __init__(self, call: Callable[[], object]) -> None:
        super().__init__(daemon=True)
        self._call = call
        self.error: BaseException | None = None
        self.took = -1.0

    def run(self) -> None:
        started = time.monotonic()
        try:
            self._call()
        except BaseException as exc:
            self.error = exc
        self.took = time.monotonic() - started


def test_an_appender_waits_past_the_delivery_timeout_until_its_caller_stops() -> None:
    """With the cluster gone, the log's append fails after the client config's delivery
    timeout (3 s here: never under the request timeout), while the same append through
    `appender()` (a source task's) is still waiting; its caller's stop ends the wait
    within a second or so, and closing the log then drops its records at once instead
    of waiting the request timeout for a broker."""
    cluster = MockKafkaCluster()
    log = KafkaLog(cluster.bootstrap, timeout_s=3.0, client_config={"delivery.timeout.ms": 1000})
    stop = threading.Event()
    try:
        log.create_topic("t", 1)
        append = log.appender(stop=stop)
        assert append("t", 0, [b"a", b"b"]) == range(0, 2)  # a broker there: as append
        cluster.stop()
        bounded = _Call(lambda: log.append("t", 0, [b"c"]))
        unbounded = _Call(lambda: append("t", 0, [b"d"]))
        bounded.start()
        unbounded.start()
        bounded.join(30)
        assert isinstance(bounded.error, LogUnavailableError), bounded.error
        unbounded.join(2.0)  # well past the delivery timeout
        assert unbounded.is_alive(), unbounded.error  # still waiting for a broker
        stopped = time.monotonic()
        stop.set()
        unbounded.join(10)
        assert isinstance(unbounded.error, LogUnavailableError), unbounded.error
        assert "when the caller stopped" in str(unbounded.error)
        assert time.monotonic() - stopped < 3
        closing = time.monotonic()
        log.close()
        assert time.monotonic() - closing < 1.5  # not the request timeout for "d"
    finally:
        log.close()


def test_close_does_not_wait_for_a_read_in_flight() -> None:
    """`ReaderPool.close` closes an idle reader at once and leaves a busy one to close
    itself: the read in flight (watermarks retried for the request timeout while the
    cluster is away) gives up with LogClosedError, and no reader is handed out after
    (closing used to take each reader's lock: a worker's stop waited the request
    timeout during an outage)."""
    cluster = MockKafkaCluster()
    config = ClientConfig(cluster.bootstrap, {}, timeout_s=8.0)
    with KafkaLog(cluster.bootstrap, timeout_s=8.0) as log:
        for topic in ("busy", "idle"):
            log.create_topic(topic, 1)
            log.append(topic, 0, [b"x"])
    pool = ReaderPool(config)
    with pool.use("idle", 0) as idle:
        assert [r.value for r in idle.read(0, None, 1 << 20)] == [b"x"]
    held = threading.Event()

    def read_in_outage() -> None:
        with pool.use("busy", 0) as reader:
            held.set()
            reader.read(0, None, 1 << 20)

    cluster.stop()
    busy = _Call(read_in_outage)
    busy.start()
    assert held.wait(10)
    closing = time.monotonic()
    pool.close()
    assert time.monotonic() - closing < 1
    assert idle.closed  # closed at once
    busy.join(10)
    assert isinstance(busy.error, LogClosedError), busy.error
    assert busy.took < 5  # gave up well before its 8 s timeout
    with pytest.raises(LogClosedError), pool.use("idle", 0):
        pass


def test_no_client_is_given_keys_of_the_other_kind() -> None:
    """Producer-only keys (Kafka's delivery.timeout.ms, linger.ms) reach the producers
    only, consumer-only keys (check.crcs) the consumers only, and the admin client
    neither: librdkafka warned "is a producer property and will be ignored by this
    consumer instance" at every reader's and group client's start."""
    extra = {"delivery.timeout.ms": 30_000, "linger.ms": 5, "check.crcs": True}
    config = ClientConfig("b:9092", extra)
    assert config.producer("none")["linger.ms"] == 1  # KafkaLog's own setting wins
    assert "check.crcs" not in config.producer("none")
    for consumer in (config.reader(), config.group_client("g")):
        assert consumer["check.crcs"] is True
        assert not {"delivery.timeout.ms", "linger.ms", "message.timeout.ms"} & set(consumer)
    assert not {"delivery.timeout.ms", "linger.ms", "check.crcs"} & set(config.admin())
    kept = _Kept()
    librdkafka = logging.getLogger("log.kafka.librdkafka")
    librdkafka.addHandler(kept)
    cluster = MockKafkaCluster()
    log = KafkaLog(cluster.bootstrap, timeout_s=5.0, client_config=extra)
    try:
        log.create_topic("t", 1)
        log.append("t", 0, [b"a"])
        assert [r.value for r in log.read("t", 0, 0)] == [b"a"]
        log.commit_offsets("g", {TopicPartition("t", 0): 1})
        assert log.committed_offsets("g", [TopicPartition("t", 0)])[TopicPartition("t", 0)]
    finally:
        log.close()
        librdkafka.removeHandler(kept)
        cluster.stop()
    warned = [r.getMessage() for r in kept.records if "will be ignored" in r.getMessage()]
    assert warned == []
