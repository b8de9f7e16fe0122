"""A standalone worker end to end: real `connect standalone` processes, real files,
the real log, real HTTP. File source → log → file sink byte for byte across clean
and SIGKILL restarts; pause surviving a restart; failed tasks and their restart;
the dead-letter queue; malformed configs refused with the key named."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from log import FileLog
from tests.conftest import ROOT
from tests.integration.conftest import JSON, connector_file, wait_until

pytestmark = pytest.mark.integration


def _lines(n: int, start: int = 0) -> bytes:
    return "".join(f"line {i:07d} ünïcødé {'x' * (i % 13)}\n" for i in range(start, n)).encode()


def _pipeline(tmp_path: Path, **source: str) -> tuple[Path, Path, list[Path]]:
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    files = [
        connector_file(
            tmp_path,
            "file-source",
            {"connector.class": "FileStreamSource", "file": str(src), "topic": "lines", **source},
        ),
        connector_file(
            tmp_path,
            "file-sink",
            {"connector.class": "FileStreamSink", "file": str(out), "topics": "lines"},
        ),
    ]
    return src, out, files


def _size_at_least(path: Path, size: int) -> bool:
    return path.exists() and path.stat().st_size >= size


def test_file_pipeline_is_byte_for_byte_across_a_clean_restart(tmp_path, start_worker) -> None:
    src, out, files = _pipeline(tmp_path)
    first, second = _lines(200_000), _lines(230_000, 200_000)
    src.write_bytes(first)
    worker = start_worker(files)
    # Stop while the output is still growing (or just complete on a fast machine).
    wait_until(lambda: _size_at_least(out, 1), what="first output")
    assert worker.stop() == 0
    partial = out.read_bytes()
    assert first.startswith(partial)
    with open(src, "ab") as f:
        f.write(second)
    start_worker(files)
    wait_until(lambda: _size_at_least(out, len(first) + len(second)), what="complete output")
    assert out.read_bytes() == first + second  # nothing lost, nothing repeated


def test_sigkill_restart_loses_nothing(tmp_path, start_worker) -> None:
    src, out, files = _pipeline(tmp_path)
    data = _lines(300_000)
    src.write_bytes(data)
    worker = start_worker(files)
    wait_until(lambda: _size_at_least(out, len(data) // 4), what="a quarter of the output")
    worker.kill()
    assert worker.proc.returncode == -signal.SIGKILL
    start_worker(files)
    expected = data.splitlines()
    wanted = set(expected)

    def complete() -> bool:
        return wanted <= set(out.read_bytes().splitlines())

    wait_until(complete, 60, "every input line in the output")
    produced = out.read_bytes()
    assert produced.endswith(b"\n")  # no torn line
    # Duplicates are allowed (at least once); nothing foreign but, at most, the one
    # line the kill cut short in the middle of a write (a SIGKILL can stop a write()
    # at a page boundary), ended by the restarted sink before its first record.
    torn = [line for line in set(produced.splitlines()) - wanted]
    assert len(torn) <= 1, torn[:3]
    assert all(any(w.startswith(t) for w in expected) for t in torn), torn
    lines = [line for line in produced.splitlines() if line not in torn]
    assert set(lines) == wanted
    # Replays (the source from its committed file position, the sink from its
    # committed log offset) only go back: first occurrences keep the input's order.
    assert list(dict.fromkeys(lines)) == expected


def test_sigterm_to_the_process_group_stops_every_task_cleanly(tmp_path, start_worker) -> None:
    """`timeout`, systemd and `kill -- -PGID` signal the worker and its task processes
    at once; every task must still make its final commit, so a restart repeats nothing."""
    src, out, files = _pipeline(tmp_path)
    src.write_bytes(_lines(20_000))
    worker = start_worker(files)
    wait_until(lambda: _size_at_least(out, len(_lines(20_000))), what="the output")
    os.killpg(worker.proc.pid, signal.SIGTERM)
    assert worker.proc.wait(60) == 0
    wait_until(lambda: not worker.task_pids(), what="task processes gone")
    with open(src, "ab") as f:
        f.write(_lines(25_000, 20_000))
    start_worker(files)
    wait_until(lambda: _size_at_least(out, len(_lines(25_000))), what="the rest")
    assert out.read_bytes() == _lines(25_000)


def test_pause_survives_a_restart_and_resume_continues(tmp_path, start_worker) -> None:
    src, out, files = _pipeline(tmp_path)
    src.write_bytes(_lines(1000))
    worker = start_worker(files)
    wait_until(lambda: _size_at_least(out, len(_lines(1000))), what="first output")
    assert worker.request("PUT", "/connectors/file-source/pause")[0] == 202
    worker.wait_state("file-source", "PAUSED")
    assert worker.stop() == 0
    with open(src, "ab") as f:
        f.write(_lines(2000, 1000))
    again = start_worker()  # no connector files: the stored configs and states rule
    again.wait_state("file-source", "PAUSED")
    again.wait_state("file-sink", "RUNNING")
    assert out.read_bytes() == _lines(1000)  # paused: nothing new was read
    assert again.request("PUT", "/connectors/file-source/resume")[0] == 202
    again.wait_state("file-source", "RUNNING")
    wait_until(lambda: _size_at_least(out, len(_lines(2000))), what="output after resume")
    assert out.read_bytes() == _lines(2000)


def _flaky(tmp_path: Path, worker, name: str = "flaky") -> Path:
    flag = tmp_path / "fail.flag"
    flag.touch()
    code, body = worker.request(
        "POST",
        "/connectors",
        {
            "name": name,
            "config": {
                "connector.class": "tests.integration.plugins.FlakySource",
                "topic": "flaky",
                "fail.file": str(flag),
            },
        },
    )
    assert code == 201, body
    return flag


def _task_state(worker, name: str) -> tuple[str, str] | None:
    status = worker.status(name)
    if not status or not status["tasks"]:
        return None
    return status["tasks"][0]["state"], status["tasks"][0].get("trace", "")


def test_a_failed_task_reports_its_trace_and_restarts(tmp_path, start_worker) -> None:
    worker = start_worker()
    flag = _flaky(tmp_path, worker)
    state = wait_until(
        lambda: (s := _task_state(worker, "flaky")) and s[0] == "FAILED" and s, what="FAILED"
    )
    assert "failing while" in state[1] and "RuntimeError" in state[1]
    # Never restarted silently.
    assert _task_state(worker, "flaky")[0] == "FAILED"
    flag.unlink()
    assert worker.request("POST", "/connectors/flaky/tasks/0/restart")[0] == 204
    worker.wait_state("flaky", "RUNNING")
    with FileLog(tmp_path / "log", background=False) as log:
        wait_until(lambda: log.latest_offset("flaky", 0) >= 100, what="100 records")


def test_a_killed_task_process_fails_and_restarts(tmp_path, start_worker) -> None:
    src, out, files = _pipeline(tmp_path)
    src.write_bytes(_lines(5000))
    worker = start_worker(files)
    worker.wait_state("file-sink", "RUNNING")
    wait_until(lambda: len(worker.task_pids()) >= 2, what="two task processes")
    before = set(worker.task_pids())
    sink_pid = wait_until(lambda: _pid_with_open(worker.task_pids(), out), what="the sink")
    os.kill(sink_pid, signal.SIGKILL)
    state = wait_until(
        lambda: (s := _task_state(worker, "file-sink")) and s[0] == "FAILED" and s,
        what="FAILED",
    )
    assert "exited unexpectedly" in state[1] and "-9" in state[1]
    code, body = worker.request(
        "POST", "/connectors/file-sink/restart?includeTasks=true&onlyFailed=true"
    )
    assert code == 202, body
    worker.wait_state("file-sink", "RUNNING")
    assert set(worker.task_pids()) != before
    with open(src, "ab") as f:
        f.write(_lines(6000, 5000))
    wanted = set(_lines(6000).splitlines())
    # At least once: the replay after the kill may repeat lines, so wait for the set.
    wait_until(lambda: wanted <= set(out.read_bytes().splitlines()), what="every line")
    assert set(out.read_bytes().splitlines()) == wanted


def _pid_with_open(pids: list[int], path: Path) -> int | None:
    """The task process that has `path` open (the sink's output file)."""
    for pid in pids:
        try:
            if any(f.path == str(path) for f in psutil.Process(pid).open_files()):
                return pid
        except psutil.Error:
            continue
    return None


def _dlq_pipeline(tmp_path: Path, tolerance: str) -> tuple[Path, Path, list[Path]]:
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    good = [json.dumps(f"good {i}") for i in range(10)]
    bad = ["{not json", "[1, 2", '{"a": }']
    mixed = [good[0], good[1], bad[0], good[2], bad[1], *good[3:8], bad[2], *good[8:]]
    src.write_text("".join(line + "\n" for line in mixed))
    sink = {
        "connector.class": "FileStreamSink",
        "file": str(out),
        "topics": "mixed",
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        "errors.tolerance": tolerance,
        "errors.log.enable": "true",
    }
    if tolerance == "all":
        sink["errors.deadletterqueue.topic.name"] = "dlq"
        sink["errors.deadletterqueue.context.headers.enable"] = "true"
    files = [
        connector_file(
            tmp_path,
            "src",
            {"connector.class": "FileStreamSource", "file": str(src), "topic": "mixed"},
        ),
        connector_file(tmp_path, "sink", sink),
    ]
    return out, src, files


def test_dead_letter_queue_with_tolerance_all(tmp_path, start_worker) -> None:
    out, _src, files = _dlq_pipeline(tmp_path, "all")
    worker = start_worker(files)
    expected = "".join(f"good {i}\n" for i in range(10))
    wait_until(lambda: _size_at_least(out, len(expected)), what="the good lines")
    assert out.read_text() == expected
    worker.wait_state("sink", "RUNNING")
    with FileLog(tmp_path / "log", background=False) as log:
        wait_until(lambda: "dlq" in log.list_topics() and log.latest_offset("dlq", 0) == 3)
        dead = log.read("dlq", 0, 0, max_records=10)
    assert [r.value for r in dead] == [b"{not json", b"[1, 2", b'{"a": }']
    headers = dict(dead[0].headers)
    assert headers["__connect.errors.topic"] == b"mixed"
    assert headers["__connect.errors.partition"] == b"0"
    assert headers["__connect.errors.offset"] == b"2"
    assert headers["__connect.errors.connector.name"] == b"sink"
    assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert headers["__connect.errors.exception.class.name"] == (
        b"org.apache.kafka.connect.errors.DataException"  # as Kafka's JsonConverter throws
    )
    assert b"mixed" in headers["__connect.errors.exception.message"]


def test_tolerance_none_fails_the_task_at_the_first_bad_record(tmp_path, start_worker) -> None:
    out, _src, files = _dlq_pipeline(tmp_path, "none")
    worker = start_worker(files)
    state = wait_until(
        lambda: (s := _task_state(worker, "sink")) and s[0] == "FAILED" and s, what="FAILED"
    )
    assert "Tolerance exceeded" in state[1] or "DataError" in state[1]
    # Only what came before the bad record was written (the batch was not half-put).
    assert out.read_text() in ("", "good 0\ngood 1\n")


def _run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "connect.cli.main", *args],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("offset.flush.interval.ms", "soon"),
        ("task.isolation", "fiber"),
        ("listeners", "ftp://127.0.0.1:1"),
    ],
)
def test_a_malformed_worker_config_is_refused_naming_the_key(tmp_path, key, value) -> None:
    config = {"log.dir": str(tmp_path / "log"), key: value}
    (tmp_path / "w.json").write_text(json.dumps(config))
    result = _run_cli("standalone", str(tmp_path / "w.json"), cwd=tmp_path)
    assert result.returncode != 0
    assert key in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_malformed_connector_file_is_refused_naming_the_key(tmp_path) -> None:
    (tmp_path / "w.json").write_text(
        json.dumps({"log.dir": str(tmp_path / "log"), "listeners": "http://127.0.0.1:0"})
    )
    bad = connector_file(
        tmp_path,
        "bad",
        {"connector.class": "FileStreamSource", "topic": "t", "batch.size": "many"},
    )
    result = _run_cli("standalone", str(tmp_path / "w.json"), str(bad), cwd=tmp_path)
    assert result.returncode != 0
    assert "batch.size" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_malformed_connector_over_rest_is_refused_naming_the_key(start_worker) -> None:
    worker = start_worker()
    code, body = worker.request(
        "POST",
        "/connectors",
        {"name": "bad", "config": {"connector.class": "FileStreamSource", "batch.size": "-"}},
    )
    assert code == 400
    assert "batch.size" in body["message"] and body["error_code"] == 400
    code, body = worker.request(
        "POST", "/connectors", {"name": "bad", "config": {"connector.class": "NoSuchThing"}}
    )
    assert code == 400 and "NoSuchThing" in body["message"]
    assert worker.request("GET", "/connectors")[1] == []


