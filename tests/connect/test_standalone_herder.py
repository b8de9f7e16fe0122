"""The standalone herder and worker in-process, on a real log and real files."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connect.api import AlreadyExistsError, IllegalWorkerStateError, NotFoundError
from connect.herder.api import BadRequestError
from connect.herder.standalone import StandaloneHerder
from connect.worker.config import WORKER_CONFIG
from tests.waiting import wait_until

CONV = "tests.connect.plugins_for_tests.Utf8Converter"


def worker_config(log_dir: Path, **extra: str) -> dict:
    raw = {
        "log.dir": str(log_dir),
        "key.converter": CONV,
        "value.converter": CONV,
        "header.converter": CONV,
        "offset.flush.interval.ms": "100",
        **extra,
    }
    return {**raw, **WORKER_CONFIG.parse(raw)}


@pytest.fixture
def start_herder(start_herder: Callable[..., StandaloneHerder]) -> Callable[[], StandaloneHerder]:
    """The shared factory, with the test converters."""
    return functools.partial(
        start_herder, {"key.converter": CONV, "value.converter": CONV, "header.converter": CONV}
    )


def _lines(n: int, start: int = 0) -> str:
    return "".join(f"line {i} é\n" for i in range(start, start + n))


def test_file_to_file_pipeline_survives_a_clean_restart(start_herder, tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text(_lines(3000))
    herder = start_herder()
    created, info = herder.put_connector_config(
        "src",
        {"connector.class": "FileStreamSource", "file": str(src), "topic": "lines"},
        allow_replace=False,
    )
    assert created and info.type == "source" and info.tasks == [0]
    herder.put_connector_config(
        "sink",
        {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(dst),
            "topics": "lines",
        },
        allow_replace=False,
    )
    wait_until(lambda: dst.exists() and dst.read_text().count("\n") == 3000)
    status = herder.connector_status("src")
    assert status.state == "RUNNING" and [t.state for t in status.tasks] == ["RUNNING"]
    herder.stop()
    with src.open("a") as f:
        f.write(_lines(2000, 3000))
    again = start_herder()
    wait_until(lambda: dst.read_text().count("\n") == 5000)
    time.sleep(0.3)  # nothing more may arrive: a clean restart repeats nothing
    assert dst.read_text() == src.read_text()
    expected_source = [
        {"partition": {"filename": str(src)}, "offset": {"position": src.stat().st_size}}
    ]
    wait_until(lambda: again.connector_offsets("src") == expected_source)
    expected_sink = [
        {
            "partition": {"kafka_topic": "lines", "kafka_partition": 0},
            "offset": {"kafka_offset": 5000},
        }
    ]
    wait_until(lambda: again.connector_offsets("sink") == expected_sink)
    assert again.connector_topics("src") == ["lines"]


def test_lifecycle_pause_resume_stop_delete(start_herder, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text(_lines(10))
    herder = start_herder()
    config = {"connector.class": "FileStreamSource", "file": str(src), "topic": "t"}
    herder.put_connector_config("c", config, allow_replace=False)
    with pytest.raises(AlreadyExistsError):
        herder.put_connector_config("c", config, allow_replace=False)
    herder.pause_connector("c")
    wait_until(
        lambda: (
            herder.connector_status("c").state == "PAUSED"
            and herder.connector_status("c").tasks
            and herder.connector_status("c").tasks[0].state == "PAUSED"
        )
    )
    herder.stop()
    again = start_herder()  # the pause survives a restart
    wait_until(
        lambda: (
            again.connector_status("c").tasks
            and again.connector_status("c").tasks[0].state == "PAUSED"
        )
    )
    with pytest.raises(IllegalWorkerStateError, match="STOPPED"):
        again.alter_connector_offsets(
            "c", [{"partition": {"filename": str(src)}, "offset": {"position": 0}}]
        )
    again.stop_connector("c")
    wait_until(lambda: again.connector_status("c").state == "STOPPED")
    assert again.connector_status("c").tasks == [] and again.task_configs("c") == []
    msg = again.alter_connector_offsets(
        "c", [{"partition": {"filename": str(src)}, "offset": {"position": 0}}]
    )
    assert "altered successfully" in msg
    assert again.connector_offsets("c")[0]["offset"] == {"position": 0}
    again.resume_connector("c")
    wait_until(
        lambda: (
            again.connector_status("c").state == "RUNNING"
            and again.connector_status("c").tasks
            and again.connector_status("c").tasks[0].state == "RUNNING"
        )
    )
    again.delete_connector("c")
    assert again.connectors() == []
    with pytest.raises(NotFoundError):
        again.connector_status("c")


def test_failed_task_is_visible_and_restartable(start_herder) -> None:
    herder = start_herder()
    herder.put_connector_config(
        "bad",
        {"connector.class": "tests.connect.plugins_for_tests.FailingSource"},
        allow_replace=False,
    )
    wait_until(
        lambda: (
            herder.connector_status("bad").tasks
            and herder.connector_status("bad").tasks[0].state == "FAILED"
        )
    )
    status = herder.connector_status("bad")
    assert "boom from poll" in status.tasks[0].trace
    assert status.state == "RUNNING"
    planned = herder.restart_connector("bad", include_tasks=True, only_failed=True)
    assert planned is not None and planned.state == "RUNNING"
    assert planned.tasks[0].state == "RESTARTING"
    wait_until(lambda: herder.connector_status("bad").tasks[0].state == "FAILED")
    assert herder.restart_connector("bad") is None  # the plain restart: REST 204


def test_invalid_configs_are_refused_naming_the_key(start_herder, tmp_path: Path) -> None:
    herder = start_herder()
    with pytest.raises(BadRequestError, match="topic"):
        herder.put_connector_config(
            "x", {"connector.class": "FileStreamSource"}, allow_replace=False
        )
    with pytest.raises(BadRequestError, match=r"tasks\.max"):
        herder.put_connector_config(
            "x",
            {"connector.class": "FileStreamSource", "topic": "t", "tasks.max": "zero"},
            allow_replace=False,
        )
    with pytest.raises(BadRequestError, match=r"could not be found|Failed to find"):
        herder.put_connector_config("x", {"connector.class": "no.Such"}, allow_replace=False)
    with pytest.raises(BadRequestError, match="topics"):
        herder.put_connector_config("x", {"connector.class": "FileStreamSink"}, allow_replace=False)
    infos = herder.validate_connector_config(
        {"connector.class": "FileStreamSink", "topics": "a", "topics.regex": "b.*"}
    )
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
    assert infos["error_count"] >= 2 and errors["topics.regex"]
    assert herder.connectors() == []


def test_source_topics_are_created_per_topic_creation_groups(start_herder, tmp_path: Path) -> None:
    herder = start_herder()
    cases = {
        # connector: (topic, extra config, expected partitions, expected cleanup policy)
        "hot": ("hot-lines", {}, 5, "compact"),
        "cold": ("cold-lines", {}, 3, "delete"),
        "plain": ("plain-lines", {"topic.creation.default.partitions": None}, 1, "delete"),
    }
    for name, (topic, extra, _partitions, _policy) in cases.items():
        src = tmp_path / f"{name}.txt"
        src.write_text(_lines(5))
        config = {
            "connector.class": "FileStreamSource",
            "file": str(src),
            "topic": topic,
            "topic.creation.default.partitions": "3",
            "topic.creation.default.replication.factor": "-1",
            "topic.creation.groups": "hot",
            "topic.creation.hot.include": "hot-.*",
            "topic.creation.hot.partitions": "5",
            "topic.creation.hot.cleanup.policy": "compact",
            **extra,
        }
        herder.put_connector_config(
            name, {k: v for k, v in config.items() if v is not None}, allow_replace=False
        )
    log = herder.log
    for name, (topic, _extra, partitions, policy) in cases.items():
        wait_until(lambda topic=topic: topic in log.list_topics())
        assert log.partition_count(topic) == partitions, name
        assert log.topic_config(topic).cleanup_policy == policy, name
        wait_until(lambda name=name, topic=topic: herder.connector_topics(name) == [topic])


def test_validation_checks_a_transforms_predicate_and_negate(start_herder) -> None:
    herder = start_herder()
    base = {
        "connector.class": "FileStreamSource",
        "name": "v",
        "topic": "t",
        "transforms": "f",
        "transforms.f.type": "org.apache.kafka.connect.transforms.Filter",
        "predicates": "isT",
        "predicates.isT.type": "TopicNameMatches",
        "predicates.isT.pattern": "t.*",
    }
    good = herder.validate_connector_config({**base, "transforms.f.predicate": "isT"})
    assert good["error_count"] == 0
    bad = herder.validate_connector_config(
        {**base, "transforms.f.predicate": "nope", "transforms.f.negate": "maybe"}
    )
    errors = {c["value"]["name"]: c["value"]["errors"] for c in bad["configs"]}
    assert bad["error_count"] == 2
    assert "nope" in errors["transforms.f.predicate"][0]
    assert errors["transforms.f.negate"] == ["Expected value to be either true or false"]


def test_password_values_are_never_echoed_or_logged(start_herder, caplog) -> None:
    caplog.set_level("DEBUG")
    herder = start_herder()
    secret = "s3cr3t-value-1234"
    config = {
        "connector.class": "tests.connect.plugins_for_tests.SecretSource",
        "connection.password": secret,
    }
    herder.put_connector_config("sec", config, allow_replace=False)
    wait_until(lambda: herder.task_configs("sec"))
    assert herder.connector_config("sec")["connection.password"] == "[hidden]"
    assert herder.connector_info("sec").config["connection.password"] == "[hidden]"
    assert herder.task_configs("sec")[0].config["connection.password"] == "[hidden]"
    infos = herder.validate_connector_config({**config, "name": "sec"})
    shown = {c["value"]["name"]: c["value"]["value"] for c in infos["configs"]}
    assert shown["connection.password"] == "[hidden]"
    # A config read back (masked) and PUT again keeps the stored secret.
    again = {**herder.connector_config("sec"), "topic": "other"}
    herder.put_connector_config("sec", again, allow_replace=True)
    stored = herder.configs.snapshot().connectors["sec"]
    assert stored["connection.password"] == secret and stored["topic"] == "other"
    # Placeholders are not secrets: they stay visible.
    herder.patch_connector_config("sec", {"connection.password": "${env:DB_PASSWORD}"})
    assert herder.connector_config("sec")["connection.password"] == "${env:DB_PASSWORD}"
    assert secret not in caplog.text


@pytest.mark.parametrize("tolerance", ["all", "none"])
def test_errant_records_reach_the_dead_letter_topic_and_tolerance_decides(
    start_herder, tolerance: str
) -> None:
    """As Kafka's ErrantRecordReporter: a reported record is dead-lettered; with
    errors.tolerance=none the task then fails, with all it goes on."""
    from tests.connect.plugins_for_tests import ListSink

    ListSink.RECEIVED.clear()
    ListSink.FAIL_ON = {"b"}
    try:
        herder = start_herder(**{"task.isolation": "thread"})
        herder.log.create_topic("in", 1)
        herder.log.append("in", 0, [b"a", b"b", b"c"])
        herder.put_connector_config(
            "sink",
            {
                "connector.class": "tests.connect.plugins_for_tests.ListSink",
                "topics": "in",
                "errors.tolerance": tolerance,
                "errors.deadletterqueue.topic.name": "dlq",
            },
            allow_replace=False,
        )
        wait_until(lambda: "dlq" in herder.log.list_topics() and herder.log.latest_offset("dlq", 0))
        assert [r.value for r in herder.log.read("dlq", 0, 0)] == [b"b"]
        if tolerance == "all":
            wait_until(lambda: [r.value for r in ListSink.RECEIVED] == ["a", "c"])
            assert herder.connector_status("sink").tasks[0].state == "RUNNING"
        else:
            wait_until(lambda: herder.connector_status("sink").tasks[0].state == "FAILED")
            trace = herder.connector_status("sink").tasks[0].trace or ""
            assert "Tolerance exceeded" in trace and "in-0@1" in trace
            assert [r.value for r in ListSink.RECEIVED] == ["a"]
    finally:
        ListSink.FAIL_ON = set()


def test_a_task_process_dying_before_its_first_status_is_failed(start_herder) -> None:
    herder = start_herder(**{"task.isolation": "process"})
    herder.put_connector_config(
        "exits",
        {"connector.class": "tests.connect.plugins_for_tests.ExitingSource"},
        allow_replace=False,
    )
    wait_until(lambda: [t.state for t in herder.connector_status("exits").tasks] == ["FAILED"])
    trace = herder.connector_status("exits").tasks[0].trace or ""
    assert "exited unexpectedly (exit code 3)" in trace


def test_a_herder_on_kafka_prepares_its_log_before_it_replays(
    tmp_path: Path, make_kafka_log: Callable[..., Any]
) -> None:
    """connect.herder.startup: by the time the stores replay, the log holds the one
    producer the first status write will use (its idempotence handshake ran beside
    the replays), and the three internal topics were made, side by side on threads of
    their own (not one after another in each store's start)."""
    log = make_kafka_log()
    # librdkafka's mock cluster has no admin API: its topics are auto-created with 4
    # partitions.
    partitions = {f"{s}.storage.partitions": "4" for s in ("offset", "status")}
    config = worker_config(tmp_path / "unused", **partitions)
    herder = StandaloneHerder(config, log=log, worker_id="w1")
    at_replay: list[tuple[int, set[str]]] = []
    made_on: dict[str, str] = {}
    replay, create = herder.configs.start, log.create_topic

    def replay_and_look() -> None:
        at_replay.append((len(log._writer._producers), set(log.list_topics())))
        replay()

    def create_and_note(name: str, *args: Any, **kwargs: Any) -> Any:
        made_on.setdefault(name, threading.current_thread().name)
        return create(name, *args, **kwargs)

    herder.configs.start = replay_and_look  # type: ignore[method-assign]
    log.create_topic = create_and_note  # type: ignore[method-assign]
    herder.start()
    try:
        internal = {config[f"{s}.storage.topic"] for s in ("config", "offset", "status")}
        assert at_replay == [(1, internal)]
        assert set(made_on) == internal
        assert all(thread.startswith("internal-topic") for thread in made_on.values())
    finally:
        herder.stop()
