"""Apache Kafka's own `config/*.properties` run as `connect standalone` and `connect
distributed` with real worker processes, and the file pipeline moves every line once.

The files are copies in tests/data/published/ (repository, path and commit in each
one's header). The substitution, the only change made to them, is `published()`:
- connect-standalone.properties: `offset.storage.file.filename=/tmp/connect.offsets`
  → a file in the test's directory, and a `listeners=` line with a free port (the
  file leaves the REST port at Kafka's default, 8083);
- connect-file-source.properties / connect-file-sink.properties: nothing; their
  relative `test.txt` and `test.sink.txt` are files in the worker's directory;
- connect-distributed.properties: `bootstrap.servers=localhost:9092` → the test's Kafka
  (librdkafka's mock cluster, tests/kafka.py) and a `listeners=` line; and, because
  that mock has no admin API and auto-creates every topic with 4 partitions, the
  file's commented-out `#offset.storage.partitions=25` and `#status.storage.partitions=5`
  are uncommented with 1 (a real broker creates Kafka's 25 and 5).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from connect.properties import decode, parse
from tests.conftest import ROOT
from tests.integration.conftest import WorkerProcess, free_port
from tests.kafka import MockKafkaCluster
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PUBLISHED = Path(__file__).parent.parent / "data" / "published"


def published(name: str, directory: Path, replace: dict[str, str], add: list[str]) -> Path:
    """The published file `name` in `directory`: each `replace` key, a whole line of
    the file, replaced by its value; `add` lines appended."""
    lines = (PUBLISHED / name).read_text().split("\n")
    for old, new in replace.items():
        assert lines.count(old) == 1, f"{old!r} is not one line of {name}"
        lines[lines.index(old)] = new
    path = directory / name
    path.write_text("\n".join([*lines, *add, ""]))
    return path


def _standalone_files(directory: Path, port: int) -> tuple[Path, list[Path]]:
    worker = published(
        "connect-standalone.properties",
        directory,
        {
            "offset.storage.file.filename=/tmp/connect.offsets": (
                f"offset.storage.file.filename={directory / 'connect.offsets'}"
            )
        },
        [f"listeners=http://127.0.0.1:{port}"],
    )
    connectors = [
        published(name, directory, {}, [])
        for name in ("connect-file-source.properties", "connect-file-sink.properties")
    ]
    return worker, connectors


def _lines(start: int, count: int) -> str:
    return "".join(f"line {i}, with é and a \\ backslash\n" for i in range(start, start + count))


def _sink_is(path: Path, expected: str) -> bool:
    return path.exists() and path.read_text(encoding="utf-8") == expected


def test_kafka_standalone_quickstart_files_run_unchanged(tmp_path: Path) -> None:
    """`connect standalone connect-standalone.properties connect-file-source.properties
    connect-file-sink.properties`, as Kafka's quickstart runs it: no broker is asked
    for (the stock bootstrap.servers is noted as unused), the lines arrive once, and a
    restart carries on from the offsets kept in the log beside Kafka's offsets file."""
    port = free_port()
    worker_file, connectors = _standalone_files(tmp_path, port)
    source, sink = tmp_path / "test.txt", tmp_path / "test.sink.txt"
    source.write_text(_lines(0, 200), encoding="utf-8")
    listen = {"listeners": f"http://127.0.0.1:{port}"}

    worker = WorkerProcess(tmp_path, listen, connectors, worker_file=worker_file).wait_ready()
    wait_until(lambda: _sink_is(sink, _lines(0, 200)), 60, "the first 200 lines in the sink")
    assert worker.stop() == 0
    log_dir = tmp_path / "connect.offsets.tributary"
    assert (log_dir / "connect-test" / "0").is_dir()
    assert not (tmp_path / "connect.offsets").exists()  # Kafka's own file is left alone
    assert (
        f"offset.storage.file.filename: a standalone worker keeps its records and source "
        f"offsets in the embedded log at {log_dir}; bootstrap.servers localhost:9092 is "
        "not used (to run on Kafka, remove offset.storage.file.filename)"
    ) in worker.stderr
    assert "isn't a known config" not in worker.stderr
    assert "Traceback" not in worker.stderr

    with source.open("a", encoding="utf-8") as out:
        out.write(_lines(200, 50))
    again = WorkerProcess(tmp_path, listen, connectors, worker_file=worker_file).wait_ready()
    wait_until(lambda: _sink_is(sink, _lines(0, 250)), 60, "the next 50 lines, once")
    assert again.stop() == 0

    # `connect log --worker-config` finds the same log from the same file.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "connect.cli.main",
            "log",
            "topics",
            "--worker-config",
            str(worker_file),
        ],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "connect-test" in done.stdout.split()


def test_kafka_distributed_file_runs_on_kafka(tmp_path: Path) -> None:
    """connect-distributed.properties: a distributed worker on the Kafka cluster its
    bootstrap.servers names; the published source and sink connector files, created
    through the REST API, move the lines through Kafka."""
    kafka = MockKafkaCluster()
    try:
        port = free_port()
        worker_file = published(
            "connect-distributed.properties",
            tmp_path,
            {
                "bootstrap.servers=localhost:9092": f"bootstrap.servers={kafka.bootstrap}",
                "#offset.storage.partitions=25": "offset.storage.partitions=1",
                "#status.storage.partitions=5": "status.storage.partitions=1",
            },
            [f"listeners=http://127.0.0.1:{port}"],
        )
        source, sink = tmp_path / "test.txt", tmp_path / "test.sink.txt"
        source.write_text(_lines(0, 100), encoding="utf-8")
        worker = WorkerProcess(
            tmp_path,
            {"listeners": f"http://127.0.0.1:{port}"},
            [],
            mode="distributed",
            worker_file=worker_file,
        ).wait_ready(60)
        try:
            for name in ("connect-file-source.properties", "connect-file-sink.properties"):
                config = parse(decode((PUBLISHED / name).read_bytes()))
                code, body = worker.request(
                    "POST", "/connectors", {"name": config["name"], "config": config}
                )
                assert code == 201, body
            wait_until(lambda: _sink_is(sink, _lines(0, 100)), 90, "100 lines through Kafka")
            assert worker.stop() == 0
        finally:
            if worker.proc.poll() is None:
                worker.kill()
        assert "isn't a known config" not in worker.stderr
        assert "status.storage.replication.factor: accepted" in worker.stderr
    finally:
        kafka.stop()
