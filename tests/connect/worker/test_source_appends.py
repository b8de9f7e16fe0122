"""A source task's appends wait for a Kafka broker without a limit, as Kafka Connect's
source producers do (delivery.timeout.ms and max.block.ms at their maximum), unless the
worker's `producer.` or the connector's `producer.override.` keys set one; the task's
stop ends the wait (connect.worker.source_appends). The real broker's outage, with a
worker process, is tests/integration/test_kafka_worker.py."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from connect.api import ConfigError
from connect.herder.standalone import StandaloneHerder
from connect.storage import State
from connect.worker.config import WORKER_CONFIG
from connect.worker.source_appends import (
    source_append,
    source_delivery_timeout_ms,
    stop_ends_append,
)
from log import FileLog, LogUnavailableError
from log.kafka import KafkaLog
from tests.kafka import MockKafkaCluster
from tests.waiting import wait_until

CONV = "tests.connect.plugins_for_tests.Utf8Converter"


def test_the_limit_is_the_connectors_then_the_workers_else_none() -> None:
    assert source_delivery_timeout_ms({}, {}) == 0  # Kafka Connect's: no limit
    worker = {"producer.delivery.timeout.ms": "300000"}
    assert source_delivery_timeout_ms(worker, {}) == 300_000
    override = {"producer.override.delivery.timeout.ms": "60000"}
    assert source_delivery_timeout_ms(worker, override) == 60_000
    alias = {"producer.override.message.timeout.ms": "45000"}  # librdkafka's name
    assert source_delivery_timeout_ms(worker, alias) == 45_000
    # The client config of every KafkaLog client is not the source producers' (as
    # Kafka Connect's worker-level keys are not): it bounds the runtime's own writes.
    assert source_delivery_timeout_ms({"kafka.delivery.timeout.ms": "1000"}, {}) == 0
    for bad in ("soon", "-1"):
        with pytest.raises(ConfigError, match=r"producer\.override\.delivery\.timeout\.ms"):
            source_delivery_timeout_ms({}, {"producer.override.delivery.timeout.ms": bad})


def test_a_file_log_keeps_its_plain_append(tmp_path: Path) -> None:
    with FileLog(tmp_path / "log") as log:
        assert source_append(log, 0, threading.Event()) == log.append


def test_only_a_stop_makes_a_log_unavailable_error_the_end_of_the_sends() -> None:
    stop = threading.Event()
    with pytest.raises(LogUnavailableError), stop_ends_append(stop):
        raise LogUnavailableError("away")  # not stopping: the task's failure, as before
    stop.set()
    with stop_ends_append(stop):
        raise LogUnavailableError("away")
    with pytest.raises(ValueError), stop_ends_append(stop):
        raise ValueError("anything else")


def test_a_source_task_waits_out_the_delivery_timeout_and_its_stop_ends_the_wait(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The cluster goes away while lines keep coming: an append of the log itself fails
    after the delivery timeout (1 s here), and meanwhile the task's own append of the
    new lines is still waiting and the task RUNNING (it failed with _MSG_TIMED_OUT
    after that timeout before); a stop ends the wait and the task stops cleanly and
    soon."""
    caplog.set_level(logging.INFO)
    cluster = MockKafkaCluster()
    log = KafkaLog(cluster.bootstrap, timeout_s=1.0, client_config={"delivery.timeout.ms": 1000})
    src = tmp_path / "in.txt"
    src.write_text("".join(f"line {i}\n" for i in range(10)))
    raw = {
        "log.dir": str(tmp_path / "log"),
        "key.converter": CONV,
        "value.converter": CONV,
        "header.converter": CONV,
        "task.isolation": "thread",
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        "offset.flush.interval.ms": "60000",
    }
    herder = StandaloneHerder({**raw, **WORKER_CONFIG.parse(raw)}, log=log, worker_id="w1")
    herder.start()
    try:
        herder.put_connector_config(
            "src",
            {"connector.class": "FileStreamSource", "file": str(src), "topic": "lines"},
            allow_replace=False,
        )
        task = wait_until(lambda: herder.worker.tasks.get(("src", 0)), 30, "the task")
        wait_until(lambda: task.records_written == 10, 30, "the first lines in the topic")
        cluster.stop()
        with src.open("a") as f:
            f.write("".join(f"line {i}\n" for i in range(10, 15)))
        wait_until(lambda: task.records_polled == 15, 30, "the new lines polled")
        with pytest.raises(LogUnavailableError):  # the log's own appends give up
            log.append("lines", 0, [b"not a line"])
        assert task.state is State.RUNNING
        assert task.records_written == 10  # its append still waits for a broker
        assert "unrecoverable" not in caplog.text
        started = time.monotonic()
        herder.stop()
        assert time.monotonic() - started < 5
        assert task.stopped.is_set()
        assert "unrecoverable" not in caplog.text
        assert task.state is not State.FAILED
    finally:
        herder.stop()
        log.close()
        cluster.stop()
