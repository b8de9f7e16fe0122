"""A `connect standalone` worker whose log is a Kafka cluster — librdkafka's mock (owned
by this test process) and a real Apache Kafka broker (tests/kafka_broker.py):
FileStreamSource → topic on Kafka → FileStreamSink, byte for byte, with the sink's
progress kept in Kafka's group offsets, and `GET /` naming the cluster's own id."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from log import TopicPartition
from log.kafka import KafkaLog
from tests.integration.conftest import connector_file
from tests.kafka import MockKafkaCluster
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]
#: The file pipeline's connectors.
NAMES = ("file-source", "file-sink")


def _wait_for_output(out: Path, expected: bytes, worker: Any, what: str) -> None:
    """Wait until `out` holds `expected`'s length; past the deadline, fail naming what
    the file lacks (the line numbers missing, as runs) and the worker's last words: a
    failure here once left nothing to tell a stall from a lost run of records."""
    try:
        wait_until(lambda: out.exists() and out.stat().st_size >= len(expected), what=what)
    except AssertionError as exc:
        have = set(out.read_bytes().splitlines()) if out.exists() else set()
        missing = [n for n, line in enumerate(expected.splitlines()) if line not in have]
        runs: list[list[int]] = []
        for n in missing:
            if runs and runs[-1][1] == n - 1:
                runs[-1][1] = n
            else:
                runs.append([n, n])
        shown = ", ".join(f"{a}-{b}" for a, b in runs[:10])
        raise AssertionError(
            f"{exc}: {len(missing)} lines missing ({shown}); worker stderr tail:\n"
            f"{worker.stderr[-3000:]}"
        ) from None


@pytest.fixture(params=["mock", "broker"])
def kafka(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(bootstrap servers, the cluster id the cluster itself reports): the session's
    mock cluster, or the session's real broker emptied of earlier tests' topics."""
    if request.param == "mock":
        cluster: MockKafkaCluster = request.getfixturevalue("kafka_cluster")
        with KafkaLog(cluster.bootstrap, timeout_s=5) as log:
            return cluster.bootstrap, str(log.cluster.cluster_id)
    broker = request.getfixturevalue("kafka_broker")
    broker.empty()
    return broker.bootstrap, broker.cluster_id


def _lines(count: int, start: int = 0) -> bytes:
    return b"".join(b"line %d with some text\n" % i for i in range(start, start + count))


def test_file_pipeline_through_kafka_is_byte_for_byte(
    tmp_path: Path, start_worker, kafka: tuple[str, str], request: pytest.FixtureRequest
) -> None:
    bootstrap, cluster_id = kafka
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
        "bootstrap.servers": bootstrap,
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
    }
    if "mock" in request.node.callspec.params["kafka"]:
        # The mock coordinator rebalances a group only once a departed member's session
        # timed out (a real one acts on the LeaveGroup at once): the restarted sink's
        # consumer would wait out Kafka's 45 s default. A real broker refuses a session
        # under 6 s (test_a_session_the_broker_refuses_fails_the_sink_task).
        config |= {"consumer.session.timeout.ms": "3000", "consumer.heartbeat.interval.ms": "300"}
    first = _lines(20_000)
    src.write_bytes(first)
    worker = start_worker(files, config)
    # Kafka Connect's GET / names the Kafka cluster the worker runs on.
    assert worker.request("GET", "/")[1]["kafka_cluster_id"] == cluster_id
    _wait_for_output(out, first, worker, "first output")
    assert worker.stop() == 0
    assert out.read_bytes() == first
    # The records went through Kafka, and the sink's position is the group's offset there.
    with KafkaLog(bootstrap, timeout_s=5) as log:
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
    _wait_for_output(out, first + second, worker, "output after the restart")
    assert worker.stop() == 0
    assert out.read_bytes() == first + second


