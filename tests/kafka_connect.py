"""A real Apache Kafka Connect worker for tests (a pytest plugin), started by
`scripts/kafka-connect` on the session's real broker.

Kafka Connect is the reference Tributary's REST API and change events are compared
with (tests/conformance/test_differential_*.py). `kafka_connect` (session) is ONE
distributed worker for the whole session, started ahead of the first test that asks
(tests/prestart.py; a start costs about 5 s), with Kafka Connect's file and JSON
plugins and Debezium's PostgreSQL, MySQL and MariaDB connectors, and stopped at the
end. It runs on a broker of its own (`peer_kafka_broker`): the other broker tests
empty `kafka_broker` of every topic and group between tests and assert what a fresh
cluster lists, neither of which a running Kafka Connect, with its internal topics, may
disturb or be disturbed by. A worker that cannot start FAILS the tests that asked for
it, with the script's one-line reason.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.kafka_broker import KafkaBroker, free_port, session_broker, start_broker
from tests.prestart import Prestarted, register

__all__ = ["KafkaConnect", "kafka_connect", "peer_kafka_broker"]

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "kafka-connect"


class KafkaConnect:
    """One worker run by `scripts/kafka-connect` in `directory`; `rest` is its URL."""

    def __init__(self, directory: Path, broker: KafkaBroker) -> None:
        self.directory = directory
        self.broker = broker
        self.port = free_port()
        self.rest = f"http://127.0.0.1:{self.port}"
        # A connection per request: a reused idle connection the server closes at the
        # moment a request goes out fails it ("Server disconnected without sending a
        # response"), a race of the transport, not an answer of the worker's.
        self.client = httpx.Client(
            base_url=self.rest, timeout=60.0, limits=httpx.Limits(max_keepalive_connections=0)
        )

    def _run(self, *args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(SCRIPT), *args, "--dir", str(self.directory)],
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )

    def start(self) -> None:
        done = self._run(
            "start", "--bootstrap", self.broker.bootstrap, "--port", str(self.port),
            "--heap", "512m",
            # A rebalance when a connector comes or goes: no 3 s wait for a departed
            # member (there is only this one), offsets flushed often enough for a test.
            "--config", "scheduled.rebalance.max.delay.ms=0",
            "--config", "offset.flush.interval.ms=1000",
            timeout_s=300,
        )
        if done.returncode != 0:
            pytest.fail(
                f"Kafka Connect did not start: {done.stderr.strip() or done.stdout.strip()}",
                pytrace=False,
            )
        assert f"rest={self.rest}" in done.stdout

    def stop(self) -> None:
        self.client.close()
        done = self._run("stop", timeout_s=60)
        assert done.returncode == 0, done.stderr

    def request(self, method: str, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        return self.client.request(method, path, json=body, **kw)

    def clear(self, timeout_s: float = 30.0) -> None:
        """Delete every connector (a test's leftovers) and wait until none is listed."""
        for name in self.client.get("/connectors").json():
            self.client.delete(f"/connectors/{name}")
        deadline = time.monotonic() + timeout_s
        while self.client.get("/connectors").json():
            if time.monotonic() > deadline:
                raise TimeoutError("Kafka Connect still lists connectors after deleting them")
            time.sleep(0.1)


@pytest.fixture(scope="session")
def peer_kafka_broker(
    tmp_path_factory: pytest.TempPathFactory, prestarted: Prestarted
) -> Iterator[KafkaBroker]:
    """The Kafka Connect peer's own broker (see the module docstring)."""
    yield from session_broker(tmp_path_factory, "peer_kafka_broker", prestarted)


def start_kafka_connect(
    tmp_path_factory: pytest.TempPathFactory, broker: KafkaBroker
) -> KafkaConnect:
    worker = KafkaConnect(tmp_path_factory.mktemp("kafka-connect") / "worker", broker)
    worker.start()
    return worker


@pytest.fixture(scope="session")
def kafka_connect(
    tmp_path_factory: pytest.TempPathFactory,
    peer_kafka_broker: KafkaBroker,
    prestarted: Prestarted,
) -> Iterator[KafkaConnect]:
    worker = prestarted.take(
        "kafka_connect", lambda: start_kafka_connect(tmp_path_factory, peer_kafka_broker)
    )
    try:
        yield worker
    finally:
        worker.stop()


register(
    "peer_kafka_broker",
    lambda factory: start_broker(factory, "peer_kafka_broker"),
    KafkaBroker.stop,
)
register("kafka_connect", start_kafka_connect, KafkaConnect.stop, needs=["peer_kafka_broker"])
