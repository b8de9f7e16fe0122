"""Who owns a log directory: real `connect standalone` and `connect distributed`
processes on one log. A standalone worker owns its directory, so a second worker on it
is refused at start (naming the running one) instead of doubling every record; a
worker killed with SIGKILL does not block the next start."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import STRING, WorkerProcess, connector_file, free_port
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def _lines(n: int, start: int = 0) -> bytes:
    return "".join(f"line {i:05d}\n" for i in range(start, n)).encode()


def _pipeline(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
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
    return src, out, files


def _output_is(out: Path, expected: bytes) -> bool:
    return out.exists() and out.read_bytes() == expected


def _refusal(worker: WorkerProcess) -> str:
    """The one error line of a worker that must exit at start (bounded wait)."""
    try:
        code = worker.proc.wait(60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the second worker was not refused:\n{worker.stderr}") from None
    err = worker.stderr
    assert code != 0, err
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    return errors[0]


@pytest.mark.parametrize("port", ["same", "another"])
def test_a_second_standalone_worker_on_one_log_dir_is_refused(
    tmp_path, start_worker, port
) -> None:
    """The same command run twice (same port), or a copy of the config with only the
    port changed: either way the log directory is the first worker's."""
    src, out, files = _pipeline(tmp_path)
    src.write_bytes(_lines(100))
    first = start_worker(files)
    wait_until(lambda: _output_is(out, _lines(100)), what="first output")

    other = {"listeners": f"http://127.0.0.1:{free_port()}"} if port == "another" else {}
    second = start_worker(files, config=other, ready=False)
    line = _refusal(second)
    assert str((tmp_path / "log").resolve()) in line
    assert f"pid {first.proc.pid}" in line and first.url in line

    # The first worker runs on alone: every new line once, statuses name it.
    with open(src, "ab") as f:
        f.write(_lines(200, 100))
    wait_until(lambda: out.stat().st_size >= len(_lines(200)), what="the new lines")
    assert out.read_bytes() == _lines(200)
    for name in ("file-source", "file-sink"):
        status = first.wait_state(name, "RUNNING")
        owners = {status["connector"]["worker_id"]} | {t["worker_id"] for t in status["tasks"]}
        assert owners == {f"127.0.0.1:{first.port}"}
    assert first.stop() == 0


def test_a_worker_killed_with_sigkill_does_not_block_the_next_start(
    tmp_path, start_worker
) -> None:
    src, out, files = _pipeline(tmp_path)
    src.write_bytes(_lines(100))
    first = start_worker(files)
    wait_until(lambda: _output_is(out, _lines(100)), what="first output")
    first.kill()
    # A stale info file is left behind; the kernel released the lock.
    assert list((tmp_path / "log" / ".workers").glob("*.json"))
    again = start_worker(files)  # same port: the same worker, restarted
    with open(src, "ab") as f:
        f.write(_lines(150, 100))
    wanted = set(_lines(150).splitlines())
    wait_until(lambda: wanted <= set(out.read_bytes().splitlines()), what="the new lines")
    assert again.stop() == 0
    assert not list((tmp_path / "log" / ".workers").glob("*.json"))  # a clean stop tidies


def _distributed(tmp_path: Path, port: int) -> WorkerProcess:
    config = {
        "log.dir": str(tmp_path / "log"),
        "listeners": f"http://127.0.0.1:{port}",
        "group.id": "owners",
        "key.converter": STRING,
        "value.converter": STRING,
        "task.isolation": "thread",
        "session.timeout.ms": "3000",
        "heartbeat.interval.ms": "300",
    }
    return WorkerProcess(tmp_path, config, [], mode="distributed")


def test_standalone_and_distributed_workers_never_share_a_log_dir(
    tmp_path, start_worker
) -> None:
    """Distributed workers share a directory with each other, never with a standalone
    worker (which would run their connectors a second time), in either order."""
    standalone = start_worker()
    intruder = _distributed(tmp_path, free_port())
    line = _refusal(intruder)
    assert f"standalone worker pid {standalone.proc.pid} at {standalone.url}" in line
    assert standalone.stop() == 0

    cluster: list[WorkerProcess] = []
    try:  # every worker started is ended, even when a later one fails to get ready
        for _ in range(2):
            cluster.append(_distributed(tmp_path, free_port()))
            cluster[-1].wait_ready()  # a cluster shares its log
        late = start_worker(ready=False)
        line = _refusal(late)
        for worker in cluster:
            assert f"distributed worker pid {worker.proc.pid} at {worker.url}" in line
    finally:
        for worker in cluster:
            if worker.proc.poll() is None:
                worker.kill()
