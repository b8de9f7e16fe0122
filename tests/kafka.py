"""A Kafka protocol endpoint for tests (a pytest plugin): librdkafka's mock cluster.

No Kafka broker can be installed here, but librdkafka (inside confluent-kafka) has a
mock cluster that speaks the Kafka protocol: produce, fetch, list offsets, metadata,
group coordination and offset commit/fetch. A Producer created with
`test.mock.num.brokers` owns it; the cluster lives as long as that handle, and any
client — in this process or another — reaches it at the brokers' host:port from its
metadata. It has no controller, so admin requests (CreateTopics, DeleteTopics,
DescribeConfigs, DeleteGroups) fail, and it auto-creates topics with 4 partitions.

`kafka_cluster` (session) is one cluster for tests that start worker processes;
`make_kafka_log` (per test) opens KafkaLogs on a fresh cluster of its own, which
costs a few milliseconds and keeps tests' topics apart; all are closed at teardown.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import confluent_kafka
import pytest

from log.kafka import KafkaLog

__all__ = ["MockKafkaCluster", "kafka_cluster", "kafka_logs", "make_kafka_log"]


class MockKafkaCluster:
    """One librdkafka mock cluster, owned by a Producer handle kept here."""

    def __init__(self, brokers: int = 1) -> None:
        self._owner: confluent_kafka.Producer | None = confluent_kafka.Producer(
            {"test.mock.num.brokers": brokers, "log_level": 3}
        )
        md = self._owner.list_topics(timeout=10)
        self.bootstrap = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())

    def stop(self) -> None:
        """Tear the cluster down (clients still connected see their connections close)."""
        self._owner = None


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[MockKafkaCluster]:
    cluster = MockKafkaCluster()
    yield cluster
    cluster.stop()


@contextlib.contextmanager
def kafka_logs(
    bootstrap: str, *, timeout_s: float, session_ms: int, heartbeat_ms: int
) -> Iterator[Callable[..., KafkaLog]]:
    """A factory of KafkaLogs on `bootstrap`, every one closed on exit.

    Why the member settings: a coordinator rebalances after a member left only once that
    member's session timed out (45 s by default) when its LeaveGroup was lost; group
    tests would wait that long."""
    opened: list[KafkaLog] = []

    def factory(**kwargs: object) -> KafkaLog:
        kwargs.setdefault("timeout_s", timeout_s)
        kwargs.setdefault(
            "member_config",
            {"session.timeout.ms": session_ms, "heartbeat.interval.ms": heartbeat_ms},
        )
        log = KafkaLog(bootstrap, **kwargs)  # type: ignore[arg-type]
        opened.append(log)
        return log

    try:
        yield factory
    finally:
        for log in opened:
            log.close()


@pytest.fixture
def make_kafka_log() -> Iterator[Callable[..., KafkaLog]]:
    """KafkaLogs on one fresh mock cluster per test."""
    cluster = MockKafkaCluster()
    with kafka_logs(cluster.bootstrap, timeout_s=5.0, session_ms=3000, heartbeat_ms=300) as f:
        yield f
    cluster.stop()
