"""A real Apache Kafka broker for tests (a pytest plugin), started by `scripts/kafka`.

The librdkafka mock (tests/kafka.py) stays for fast unit tests, but it has no controller
and no configs: what KafkaLog and the workers do on a real cluster (CreateTopics with
configs, IncrementalAlterConfigs, the group coordinator's rules, the cluster id) is
tested here, on Apache Kafka 4.x in KRaft mode, from the jars pom.xml pins.

`kafka_broker` (session) is ONE broker for the whole session, started on a thread when
the session starts if a selected test asks for it (tests/prestart.py: a start costs
5–10 s, spent beside the tests before its first user), through the same script people
use, on a free port in a temporary directory, and stopped at the end. A broker that cannot start
FAILS the tests that asked for it, with the script's one-line reason: a missing JVM or
a download failure is a broken machine, not a reason to skip.

`make_broker_log` (per test) opens KafkaLogs on it after emptying it: every topic and
group a previous test left is deleted first, so each test starts on a cluster that
holds only Kafka's own internal topics, as the contract suite assumes.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient

from log.kafka import KafkaLog
from tests.kafka import kafka_logs
from tests.prestart import Prestarted, register

__all__ = [
    "KafkaBroker",
    "free_port",
    "kafka_broker",
    "make_broker_log",
    "session_broker",
    "start_broker",
]

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "kafka"
#: Kafka's own internal topics; everything else is a test's and is deleted between tests.
KAFKA_INTERNAL = ("__consumer_offsets", "__transaction_state", "__share_group_state")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KafkaBroker:
    """One broker run by `scripts/kafka` in `directory`; `bootstrap` is its host:port."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.cluster_id: str | None = None

    def _run(self, *args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(SCRIPT), *args, "--dir", str(self.directory)],
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )

    def start(self) -> None:
        """Start (or, after `stop(keep=True)`, restart on the same data and port)."""
        # The suite's records carry its clock's 2023 timestamps, which the broker's
        # default 7-day retention deletes at its next check (30 s after a start, then
        # every 5 minutes): a test would lose records depending on when it ran. No check
        # runs in a session (topics keep Kafka's default retention.ms, which tests read).
        done = self._run(
            "start", "--port", str(self.port),
            "--config", "log.retention.check.interval.ms=86400000",
            timeout_s=240,
        )
        if done.returncode != 0:
            pytest.fail(
                f"the Kafka broker did not start: {done.stderr.strip() or done.stdout.strip()}",
                pytrace=False,
            )
        assert f"bootstrap.servers={self.bootstrap}" in done.stdout
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        self.cluster_id = admin.describe_cluster(request_timeout=10).result(timeout=11).cluster_id

    def stop(self, *, keep: bool = False) -> None:
        """Shut the broker down; `keep` keeps its data for `start` to resume."""
        done = self._run("stop", *(["--keep"] if keep else []), timeout_s=60)
        assert done.returncode == 0, done.stderr

    def empty(self, timeout_s: float = 30.0) -> None:
        """Delete every topic and group a test left (Kafka's internal topics stay)."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        groups = [
            g.group_id
            for g in admin.list_consumer_groups(request_timeout=10).result(timeout=11).valid
        ]
        if groups:
            for future in admin.delete_consumer_groups(groups, request_timeout=10).values():
                # A group whose member has not left yet (a closed consumer's LeaveGroup
                # still in flight) is not empty; its offsets go with its topics below.
                with contextlib.suppress(confluent_kafka.KafkaException):
                    future.result(timeout=11)
        deadline = time.monotonic() + timeout_s
        while True:
            topics = [
                t for t in admin.list_topics(timeout=10).topics if t not in KAFKA_INTERNAL
            ]
            if not topics:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topics left on the broker after deleting them: {topics}")
            for future in admin.delete_topics(topics, request_timeout=10).values():
                try:
                    future.result(timeout=11)
                except confluent_kafka.KafkaException as exc:
                    err = exc.args[0]
                    if err.code() != confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART:
                        raise
            time.sleep(0.1)


def start_broker(tmp_path_factory: pytest.TempPathFactory, name: str) -> KafkaBroker:
    """A broker started in a temporary directory named after fixture `name`."""
    broker = KafkaBroker(tmp_path_factory.mktemp(name.replace("_", "-")) / "broker")
    broker.start()
    return broker


def session_broker(
    tmp_path_factory: pytest.TempPathFactory, name: str, prestarted: Prestarted
) -> Iterator[KafkaBroker]:
    """The broker of session fixture `name` (started ahead by tests/prestart.py, or
    now), stopped at the end (the body of every session fixture that wants a broker of
    its own)."""
    broker = prestarted.take(name, lambda: start_broker(tmp_path_factory, name))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_broker(
    tmp_path_factory: pytest.TempPathFactory, prestarted: Prestarted
) -> Iterator[KafkaBroker]:
    yield from session_broker(tmp_path_factory, "kafka_broker", prestarted)


register("kafka_broker", lambda factory: start_broker(factory, "kafka_broker"), KafkaBroker.stop)


@pytest.fixture
def make_broker_log(kafka_broker: KafkaBroker) -> Iterator[Callable[..., KafkaLog]]:
    """KafkaLogs on the session's real broker, emptied of earlier tests' topics and
    groups; all are closed at teardown (6 s: the broker's minimum session)."""
    kafka_broker.empty()
    with kafka_logs(
        kafka_broker.bootstrap, timeout_s=10.0, session_ms=6000, heartbeat_ms=500
    ) as factory:
        yield factory
