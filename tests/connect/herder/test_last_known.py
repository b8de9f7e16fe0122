"""A standalone herder whose log goes away (Kafka: librdkafka's mock cluster, torn down
under it; a real broker's outage with a worker process is
tests/integration/test_kafka_worker.py): its reads answer the last known state, at
once after the first found the log away; a change fails with LogUnavailableError,
which the REST API answers 503 in one line; the source task's offset commit that
cannot reach the log is a warning, not the task's failure; a stop tries neither the
offsets again nor the UNASSIGNED states, and says what it leaves uncommitted."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from connect.herder.standalone import StandaloneHerder
from connect.rest import RestServer
from connect.storage import State
from connect.worker.config import WORKER_CONFIG
from log import LogUnavailableError
from log.kafka import KafkaLog
from tests.kafka import MockKafkaCluster
from tests.waiting import wait_until

CONV = "tests.connect.plugins_for_tests.Utf8Converter"


@pytest.fixture
def cluster() -> Iterator[MockKafkaCluster]:
    cluster = MockKafkaCluster()
    yield cluster
    cluster.stop()


def _herder(tmp_path: Path, log: KafkaLog) -> StandaloneHerder:
    raw = {
        "log.dir": str(tmp_path / "log"),
        "key.converter": CONV,
        "value.converter": CONV,
        "header.converter": CONV,
        "task.isolation": "thread",
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        # The source's first offset commit comes after the cluster is gone.
        "offset.flush.interval.ms": "3000",
    }
    return StandaloneHerder({**raw, **WORKER_CONFIG.parse(raw)}, log=log, worker_id="w1")


def test_a_herder_whose_log_went_away_answers_reads_and_refuses_changes(
    tmp_path: Path, cluster: MockKafkaCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    src = tmp_path / "in.txt"
    src.write_text("".join(f"line {i}\n" for i in range(10)))
    # Requests and deliveries give up after 1 s (Kafka's 10 s and 120 s, shortened).
    log = KafkaLog(cluster.bootstrap, timeout_s=1.0, client_config={"delivery.timeout.ms": 1000})
    herder = _herder(tmp_path, log)
    herder.start()
    server = RestServer(herder, host="127.0.0.1", port=0)
    server.start()
    client = httpx.Client(base_url=server.url, timeout=30)
    try:
        herder.put_connector_config(
            "src",
            {"connector.class": "FileStreamSource", "file": str(src), "topic": "lines"},
            allow_replace=False,
        )
        wait_until(
            lambda: getattr(herder.worker.tasks.get(("src", 0)), "records_written", 0) == 10,
            30,
            "the lines in the topic",
        )
        wait_until(lambda: herder.connector_status("src").tasks, 30, "the task's status")
        assert herder.connector_status("src").tasks[0].state == "RUNNING"
        cluster.stop()

        # The first read finds the log away (its request timeout); the next ones do
        # not ask it: the last known state, at once.
        assert herder.connector_status("src").tasks[0].state == "RUNNING"
        assert herder.known.away
        started = time.monotonic()
        assert herder.connectors() == ["src"]
        assert herder.connector_status("src").state == "RUNNING"
        assert herder.task_status("src", 0).state == "RUNNING"
        assert herder.connector_info("src").tasks == [0]
        assert time.monotonic() - started < 0.5
        reply = client.get("/connectors", params={"expand": "status"})
        assert reply.status_code == 200
        assert reply.json()["src"]["status"]["tasks"][0]["state"] == "RUNNING"
        assert client.get("/ops/tasks").json()["tasks"][0]["state"] == "RUNNING"

        # Changes ask the log itself: refused, 503 over HTTP, in one line.
        with pytest.raises(LogUnavailableError):
            herder.pause_connector("src")
        reply = client.post(
            "/connectors",
            json={"name": "other", "config": {"connector.class": "FileStreamSource"}},
        )
        assert reply.status_code == 503, reply.text
        body = reply.json()
        assert body["error_code"] == 503
        assert "the log cannot be reached" in body["message"]
        assert "\n" not in body["message"]

        # The source's offset commit meets the outage: a warning, the task runs on.
        wait_until(
            lambda: "could not commit the offsets of 1 source partition" in caplog.text,
            30,
            "the commit's warning",
        )
        assert herder.worker.tasks[("src", 0)].state is State.RUNNING
        started = time.monotonic()
        client.close()
        server.stop()
        herder.stop()
        assert time.monotonic() - started < 5  # neither the offsets nor the states tried
        assert "src-0: stopping with the offsets of 1 source partition(s) not committed" in (
            caplog.text
        )
        assert "src-0 is UNASSIGNED; not recorded: the log cannot be reached" in caplog.text
        assert "Traceback" not in caplog.text
    finally:
        client.close()
        server.stop()
        herder.stop()
        log.close()