def test_a_session_the_broker_refuses_fails_the_sink_task(
    tmp_path: Path, start_worker, kafka_broker
) -> None:
    """A real broker refuses a consumer session under its group.min.session.timeout.ms
    (6 s). The sink task fails, saying so and naming the key, instead of running for
    ever with no partitions (librdkafka retries the JoinGroup without end)."""
    kafka_broker.empty()
    with KafkaLog(kafka_broker.bootstrap, timeout_s=10) as log:
        log.create_topic("t", 1)  # librdkafka joins a group only for topics that exist
    sink = connector_file(
        tmp_path,
        "file-sink",
        {"connector.class": "FileStreamSink", "file": str(tmp_path / "out"), "topics": "t"},
    )
    config = {"bootstrap.servers": kafka_broker.bootstrap, "consumer.session.timeout.ms": "3000"}
    worker = start_worker([sink], config)

    def failed() -> dict | None:
        tasks = (worker.status("file-sink") or {}).get("tasks") or [{}]
        return tasks[0] if tasks[0].get("state") == "FAILED" else None

    task = wait_until(failed, 60, "the sink task failed")
    assert "INVALID_SESSION_TIMEOUT" in task["trace"]
    assert "consumer.session.timeout.ms" in task["trace"]


def _unique(path: Path) -> bytes:
    """The file's lines with repeats dropped (at-least-once may deliver a line twice
    around the restart; losing one is what this test refuses)."""
    seen: set[bytes] = set()
    kept = []
    for line in path.read_bytes().splitlines(keepends=True):
        if line not in seen:
            seen.add(line)
            kept.append(line)
    return b"".join(kept)


def test_a_broker_outage_of_three_request_timeouts_under_load_fails_no_task_and_loses_nothing(
    tmp_path: Path, start_worker, kafka_broker
) -> None:
    """The broker stops cleanly (its data kept) while a file pipeline runs, stays away
    for 12 s (three times the log's request timeout, shortened to 4 s, past which a
    sink task's read failed and the task with it, and three times the producers'
    delivery timeout, shortened to 4 s too, past which the source task's append of the
    lines written meanwhile failed and the task with it) while lines keep coming, and
    starts again on the same port. Kafka Connect's tasks ride that out: clients retry, a poll
    returns nothing, a source producer has no delivery timeout. So do ours: no task
    fails, the worker runs throughout, and every line reaches the sink, in order.
    (What REST answers during an outage is the next test's.) What the first, shorter
    restart showed: the moment the broker began its shutdown, a sink task's watermarks
    read failed with _UNKNOWN_PARTITION."""
    kafka_broker.empty()
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
    config = {
        "bootstrap.servers": kafka_broker.bootstrap,
        "offset.storage.partitions": "1",
        "consumer.session.timeout.ms": "6000",
        "consumer.heartbeat.interval.ms": "500",
        # The runtime's own writes (offsets, statuses) give up after it; the source
        # task's appends have no limit (connect.worker.source_appends).
        "kafka.delivery.timeout.ms": "4000",
        "kafka.request.timeout.ms": "4000",
    }
    first, second, third = _lines(10_000), _lines(5_000, 10_000), _lines(5_000, 15_000)
    src.write_bytes(first)
    worker = start_worker(files, config)
    _wait_for_output(out, first, worker, "first output")
    kafka_broker.stop(keep=True)
    with src.open("ab") as f:  # written while the broker is away
        f.write(second)
    # The outage: watched for its whole length (the point is that it lasts), ending
    # early only if the worker dies or a task reports the log's error as fatal.
    away_until = time.monotonic() + 12
    while time.monotonic() < away_until:
        assert worker.proc.poll() is None, worker.stderr
        assert "unrecoverable" not in worker.stderr, worker.stderr
        time.sleep(0.5)
    assert "the log cannot be reached" in worker.stderr  # the sink did meet the outage
    kafka_broker.start()
    with src.open("ab") as f:
        f.write(third)
    everything = first + second + third
    wait_until(lambda: everything in _unique(out), 120, "every line after the outage")
    for name in NAMES:
        assert [t["state"] for t in worker.status(name)["tasks"]] == ["RUNNING"], name
    assert "unrecoverable" not in worker.stderr, worker.stderr
    # Once per outage and task (the sink's reads, the source's offset commits).
    assert worker.stderr.count("the log cannot be reached") <= 2, worker.stderr
    assert worker.stop() == 0