def test_transforms_and_predicates_run_in_the_worker(tmp_path, start_worker) -> None:
    keep, drop, out = tmp_path / "keep.txt", tmp_path / "drop.txt", tmp_path / "out.txt"
    keep.write_bytes(_lines(300))
    drop.write_bytes(b"must not appear\n" * 50)
    files = [
        connector_file(
            tmp_path,
            "keep-src",
            {
                "connector.class": "FileStreamSource",
                "file": str(keep),
                "topic": "keep-raw",
                "transforms": "route,tag",
                "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
                "transforms.route.regex": "(.*)-raw",
                "transforms.route.replacement": "$1",
                "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertHeader",
                "transforms.tag.header": "origin",
                "transforms.tag.value.literal": "keep-file",
            },
        ),
        connector_file(
            tmp_path,
            "drop-src",
            {"connector.class": "FileStreamSource", "file": str(drop), "topic": "dropped"},
        ),
        connector_file(
            tmp_path,
            "sink",
            {
                "connector.class": "FileStreamSink",
                "file": str(out),
                "topics": "keep,dropped",
                "transforms": "skip",
                "transforms.skip.type": "org.apache.kafka.connect.transforms.Filter",
                "transforms.skip.predicate": "isDropped",
                "predicates": "isDropped",
                "predicates.isDropped.type": (
                    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"
                ),
                "predicates.isDropped.pattern": "drop.*",
            },
        ),
    ]
    worker = start_worker(files)
    wait_until(lambda: _size_at_least(out, len(_lines(300))), what="the kept lines")
    with FileLog(tmp_path / "log", background=False) as log:
        wait_until(lambda: "dropped" in log.list_topics() and log.latest_offset("dropped", 0))
        assert "keep-raw" not in log.list_topics()
        first = log.read("keep", 0, 0, max_records=1)[0]
    assert dict(first.headers)["origin"] == b"keep-file"
    worker.wait_state("sink", "RUNNING")
    assert out.read_bytes() == _lines(300)  # the Filter dropped every "dropped" record

    def sink_topics() -> list[str]:
        code, body = worker.request("GET", "/connectors/sink/topics")
        assert code == 200
        return sorted(body["sink"]["topics"])

    # the sink consumed (and filtered) the "dropped" records too: the topic is active
    wait_until(lambda: sink_topics() == ["dropped", "keep"], what="both topics active")


