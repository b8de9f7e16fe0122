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
#: How long `KafkaBroker.empty` waits for a group's members to go: librdkafka's default
#: session (45 s, what a sink task's consumer has where a test sets none) and a margin.
GROUPS_TIMEOUT_S = 50.0


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

    def empty(self, timeout_s: float = 30.0, *, groups_timeout_s: float = GROUPS_TIMEOUT_S) -> None:
        """Delete every topic and group a test left (Kafka's internal topics stay).

        A group that still has members cannot be deleted: it is waited for, at most
        `groups_timeout_s`, and past that this fails naming the group and its members.
        Why: a member left alive by an earlier test (a worker not stopped, a consumer
        not closed) would take part in the next test's group of the same name, and get
        its partitions; emptying used to pass over it without a word. Members of a
        process that was killed go when their session expires (6 s in most tests,
        librdkafka's default 45 s where a test sets none): the default bound waits that
        out, and one that outlives it is alive. A wait is reported on stderr, which a
        failing test shows."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        self._delete_groups(admin, groups_timeout_s)
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

    def _delete_groups(self, admin: AdminClient, timeout_s: float) -> None:
        """Delete every consumer group, waiting (bounded) for those with members."""
        started = time.monotonic()
        first_refusal: str | None = None
        while True:
            listed = admin.list_consumer_groups(request_timeout=10).result(timeout=11).valid
            groups = [g.group_id for g in listed]
            refused: dict[str, confluent_kafka.KafkaError] = {}
            if groups:
                for group, future in admin.delete_consumer_groups(
                    groups, request_timeout=10
                ).items():
                    try:
                        future.result(timeout=11)
                    except confluent_kafka.KafkaException as exc:
                        err = exc.args[0]
                        if err.code() != confluent_kafka.KafkaError.GROUP_ID_NOT_FOUND:
                            refused[group] = err
            waited = time.monotonic() - started
            if not refused:
                if first_refusal is not None:
                    print(
                        f"KafkaBroker.empty: waited {waited:.1f} s for {first_refusal}",
                        file=sys.stderr,
                    )
                return
            if first_refusal is None:
                first_refusal = _describe_groups(admin, refused)
            if waited > timeout_s:
                raise TimeoutError(
                    f"consumer groups left on the broker after {timeout_s:.0f} s (a worker "
                    f"or consumer an earlier test left alive?): {_describe_groups(admin, refused)}"
                )
            time.sleep(0.2)


def _describe_groups(admin: AdminClient, refused: dict[str, confluent_kafka.KafkaError]) -> str:
    """Each refused group with the refusal and its members (client id, host, member id,
    assigned partitions): what names a member left behind."""
    described = admin.describe_consumer_groups(list(refused), request_timeout=10)
    parts = []
    for group, err in sorted(refused.items()):
        try:
            desc = described[group].result(timeout=11)
        except confluent_kafka.KafkaException as exc:
            parts.append(f"group {group!r} ({err.name()}; not described: {exc})")
            continue
        members = [
            f"{m.client_id} at {m.host} (member {m.member_id}, assigned "
            f"{sorted(f'{tp.topic}-{tp.partition}' for tp in m.assignment.topic_partitions)})"
            for m in desc.members
        ]
        state = getattr(desc.state, "name", desc.state)
        parts.append(
            f"group {group!r} ({err.name()}, {state}): "
            + ("; ".join(members) if members else "no members")
        )
    return "; ".join(parts)


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