def _timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def test_during_a_broker_outage_reads_answer_the_last_known_state_and_changes_503(
    tmp_path: Path, start_worker, kafka_broker
) -> None:
    """While the broker is away (longer than the producers' delivery timeout, shortened to
    5 s, and the log's request timeout, 4 s): the statuses answer 200 with the last
    known states, as Kafka Connect's in-memory view does (they answered 500 once the
    status topic's read timed out); a create answers 503 in Kafka's error shape, one
    line; the source task's offset commit, which cannot reach the log, is a warning and
    waits for the next flush instead of failing the task; and a clean stop is quick,
    exits 0 and says which offsets it leaves uncommitted. A worker started after the
    outage loses no line."""
    kafka_broker.empty()
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
    config = {
        "bootstrap.servers": kafka_broker.bootstrap,
        "offset.storage.partitions": "1",
        "consumer.session.timeout.ms": "6000",
        "consumer.heartbeat.interval.ms": "500",
        "kafka.delivery.timeout.ms": "5000",
        "kafka.request.timeout.ms": "4000",
        # The source's first offset commit comes after the broker is gone.
        "offset.flush.interval.ms": "15000",
        "task.shutdown.graceful.timeout.ms": "5000",  # Kafka Connect's default
    }
    first, second = _lines(2_000), _lines(1_000, 2_000)
    src.write_bytes(first)
    worker = start_worker(files, config)
    _wait_for_output(out, first, worker, "first output")
    kafka_broker.stop(keep=True)
    try:
        # Reads: the last known states. The first read finds the log away (one request
        # timeout of the log's, 4 s here); the next ones answer without asking it.
        for name in NAMES:
            (code, body), took = _timed(
                lambda n=name: worker.request("GET", f"/connectors/{n}/status")
            )
            assert code == 200, body
            assert body["connector"]["state"] == "RUNNING", body
            assert [t["state"] for t in body["tasks"]] == ["RUNNING"], body
            assert took < (10 if name == NAMES[0] else 2), (name, took)
        (code, body), took = _timed(lambda: worker.request("GET", "/connectors?expand=status"))
        assert code == 200 and sorted(body) == sorted(NAMES), body
        assert took < 2, took  # from the last known state, without asking the log
        (code, body), took = _timed(lambda: worker.request("GET", "/ops/tasks"))
        assert code == 200, body
        assert sorted(t["state"] for t in body["tasks"]) == ["RUNNING", "RUNNING"], body
        # A change: 503 in one line.
        create = {
            "name": "another",
            "config": {
                "connector.class": "FileStreamSink",
                "file": str(tmp_path / "o2"),
                "topics": "lines",
            },
        }
        (code, body), took = _timed(lambda: worker.request("POST", "/connectors", create))
        assert code == 503, body
        assert took < 10, took  # the log's request timeout, not its delivery timeout
        assert body["error_code"] == 503
        assert "the log cannot be reached" in body["message"]
        assert "\n" not in body["message"] and "Traceback" not in body["message"]
        # The source's offset commit meets the outage (after the delivery timeout) and
        # the task goes on.
        wait_until(
            lambda: "could not commit the offsets" in worker.stderr, 60, "the commit's warning"
        )
        assert worker.proc.poll() is None, worker.stderr
        status = worker.status("file-source")
        assert status is not None and status["tasks"][0]["state"] == "RUNNING", status
        assert "unrecoverable" not in worker.stderr, worker.stderr
        rc, took = _timed(worker.stop)
        assert rc == 0, worker.stderr
        # 1.6 s here (11-13 s before closing the log stopped waiting for a read in
        # flight and for records no append waits for).
        assert took < 8, (took, worker.stderr)
        assert "file-source-0: stopping with the offsets of 1 source partition" in worker.stderr
    finally:
        kafka_broker.start()
    # What the stop left uncommitted is polled again: nothing is lost.
    with src.open("ab") as f:
        f.write(second)
    worker = start_worker(files, config)
    wait_until(lambda: first + second in _unique(out), 60, "every line after the restart")
    assert worker.stop() == 0