def test_topic_tracking_can_be_switched_off(start_worker) -> None:
    worker = start_worker(config={"topic.tracking.enable": "false"})
    code, body = worker.request("GET", "/connectors/nope/topics")
    assert code == 403 and body["message"] == "Topic tracking is disabled."


def test_avro_through_the_embedded_registry(tmp_path, start_worker) -> None:
    """FileStreamSource → AvroConverter (schema.registry.url=embedded) → log →
    AvroConverter → FileStreamSink, in task processes; the worker's registry REST API
    serves the schema the converters registered."""
    from tests.integration.conftest import free_port

    src, out, files = _pipeline(tmp_path)
    avro = {
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": "embedded",
    }
    for path in files:
        spec = json.loads(path.read_text())
        spec["config"].update(avro)
        path.write_text(json.dumps(spec))
    src.write_bytes(_lines(3000))
    registry_port = free_port()
    worker = start_worker(
        files,
        config={
            "schema.registry.enable": "true",
            "schema.registry.listeners": f"http://127.0.0.1:{registry_port}",
        },
    )
    wait_until(lambda: _size_at_least(out, len(_lines(3000))), what="the output")
    assert out.read_bytes() == _lines(3000)
    with FileLog(tmp_path / "log", background=False) as log:
        first = log.read("lines", 0, 0, max_records=1)[0]
    assert first.value[0] == 0 and int.from_bytes(first.value[1:5], "big") == 1  # wire format
    import urllib.request

    base = f"http://127.0.0.1:{registry_port}"
    with urllib.request.urlopen(f"{base}/subjects") as response:
        assert json.loads(response.read()) == ["lines-value"]
    with urllib.request.urlopen(f"{base}/schemas/ids/1") as response:
        assert json.loads(response.read())["schema"] == '"string"'
    worker.wait_state("file-sink", "RUNNING")
